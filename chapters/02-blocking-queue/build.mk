# Chapter 02 - the files that make it up (read by the top-level Makefile).
ch02_impl    := bq.c
ch02_uses    :=
ch02_main    := main.c
ch02_program := ch02-blocking-queue
ch02_tests   := test_bq test_bq_explore
ch02_test_support := bq_scenarios.c   # the generated scenarios' spec: linked by both sides of a judged test
ch02_smoke   := --producers 3 --items 4 --produce-ms 1 --consume-ms 2 --quiet
# What a submission's files may define (admission refuses anything else that is
# not static) - and, for this chapter alone, may call besides imports.allow.
ch02_defines := bq_*
# Calls the chapter refuses even where imports.allow allows them: its lesson
# is the two-condvar queue, not the bounded buffer of counting semaphores.
ch02_forbids := sem_*
# Its tests can be judged (docs/grading.md, "The judge and the subject"): the
# verdict given by a program that links none of the submission's code, which
# runs in a process of its own and answers the calls of bq.h listed in
# judged.tsv; the policies' functions of the test's go there as ids, and run
# in the judge when the code under test calls them - at most 30% longer than
# in one process, on the same schedules. `make grade CH=02 ch02_judged=`
# grades it in one process.
ch02_judged  := yes
# Its explorations run their bodies in the subject, which sends each schedule's
# transcript for the judge to replay (docs/grading.md); a policy's function of
# the test's, called back, is in the transcript, and the judge runs its own.
ch02_transcripts := yes
# Its graded tests of many calls, on their one schedule, are written down the
# same way: run in the subject, replayed by the judge (docs/grading.md).
ch02_written := test_bq_stress_producers_consumers test_bq_stress_capacity_one_wakes_the_right_side \
                test_bq_stress_policies_account_for_every_item
ch02_api     := bq.h
