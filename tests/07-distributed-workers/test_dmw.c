/**
 * @file test_dmw.c
 * @brief Chapter 07 tests: the reliable queue keeps every task and gives it
 *        exactly one outcome - across processes, crashes, pauses, duplicate
 *        deliveries and a restarted server.
 *
 * Each test runs against a Redis of its own (dmw_fixture.h). Workers are
 * either threads of the test process (kit_worker) or forked processes
 * (fixture_spawn), which can be killed, frozen and resumed like machines.
 * The process function, dmw_work_scripted(), does what each task's payload
 * says. Graded, each call of the code under test - a thread's worker too -
 * runs in a process of its own that links the submission (dmw_call.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_test.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include "dmw.h"
#include "dmw_books.h"
#include "dmw_fixture.h"
#include "dmw_journal.h"
#include "dmw_master.h"
#include "dmw_work.h"
#include "dmw_redis.h"
#include "kit_time.h"

/** How long a test lets dmw_await() run before calling it a hang. */
#define AWAIT_MS fixture_scale(KIT_HANG_MS)

/* ---- the work (dmw_work.h: dmw_work_scripted() does what each task's payload says) ---- */

/* How a task with this payload must end (the books' expectation). */
static dmw_kind_t expected_kind(const char *payload)
{
    if (strcmp(payload, "fail") == 0 || strcmp(payload, "fail-quietly") == 0)
        return DMW_FAILED;
    if (strcmp(payload, "retry") == 0 || strcmp(payload, "retry-quietly") == 0)
        return DMW_DEAD;
    return DMW_DONE;
}

static dmw_worker_config_t worker_named(const char *name, long max_tasks)
{
    return (dmw_worker_config_t){ .name = name, .process = dmw_work_scripted, .take_timeout_ms = 100,
                                  .max_tasks = max_tasks };
}

/* A worker on a thread of the test process. */
struct thread_worker {
    const dmw_config_t *config;
    dmw_worker_config_t knobs;
    dmw_worker_stats_t stats;
    int rc;
    kit_worker_t thread;
};

static void *run_worker(void *raw)
{
    struct thread_worker *w = raw;
    w->rc = dmw_worker_run(w->config, &w->knobs, &w->stats);
    return NULL;
}

static void start_thread_worker(struct thread_worker *w, const dmw_config_t *config, const char *name,
                                long max_tasks)
{
    *w = (struct thread_worker){ .config = config, .knobs = worker_named(name, max_tasks), .rc = -1 };
    kit_worker_start(&w->thread, name, run_worker, w);
}

static const char not_written[] = "not implemented yet - write it in exercises/07-distributed-workers/";

/* A thread worker's dmw_worker_run returned 0. */
static void assert_worker_ok(const struct thread_worker *w)
{
    if (w->rc == ENOSYS)
        fail_msg("dmw_worker_run returned ENOSYS: %s", not_written);
    if (w->rc != 0)
        fail_msg("dmw_worker_run (worker %s) returned %s (%d), expected 0", w->knobs.name, dmw_errno_name(w->rc),
                 w->rc);
}

/* The worker is still in dmw_worker_run after @p ms: it really waits. */
static void worker_must_wait(struct thread_worker *w, long ms, const char *what)
{
    if (kit_worker_join(&w->thread, ms, NULL) == ETIMEDOUT)
        return;
    if (w->rc == ENOSYS)
        fail_msg("dmw_worker_run returned ENOSYS: %s", not_written);
    fail_msg("%s: dmw_worker_run returned %s (%d) within %ld ms, but it should still be waiting", what,
             dmw_errno_name(w->rc), w->rc, ms);
}

/* What dmw_await returned, in words: it runs the reaper, which may not be written yet. */
static void assert_await_ok(int err)
{
    if (err == ENOSYS)
        fail_msg("dmw_reap returned ENOSYS (dmw_await runs it): %s", not_written);
    if (err != 0)
        fail_msg("dmw_await returned %s (%d), expected 0: the master's wait, or the reaper it runs (dmw_reap), "
                 "failed", dmw_errno_name(err), err);
}

static int spawn_worker(fixture_t *fx, const char *name, long max_tasks)
{
    dmw_worker_config_t knobs = worker_named(name, max_tasks);
    return fixture_spawn(fx, &knobs);
}

static void submit_all(fixture_t *fx, long first_id, long count, const char *payload)
{
    for (long id = first_id; id < first_id + count; id++)
        assert_ok(dmw_submit(fx->master, id, payload));
}

static dmw_outcome_t outcome_of(fixture_t *fx, long id)
{
    dmw_outcome_t outcome;
    assert_ok(dmw_outcome(fx->master, id, &outcome));
    return outcome;
}

/* The closing check of every run: each task ended exactly one way, and
 * nothing is left in a list (the books name the task and the command). */
static dmw_stats_t assert_conserved(fixture_t *fx, long submitted)
{
    books_t books = { .expect = expected_kind };
    books_check(fx, 0, &books);
    dmw_stats_t stats;
    assert_ok(dmw_stats(fx->master, &stats));
    assert_int_equal(stats.submitted, submitted);
    if (stats.completed + stats.failed + stats.dead_lettered != submitted)
        fail_msg("submitted %ld != completed %ld + failed %ld + dead-lettered %ld", stats.submitted,
                 stats.completed, stats.failed, stats.dead_lettered);
    assert_int_equal(stats.queued, 0);
    assert_int_equal(stats.in_flight, 0);
    return stats;
}

static void await_all(fixture_t *fx)
{
    int err = dmw_await(fx->master, AWAIT_MS);
    if (err == ETIMEDOUT) {
        dmw_stats_t s;
        dmw_stats(fx->master, &s);
        fail_msg("dmw_await: still waiting after %ld ms: %ld submitted, %ld with an outcome, %ld queued, "
                 "%ld in processing lists - a task was lost, or never returned", AWAIT_MS, s.submitted,
                 s.completed + s.failed + s.dead_lettered, s.queued, s.in_flight);
    }
    assert_await_ok(err);
}

/* Shut the run down and wait for every worker process to leave. */
static void finish_processes(fixture_t *fx)
{
    assert_ok(dmw_shutdown(fx->master));
    for (int i = 0; i < fx->child_count; i++)
        if (fixture_join(fx, i, AWAIT_MS) != 0)
            fail_msg("worker process %s did not leave after the shutdown", fx->children[i].name);
}

static const fixture_report_t *report_of(fixture_t *fx, int index)
{
    const fixture_child_t *child = &fx->children[index];
    if (child->reported && child->report.rc == ENOSYS)
        fail_msg("%s returned ENOSYS: %s", strcmp(child->role, "reaper") == 0 ? "dmw_reap" : "dmw_worker_run",
                 not_written);
    if (!child->reported || child->report.rc != 0) {
        char story[1200];
        fixture_child_story(fx, index, story, sizeof story);
        fail_msg("%s", story);
    }
    return &child->report;
}

/* What child @p index says it did, once it returned 0: its word (judged, the
 * subject's report beside what its call returned). */
static const dmw_worker_stats_t *child_stats(fixture_t *fx, int index)
{
    const fixture_report_t *report = report_of(fx, index);
    kit_verdict_rests_on(KIT_WORD_REPORTS);
    return &report->stats;
}

static long list_length(fixture_t *fx, const char *key)
{
    return fixture_integer(fx, "LLEN %s", key);
}

static long processing_length(fixture_t *fx, const char *worker)
{
    char key[DMW_KEY_MAX];
    assert_ok(dmw_key_processing(fx->redis, worker, key, sizeof key));
    return list_length(fx, key);
}

/* A dead worker's heartbeat, gone as if its visibility timeout had passed. */
static void forget_heartbeat(fixture_t *fx, const char *worker)
{
    char key[DMW_KEY_MAX];
    redisReply *reply = NULL;
    assert_ok(dmw_key_alive(fx->redis, worker, key, sizeof key));
    assert_ok(dmw_redis_call(fx->redis, &reply, "DEL %s", key));
    freeReplyObject(reply);
}

/* ---- arguments and reachability ---------------------------------------------------- */

