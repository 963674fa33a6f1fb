# Chapter 06 - the files that make it up (read by the top-level Makefile).
ch06_impl    := keyed.c
ch06_uses    := 02-blocking-queue 03-thread-pool 04-starvation
ch06_test_support := keyed_scenarios.c   # the generated scenarios' spec: linked by both sides of a judged test
ch06_main    := main.c
ch06_program := ch06-keyed-executor
ch06_tests   := test_keyed test_keyed_explore
ch06_smoke   := --accounts 3 --submitters 2 --deposits 6 --deposit-ms 1 --submit-ms 1 --quiet
# chapter 04, linked in, sizes pools with <math.h>
ch06_libs    := -lm
# What a submission's files may define (admission refuses anything else that is
# not static) - and, for this chapter alone, may call besides imports.allow.
ch06_defines := keyed_*
# Its tests are judged (docs/grading.md, "The judge and the subject"): the
# calls of keyed.h, and those of chapter 04's API its tests make, listed in
# judged.tsv, go to the submission in a process of its own; a task runs in
# the judge, on a thread that mirrors the worker that runs it there.
# `make grade CH=06 ch06_judged=` grades it in one process.
ch06_judged  := yes
ch06_api     := keyed.h
# Its explorations run their bodies in the subject and are replayed by the
# judge from their transcripts (docs/grading.md).
ch06_transcripts := yes
# Its graded tests of many calls, on their one schedule, are written down the
# same way: run in the subject, replayed by the judge (docs/grading.md).
ch06_written := test_keyed_stress_fifo_per_key_many_submitters test_keyed_stress_submit_races_leaving_drain \
                test_keyed_stress_same_key_never_overlaps
