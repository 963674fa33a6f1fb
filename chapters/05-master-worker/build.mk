# Chapter 05 - the files that make it up (read by the top-level Makefile).
ch05_impl    := mw_core.c mw_extensions.c
ch05_uses    := 02-blocking-queue 03-thread-pool
ch05_test_support := mw_scenarios.c   # the generated scenarios' spec: linked by both sides of a judged test
ch05_main    := main.c measure.c
ch05_program := ch05-master-worker
ch05_tests   := test_mw test_mw_explore
ch05_smoke   := --tasks 20 --task-ms 2 --quiet
# What a submission's files may define (admission refuses anything else that is
# not static) - and, for this chapter alone, may call besides imports.allow.
ch05_defines := mw_*
# Its tests are judged (docs/grading.md, "The judge and the subject"): the
# calls of mw.h, listed in judged.tsv, go to the submission in a process of
# its own; the process function and the result callback run in the judge, on
# a thread that mirrors the worker that runs them there.
# `make grade CH=05 ch05_judged=` grades it in one process.
ch05_judged  := yes
ch05_api     := mw.h
# Its explorations run their bodies in the subject and are replayed by the
# judge from their transcripts (docs/grading.md).
ch05_transcripts := yes
# Its graded tests of many calls, on their one schedule, are written down the
# same way: run in the subject, replayed by the judge (docs/grading.md).
ch05_written := test_mw_submit_every_result_exactly_once test_mw_take_result_consuming_master_never_deadlocks \
                test_mw_stress_stats_conserve_at_every_instant test_mw_stress_random_failures_conserve \
                test_mw_result_limit_bounds_unconsumed_results
