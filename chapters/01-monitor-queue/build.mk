# Chapter 01 - the files that make it up (read by the top-level Makefile).
ch01_impl    := msgq.c
ch01_uses    :=
ch01_main    := main.c
ch01_program := ch01-monitor-queue
ch01_tests   := test_msgq test_msgq_explore
ch01_test_support := msgq_scenarios.c   # the generated scenarios' spec: linked by both sides of a judged test
ch01_smoke   := --producers 3 --consumers 2 --capacity 1 --items 5 --download-ms 5 --quiet
# What a submission's files may define (admission refuses anything else that is
# not static) - and, for this chapter alone, may call besides imports.allow.
ch01_defines := msgq_*
# Calls the chapter refuses even where imports.allow allows them: its lesson
# is the monitor, one mutex and one condition variable, not a semaphore.
ch01_forbids := sem_*
# Its tests are judged (docs/grading.md, "The judge and the subject"): the
# verdict given by a program that links none of the submission's code, which
# runs in a process of its own and answers the calls of msgq.h listed in
# judged.tsv - at most 30% longer than in one process, on the same schedules,
# with the same first messages. `make grade CH=01 ch01_judged=` grades it in one process.
ch01_judged  := yes
# Its explorations run their bodies in the subject, which sends each schedule's
# transcript for the judge to replay (docs/grading.md).
ch01_transcripts := yes
# Its graded tests of many calls, on their one schedule, are written down the
# same way: run in the subject, replayed by the judge (docs/grading.md).
ch01_written := test_msgq_stress_producers_consumers test_msgq_stress_capacity_one_wakes_the_right_side \
                test_msgq_size_reads_a_real_count_while_others_put_and_take
ch01_api     := msgq.h