static void test_dmw_calls_with_bad_arguments_give_einval(void **state)
{
    fixture_t *fx = *state;
    dmw_worker_config_t good = worker_named("w", 0), knobs = good;
    dmw_config_t config = fx->config;
    dmw_worker_stats_t stats = { .taken = 99 };
    assert_err(dmw_worker_run(NULL, &good, &stats), EINVAL);
    assert_int_equal(stats.taken, 0); /* stats are reset even on error */
    assert_err(dmw_worker_run(&config, NULL, NULL), EINVAL);
    knobs.process = NULL;
    assert_err(dmw_worker_run(&config, &knobs, NULL), EINVAL);
    knobs = good;
    knobs.name = "two words";
    assert_err(dmw_worker_run(&config, &knobs, NULL), EINVAL);
    knobs = good;
    knobs.take_timeout_ms = -1;
    assert_err(dmw_worker_run(&config, &knobs, NULL), EINVAL);
    config.redis_url = "http://127.0.0.1:1";
    assert_err(dmw_worker_run(&config, &good, NULL), EINVAL);
    config = fx->config;
    config.run = "";
    assert_err(dmw_worker_run(&config, &good, NULL), EINVAL);
    config = fx->config;
    config.max_attempts = -1;
    assert_err(dmw_worker_run(&config, &good, NULL), EINVAL);
    long returned = 5, dead = 5;
    assert_err(dmw_reap(NULL, &returned, &dead), EINVAL);
    kit_verdict_rests_on(KIT_WORD_REPORTS); /* the counts are the reaper's word */
    assert_int_equal_or_say(returned + dead, 0, "dmw_reap refused with EINVAL but counted tasks returned or buried");

    dmw_master_t *master = (dmw_master_t *)&master; /* not NULL: create must reset it */
    assert_err(dmw_master_create(&master, NULL), EINVAL);
    assert_null_or_say(master, "dmw_master_create failed with EINVAL but did not set *out to NULL");
    assert_err(dmw_submit(NULL, 1, "x"), EINVAL);
    assert_err(dmw_submit(fx->master, -1, "x"), EINVAL);
    char long_payload[DMW_PAYLOAD_MAX + 1];
    memset(long_payload, 'x', sizeof long_payload - 1);
    long_payload[DMW_PAYLOAD_MAX] = '\0';
    assert_err(dmw_submit(fx->master, 1, long_payload), EINVAL);
    assert_ok(dmw_submit(fx->master, 1, "ok"));
    assert_err(dmw_submit(fx->master, 1, "ok"), EEXIST); /* one id, one task */
    assert_err(dmw_await(fx->master, -1), EINVAL);
    dmw_master_destroy(NULL);
}

/* A port nobody listens on: the kernel just handed it out, then it was closed. */
static int closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t length = sizeof address;
    assert_true_or_say(fd >= 0, "the test could not open a socket");
    assert_int_equal_or_say(bind(fd, (struct sockaddr *)&address, sizeof address), 0,
        "the test could not bind a socket");
    assert_int_equal_or_say(getsockname(fd, (struct sockaddr *)&address, &length), 0,
        "the test could not read its socket's port");
    close(fd);
    return ntohs(address.sin_port);
}

static void assert_connect_error(int err, const char *what)
{
    if (err != ECONNREFUSED && err != ETIMEDOUT && err != ECONNRESET && err != EHOSTUNREACH)
        fail_msg("%s returned %s (%d), expected a connect error such as ECONNREFUSED%s", what,
                 dmw_errno_name(err), err, err == ENOSYS ? " - not implemented yet" : "");
}

/* At the start an unreachable server is reported at once; in the middle of
 * a run, once reconnect_ms has passed. Never a hang, never a crash. */
static void test_dmw_unreachable_server_is_reported(void **state)
{
    fixture_t *fx = *state;
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", closed_port());
    dmw_config_t nowhere = fx->config;
    nowhere.redis_url = url;
    static struct thread_worker w; /* static: a failed check leaves the worker thread its memory */
    start_thread_worker(&w, &nowhere, "lost", 0);
    kit_worker_must_finish(&w.thread, "dmw_worker_run with no server to reach");
    assert_connect_error(w.rc, "dmw_worker_run with no server to reach");
    dmw_master_t *master = NULL;
    assert_connect_error(dmw_master_create(&master, &nowhere), "dmw_master_create with no server to reach");
    assert_null_or_say(master, "dmw_master_create failed to connect but did not set *out to NULL");
    if (!fixture_owns_server(fx))
        return; /* $REDIS_URL's server is not ours to stop */

    dmw_config_t impatient = fx->config;
    impatient.reconnect_ms = 300;
    start_thread_worker(&w, &impatient, "stranded", 0);
    worker_must_wait(&w, 300, "a worker with nothing to do");
    fixture_stop_server(fx);
    kit_worker_must_finish(&w.thread, "a worker whose server went away for good");
    assert_connect_error(w.rc, "dmw_worker_run after its server went away");
}

/* ---- one worker --------------------------------------------------------------------- */

enum { FEW = 20 };

static void test_dmw_one_worker_completes_every_task(void **state)
{
    fixture_t *fx = *state;
    submit_all(fx, 0, FEW, "ok");
    static struct thread_worker w; /* static: a failed check leaves the worker thread its memory */
    start_thread_worker(&w, &fx->config, "solo", 0);
    await_all(fx);
    assert_ok(dmw_shutdown(fx->master));
    kit_worker_must_finish(&w.thread, "a worker after dmw_shutdown");
    assert_worker_ok(&w);
    for (long id = 0; id < FEW; id++) {
        dmw_outcome_t outcome = outcome_of(fx, id);
        char expected[64];
        snprintf(expected, sizeof expected, "result %ld, call 1", id);
        assert_int_equal_or_say(outcome.kind, DMW_DONE,
            "task %ld did not end done (kinds: done 0, failed 1, dead 2)", id);
        assert_int_equal_or_say(outcome.attempts, 1,
            "task %ld's outcome counts another number of attempts than its one", id);
        assert_string_equal_or_say(outcome.worker,
            "solo", "task %ld's outcome names another worker than the only one", id);
        assert_string_equal_or_say(outcome.text, expected, "task %ld's outcome holds another text than its result", id);
    }
    assert_int_equal(w.stats.taken, FEW);
    assert_int_equal(w.stats.completed, FEW);
    dmw_stats_t stats = assert_conserved(fx, FEW);
    assert_int_equal(stats.completed, FEW);
    assert_int_equal(stats.workers, 0); /* it said goodbye */
}

/* An idle worker really waits (and checks for the shutdown between takes);
 * after a shutdown it still drains what is queued, then leaves. */
static void test_dmw_worker_waits_for_work_and_leaves_on_shutdown(void **state)
{
    fixture_t *fx = *state;
    static struct thread_worker w; /* static: a failed check leaves the worker thread its memory */
    start_thread_worker(&w, &fx->config, "idle", 0);
    worker_must_wait(&w, 400, "a worker on an empty queue");
    submit_all(fx, 0, 1, "ok");
    await_all(fx);
    worker_must_wait(&w, 200, "a worker after its only task, before any shutdown");
    submit_all(fx, 1, 3, "sleep 20");
    assert_ok(dmw_shutdown(fx->master));
    kit_worker_must_finish(&w.thread, "a worker after dmw_shutdown");
    assert_worker_ok(&w);
    assert_int_equal(w.stats.completed, 4); /* the queued tasks were drained first */
    assert_conserved(fx, 4);
}

/* " - `BRPOP queue 0.100` (dmw_worker.c:62 in take)": the last @p command @p role sent, or "". */
static const char *sent_from(const char *role, const char *command)
{
    static char said[700];
    said[0] = '\0';
    for (long i = journal_command_count() - 1; i >= 0 && said[0] == '\0'; i--) {
        const journal_command_t *c = journal_command(i);
        size_t length = strlen(command);
        if (c && strcmp(c->role, role) == 0 && strncasecmp(c->text, command, length) == 0 && c->text[length] == ' ') {
            strcpy(said, " - ");
            journal_describe(c, said + 3, sizeof said - 3);
        }
    }
    return said;
}

/* Tasks submitted, then the shutdown, in the moment between a worker's empty
 * take and its look at the shutdown key: it must still run them. */
static void submit_three_then_shut_down(void *ctx)
{
    fixture_t *fx = ctx;
    submit_all(fx, 1, 3, "ok");
    assert_ok(dmw_shutdown(fx->master));
}

static void test_dmw_worker_drains_tasks_submitted_just_before_the_shutdown(void **state)
{
    fixture_t *fx = *state;
    static struct thread_worker w; /* static: a failed check leaves the worker thread its memory */
    start_thread_worker(&w, &fx->config, "late", 0);
    submit_all(fx, 0, 1, "ok");
    await_all(fx);
    fixture_before_next_shutdown_look(fx, submit_three_then_shut_down, fx);
    kit_worker_must_finish(&w.thread, "a worker after dmw_shutdown");
    assert_worker_ok(&w);
    if (w.stats.completed != 4)
        fail_msg("the worker ran %ld of the 4 tasks and left: 3 were submitted, then the shutdown, after its "
                 "last empty take - a worker leaves only when a take begun after it saw the shutdown finds "
                 "the queue empty; it left after its look at the shutdown key%s", w.stats.completed,
                 sent_from("worker late", "EXISTS"));
    assert_conserved(fx, 4);
}

/* ---- failures: retries, dead letters, permanent failures ------------------------------ */

