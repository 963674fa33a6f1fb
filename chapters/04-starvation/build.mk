# Chapter 04 - the files that make it up (read by the top-level Makefile).
ch04_impl    := future.c starvation.c sizing.c
ch04_uses    := 02-blocking-queue 03-thread-pool
ch04_main    := main.c
ch04_program := ch04-starvation
ch04_tests   := test_future test_sizing test_future_explore
ch04_smoke   := --orders 2 --cook-ms 20 --quiet
ch04_libs    := -lm
# What a submission's files may define (admission refuses anything else that is
# not static) - and, for this chapter alone, may call besides imports.allow.
ch04_defines := future_* tpool_submit tpool_block_begin tpool_block_end kit_threads_for
