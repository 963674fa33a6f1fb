# Chapter 06 - the files that make it up (read by the top-level Makefile).
ch06_impl    := keyed.c
ch06_uses    := 02-blocking-queue 03-thread-pool 04-starvation
ch06_main    := main.c
ch06_program := ch06-keyed-executor
ch06_tests   := test_keyed test_keyed_explore
ch06_smoke   := --accounts 3 --submitters 2 --deposits 6 --deposit-ms 1 --submit-ms 1 --quiet
# chapter 04, linked in, sizes pools with <math.h>
ch06_libs    := -lm
# What a submission's files may define (admission refuses anything else that is
# not static) - and, for this chapter alone, may call besides imports.allow.
ch06_defines := keyed_*