static void test_dmw_always_failing_task_is_dead_lettered(void **state)
{
    fixture_t *fx = *state;
    submit_all(fx, 0, 5, "ok");
    assert_ok(dmw_submit(fx->master, 5, "retry"));
    assert_ok(dmw_submit(fx->master, 6, "fail"));
    static struct thread_worker w; /* static: a failed check leaves the worker thread its memory */
    start_thread_worker(&w, &fx->config, "doomed", 0);
    await_all(fx);
    dmw_outcome_t dead = outcome_of(fx, 5), failed = outcome_of(fx, 6);
    assert_int_equal_or_say(dead.kind, DMW_DEAD,
        "the task that always fails with EAGAIN was not dead-lettered (kinds: done 0, failed 1, dead 2)");
    assert_int_equal_or_say(dead.attempts, fx->config.max_attempts,
        "the dead-lettered task's outcome counts another number of attempts than max_attempts");
    assert_string_equal_or_say(dead.text,
        "still not ready", "the dead-lettered task's outcome holds another text than its last error");
    assert_int_equal_or_say(dmw_work_deliveries(5), fx->config.max_attempts,
        "the always-failing task ran another number of times than max_attempts");
    assert_int_equal_or_say(failed.kind, DMW_FAILED,
        "the task that failed for good did not end failed (kinds: done 0, failed 1, dead 2)");
    assert_int_equal_or_say(failed.attempts, 1, "the task that failed for good was retried: its attempts");
    assert_string_equal_or_say(failed.text, "bad input", "the failed task's outcome holds another text than its error");
    assert_int_equal_or_say(dmw_work_deliveries(6), 1,
        "the task that failed for good ran another number of times than once");
    assert_int_equal_or_say(list_length(fx, dmw_redis_keys(fx->redis)->dead), 1, "tasks in the dead-letter list");
    assert_ok(dmw_shutdown(fx->master));
    kit_worker_must_finish(&w.thread, "a worker after dmw_shutdown");
    dmw_stats_t stats = assert_conserved(fx, 7);
    assert_int_equal(stats.completed, 5);
    assert_int_equal(stats.failed, 1);
    assert_int_equal(stats.dead_lettered, 1);
    assert_int_equal(stats.retries, fx->config.max_attempts - 1);
    assert_int_equal(w.stats.retried, fx->config.max_attempts - 1);
    assert_int_equal(w.stats.dead_lettered, 1);
}

/* ---- duplicate deliveries ----------------------------------------------------------- */

/* The same task delivered twice (here: its record pushed twice) is processed
 * twice - delivery is at least once - but its outcome is written once. */
static void test_dmw_duplicate_delivery_writes_one_result(void **state)
{
    fixture_t *fx = *state;
    enum { ID = 7 };
    assert_ok(dmw_submit(fx->master, ID, "ok"));
    char record[DMW_RECORD_MAX];
    assert_ok(dmw_record_encode(ID, 0, "ok", record, sizeof record));
    redisReply *reply = NULL;
    assert_ok(dmw_redis_call(fx->redis, &reply, "LPUSH %s %s", dmw_redis_keys(fx->redis)->queue, record));
    freeReplyObject(reply);
    static struct thread_worker w; /* static: a failed check leaves the worker thread its memory */
    start_thread_worker(&w, &fx->config, "twice", 2);
    kit_worker_must_finish(&w.thread, "a worker with two deliveries to make");
    assert_worker_ok(&w);
    assert_int_equal_or_say(dmw_work_deliveries(ID), 2,
        "the task delivered twice was processed another number of times than twice");
    assert_int_equal(w.stats.taken, 2);
    assert_int_equal(w.stats.completed, 1);
    assert_int_equal(w.stats.duplicates, 1);
    dmw_outcome_t outcome = outcome_of(fx, ID);
    assert_string_equal_or_say(outcome.text,
        "result 7, call 1", "the task delivered twice has another outcome than its first delivery's");
    assert_conserved(fx, 1);
}

/* Another worker's outcome for the same task, written between a worker's
 * look at the outcomes and its own write (a frozen worker thawing there, a
 * second delivery): the first outcome wins, so it must stay. A look, then
 * a write, lets the second overwrite the first; one step (HSETNX) cannot.
 * The test writes it before the worker's second command naming the
 * outcomes - a worker that writes with its first never has one. */
struct meanwhile {
    fixture_t *fx;
    int looks;          /* commands naming the outcomes the worker was about to send */
    atomic_bool done;   /* the other outcome is written, or the test reads the run now: nothing more */
    atomic_bool wrote;  /* the other outcome was written */
};

static void write_another_outcome_on_second_look(void *ctx)
{
    struct meanwhile *m = ctx;
    if (atomic_load(&m->done))
        return;
    if (++m->looks < 2) {
        fixture_before_next_outcomes_command(m->fx, write_another_outcome_on_second_look, m);
        return;
    }
    atomic_store(&m->done, true);
    dmw_outcome_t other = { .id = 0, .kind = DMW_DONE, .attempts = 1 };
    snprintf(other.worker, sizeof other.worker, "other");
    snprintf(other.text, sizeof other.text, "result 0, from another worker");
    char text[DMW_OUTCOME_MAX];
    redisReply *reply = NULL;
    assert_ok(dmw_outcome_encode(&other, text, sizeof text));
    assert_ok(dmw_redis_call(m->fx->redis, &reply, "HSETNX %s 0 %s", dmw_redis_keys(m->fx->redis)->outcomes, text));
    freeReplyObject(reply);
    atomic_store(&m->wrote, true);
}

/* The last command of @p role that named the outcomes, in words with its line. */
static void last_outcomes_command(const char *role, char *out, size_t size)
{
    snprintf(out, size, "its write");
    for (long i = journal_command_count() - 1; i >= 0; i--) {
        const journal_command_t *c = journal_command(i);
        if (c && strcmp(c->role, role) == 0 && strstr(c->text, " outcomes ") != NULL) {
            char said[600];
            journal_describe(c, said, sizeof said);
            snprintf(out, size, "its write, %s", said);
            return;
        }
    }
}

static void test_dmw_outcome_written_meanwhile_is_kept(void **state)
{
    fixture_t *fx = *state;
    static struct meanwhile m; /* static: the hook may still hold it if a check fails */
    m = (struct meanwhile){ .fx = fx };
    assert_ok(dmw_submit(fx->master, 0, "ok"));
    fixture_before_next_outcomes_command(fx, write_another_outcome_on_second_look, &m);
    static struct thread_worker w; /* static: a failed check leaves the worker thread its memory */
    start_thread_worker(&w, &fx->config, "late", 1);
    kit_worker_must_finish(&w.thread, "a worker with one delivery to make");
    atomic_store(&m.done, true);
    assert_worker_ok(&w);
    dmw_outcome_t outcome = outcome_of(fx, 0);
    if (atomic_load(&m.wrote) && strcmp(outcome.worker, "other") != 0) {
        char write[700];
        last_outcomes_command("worker late", write, sizeof write);
        fail_msg("task 0's outcome is worker %s's (\"%s\"), written over the outcome worker other wrote between "
                 "worker late's look at the outcomes and %s: the first outcome must win - write it in one step that "
                 "happens only if there is none (HSETNX), never a look and then a write", outcome.worker,
                 outcome.text, write);
    }
    assert_conserved(fx, 1);
}

/* ---- the reaper ------------------------------------------------------------------------ */

static void push_record(fixture_t *fx, const char *key, long id, int attempts, const char *payload)
{
    char record[DMW_RECORD_MAX];
    assert_ok(dmw_record_encode(id, attempts, payload, record, sizeof record));
    redisReply *reply = NULL;
    assert_ok(dmw_redis_call(fx->redis, &reply, "LPUSH %s %s", key, record));
    freeReplyObject(reply);
}

static void register_worker(fixture_t *fx, const char *worker, bool alive)
{
    char key[DMW_KEY_MAX];
    redisReply *reply = NULL;
    assert_ok(dmw_redis_call(fx->redis, &reply, "SADD %s %s", dmw_redis_keys(fx->redis)->workers, worker));
    freeReplyObject(reply);
    assert_ok(dmw_key_alive(fx->redis, worker, key, sizeof key));
    if (alive) {
        assert_ok(dmw_redis_call(fx->redis, &reply, "SET %s 1 PX 60000", key));
        freeReplyObject(reply);
    }
}

static void assert_list_holds(fixture_t *fx, const char *key, long id, int attempts, const char *payload)
{
    char expected[DMW_RECORD_MAX];
    assert_ok(dmw_record_encode(id, attempts, payload, expected, sizeof expected));
    redisReply *reply = NULL;
    assert_ok(dmw_redis_call(fx->redis, &reply, "LPOS %s %s", key, expected));
    bool found = reply->type == REDIS_REPLY_INTEGER;
    freeReplyObject(reply);
    if (!found)
        fail_msg("%s does not hold the record '%s'", key, expected);
}

/* Tasks first_id .. first_id + count - 1 recorded in the run but not queued:
 * the test "takes" them by hand, into the processing lists it chooses. */
static void submit_taken(fixture_t *fx, long first_id, long count)
{
    submit_all(fx, first_id, count, "x");
    redisReply *reply = NULL;
    assert_ok(dmw_redis_call(fx->redis, &reply, "DEL %s", dmw_redis_keys(fx->redis)->queue));
    freeReplyObject(reply);
}

