# Chapter 05 - the files that make it up (read by the top-level Makefile).
ch05_impl    := mw_core.c mw_extensions.c
ch05_uses    := 02-blocking-queue 03-thread-pool
ch05_main    := main.c measure.c
ch05_program := ch05-master-worker
ch05_tests   := test_mw test_mw_explore
ch05_smoke   := --tasks 20 --task-ms 2 --quiet
# What a submission's files may define (admission refuses anything else that is
# not static) - and, for this chapter alone, may call besides imports.allow.
ch05_defines := mw_*
