# Chapter 02 - the files that make it up (read by the top-level Makefile).
ch02_impl    := bq.c
ch02_uses    :=
ch02_main    := main.c
ch02_program := ch02-blocking-queue
ch02_tests   := test_bq test_bq_explore
ch02_smoke   := --producers 3 --items 4 --produce-ms 1 --consume-ms 2 --quiet
# What a submission's files may define (admission refuses anything else that is
# not static) - and, for this chapter alone, may call besides imports.allow.
ch02_defines := bq_*
# Calls the chapter refuses even where imports.allow allows them: its lesson
# is the two-condvar queue, not the bounded buffer of counting semaphores.
ch02_forbids := sem_*