/* State built by hand: a silent worker holding two tasks, a live one holding one. */
static void test_dmw_reap_returns_orphans_with_attempt_count(void **state)
{
    fixture_t *fx = *state;
    const dmw_keys_t *k = dmw_redis_keys(fx->redis);
    int max = fx->config.max_attempts;
    char ghost[DMW_KEY_MAX], live[DMW_KEY_MAX];
    assert_ok(dmw_key_processing(fx->redis, "ghost", ghost, sizeof ghost));
    assert_ok(dmw_key_processing(fx->redis, "live", live, sizeof live));
    submit_taken(fx, 1, 3);
    register_worker(fx, "ghost", false);
    register_worker(fx, "live", true);
    push_record(fx, ghost, 1, 0, "x");
    push_record(fx, ghost, 2, max - 1, "x");
    push_record(fx, live, 3, 0, "x");

    long returned = -1, dead = -1;
    assert_ok(dmw_reap(fx->redis, &returned, &dead));
    kit_verdict_rests_on(KIT_WORD_REPORTS); /* the counts are the reaper's word */
    assert_int_equal_or_say(returned, 1, "tasks dmw_reap returned to the queue, of the silent worker's");
    assert_int_equal_or_say(dead, 1, "tasks dmw_reap buried (out of attempts)");
    assert_list_holds(fx, k->queue, 1, 1, "x"); /* back, with the attempt counted */
    assert_list_holds(fx, k->dead, 2, max, "x");
    dmw_outcome_t outcome = outcome_of(fx, 2);
    assert_int_equal_or_say(outcome.kind, DMW_DEAD,
        "the reaped task out of attempts was not dead-lettered (kinds: done 0, failed 1, dead 2)");
    assert_int_equal_or_say(outcome.attempts, max,
        "the buried task's outcome counts another number of attempts than max_attempts");
    assert_int_equal_or_say(processing_length(fx,
        "ghost"), 0, "tasks left in the silent worker's processing list after dmw_reap");
    assert_int_equal_or_say(processing_length(fx,
        "live"), 1, "tasks left in the live worker's processing list (a live worker is never touched)");
    assert_list_holds(fx, live, 3, 0, "x");
    assert_ok(dmw_reap(fx->redis, &returned, &dead));
    kit_verdict_rests_on(KIT_WORD_REPORTS); /* the counts are the reaper's word */
    assert_int_equal_or_say(returned + dead, 0,
        "tasks a second dmw_reap returned or buried (nothing is returned twice)");
    assert_int_equal_or_say(list_length(fx, k->queue), 1, "tasks in the queue after the reaps");
}

/* Several silent workers, tasks at every attempt count: each goes back with
 * exactly one more attempt counted, and only one that has used its last
 * attempt is dead-lettered. The silent workers stay in the run. */
static void test_dmw_reap_buries_only_after_the_last_attempt(void **state)
{
    fixture_t *fx = *state;
    const dmw_keys_t *k = dmw_redis_keys(fx->redis);
    int max = fx->config.max_attempts;
    char first[DMW_KEY_MAX], second[DMW_KEY_MAX];
    assert_ok(dmw_key_processing(fx->redis, "ghost-a", first, sizeof first));
    assert_ok(dmw_key_processing(fx->redis, "ghost-b", second, sizeof second));
    submit_taken(fx, 1, 4);
    register_worker(fx, "ghost-a", false);
    register_worker(fx, "ghost-b", false);
    push_record(fx, first, 1, max - 2, "x"); /* one attempt left after this one */
    push_record(fx, first, 2, 0, "x");
    push_record(fx, second, 3, max - 2, "x");
    push_record(fx, second, 4, max - 1, "x"); /* this was its last attempt */

    long returned = -1, dead = -1;
    assert_ok(dmw_reap(fx->redis, &returned, &dead));
    kit_verdict_rests_on(KIT_WORD_REPORTS); /* the counts are the reaper's word */
    if (returned != 3 || dead != 1)
        fail_msg("dmw_reap returned %ld and dead-lettered %ld task(s) of two silent workers; expected 3 and 1: "
                 "with %d attempts, a task that has ended %d is returned with %d counted, only one that has "
                 "ended %d is dead-lettered", returned, dead, max, max - 2, max - 1, max - 1);
    assert_list_holds(fx, k->queue, 1, max - 1, "x");
    assert_list_holds(fx, k->queue, 2, 1, "x");
    assert_list_holds(fx, k->queue, 3, max - 1, "x");
    assert_list_holds(fx, k->dead, 4, max, "x");
    dmw_outcome_t outcome;
    assert_err(dmw_outcome(fx->master, 1, &outcome), ENOENT); /* returned, not ended */
    assert_int_equal_or_say(outcome_of(fx, 4).attempts, max,
        "the buried task's outcome counts another number of attempts than max_attempts");
    assert_int_equal_or_say(processing_length(fx, "ghost-a") + processing_length(fx, "ghost-b"), 0,
        "tasks left in the silent workers' processing lists after dmw_reap");
    redisReply *reply = NULL;
    assert_ok(dmw_redis_call(fx->redis, &reply, "SCARD %s", k->workers));
    long workers = reply->integer;
    freeReplyObject(reply);
    if (workers != 2)
        fail_msg("%ld worker(s) left in the run after reaping two silent ones; expected 2: the reaper never removes "
                 "a worker (a take it left blocked may still move a task into its list)", workers);
}

/* The client id of the connection blocked in @p command (BLMOVE: a worker's
 * take), or -1; with @p command NULL, any blocked one, whose command is then
 * copied into @p found. */
static long blocked_client(fixture_t *fx, const char *command, char *found, size_t size)
{
    redisReply *reply = NULL;
    assert_ok(dmw_redis_call(fx->redis, &reply, "CLIENT LIST"));
    long id = -1;
    for (const char *line = reply->str; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        char flags[16] = "", cmd[32] = "";
        const char *flags_at = strstr(line, " flags="), *cmd_at = strstr(line, " cmd=");
        const char *end = strchr(line, '\n');
        if (flags_at == NULL || cmd_at == NULL || (end && (flags_at > end || cmd_at > end)))
            continue;
        sscanf(flags_at, " flags=%15s", flags);
        sscanf(cmd_at, " cmd=%31s", cmd);
        bool wanted = command ? strcmp(cmd, command) == 0 : strchr(flags, 'b') != NULL;
        if (wanted && sscanf(line, "id=%ld", &id) == 1) {
            if (found)
                snprintf(found, size, "%s", cmd);
            break;
        }
        id = -1;
    }
    freeReplyObject(reply);
    return id;
}

/* The worker never blocked in BLMOVE: say what it blocks in instead, if anything. */
static void fail_no_blocking_take(fixture_t *fx)
{
    char other[32];
    int64_t start = kit_now_ns();
    while (kit_elapsed_ms(start) < 1000) { /* a short wait is blocked only now and then */
        if (blocked_client(fx, NULL, other, sizeof other) >= 0)
            fail_msg("worker adopter waits on the empty queue in %s%s, not in a take (BLMOVE): a take moves the task "
                     "from the queue into the worker's processing list in one atomic step, so that neither a crash "
                     "nor a lost reply can leave it only in the worker's memory", other, sent_from("worker adopter",
                     other));
        kit_sleep_ms(1);
    }
    fail_msg("worker adopter never blocked in a take (BLMOVE) on the empty queue");
}

/* A worker idle in its take loses its connection, as a dropped network
 * would do it - after a take had moved task 0 into its processing list and
 * the reply was lost (set up by hand). Once reconnected, the worker must
 * adopt that task: it is alive and heartbeating, so no reaper ever will. */
