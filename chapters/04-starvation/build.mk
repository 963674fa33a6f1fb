# Chapter 04 - the files that make it up (read by the top-level Makefile).
ch04_impl    := future.c starvation.c sizing.c
ch04_uses    := 02-blocking-queue 03-thread-pool
ch04_test_support := future_scenarios.c   # the generated scenarios' spec: linked by both sides of a judged test
ch04_main    := main.c
ch04_program := ch04-starvation
ch04_tests   := test_future test_sizing test_future_explore
ch04_smoke   := --orders 2 --cook-ms 20 --quiet
ch04_libs    := -lm
# What a submission's files may define (admission refuses anything else that is
# not static) - and, for this chapter alone, may call besides imports.allow.
ch04_defines := future_* tpool_submit tpool_block_begin tpool_block_end kit_threads_for
# Its tests are judged (docs/grading.md, "The judge and the subject"): the
# calls of future.h, sizing.h and those of tpool.h the tests make, listed in
# judged.tsv, go to the submission in a process of its own; a task runs in
# the judge, on a thread that mirrors the worker that runs it there.
# `make grade CH=04 ch04_judged=` grades it in one process.
ch04_judged  := yes
ch04_api     := future.h
# Its explorations run their bodies in the subject and are replayed by the
# judge from their transcripts (docs/grading.md).
ch04_transcripts := yes
