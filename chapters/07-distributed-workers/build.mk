# Chapter 07 - the files that make it up (read by the top-level Makefile).
ch07_impl    := dmw_worker.c dmw_reaper.c  # what students write: the worker loop and the reaper
ch07_uses    := 02-blocking-queue 05-master-worker  # --bench compares with chapter 05's master-worker
ch07_main    := main.c demo.c pool.c bench.c
ch07_program := ch07-distributed-workers
# Kit-written plumbing, in kit/, linked into the program and the tests: the
# Redis connection (reconnects with backoff), records and scripts, the
# heartbeat, the master, and the private redis-server.
ch07_support := kit/dmw_redis.c kit/dmw_record.c kit/dmw_scripts.c kit/dmw_heartbeat.c \
                kit/dmw_master.c kit/dmw_server.c
ch07_tests   := test_dmw
ch07_test_support := dmw_fixture.c dmw_journal.c dmw_books.c dmw_work.c dmw_call.c
# Judged by processes (tests/07-distributed-workers/dmw_call.h): the code under test runs only in
# processes the test starts. In one process (make debug, make tsan) each is a forked copy of the
# test; judged (the grade), the test links stand-ins for the two functions instead of the
# submission, and each call's process becomes test_dmw.subject, built from ch07_subject.
ch07_judged  := processes
ch07_one_process := dmw_call_here.c
ch07_judge   := dmw_call_judged.c
ch07_subject := dmw_subject.c dmw_call.c dmw_work.c dmw_journal.c
# The tests' journal sees every Redis command, and who sent it: a worker (dmw_worker_run)
# or the reaper (dmw_reap) - tests/07-distributed-workers/dmw_journal.c.
ch07_test_wraps := redisvCommand dmw_worker_run dmw_reap
ch07_smoke   := --workers 2 --tasks 8 --task-ms 5 --always-fail 1 --max-attempts 2 --quiet
# Needs redis-server and hiredis (tools/bootstrap installs both): `make run`,
# `make test` and `make grade` leave the chapter out while they are missing.
ch07_needs   := redis
# kit/'s headers (the master, the connection, the server) for the program,
# the solutions and the tests; hiredis's headers as system headers (no
# -Wpedantic noise from them), where pkg-config puts them outside the
# compiler's own search path.
ch07_cflags  := -Ichapters/07-distributed-workers/kit $(addprefix -isystem ,$(filter-out /usr/include /usr/local/include,$(patsubst %/hiredis,%,$(patsubst -I%,%,$(filter -I%,$(shell pkg-config --cflags hiredis 2>/dev/null))))))
ch07_libs    := $(or $(shell pkg-config --libs hiredis 2>/dev/null),-lhiredis)
# What a submission's files may define (admission refuses anything else that is
# not static) - and, for this chapter alone, may call besides imports.allow.
ch07_defines := dmw_reap dmw_worker_run
ch07_imports := dmw_* freeReplyObject gethostname getpid
# Its tests run on real threads (a Redis server, other processes), where the
# scheduler's race detector does not run: its race-free line is a run of
# every test under ThreadSanitizer instead.
ch07_races   := tsan