static void test_dmw_worker_adopts_the_task_of_a_lost_reply(void **state)
{
    fixture_t *fx = *state;
    static struct thread_worker w; /* static: a failed check leaves the worker thread its memory */
    start_thread_worker(&w, &fx->config, "adopter", 0);
    int64_t start = kit_now_ns();
    long client;
    while ((client = blocked_client(fx, "blmove", NULL, 0)) < 0) {
        if (kit_worker_done(&w.thread) && w.rc == ENOSYS)
            fail_msg("dmw_worker_run returned ENOSYS: %s", not_written);
        if (kit_elapsed_ms(start) > AWAIT_MS)
            fail_no_blocking_take(fx);
        kit_sleep_ms(5);
    }
    char processing[DMW_KEY_MAX], record[DMW_RECORD_MAX];
    assert_ok(dmw_key_processing(fx->redis, "adopter", processing, sizeof processing));
    assert_ok(dmw_record_encode(0, 0, "ok", record, sizeof record));
    redisReply *reply = NULL;
    assert_ok(dmw_redis_call(fx->redis, &reply, "HSETNX %s 0 ok", dmw_redis_keys(fx->redis)->tasks));
    freeReplyObject(reply);
    assert_ok(dmw_redis_call(fx->redis, &reply, "LPUSH %s %s", processing, record)); /* the lost reply's task */
    freeReplyObject(reply);
    assert_ok(dmw_redis_call(fx->redis, &reply, "CLIENT KILL ID %ld", client));
    freeReplyObject(reply);

    int err = dmw_await(fx->master, AWAIT_MS);
    if (err == ETIMEDOUT && processing_length(fx, "adopter") == 1)
        fail_msg("task 0 stayed in adopter's processing list after its connection was lost and made again: after a "
                 "reconnection a worker first adopts what its own processing list holds (a take whose reply was "
                 "lost); the worker is alive, so no reaper returns it");
    assert_await_ok(err);
    dmw_outcome_t outcome = outcome_of(fx, 0);
    assert_int_equal_or_say(outcome.kind, DMW_DONE,
        "the adopted task did not end done (kinds: done 0, failed 1, dead 2)");
    assert_string_equal_or_say(outcome.worker,
        "adopter", "the adopted task's outcome names another worker than the one that adopted it");
    assert_int_equal_or_say(outcome.attempts, 1,
        "the adopted task's outcome counts another number of attempts than its one");
    assert_ok(dmw_shutdown(fx->master));
    kit_worker_must_finish(&w.thread, "a worker after dmw_shutdown");
    assert_worker_ok(&w);
    assert_int_equal(w.stats.adopted, 1);
    assert_true_or_say(w.stats.reconnects >= 1,
        "the worker whose reply was lost did not reconnect: %ld reconnects", (long)w.stats.reconnects);
    assert_conserved(fx, 1);
}

/* A process function may leave the text empty when it fails: the outcome
 * then carries the error code's name. */
static void test_dmw_error_without_text_is_named(void **state)
{
    fixture_t *fx = *state;
    assert_ok(dmw_submit(fx->master, 0, "fail-quietly"));
    assert_ok(dmw_submit(fx->master, 1, "retry-quietly"));
    static struct thread_worker w; /* static: a failed check leaves the worker thread its memory */
    start_thread_worker(&w, &fx->config, "quiet", 0);
    await_all(fx);
    assert_ok(dmw_shutdown(fx->master));
    kit_worker_must_finish(&w.thread, "a worker after dmw_shutdown");
    dmw_outcome_t failed = outcome_of(fx, 0), dead = outcome_of(fx, 1);
    assert_int_equal_or_say(failed.kind, DMW_FAILED, "task 0 did not end failed (kinds: done 0, failed 1, dead 2)");
    assert_int_equal_or_say(dead.kind, DMW_DEAD, "task 1 was not dead-lettered (kinds: done 0, failed 1, dead 2)");
    if (strcmp(failed.text, dmw_errno_name(EPERM)) != 0 || strcmp(dead.text, dmw_errno_name(EAGAIN)) != 0)
        fail_msg("outcome texts '%s' and '%s' for a task failing with EPERM and one retried with EAGAIN, both "
                 "leaving the text empty; expected '%s' and '%s': an empty text is replaced by the error code's "
                 "name", failed.text, dead.text, dmw_errno_name(EPERM), dmw_errno_name(EAGAIN));
    assert_conserved(fx, 2);
}

/* A worker that takes longer than the visibility timeout but keeps
 * heartbeating is alive: its task must not be taken away from it. */
static void test_dmw_live_slow_worker_is_not_reaped(void **state)
{
    fixture_t *fx = *state;
    char payload[32];
    snprintf(payload, sizeof payload, "sleep %ld", 2 * fx->config.visibility_ms);
    assert_ok(dmw_submit(fx->master, 0, payload));
    static struct thread_worker w; /* static: a failed check leaves the worker thread its memory */
    start_thread_worker(&w, &fx->config, "slow", 0);
    await_all(fx);
    assert_ok(dmw_shutdown(fx->master));
    kit_worker_must_finish(&w.thread, "a worker after dmw_shutdown");
    assert_int_equal_or_say(dmw_work_deliveries(0), 1,
        "the task submitted just before the shutdown ran another number of times than once");
    assert_int_equal_or_say(outcome_of(fx, 0).attempts, 1,
        "the task submitted just before the shutdown counts another number of attempts than one");
    dmw_stats_t stats = assert_conserved(fx, 1);
    assert_int_equal(stats.retries, 0);
}

/* ---- worker processes: killed, crashed, frozen -------------------------------------- */

/* SIGKILL in the middle of a task: the reaper returns it, another worker finishes it. */
static void test_dmw_killed_worker_task_is_recovered(void **state)
{
    fixture_t *fx = *state;
    int victim = spawn_worker(fx, "victim", 0);
    assert_ok(dmw_submit(fx->master, 0, "sleep-first 60000"));
    fixture_await_taken(fx, "victim");
    kit_sleep_ms(100); /* well into its minute of work: past any step right after the take */
    fixture_signal(fx, victim, SIGKILL);
    assert_code_or_say(fixture_join(fx, victim, AWAIT_MS), 0, "the wait for the worker killed by SIGKILL");
    int heir = spawn_worker(fx, "heir", 0);
    await_all(fx);
    dmw_outcome_t outcome = outcome_of(fx, 0);
    assert_int_equal_or_say(outcome.kind, DMW_DONE,
        "the killed worker's task did not end done (kinds: done 0, failed 1, dead 2)");
    assert_string_equal_or_say(outcome.worker,
        "heir", "the killed worker's task was finished by another worker than the heir");
    assert_int_equal_or_say(outcome.attempts, 2, "the killed worker's task counts another number of attempts than two");
    finish_processes(fx);
    assert_int_equal(child_stats(fx, heir)->completed, 1);
    dmw_stats_t stats = assert_conserved(fx, 1);
    assert_int_equal(stats.retries, 1);
}

/* The worker dies right after its first command once the work is done that
 * touches where the task is or how it ended (the outcomes, its list). With
 * the outcome written before the acknowledgement, the task is safe whatever
 * that command was: either it wrote the outcome, or the task is still in the
 * worker's list for the reaper. Had the acknowledgement gone first, the task
 * would be gone with no outcome. */
static void tell_first_crash(void *ctx, char *out, size_t size)
{
    (void)ctx;
    for (long i = 0; i < journal_command_count(); i++) {
        const journal_command_t *c = journal_command(i);
        if (c && c->crashed_after && strcmp(c->role, "worker first") == 0) {
            char said[600];
            journal_describe(c, said, sizeof said);
            snprintf(out, size, "worker first was killed right after its first command on task 0's places once it "
                     "was done, its command %d: %s", c->number, said);
            return;
        }
    }
    snprintf(out, size, "worker first was to be killed right after its first command on task 0's places once it was "
             "done");
}

static void test_dmw_crash_between_outcome_and_ack_loses_nothing(void **state)
{
    fixture_t *fx = *state;
    books_t books = { .expect = expected_kind, .story = tell_first_crash, .handed_out_again = true };
    fx->config.visibility_ms = fixture_scale(60000); /* no live worker is ever taken for dead */
    int first = spawn_worker(fx, "first", 0);
    assert_ok(dmw_submit(fx->master, 0, "crash-after-outcome"));
    assert_ok(dmw_submit(fx->master, 1, "ok"));
    assert_code_or_say(fixture_join(fx, first, AWAIT_MS), 0, "the wait for the worker that crashed");
    if (fx->children[first].reported && fx->children[first].report.rc == ENOSYS)
        fail_msg("dmw_worker_run returned ENOSYS: %s", not_written);
    if (fx->children[first].reported)
        fail_msg("worker first: dmw_worker_run returned %s instead of dying at its crash point (after its first "
                 "command once task 0 was done)", dmw_errno_name(fx->children[first].report.rc));
    forget_heartbeat(fx, "first"); /* silent for good: as if its visibility timeout had passed */
    int second = spawn_worker(fx, "second", 0);
    int err = dmw_await(fx->master, AWAIT_MS);
    if (err != 0)
        books_check(fx, err, &books);
    /* The crashed worker's list still names task 0 until a reaper sees it
     * silent; it is then removed, not delivered again: it has its outcome. */
    int64_t start = kit_now_ns();
    while (processing_length(fx, "first") > 0) {
        if (kit_elapsed_ms(start) > AWAIT_MS)
            fail_msg("the crashed worker's task was never reaped");
        assert_ok(dmw_reap(fx->redis, NULL, NULL));
        kit_sleep_ms(50);
    }
    finish_processes(fx);
    books_check(fx, 0, &books);
    report_of(fx, second);
    dmw_stats_t stats = assert_conserved(fx, 2);
    if (strcmp(outcome_of(fx, 0).worker, "first") == 0) /* it had its outcome: removed, not delivered again */
        assert_int_equal(stats.retries, 0);
}

/* A worker frozen (SIGSTOP) past its visibility timeout is presumed dead;
 * its task goes to another worker. When it thaws and finishes, its late
 * outcome must change nothing. */
