# Chapter 03 - the files that make it up (read by the top-level Makefile).
ch03_impl    := tpool.c
ch03_uses    := 02-blocking-queue
ch03_main    := main.c
ch03_program := ch03-thread-pool
ch03_tests   := test_tpool test_tpool_explore
ch03_smoke   := --tasks 4 --task-ms 20 --keep-alive-ms 50 --quiet
# What a submission's files may define (admission refuses anything else that is
# not static) - and, for this chapter alone, may call besides imports.allow.
ch03_defines := tpool_*
