# Chapter 08 - the files that make it up (read by the top-level Makefile).
ch08_impl    := rwl.c                 # what students write: solutions/ and exercises/08-rwlock/
ch08_uses    :=                       # it builds on no earlier chapter's code
ch08_main    := main.c                # the program; its reader-preferring lock for --policy reader is its own
ch08_program := ch08-rwlock
ch08_tests   := test_rwl test_rwl_explore
ch08_test_support := rwl_scenarios.c   # the generated scenarios' spec: linked by both sides of a judged test
ch08_smoke   := --readers 2 --writers 1 --read-ms 5 --write-ms 2 --duration-ms 100 --quiet
# What a submission's files may define (admission refuses anything else that is
# not static) - and, for this chapter alone, may call besides imports.allow.
ch08_defines := rwl_*
# Calls the chapter refuses even where imports.allow allows them: its lesson
# is the readers-writer lock itself, built from a mutex and condition variables.
ch08_forbids := pthread_rwlock_* pthread_rwlockattr_*
# Its tests are judged (docs/grading.md, "The judge and the subject"): the
# verdict given by a program that links none of the submission's code, which
# runs in a process of its own and answers the calls of rwl.h listed in
# judged.tsv - at most 30% longer than in one process, on the same schedules,
# with the same first messages. `make grade CH=08 ch08_judged=` grades it in one process.
ch08_judged  := yes
# Its explorations run their bodies in the subject, which sends each schedule's
# transcript for the judge to replay (docs/grading.md).
ch08_transcripts := yes
# Its graded tests of many calls, on their one schedule, are written down the
# same way: run in the subject, replayed by the judge (docs/grading.md).
ch08_written := test_rwl_stress_readers_and_writers
ch08_api     := rwl.h