static void test_dmw_paused_worker_coming_back_changes_nothing(void **state)
{
    fixture_t *fx = *state;
    int frozen = spawn_worker(fx, "frozen", 1);
    assert_ok(dmw_submit(fx->master, 0, "sleep 300"));
    fixture_await_taken(fx, "frozen");
    fixture_signal(fx, frozen, SIGSTOP);
    spawn_worker(fx, "other", 0);
    await_all(fx);
    dmw_outcome_t outcome = outcome_of(fx, 0);
    assert_string_equal_or_say(outcome.worker,
        "other", "the frozen worker's task was finished by another worker than the one that took it over");
    assert_int_equal_or_say(outcome.attempts, 2, "the frozen worker's task counts another number of attempts than two");
    fixture_signal(fx, frozen, SIGCONT);
    assert_code_or_say(fixture_join(fx, frozen, AWAIT_MS), 0, "the wait for the frozen worker, once it came back");
    const dmw_worker_stats_t *late = child_stats(fx, frozen);
    assert_int_equal(late->taken, 1);
    assert_int_equal(late->duplicates, 1);
    assert_int_equal(late->completed, 0);
    outcome = outcome_of(fx, 0);
    assert_string_equal_or_say(outcome.worker,
        "other", "the frozen worker, back late, overwrote the outcome (the first outcome stands)");
    assert_int_equal_or_say(processing_length(fx,
        "frozen"), 0, "tasks left in the frozen worker's processing list once it left");
    finish_processes(fx);
    assert_conserved(fx, 1);
}

/* ---- a crash between every two commands ------------------------------------------- */

/* A worker or a reaper process, killed right after one of its commands (or
 * never, on the run that counts them), and what it sent the run before. */
struct crash_run {
    fixture_t *fx;
    const char *path;              /* "a completed task" */
    int child;                     /* the process killed */
    int crash_after;               /* its command after which it is killed; 0: none */
    int commands;                  /* commands it sent on the run without a crash */
    journal_command_t counted[48]; /* those commands */
    long deliveries;               /* a worker's max_tasks: the deliveries its path takes */
    const long *written_before;    /* tasks whose outcome the test wrote by hand before the run */
    int written_before_count;
};

/* The story of one crash run, for the books' messages. */
static void tell_crash(void *ctx, char *out, size_t size)
{
    const struct crash_run *run = ctx;
    const fixture_child_t *child = &run->fx->children[run->child];
    const journal_command_t *at = journal_find(child->was, child->role, run->crash_after);
    const char *who = strcmp(child->role, "reaper") == 0 ? "the reaper (dmw_reap, in a process of its own)"
                                                         : child->role;
    char said[600], next[700] = "; that was its last command";
    if (run->crash_after == 0) {
        snprintf(out, size, "%s, on %s, was not killed: this run counts its commands", who, run->path);
        return;
    }
    if (at == NULL || !at->crashed_after) {
        snprintf(out, size, "%s, on %s, was to be killed right after its command %d, but this time sent only %d",
                 who, run->path, run->crash_after, journal_pass_length(child->was, child->role));
        return;
    }
    journal_describe(at, said, sizeof said);
    if (run->crash_after < run->commands) {
        char then[600];
        journal_describe(&run->counted[run->crash_after], then, sizeof then);
        snprintf(next, sizeof next, "; it never sent its command %d, %s", run->crash_after + 1, then);
    }
    snprintf(out, size, "%s, on %s, was killed right after its command %d of %d, %s%s", who, run->path,
             run->crash_after, run->commands, said, next);
}

/* The counting run: keep the commands of the process, and list them in the log. */
static void count_commands(struct crash_run *run)
{
    const fixture_child_t *child = &run->fx->children[run->child];
    int length = journal_pass_length(child->was, child->role);
    if (length > (int)(sizeof run->counted / sizeof run->counted[0]))
        fail_msg("%s sent %d commands for %s; the test follows at most %zu", child->role, length, run->path,
                 sizeof run->counted / sizeof run->counted[0]);
    fprintf(stderr, "[ crash    ] %s: %s sends %d command(s); the test kills it after each in turn:\n", run->path,
            child->role, length);
    for (int i = 1; i <= length; i++) {
        const journal_command_t *command = journal_find(child->was, child->role, i);
        if (command == NULL)
            fail_msg("the journal lost command %d of %s", i, child->role);
        run->counted[i - 1] = *command;
        fprintf(stderr, "[ crash    ]   %2d. %s\n", i, command->text);
    }
    run->commands = length;
}

static void join_crashed(struct crash_run *run)
{
    const fixture_child_t *child = &run->fx->children[run->child];
    bool ended = fixture_join(run->fx, run->child, AWAIT_MS) == 0;
    if (!ended && strcmp(child->role, "reaper") == 0)
        fail_msg("the reaper (dmw_reap, in a process of its own) did not end its pass within %ld ms", AWAIT_MS);
    if (!ended)
        fail_msg("%s, on %s, did not return from dmw_worker_run within %ld ms, although it was asked for %ld "
                 "deliveries (max_tasks) and the run had no more to give: a worker leaves once it has handled "
                 "max_tasks deliveries", child->role, run->path, AWAIT_MS, run->deliveries);
    if (run->crash_after == 0)
        report_of(run->fx, run->child); /* it ran to its end, and returned 0 */
}

/* The run after the crash: the silent worker's tasks reaped, an heir that
 * finishes them, then the books. */
static void recover_and_check(struct crash_run *run)
{
    fixture_t *fx = run->fx;
    long returned = 0, dead = 0;
    assert_await_ok(dmw_reap(fx->redis, &returned, &dead));
    dmw_worker_config_t knobs = worker_named("heir", 0);
    knobs.take_timeout_ms = 20;
    int heir = fixture_spawn(fx, &knobs);
    int err = dmw_await(fx->master, AWAIT_MS);
    assert_ok(dmw_shutdown(fx->master));
    if (fixture_join(fx, heir, AWAIT_MS) != 0)
        fail_msg("worker heir did not leave after the shutdown");
    books_t books = { .expect = expected_kind, .story = tell_crash, .story_ctx = run, .handed_out_again = true,
                      .written_before = run->written_before, .written_before_count = run->written_before_count };
    books_check(fx, err, &books);
    report_of(fx, heir);
}

/* One task with @p payload; a worker process that makes @p deliveries of it
 * and is killed after its command run->crash_after; the heir finishes. */
static void crash_worker_once(struct crash_run *run, const char *payload, long deliveries)
{
    fixture_t *fx = run->fx;
    fixture_restart_run(fx);
    assert_ok(dmw_submit(fx->master, 0, payload));
    run->deliveries = deliveries;
    dmw_worker_config_t knobs = worker_named("victim", deliveries);
    run->child = fixture_spawn_crashing(fx, &knobs, run->crash_after);
    join_crashed(run);
    forget_heartbeat(fx, "victim");
    recover_and_check(run);
}

/* Count the worker's commands on a run without a crash, then kill it after
 * each of them in turn: every crash leaves the books balanced. */
static void crash_worker_at_every_step(fixture_t *fx, const char *path, const char *payload, long deliveries)
{
    static struct crash_run run; /* large, and read by the books' story */
    run = (struct crash_run){ .fx = fx, .path = path };
    fx->config.visibility_ms = fixture_scale(60000); /* a silent worker is forgotten by hand, never by time */
    crash_worker_once(&run, payload, deliveries);
    count_commands(&run);
    for (run.crash_after = 1; run.crash_after <= run.commands; run.crash_after++)
        crash_worker_once(&run, payload, deliveries);
}

static void test_dmw_crash_at_every_step_of_a_completed_task(void **state)
{
    crash_worker_at_every_step(*state, "a completed task", "ok", 1);
}

static void test_dmw_crash_at_every_step_of_a_failed_task(void **state)
{
    crash_worker_at_every_step(*state, "a task that fails for good", "fail", 1);
}

static void test_dmw_crash_at_every_step_of_a_retried_task(void **state)
{
    crash_worker_at_every_step(*state, "a task retried once, then completed", "retry-first", 2);
}

static void test_dmw_crash_at_every_step_of_a_dead_lettered_task(void **state)
{
    crash_worker_at_every_step(*state, "a task dead-lettered after its last attempt", "retry", 3);
}

/* A silent worker "ghost" holding three tasks - one to return, one on its
 * last attempt, one that already has its outcome - and a live one holding a
 * fourth. */
static void leave_orphans(fixture_t *fx)
{
    char ghost[DMW_KEY_MAX], live[DMW_KEY_MAX];
    int max = fx->config.max_attempts;
    assert_ok(dmw_key_processing(fx->redis, "ghost", ghost, sizeof ghost));
    assert_ok(dmw_key_processing(fx->redis, "live", live, sizeof live));
    assert_ok(dmw_submit(fx->master, 1, "ok"));
    assert_ok(dmw_submit(fx->master, 2, "retry"));
    assert_ok(dmw_submit(fx->master, 3, "ok"));
    assert_ok(dmw_submit(fx->master, 4, "ok"));
    redisReply *reply = NULL;
    assert_ok(dmw_redis_call(fx->redis, &reply, "DEL %s", dmw_redis_keys(fx->redis)->queue));
    freeReplyObject(reply);
    assert_ok(dmw_redis_call(fx->redis, &reply, "HSET %s 3 %s", dmw_redis_keys(fx->redis)->outcomes,
                             "done ghost 1 result 3, written before ghost died"));
    freeReplyObject(reply);
    register_worker(fx, "ghost", false);
    register_worker(fx, "live", true);
    push_record(fx, ghost, 1, 0, "ok");
    push_record(fx, ghost, 2, max - 1, "retry");
    push_record(fx, ghost, 3, 0, "ok");
    push_record(fx, live, 4, 0, "ok");
}

