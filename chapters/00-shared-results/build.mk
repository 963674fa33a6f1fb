# Chapter 00 - the files that make it up (read by the top-level Makefile).
ch00_impl    := results.c             # what students write: solutions/ and exercises/00-shared-results/
ch00_uses    :=                       # earlier chapters whose implementation this one links
ch00_main    := main.c unsafe_list.c  # the chapter program, in chapters/00-shared-results/
ch00_program := ch00-shared-results
ch00_tests   := test_results test_results_explore          # one test program each, in tests/00-shared-results/
ch00_test_support := results_scenarios.c   # the generated scenarios' spec: linked by both sides of a judged test
ch00_smoke   := --items 20000 --quiet # a short run for `make test`
# What a submission's files may define (admission refuses anything else that is
# not static) - and, for this chapter alone, may call besides imports.allow.
ch00_defines := results_*
# Its tests are judged (docs/grading.md, "The judge and the subject"): the
# verdict given by a program that links none of the submission's code, which
# runs in a process of its own and answers the calls of results.h listed in
# judged.tsv - at most 30% longer than in one process, on the same schedules,
# with the same first messages. `make grade CH=00 ch00_judged=` grades it in one process.
ch00_judged  := yes
# Its explorations run their bodies in the subject, which sends each schedule's
# transcript for the judge to replay (docs/grading.md).
ch00_transcripts := yes
# Its graded tests of many calls, on their one schedule, are written down the
# same way: run in the subject, replayed by the judge (docs/grading.md).
ch00_written := test_results_destroy_frees_everything test_results_stress_concurrent_appends \
                test_results_stress_drain_while_appending
ch00_api     := results.h
