# Chapter 03 - the files that make it up (read by the top-level Makefile).
ch03_impl    := tpool.c
ch03_uses    := 02-blocking-queue
ch03_test_support := tpool_scenarios.c   # the generated scenarios' spec: linked by both sides of a judged test
ch03_main    := main.c
ch03_program := ch03-thread-pool
ch03_tests   := test_tpool test_tpool_explore
ch03_smoke   := --tasks 4 --task-ms 20 --keep-alive-ms 50 --quiet
# What a submission's files may define (admission refuses anything else that is
# not static) - and, for this chapter alone, may call besides imports.allow.
ch03_defines := tpool_*
# Its tests can be judged (docs/grading.md, "The judge and the subject"): the
# calls of tpool.h listed in judged.tsv go to the submission in a process of
# its own; a task runs in the judge, on a thread that mirrors the worker
# that runs it there. `make grade CH=03 ch03_judged=yes` grades it so.
ch03_judged  := yes
ch03_api     := tpool.h
# Its explorations run their bodies in the subject, which sends each
# schedule's transcript for the judge to replay (docs/grading.md); a task a
# worker runs is in the transcript on that worker's channel, and the judge
# runs its own on the thread that mirrors it.
ch03_transcripts := yes
# Its graded tests of many calls, on their one schedule, are written down the
# same way: run in the subject, replayed by the judge (docs/grading.md).
ch03_written := test_tpool_execute_runs_every_task_once test_tpool_stress_never_more_than_core_threads \
                test_tpool_stress_stats_add_up