/* How many records of task @p id with @p attempts the list @p key holds, and of the task in all. */
static int copies_in(fixture_t *fx, const char *key, long id, int attempts, int *all)
{
    redisReply *reply = NULL;
    int exact = 0;
    *all = 0;
    assert_ok(dmw_redis_call(fx->redis, &reply, "LRANGE %s 0 -1", key));
    for (size_t i = 0; reply->type == REDIS_REPLY_ARRAY && i < reply->elements; i++) {
        dmw_task_t task;
        if (dmw_record_decode(reply->element[i]->str, &task) == 0 && task.id == id) {
            (*all)++;
            exact += task.attempt == attempts;
        }
    }
    freeReplyObject(reply);
    return exact;
}

/* After the killed reaper and one whole pass: task 1 back once with one
 * attempt counted, task 4 untouched with its live worker. */
static void assert_reaped(struct crash_run *run)
{
    fixture_t *fx = run->fx;
    char live[DMW_KEY_MAX], story[1200];
    int all = 0;
    assert_ok(dmw_key_processing(fx->redis, "live", live, sizeof live));
    tell_crash(run, story, sizeof story);
    if (copies_in(fx, dmw_redis_keys(fx->redis)->queue, 1, 1, &all) != 1 || all != 1)
        fail_msg("after a reaper killed mid-pass and a whole pass after it, the queue holds %d record(s) of task 1, "
                 "which the silent worker ghost held with no attempt counted; expected exactly one, with one "
                 "attempt counted: a reaper's move happens once, in one step, whatever crashed before it\n"
                 "  what the test did: %s", all, story);
    if (copies_in(fx, live, 4, 0, &all) != 1 || all != 1)
        fail_msg("the live worker's task 4 was touched by the reaper (its list holds %d record(s) of it); a worker "
                 "that heartbeats keeps its tasks\n  what the test did: %s", all, story);
}

/* A reaper process killed after its command run->crash_after, a whole pass
 * after it; then the live worker falls silent too, and an heir finishes. */
static void crash_reaper_once(struct crash_run *run)
{
    fixture_t *fx = run->fx;
    fixture_restart_run(fx);
    leave_orphans(fx);
    run->child = fixture_spawn_reaper(fx, run->crash_after);
    join_crashed(run);
    assert_await_ok(dmw_reap(fx->redis, NULL, NULL));
    assert_reaped(run);
    forget_heartbeat(fx, "live");
    recover_and_check(run);
}

static void test_dmw_reaper_crash_at_every_step_loses_nothing(void **state)
{
    fixture_t *fx = *state;
    static struct crash_run run; /* large, and read by the books' story */
    static const long ghost_wrote[] = { 3 }; /* leave_orphans(): ghost died between outcome and acknowledgement */
    run = (struct crash_run){ .fx = fx, .path = "a pass over a silent worker's three tasks",
                              .written_before = ghost_wrote, .written_before_count = 1 };
    fx->config.visibility_ms = fixture_scale(60000);
    crash_reaper_once(&run);
    count_commands(&run);
    for (run.crash_after = 1; run.crash_after <= run.commands; run.crash_after++)
        crash_reaper_once(&run);
}

/* ---- generated crash sequences ------------------------------------------------------ */

/* The tests above kill one process at each of its steps on one path. These
 * draw whole runs from the test's seed: a few tasks of every kind, then
 * workers and reapers one after the other, each killed after a command drawn
 * at random (or never, when the draw is past its last), so that crashes
 * meet each other: a worker dying on its second task after finishing the
 * first, a reaper dying over the tasks of a worker that died mid-retry, a
 * second worker adopting what the first left. The run is shut down from the
 * start, so each worker drains the queue and leaves; one process runs at a
 * time, so each one's commands, and so the crash points, are the same on
 * every run of a seed. Then dmw_reap, an heir, and the books. */
enum { SEQUENCES = 16, SEQUENCE_TASKS = 4, SEQUENCE_ACTS = 3 };

/* One process of a sequence. */
struct act {
    bool reaper;         /* a pass of dmw_reap, else a worker */
    char name[16];       /* a worker's name: a1, a2, a3 */
    int crash_after;     /* the command after which it is killed */
    int child;           /* its index in the fixture */
};

/* One drawn run. */
struct sequence {
    fixture_t *fx;
    int number;                               /* 1 .. SEQUENCES */
    int tasks;                                /* tasks 0 .. tasks-1 */
    const char *payloads[SEQUENCE_TASKS];
    int acts;
    struct act act[SEQUENCE_ACTS];
};

static void draw_sequence(kit_rng_t *rng, struct sequence *seq)
{
    static const char *const kinds[] = { "ok", "fail", "retry-first", "retry" };
    seq->tasks = 1 + (int)kit_rng_below(rng, SEQUENCE_TASKS);
    for (int t = 0; t < seq->tasks; t++)
        seq->payloads[t] = kinds[kit_rng_below(rng, 4)];
    seq->acts = 1 + (int)kit_rng_below(rng, SEQUENCE_ACTS);
    for (int a = 0; a < seq->acts; a++) {
        struct act *act = &seq->act[a];
        act->reaper = a > 0 && kit_rng_below(rng, 3) == 0; /* the first act has something to do */
        snprintf(act->name, sizeof act->name, "a%d", a + 1);
        /* A worker sends a handful of commands a delivery, a reaper a few a silent worker. */
        act->crash_after = 1 + (int)kit_rng_below(rng, act->reaper ? 8 : 6 * (unsigned)seq->tasks + 4);
    }
}

/* What became of one act, for the story: killed after which command, or ran to its end. */
static size_t tell_act(const struct sequence *seq, const struct act *act, char *out, size_t size)
{
    const fixture_child_t *child = &seq->fx->children[act->child];
    const journal_command_t *at = journal_find(child->was, child->role, act->crash_after);
    char said[600];
    if (at == NULL || !at->crashed_after)
        return (size_t)snprintf(out, size, "%s ran to its end (%d commands); ", child->role,
                                journal_pass_length(child->was, child->role));
    journal_describe(at, said, sizeof said);
    return (size_t)snprintf(out, size, "%s was killed right after its command %d, %s; ", child->role,
                            act->crash_after, said);
}

static void tell_sequence(void *ctx, char *out, size_t size)
{
    const struct sequence *seq = ctx;
    size_t used = (size_t)snprintf(out, size, "generated run %d of %d (seed %llu): tasks", seq->number, SEQUENCES,
                                   (unsigned long long)kit_test_seed());
    for (int t = 0; t < seq->tasks && used < size; t++)
        used += (size_t)snprintf(out + used, size - used, " %d \"%s\"%s", t, seq->payloads[t],
                                 t + 1 < seq->tasks ? "," : "; then ");
    for (int a = 0; a < seq->acts && used < size; a++)
        used += tell_act(seq, &seq->act[a], out + used, size - used);
    if (used < size)
        snprintf(out + used, size - used, "then dmw_reap and an heir finished the run");
}

/* One act, alone: it ends (a worker drains the shut-down run and leaves) or dies at its crash point. */
static void run_act(struct sequence *seq, struct act *act)
{
    fixture_t *fx = seq->fx;
    dmw_worker_config_t knobs = worker_named(act->name, 0);
    knobs.take_timeout_ms = 20;
    act->child = act->reaper ? fixture_spawn_reaper(fx, act->crash_after)
                             : fixture_spawn_crashing(fx, &knobs, act->crash_after);
    const fixture_child_t *child = &fx->children[act->child];
    if (fixture_join(fx, act->child, AWAIT_MS) != 0) {
        char story[2400];
        tell_sequence(seq, story, sizeof story);
        fail_msg("%s did not end within %ld ms, although the run was shut down and it was alone: %s\n"
                 "  what the test did: %s", act->reaper ? "the reaper (dmw_reap)" : child->role, AWAIT_MS,
                 act->reaper ? "one pass of dmw_reap must end" : "a worker drains the queue, then leaves", story);
    }
    if (child->reported)
        report_of(fx, act->child); /* it was not killed: it must have returned 0 */
    else if (!act->reaper)
        forget_heartbeat(fx, act->name); /* silent for good, as if its visibility timeout had passed */
}

