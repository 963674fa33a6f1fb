# Chapter 04 - the files that make it up (read by the top-level Makefile).
ch04_impl    := future.c starvation.c sizing.c
ch04_uses    := 02-blocking-queue 03-thread-pool
ch04_main    := main.c
ch04_program := ch04-starvation
ch04_tests   := test_future test_sizing
ch04_smoke   := --orders 2 --cook-ms 20 --quiet
ch04_libs    := -lm