static void run_sequence(struct sequence *seq)
{
    fixture_t *fx = seq->fx;
    fixture_restart_run(fx);
    for (int t = 0; t < seq->tasks; t++)
        assert_ok(dmw_submit(fx->master, t, seq->payloads[t]));
    assert_ok(dmw_shutdown(fx->master));
    for (int a = 0; a < seq->acts; a++)
        run_act(seq, &seq->act[a]);
    assert_await_ok(dmw_reap(fx->redis, NULL, NULL));
    dmw_worker_config_t knobs = worker_named("heir", 0);
    knobs.take_timeout_ms = 20;
    int heir = fixture_spawn(fx, &knobs);
    int err = dmw_await(fx->master, AWAIT_MS);
    if (fixture_join(fx, heir, AWAIT_MS) != 0)
        fail_msg("worker heir did not leave the shut-down run");
    books_t books = { .expect = expected_kind, .story = tell_sequence, .story_ctx = seq, .handed_out_again = true };
    books_check(fx, err, &books);
    report_of(fx, heir);
}

static void test_dmw_generated_crash_sequences_lose_nothing(void **state)
{
    static struct sequence seq; /* read by the books' story */
    kit_rng_t rng;
    kit_rng_seed(&rng, kit_test_seed(), 13);
    fixture_t *fx = *state;
    fx->config.visibility_ms = fixture_scale(60000); /* a silent process is forgotten by hand, never by time */
    for (int number = 1; number <= SEQUENCES; number++) {
        seq = (struct sequence){ .fx = fx, .number = number };
        draw_sequence(&rng, &seq);
        run_sequence(&seq);
    }
}

/* ---- the server restarts ------------------------------------------------------------ */

static void test_dmw_worker_reconnects_after_server_restart(void **state)
{
    fixture_t *fx = *state;
    enum { TASKS = 40, WORKERS = 2 };
    if (!fixture_owns_server(fx))
        skip(); /* $REDIS_URL's server is not ours to restart */
    int workers[WORKERS];
    workers[0] = spawn_worker(fx, "w0", 0);
    workers[1] = spawn_worker(fx, "w1", 0);
    submit_all(fx, 0, TASKS, "sleep 20");
    fixture_await_outcomes(fx, TASKS / 4);
    assert_ok(dmw_server_restart(fx->server, 10000));
    await_all(fx); /* the master reconnects too */
    finish_processes(fx);
    long reconnects = 0, completed = 0, duplicates = 0;
    for (int i = 0; i < WORKERS; i++) {
        reconnects += child_stats(fx, workers[i])->reconnects;
        completed += child_stats(fx, workers[i])->completed;
        duplicates += child_stats(fx, workers[i])->duplicates;
    }
    assert_true_or_say(reconnects >= WORKERS,
        "the workers reconnected %ld times in all after the server restarted: each must", reconnects);
    /* A result written just as the server went away reaches it while its
     * reply is lost: its worker, delivered the task again, finds the outcome
     * and counts a duplicate. So each task is written at most once, and each
     * is written or found written; the books below say it was done once. */
    assert_true_or_say(completed <= TASKS && completed + duplicates >= TASKS,
        "the workers wrote %ld results and found %ld already written, for %d tasks: each task must be written "
        "once, or found written", completed, duplicates, TASKS);
    dmw_stats_t stats = assert_conserved(fx, TASKS);
    assert_int_equal(stats.completed, TASKS);
}

/* ---- many processes ------------------------------------------------------------------ */

enum { PROCESSES = 4, MANY = 200 };

/* Every task completed exactly once by four worker processes. */
static void test_dmw_stress_every_task_once_across_processes(void **state)
{
    fixture_t *fx = *state;
    kit_rng_t rng;
    kit_rng_seed(&rng, kit_test_seed(), 7);
    char names[PROCESSES][16];
    for (int i = 0; i < PROCESSES; i++) {
        snprintf(names[i], sizeof names[i], "p%d", i);
        spawn_worker(fx, names[i], 0);
    }
    for (long id = 0; id < MANY; id++) {
        char payload[32];
        snprintf(payload, sizeof payload, "sleep %d", (int)kit_rng_below(&rng, 4));
        assert_ok(dmw_submit(fx->master, id, payload));
    }
    await_all(fx);
    finish_processes(fx);
    long completed = 0;
    for (int i = 0; i < PROCESSES; i++)
        completed += child_stats(fx, i)->completed;
    for (long id = 0; id < MANY; id++)
        assert_int_equal_or_say(outcome_of(fx, id).kind, DMW_DONE,
            "task %ld did not end done (kinds: done 0, failed 1, dead 2)", id);
    assert_int_equal_or_say(completed, MANY,
        "tasks the workers completed (each outcome written by exactly one worker)");
    assert_int_equal(assert_conserved(fx, MANY).completed, MANY);
}

/* Successes, retries, permanent failures and dead letters, with one worker
 * killed in the middle of a task: the books still balance. */
static void test_dmw_stress_failures_and_a_crash_conserve_tasks(void **state)
{
    fixture_t *fx = *state;
    kit_rng_t rng;
    kit_rng_seed(&rng, kit_test_seed(), 11);
    static const char *const payloads[] = { "ok", "sleep 2", "retry", "fail", "sleep-first 5" };
    int victim = spawn_worker(fx, "victim", 0);
    assert_ok(dmw_submit(fx->master, 0, "sleep-first 60000"));
    fixture_await_taken(fx, "victim");
    char names[PROCESSES][16];
    for (int i = 1; i < PROCESSES; i++) {
        snprintf(names[i], sizeof names[i], "m%d", i);
        spawn_worker(fx, names[i], 0);
    }
    long expected_dead = 0, expected_failed = 0;
    for (long id = 1; id <= MANY / 2; id++) {
        const char *payload = payloads[kit_rng_below(&rng, 5)];
        expected_dead += strcmp(payload, "retry") == 0;
        expected_failed += strcmp(payload, "fail") == 0;
        assert_ok(dmw_submit(fx->master, id, payload));
    }
    fixture_await_outcomes(fx, 10);
    fixture_signal(fx, victim, SIGKILL);
    await_all(fx);
    finish_processes(fx);
    dmw_stats_t stats = assert_conserved(fx, MANY / 2 + 1);
    assert_int_equal(stats.dead_lettered, expected_dead);
    assert_int_equal(stats.failed, expected_failed);
    assert_int_equal_or_say(list_length(fx, dmw_redis_keys(fx->redis)->dead), expected_dead,
        "tasks in the dead-letter list, of those dead-lettered");
    assert_int_equal_or_say(outcome_of(fx, 0).attempts, 2,
        "the killed worker's task, finished by another, counts another number of attempts than two");
}

/* Every test needs a Redis server and real threads (and some, other
 * processes): none runs on a schedule in grading (kit_test.h). */
#define FIXTURE_TEST(test) \
    { #test, test, fixture_setup, fixture_teardown, &kit_real_threads }

static const struct CMUnitTest tests[] = {
    FIXTURE_TEST(test_dmw_calls_with_bad_arguments_give_einval),
    FIXTURE_TEST(test_dmw_unreachable_server_is_reported),
    FIXTURE_TEST(test_dmw_one_worker_completes_every_task),
    FIXTURE_TEST(test_dmw_worker_waits_for_work_and_leaves_on_shutdown),
    FIXTURE_TEST(test_dmw_worker_drains_tasks_submitted_just_before_the_shutdown),
    FIXTURE_TEST(test_dmw_always_failing_task_is_dead_lettered),
    FIXTURE_TEST(test_dmw_duplicate_delivery_writes_one_result),
    FIXTURE_TEST(test_dmw_outcome_written_meanwhile_is_kept),
    FIXTURE_TEST(test_dmw_reap_returns_orphans_with_attempt_count),
    FIXTURE_TEST(test_dmw_reap_buries_only_after_the_last_attempt),
    FIXTURE_TEST(test_dmw_live_slow_worker_is_not_reaped),
    FIXTURE_TEST(test_dmw_worker_adopts_the_task_of_a_lost_reply),
    FIXTURE_TEST(test_dmw_error_without_text_is_named),
    FIXTURE_TEST(test_dmw_killed_worker_task_is_recovered),
    FIXTURE_TEST(test_dmw_crash_between_outcome_and_ack_loses_nothing),
    FIXTURE_TEST(test_dmw_paused_worker_coming_back_changes_nothing),
    FIXTURE_TEST(test_dmw_crash_at_every_step_of_a_completed_task),
    FIXTURE_TEST(test_dmw_crash_at_every_step_of_a_failed_task),
    FIXTURE_TEST(test_dmw_crash_at_every_step_of_a_retried_task),
    FIXTURE_TEST(test_dmw_crash_at_every_step_of_a_dead_lettered_task),
    FIXTURE_TEST(test_dmw_reaper_crash_at_every_step_loses_nothing),
    FIXTURE_TEST(test_dmw_generated_crash_sequences_lose_nothing),
    FIXTURE_TEST(test_dmw_worker_reconnects_after_server_restart),
    FIXTURE_TEST(test_dmw_stress_every_task_once_across_processes),
    FIXTURE_TEST(test_dmw_stress_failures_and_a_crash_conserve_tasks),
};

KIT_TEST_MAIN(tests)
