/**
 * @file test_keyed.c
 * @brief Chapter 06 tests: one key strictly in order, different keys in parallel, nothing lost.
 *
 * Tasks run on pool threads, so they only *record* what they saw (atomics,
 * per-key logs, result structs); the main thread asserts. Every wait for a
 * future is timed (KIT_HANG_MS): an executor that strands a task fails the
 * test instead of hanging it.
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_test.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keyed.h"
#include "kit_errno.h"
#include "kit_thread.h"
#include "kit_time.h"

static tpool_t *make_pool(size_t threads, size_t queue, bq_policy_t policy, long keep_alive_ms)
{
    tpool_config_t config = { threads, queue, keep_alive_ms, policy, "kx" };
    tpool_t *pool = NULL;
    assert_ok(tpool_create(&pool, &config));
    return pool;
}

static keyed_t *make_executor(tpool_t *pool)
{
    keyed_t *kx = NULL;
    assert_ok(keyed_create(&kx, pool));
    assert_non_null_or_say(kx, "keyed_create returned 0 but left *out NULL");
    return kx;
}

/* Close and wait with a bound before destroying: an executor that never
 * drains fails the test here instead of hanging in keyed_destroy(). */
static void shut_down(keyed_t *kx)
{
    assert_ok(keyed_close(kx));
    int err = keyed_await_termination(kx, KIT_HANG_MS);
    if (err == ETIMEDOUT)
        fail_msg("keyed_await_termination: still not drained after %ld ms (%zu keys in the map)", KIT_HANG_MS,
                 keyed_active_keys(kx));
    assert_code_or_say(err, 0, "keyed_await_termination after keyed_close");
    keyed_destroy(kx);
}

static void *must_get(future_t *f, const char *what)
{
    void *result = NULL;
    int err = future_get_timed(f, &result, KIT_HANG_MS);
    if (err == ETIMEDOUT)
        fail_msg("%s: not finished after %ld ms - a task stranded with no drain to run it?", what, KIT_HANG_MS);
    assert_code_or_say(err, 0, "future_get_timed on %s", what);
    return result;
}

/* Test side only (the library itself never polls): a drain removes its key
 * just *after* its last task has finished, so give it a moment. */
static void await_active_keys(keyed_t *kx, size_t count)
{
    int64_t start = kit_now_ns();
    while (keyed_active_keys(kx) != count && kit_elapsed_ms(start) < KIT_HANG_MS)
        kit_sleep_ms(1);
    size_t active = keyed_active_keys(kx);
    if (active != count)
        fail_msg("keyed_active_keys() stayed %zu for %ld ms, expected %zu: a drain left its key in the map?",
                 active, KIT_HANG_MS, count);
}

static future_t *submit(keyed_t *kx, const char *key, void *(*fn)(void *), void *arg)
{
    future_t *f = NULL;
    assert_ok(keyed_submit(kx, key, fn, arg, &f));
    assert_non_null_or_say(f, "keyed_submit returned 0 but left *out NULL");
    return f;
}

/* ---- tasks --------------------------------------------------------------------- */

static void *plus_one(void *arg)
{
    return (void *)((intptr_t)arg + 1);
}

static void *count_up(void *counter)
{
    atomic_fetch_add((atomic_long *)counter, 1);
    return NULL;
}

/* Holds its key (and a pool thread) until the test counts the latch down. */
static void *hold_key(void *latch)
{
    kit_latch_wait(latch, KIT_HANG_MS);
    return NULL;
}

/* The same, as a plain pool task: keeps a pool worker busy. */
static void hold_worker(void *latch)
{
    kit_latch_wait(latch, KIT_HANG_MS);
}

static void nothing(void *arg)
{
    (void)arg;
}

static void count_latch_down(void *latch)
{
    kit_latch_count_down(latch);
}

/* ---- arguments, creation, memory --------------------------------------------------- */

static void test_keyed_create_rejects_bad_arguments(void **state)
{
    (void)state;
    tpool_t *pool = make_pool(1, 4, bq_policy_abort(), 100);
    keyed_t *kx = (keyed_t *)&kx; /* not NULL: create must reset it on failure */
    assert_err(keyed_create(NULL, pool), EINVAL);
    assert_err(keyed_create(&kx, NULL), EINVAL);
    assert_null_or_say(kx, "keyed_create failed with EINVAL but did not set *out to NULL");
    tpool_destroy(pool);
}

static int create_and_destroy(void *pool)
{
    keyed_t *kx = (keyed_t *)&kx; /* not NULL: create must reset it on failure */
    int err = keyed_create(&kx, pool);
    if (err != 0 && kx != NULL)
        return err == ENOSYS ? ENOSYS : EFAULT; /* out must be NULL after a failure (a stub is told as one) */
    keyed_destroy(kx);
    return err;
}

/* Every allocation create makes, failed in turn - however many it makes:
 * ENOMEM, out NULL, nothing leaked. */
static void test_keyed_create_out_of_memory_leaks_nothing(void **state)
{
    (void)state;
    tpool_t *pool = make_pool(1, 4, bq_policy_abort(), 100);
    assert_true_or_say(kit_sweep_allocation_failures("keyed_create", create_and_destroy, pool) >= 1,
        "keyed_create allocated nothing: the executor must live in memory it allocates");
    tpool_destroy(pool);
}

static void test_keyed_calls_with_bad_arguments_give_einval(void **state)
{
    (void)state;
    tpool_t *pool = make_pool(1, 4, bq_policy_abort(), 100);
    keyed_t *kx = make_executor(pool);
    future_t *f = (future_t *)&f;
    assert_err(keyed_submit(NULL, "k", plus_one, NULL, &f), EINVAL);
    assert_null_or_say(f, "keyed_submit failed with EINVAL but did not set *out to NULL");
    f = (future_t *)&f;
    assert_err(keyed_submit(kx, NULL, plus_one, NULL, &f), EINVAL);
    assert_null_or_say(f, "keyed_submit failed with EINVAL but did not set *out to NULL");
    f = (future_t *)&f;
    assert_err(keyed_submit(kx, "k", NULL, NULL, &f), EINVAL);
    assert_null_or_say(f, "keyed_submit failed with EINVAL but did not set *out to NULL");
    assert_err(keyed_submit(kx, "k", plus_one, NULL, NULL), EINVAL);
    assert_int_equal(keyed_active_keys(kx), 0); /* nothing was queued */
    assert_err(keyed_close(NULL), EINVAL);
    assert_err(keyed_await_termination(NULL, 0), EINVAL);
    assert_err(keyed_await_termination(kx, -1), EINVAL);
    assert_int_equal(keyed_active_keys(NULL), 0);
    keyed_destroy(NULL);
    shut_down(kx);
    tpool_destroy(pool);
}

static void test_keyed_submit_returns_the_task_result(void **state)
{
    (void)state;
    tpool_t *pool = make_pool(2, 8, bq_policy_abort(), 100);
    keyed_t *kx = make_executor(pool);
    char key[] = "acct-1";
    future_t *f = submit(kx, key, plus_one, (void *)41);
    key[0] = 'X'; /* the executor keeps its own copy of the key */
    future_t *g = submit(kx, "", plus_one, (void *)1); /* "" is a key like any other */
    assert_int_equal_or_say((intptr_t)must_get(f,
        "the task of acct-1"), 42, "the task of acct-1 returned another result");
    assert_int_equal_or_say((intptr_t)must_get(g,
        "the task of the empty key"), 2, "the task of the key \"\" returned another result");
    assert_int_equal(future_state(f), FUTURE_DONE);
    future_release(f);
    future_release(g);
    shut_down(kx);
    tpool_destroy(pool);
}

/* ---- order and exclusion: the basics ------------------------------------------------ */

enum { ORDER_TASKS = 300 };

struct order_log {
    atomic_long used;
    long entries[2][ORDER_TASKS]; /* per key: task numbers in the order they ran */
    atomic_long per_key[2];
};

struct order_job {
    struct order_log *log;
    int key;
    long number;
};

static void *record_order(void *raw)
{
    struct order_job *job = raw;
    long slot = atomic_fetch_add(&job->log->per_key[job->key], 1);
    job->log->entries[job->key][slot] = job->number;
    return NULL;
}

/* One submitter, two keys interleaved: each key's tasks run in the order submitted. */
static void test_keyed_submit_same_key_runs_in_submission_order(void **state)
{
    (void)state;
    tpool_t *pool = make_pool(4, 16, bq_policy_abort(), 100);
    keyed_t *kx = make_executor(pool);
    static struct order_log log;
    static struct order_job jobs[2][ORDER_TASKS];
    memset(&log, 0, sizeof log);
    future_t *last[2] = { NULL, NULL };
    for (long n = 0; n < ORDER_TASKS; n++) {
        for (int key = 0; key < 2; key++) {
            jobs[key][n] = (struct order_job){ &log, key, n };
            future_release(last[key]);
            last[key] = submit(kx, key ? "beta" : "alpha", record_order, &jobs[key][n]);
        }
    }
    for (int key = 0; key < 2; key++) {
        must_get(last[key], "the last task of a key");
        future_release(last[key]);
        assert_int_equal_or_say(atomic_load(&log.per_key[key]), ORDER_TASKS,
            "tasks of key %d that ran before its last one (the last one must run last)", key);
        for (long n = 0; n < ORDER_TASKS; n++)
            assert_int_equal_or_say(log.entries[key][n], n,
                "key %d: the task that ran %ld-th is not the one submitted %ld-th", key, n, n);
    }
    shut_down(kx);
    tpool_destroy(pool);
}

struct rendezvous {
    kit_latch_t both_inside; /* counted down by each task when it starts */
    int waited[2];           /* what each task's wait for the other returned */
    int64_t started_ns[2], ended_ns[2];
};

struct rendezvous_job {
    struct rendezvous *meeting;
    int index;
    long wait_ms;
};

/* Arrive, then wait for the other task to arrive too. */
static void *meet(void *raw)
{
    struct rendezvous_job *job = raw;
    job->meeting->started_ns[job->index] = kit_now_ns();
    kit_latch_count_down(&job->meeting->both_inside);
    job->meeting->waited[job->index] = kit_latch_wait(&job->meeting->both_inside, job->wait_ms);
    job->meeting->ended_ns[job->index] = kit_now_ns();
    return NULL;
}

/* Two tasks that each wait for the other to be running: different keys must
 * both be inside at once, or neither gets past the meeting point. */
static void test_keyed_submit_different_keys_run_in_parallel(void **state)
{
    (void)state;
    tpool_t *pool = make_pool(2, 8, bq_policy_abort(), 100);
    keyed_t *kx = make_executor(pool);
    static struct rendezvous meeting; /* static: a failed check leaves the tasks still using it intact */
    meeting = (struct rendezvous){ 0 };
    assert_ok(kit_latch_init(&meeting.both_inside, 2));
    /* Half the hang bound: if they cannot meet, each gives up and says so before must_get does. */
    static struct rendezvous_job jobs[2]; /* static: a failed check leaves the tasks still using it intact */
    jobs[0] = (struct rendezvous_job){ &meeting, 0, KIT_HANG_MS / 2 };
    jobs[1] = (struct rendezvous_job){ &meeting, 1, KIT_HANG_MS / 2 };
    future_t *a = submit(kx, "acct-a", meet, &jobs[0]);
    future_t *b = submit(kx, "acct-b", meet, &jobs[1]);
    must_get(a, "task of acct-a");
    must_get(b, "task of acct-b");
    if (meeting.waited[0] != 0 || meeting.waited[1] != 0)
        fail_msg("the tasks of two different keys never ran at the same time: keys are serialised");
    future_release(a);
    future_release(b);
    shut_down(kx);
    tpool_destroy(pool); /* before the latches: a task may still be on its way into one */
    kit_latch_destroy(&meeting.both_inside);
}

/* The same meeting for one key: the first task must wait in vain (a strict
 * lower bound: 300 ms), and the second may start only after it returned. */
static void test_keyed_submit_same_key_waits_for_the_previous_task(void **state)
{
    (void)state;
    tpool_t *pool = make_pool(2, 8, bq_policy_abort(), 100);
    keyed_t *kx = make_executor(pool);
    static struct rendezvous meeting; /* static: a failed check leaves the tasks still using it intact */
    meeting = (struct rendezvous){ 0 };
    assert_ok(kit_latch_init(&meeting.both_inside, 2));
    static struct rendezvous_job jobs[2]; /* static: a failed check leaves the tasks still using it intact */
    jobs[0] = (struct rendezvous_job){ &meeting, 0, 300 };
    jobs[1] = (struct rendezvous_job){ &meeting, 1, 0 };
    future_t *first = submit(kx, "acct", meet, &jobs[0]);
    future_t *second = submit(kx, "acct", meet, &jobs[1]);
    must_get(first, "first task");
    must_get(second, "second task");
    if (meeting.started_ns[1] < meeting.started_ns[0])
        fail_msg("the second task of a key started before the first: one key's tasks run in submission order");
    if (meeting.waited[0] != ETIMEDOUT)
        fail_msg("the second task of a key started while the first was still running");
    assert_true_or_say(meeting.started_ns[1] >= meeting.ended_ns[0],
        "the second task of a key started before the first one ended: one key runs one task at a time");
    future_release(first);
    future_release(second);
    shut_down(kx);
    tpool_destroy(pool);
    kit_latch_destroy(&meeting.both_inside);
}

/* ---- failure, cancellation ------------------------------------------------------------ */

static void *fail_with_erange(void *counter)
{
    atomic_fetch_add((atomic_long *)counter, 1);
    future_fail(ERANGE);
    return (void *)1;
}

static void test_keyed_submit_failed_task_does_not_stop_the_key(void **state)
{
    (void)state;
    tpool_t *pool = make_pool(2, 8, bq_policy_abort(), 100);
    keyed_t *kx = make_executor(pool);
    static atomic_long ran; /* static: a failed check leaves the tasks still using it intact */
    atomic_store(&ran, 0);
    future_t *before = submit(kx, "acct", count_up, &ran);
    future_t *failing = submit(kx, "acct", fail_with_erange, &ran);
    future_t *after = submit(kx, "acct", plus_one, (void *)6);
    must_get(before, "the task before the failing one");
    assert_err(future_get_timed(failing, NULL, KIT_HANG_MS), ERANGE);
    assert_int_equal(future_state(failing), FUTURE_FAILED);
    assert_int_equal_or_say((intptr_t)must_get(after,
        "the task after the failing one"), 7, "the task after the failing one returned another result");
    assert_int_equal_or_say(atomic_load(&ran), 2, "tasks of the key that ran (the failing one and the next)");
    future_release(before);
    future_release(failing);
    future_release(after);
    shut_down(kx);
    tpool_destroy(pool);
}

static void test_keyed_submit_cancelled_task_is_skipped(void **state)
{
    (void)state;
    tpool_t *pool = make_pool(2, 8, bq_policy_abort(), 100);
    keyed_t *kx = make_executor(pool);
    static kit_latch_t release; /* static: a failed check leaves the tasks still using it intact */
    assert_ok(kit_latch_init(&release, 1));
    static atomic_long cancelled_ran, later_ran; /* static: a failed check leaves the tasks still using it intact */
    atomic_store(&cancelled_ran, 0);
    atomic_store(&later_ran, 0);
    future_t *holding = submit(kx, "acct", hold_key, &release);
    future_t *cancelled = submit(kx, "acct", count_up, &cancelled_ran);
    future_t *later = submit(kx, "acct", count_up, &later_ran);
    assert_ok(future_cancel(cancelled)); /* still queued behind holding: not started */
    kit_latch_count_down(&release);
    must_get(later, "the task after the cancelled one");
    assert_err(future_get_timed(cancelled, NULL, KIT_HANG_MS), ECANCELED);
    assert_int_equal_or_say(atomic_load(&cancelled_ran), 0, "the cancelled task ran anyway (it must be skipped)");
    assert_int_equal_or_say(atomic_load(&later_ran), 1, "the task after the cancelled one did not run once");
    must_get(holding, "the holding task");
    future_release(holding);
    future_release(cancelled);
    future_release(later);
    shut_down(kx);
    tpool_destroy(pool);
    kit_latch_destroy(&release);
}

/* ---- the pool: rejection, caller-runs, discard --------------------------------------------- */

/* One worker, held by a plain task; its queue (capacity 1) filled by key x's
 * drain. A new key cannot be scheduled: its submit fails and leaves nothing. */
static void test_keyed_submit_rolls_back_when_the_pool_rejects(void **state)
{
    (void)state;
    tpool_t *pool = make_pool(1, 1, bq_policy_abort(), 60000);
    keyed_t *kx = make_executor(pool);
    static kit_latch_t release; /* static: a failed check leaves the tasks still using it intact */
    assert_ok(kit_latch_init(&release, 1));
    static atomic_long ran; /* static: a failed check leaves the tasks still using it intact */
    atomic_store(&ran, 0);
    assert_ok(tpool_execute(pool, hold_worker, &release));
    future_t *x1 = submit(kx, "x", count_up, &ran); /* its drain waits in the pool's queue */
    assert_int_equal(keyed_active_keys(kx), 1);
    future_t *f = (future_t *)&f;
    assert_err(keyed_submit(kx, "a", count_up, &ran, &f), EAGAIN);
    assert_null_or_say(f, "keyed_submit refused with EAGAIN but did not set *out to NULL");
    assert_int_equal(keyed_active_keys(kx), 1); /* "a" is not left in the map */
    future_t *x2 = submit(kx, "x", count_up, &ran); /* x has a drain: appending needs no pool slot */
    kit_latch_count_down(&release);
    must_get(x1, "first task of x");
    must_get(x2, "second task of x");
    future_t *a = submit(kx, "a", count_up, &ran); /* room again: "a" works now */
    must_get(a, "the task of a, submitted after the rejection");
    assert_int_equal_or_say(atomic_load(&ran), 3, "tasks that ran, of the three accepted");
    future_release(x1);
    future_release(x2);
    future_release(a);
    shut_down(kx);
    tpool_destroy(pool);
    kit_latch_destroy(&release);
}

struct caller_runs {
    keyed_t *kx;
    pthread_t caller;
    future_t *first, *second;
    int first_err, second_err;
    bool first_on_caller, second_on_caller;
    bool both_done_on_return;
    size_t active_on_return;
    atomic_int order;
    int first_order, second_order;
};

static void *second_on_key(void *raw)
{
    struct caller_runs *job = raw;
    job->second_on_caller = pthread_equal(pthread_self(), job->caller);
    job->second_order = atomic_fetch_add(&job->order, 1) + 1;
    return NULL;
}

/* The first task queues a second one on its own key, from inside. */
static void *first_on_key(void *raw)
{
    struct caller_runs *job = raw;
    job->first_on_caller = pthread_equal(pthread_self(), job->caller);
    job->first_order = atomic_fetch_add(&job->order, 1) + 1;
    job->second_err = keyed_submit(job->kx, "a", second_on_key, job, &job->second);
    return NULL;
}

static void *submit_as_caller(void *raw)
{
    struct caller_runs *job = raw;
    job->caller = pthread_self();
    job->first_err = keyed_submit(job->kx, "a", first_on_key, job, &job->first);
    job->both_done_on_return = job->first_err == 0 && future_is_done(job->first) &&
                               job->second_err == 0 && future_is_done(job->second);
    job->active_on_return = keyed_active_keys(job->kx);
    return NULL;
}

/* A full caller-runs pool runs the drain on the submitting thread, which is
 * inside keyed_submit: that must neither deadlock nor break the key's order. */
static void test_keyed_submit_on_caller_runs_pool_runs_on_the_caller(void **state)
{
    (void)state;
    tpool_t *pool = make_pool(1, 1, bq_policy_caller_runs(NULL), 60000);
    keyed_t *kx = make_executor(pool);
    static kit_latch_t release; /* static: a failed check leaves the tasks still using it intact */
    assert_ok(kit_latch_init(&release, 1));
    assert_ok(tpool_execute(pool, hold_worker, &release));
    assert_ok(tpool_execute(pool, nothing, NULL)); /* the queue is full now */
    static struct caller_runs job; /* static: a failed check leaves the tasks still using it intact */
    job = (struct caller_runs){ .kx = kx };
    static kit_worker_t caller;
    kit_worker_start(&caller, "caller", submit_as_caller, &job);
    kit_worker_must_finish(&caller, "keyed_submit on a full caller-runs pool (self-deadlock?)");
    assert_code_or_say(job.first_err, 0, "the first keyed_submit on a full caller-runs pool");
    assert_code_or_say(job.second_err, 0, "the second keyed_submit on a full caller-runs pool");
    assert_true_or_say(job.first_on_caller && job.second_on_caller,
        "a full caller-runs pool ran a drain on another thread than the submitting one");
    assert_true_or_say(job.both_done_on_return, "caller-runs: a task was not done when its keyed_submit returned");
    assert_int_equal_or_say(job.first_order, 1, "the order the key's first task ran in");
    assert_int_equal_or_say(job.second_order, 2, "the order the key's second task ran in");
    assert_int_equal_or_say(job.active_on_return, 0, "keyed_active_keys once both caller-run drains returned");
    kit_latch_count_down(&release);
    future_release(job.first);
    future_release(job.second);
    shut_down(kx);
    tpool_destroy(pool);
    kit_latch_destroy(&release);
}

/* A full discarding pool accepts the drain and drops it at once: the key's
 * task is cancelled, the key leaves the map, and the key still works later. */
static void test_keyed_submit_dropped_drain_cancels_its_tasks(void **state)
{
    (void)state;
    tpool_t *pool = make_pool(1, 1, bq_policy_discard(NULL), 60000);
    keyed_t *kx = make_executor(pool);
    static kit_latch_t release, queue_empty; /* static: a failed check leaves the tasks still using it intact */
    assert_ok(kit_latch_init(&release, 1));
    assert_ok(kit_latch_init(&queue_empty, 1));
    static atomic_long ran; /* static: a failed check leaves the tasks still using it intact */
    atomic_store(&ran, 0);
    assert_ok(tpool_execute(pool, hold_worker, &release));
    assert_ok(tpool_execute(pool, count_latch_down, &queue_empty)); /* fills the queue */
    future_t *dropped = NULL;
    assert_ok(keyed_submit(kx, "a", count_up, &ran, &dropped)); /* accepted by the pool, then discarded */
    assert_err(future_get_timed(dropped, NULL, KIT_HANG_MS), ECANCELED);
    assert_int_equal(keyed_active_keys(kx), 0);
    kit_latch_count_down(&release);
    assert_ok(kit_latch_wait(&queue_empty, KIT_HANG_MS)); /* the queue's task is running: room again */
    future_t *again = submit(kx, "a", count_up, &ran);
    must_get(again, "a task of the key whose drain was dropped");
    assert_int_equal_or_say(atomic_load(&ran), 1, "tasks that ran: only the one submitted after the dropped drain");
    future_release(dropped);
    future_release(again);
    shut_down(kx);
    tpool_destroy(pool);
    kit_latch_destroy(&release);
    kit_latch_destroy(&queue_empty);
}

/* Fail each allocation of a submit in turn: every ENOMEM leaves the
 * executor as it was (no key, no leak, no future), for a new key and for
 * an existing one. */
static void submit_until_memory_suffices(keyed_t *kx, const char *key, atomic_long *ran, size_t active)
{
    future_t *f = NULL;
    int err = ENOMEM;
    for (long nth = 1; err == ENOMEM && nth < 50; nth++) {
        long before = kit_live_allocations();
        f = (future_t *)&f;
        kit_fail_allocation(nth);
        err = keyed_submit(kx, key, count_up, ran, &f);
        kit_fail_allocation(0);
        if (err == ENOMEM) {
            assert_null_or_say(f, "keyed_submit failed with ENOMEM but did not set *out to NULL");
            assert_int_equal(keyed_active_keys(kx), active);
            assert_no_leak_since(before);
        }
    }
    assert_code_or_say(err, 0, "keyed_submit with every allocation succeeding");
    future_release(f);
}

struct holder {
    kit_latch_t started; /* counted down once the task runs */
    kit_latch_t release; /* the task returns once this is counted down */
};

static void *announce_and_hold(void *raw)
{
    struct holder *holder = raw;
    kit_latch_count_down(&holder->started);
    kit_latch_wait(&holder->release, KIT_HANG_MS);
    return NULL;
}

static void test_keyed_submit_out_of_memory_changes_nothing(void **state)
{
    (void)state;
    tpool_t *pool = make_pool(1, 8, bq_policy_abort(), 60000);
    keyed_t *kx = make_executor(pool);
    static struct holder holder; /* static: a failed check leaves the tasks still using it intact */
    assert_ok(kit_latch_init(&holder.started, 1));
    assert_ok(kit_latch_init(&holder.release, 1));
    static atomic_long ran; /* static: a failed check leaves the tasks still using it intact */
    atomic_store(&ran, 0);
    future_t *warm_up = submit(kx, "warm-up", count_up, &ran);
    future_release(submit(kx, "busy", announce_and_hold, &holder)); /* keeps "busy" in the map */
    must_get(warm_up, "warm-up task");
    future_release(warm_up);
    /* The pool's one worker is inside "busy" now, so it has finished the
     * warm-up drain and allocates or frees nothing while we count. */
    assert_ok(kit_latch_wait(&holder.started, KIT_HANG_MS));
    assert_int_equal(keyed_active_keys(kx), 1);
    submit_until_memory_suffices(kx, "fresh", &ran, 1); /* a new key */
    submit_until_memory_suffices(kx, "busy", &ran, 2);  /* appending to a key */
    kit_latch_count_down(&holder.release);
    assert_ok(keyed_close(kx));
    assert_ok(keyed_await_termination(kx, KIT_HANG_MS));
    assert_int_equal_or_say(atomic_load(&ran), 3,
        "tasks that ran: the warm-up, the fresh key's, the busy key's second, each once");
    shut_down(kx);
    tpool_destroy(pool);
    kit_latch_destroy(&holder.started);
    kit_latch_destroy(&holder.release);
}

/* ---- the same-key wait -------------------------------------------------------------------- */

struct self_wait {
    keyed_t *kx;
    future_t *later;       /* a later task of the task's own key */
    int same_key_err;      /* future_get on it, from inside */
    int other_key_err;     /* future_get on another key's task, from inside */
    void *other_result;
    int await_err;         /* keyed_await_termination from inside */
};

static void *wait_inside(void *raw)
{
    struct self_wait *job = raw;
    if (keyed_submit(job->kx, "acct", plus_one, (void *)1, &job->later) == 0)
        job->same_key_err = future_get(job->later, NULL); /* would wait for itself */
    future_t *other = NULL;
    job->other_key_err = keyed_submit(job->kx, "other", plus_one, (void *)9, &other);
    if (job->other_key_err == 0)
        job->other_key_err = future_get_timed(other, &job->other_result, KIT_HANG_MS);
    future_release(other);
    job->await_err = keyed_await_termination(job->kx, 0);
    keyed_destroy(job->kx); /* from inside: must do nothing (it would wait for itself) */
    return NULL;
}

static void test_keyed_submit_same_key_wait_returns_edeadlk(void **state)
{
    (void)state;
    tpool_t *pool = make_pool(2, 8, bq_policy_abort(), 100);
    keyed_t *kx = make_executor(pool);
    static struct self_wait job; /* static: a failed check leaves the tasks still using it intact */
    job = (struct self_wait){ .kx = kx, .same_key_err = -1, .other_key_err = -1, .await_err = -1 };
    future_t *task = submit(kx, "acct", wait_inside, &job);
    must_get(task, "a task that waited on a later task of its own key (it hung?)");
    assert_code_or_say(job.same_key_err, EDEADLK, "future_get by a task on a later task of its own key");
    assert_code_or_say(job.other_key_err, 0, "future_get by a task on another key's task (not blocked by us)");
    assert_int_equal_or_say((intptr_t)job.other_result, 10, "the other key's task returned another result");
    assert_code_or_say(job.await_err, EDEADLK, "keyed_await_termination called by a task of the executor");
    assert_int_equal_or_say((intptr_t)must_get(job.later,
        "the later task, after its key was free"), 2, "the later task of the key returned another result");
    future_release(job.later);
    future_release(task);
    shut_down(kx);
    tpool_destroy(pool);
}

/* A task of key "outer" submits a task of key "inner" to a full caller-runs
 * pool: the inner key's drain runs on the outer task's own thread, inside
 * it. Once it has run, the outer task is still inside its key: a wait on a
 * later task of "outer" must be EDEADLK, not a wait for itself. Static: if
 * the test fails, tasks still running must not write into a stack frame
 * that is gone. */
static struct inline_drain {
    keyed_t *kx;
    kit_latch_t go;        /* the outer task starts once the pool's queue is full */
    pthread_t outer_thread;
    future_t *later;       /* the outer key's next task */
    future_t *inner;
    int inner_err, later_err;
    bool inner_inline;     /* the inner task ran on the outer task's thread */
} inline_drain;

static void *note_thread(void *raw)
{
    (void)raw;
    inline_drain.inner_inline = pthread_equal(pthread_self(), inline_drain.outer_thread);
    return NULL;
}

static void *outer_runs_a_drain_inline(void *raw)
{
    (void)raw;
    inline_drain.outer_thread = pthread_self();
    kit_latch_wait(&inline_drain.go, KIT_HANG_MS);
    inline_drain.inner_err = keyed_submit(inline_drain.kx, "inner", note_thread, NULL, &inline_drain.inner);
    inline_drain.later_err = future_get_timed(inline_drain.later, NULL, 200);
    return NULL;
}

static void test_keyed_submit_inline_drain_keeps_the_outer_lane(void **state)
{
    (void)state;
    tpool_t *pool = make_pool(1, 1, bq_policy_caller_runs(NULL), 60000);
    keyed_t *kx = make_executor(pool);
    inline_drain = (struct inline_drain){ .kx = kx, .inner_err = -1, .later_err = -1 };
    assert_ok(kit_latch_init(&inline_drain.go, 1));
    future_t *outer = submit(kx, "outer", outer_runs_a_drain_inline, NULL); /* on the pool's one worker */
    assert_ok(tpool_execute(pool, nothing, NULL));                            /* the queue is full now */
    inline_drain.later = submit(kx, "outer", plus_one, (void *)1);
    kit_latch_count_down(&inline_drain.go);
    must_get(outer, "the outer task, which ran another key's drain inline");
    assert_ok(inline_drain.inner_err);
    must_get(inline_drain.inner, "the inner key's task");
    if (inline_drain.inner_inline && inline_drain.later_err != EDEADLK)
        fail_msg("a task of key \"outer\" ran key \"inner\"'s drain inline (a full caller-runs pool), then waited on "
                 "a later task of its own key: that wait returned %s, expected EDEADLK - after the inline drain the "
                 "thread is still inside the outer key's task, so the drain must give back the lane it found "
                 "(future_enter_lane of the outer task's lane), not none", kit_errno_name(inline_drain.later_err));
    assert_int_equal((intptr_t)must_get(inline_drain.later, "the outer key's later task"), 2);
    future_release(inline_drain.later);
    future_release(inline_drain.inner);
    future_release(outer);
    shut_down(kx);
    tpool_destroy(pool);
    kit_latch_destroy(&inline_drain.go);
}

/* ---- close, await, the map, destroy ---------------------------------------------------------- */

static void test_keyed_close_rejects_new_and_drains_accepted(void **state)
{
    (void)state;
    tpool_t *pool = make_pool(2, 8, bq_policy_abort(), 100);
    keyed_t *kx = make_executor(pool);
    static kit_latch_t release; /* static: a failed check leaves the tasks still using it intact */
    assert_ok(kit_latch_init(&release, 1));
    static atomic_long ran; /* static: a failed check leaves the tasks still using it intact */
    atomic_store(&ran, 0);
    future_t *held[2] = { submit(kx, "a", hold_key, &release), submit(kx, "b", hold_key, &release) };
    for (int i = 0; i < 5; i++)
        future_release(submit(kx, i < 3 ? "a" : "b", count_up, &ran));
    assert_ok(keyed_close(kx));
    assert_ok(keyed_close(kx)); /* twice is harmless */
    future_t *f = (future_t *)&f;
    int err = keyed_submit(kx, "a", count_up, &ran, &f); /* a key with a drain */
    if (err != ECANCELED)
        fail_msg("keyed_submit after keyed_close, to a key whose drain is still running, returned %s; expected "
                 "ECANCELED: a closed executor refuses every new task, for busy keys too", kit_errno_name(err));
    assert_null_or_say(f, "keyed_submit refused after keyed_close but did not set *out to NULL");
    assert_err(keyed_submit(kx, "c", count_up, &ran, &f), ECANCELED); /* a new key */
    assert_null_or_say(f, "keyed_submit refused after keyed_close but did not set *out to NULL");
    assert_err(keyed_await_termination(kx, 0), ETIMEDOUT); /* accepted tasks still wait */
    kit_latch_count_down(&release);
    assert_ok(keyed_await_termination(kx, KIT_HANG_MS));
    assert_int_equal_or_say(atomic_load(&ran), 5, "tasks that ran, of the five accepted before the close");
    assert_int_equal(keyed_active_keys(kx), 0);
    future_release(held[0]);
    future_release(held[1]);
    shut_down(kx);
    tpool_destroy(pool);
    kit_latch_destroy(&release);
}

struct awaiting {
    keyed_t *kx;
    long timeout_ms;
};

static void *await_executor(void *raw)
{
    struct awaiting *job = raw;
    return (void *)(intptr_t)keyed_await_termination(job->kx, job->timeout_ms);
}

/* await sleeps until closed *and* drained - through spurious wake-ups - and
 * a timed await returns ETIMEDOUT no earlier than asked, even when its wait
 * keeps being woken for nothing. */
static void test_keyed_await_termination_sleeps_until_drained(void **state)
{
    (void)state;
    tpool_t *pool = make_pool(2, 8, bq_policy_abort(), 100);
    keyed_t *kx = make_executor(pool);
    static kit_latch_t release; /* static: a failed check leaves the tasks still using it intact */
    assert_ok(kit_latch_init(&release, 1));
    future_t *held = submit(kx, "a", hold_key, &release);
    kit_wakeups_every(20);
    int64_t start = kit_now_ns();
    assert_err(keyed_await_termination(kx, 150), ETIMEDOUT);
    if (kit_elapsed_ms(start) < 150.0)
        fail_msg("keyed_await_termination(150 ms) gave up after %.1f ms while woken for nothing every 20 ms: "
                 "a timeout is a lower bound, and a wake-up with the work not done means wait again (while, "
                 "not if)", kit_elapsed_ms(start));
    kit_wakeups_every(0);

    kit_spurious_wakeups(true);
    static struct awaiting job; /* static: a failed check leaves the tasks still using it intact */
    job = (struct awaiting){ kx, KIT_HANG_MS };
    static kit_worker_t waiter;
    kit_worker_start(&waiter, "awaiter", await_executor, &job);
    kit_worker_must_block(&waiter, 200, "keyed_await_termination before close");
    assert_ok(keyed_close(kx));
    kit_worker_must_block(&waiter, 200, "keyed_await_termination while a task still runs");
    kit_latch_count_down(&release);
    assert_int_equal_or_say((intptr_t)kit_worker_must_finish(&waiter,
        "keyed_await_termination once drained"), 0, "keyed_await_termination once drained returned an error");
    kit_spurious_wakeups(false);
    future_release(held);
    shut_down(kx);
    tpool_destroy(pool);
    kit_latch_destroy(&release);
}

/* After the pool's shutdown, a key whose drain is still running accepts a
 * task and runs it; a key with no drain is refused with ECANCELED (the
 * shut-down pool will not take a new drain), and is not left in the map. */
static void test_keyed_submit_after_pool_shutdown(void **state)
{
    (void)state;
    tpool_t *pool = make_pool(2, 8, bq_policy_abort(), 60000);
    keyed_t *kx = make_executor(pool);
    static struct holder holder; /* static: a failed check leaves the tasks still using it intact */
    assert_ok(kit_latch_init(&holder.started, 1));
    assert_ok(kit_latch_init(&holder.release, 1));
    future_t *held = submit(kx, "a", announce_and_hold, &holder);
    assert_ok(kit_latch_wait(&holder.started, KIT_HANG_MS)); /* a's drain is running */
    assert_ok(tpool_shutdown(pool));
    future_t *late = NULL;
    int err = keyed_submit(kx, "a", plus_one, (void *)4, &late);
    if (err != 0)
        fail_msg("keyed_submit to a key whose drain is still running, after the pool's shutdown, returned %s; "
                 "expected 0: the running drain takes the task", kit_errno_name(err));
    future_t *refused = (future_t *)&refused;
    assert_err(keyed_submit(kx, "b", plus_one, (void *)1, &refused), ECANCELED);
    assert_null_or_say(refused, "keyed_submit refused after the pool's shutdown but did not set *out to NULL");
    assert_int_equal(keyed_active_keys(kx), 1); /* "b" is not left in the map */
    kit_latch_count_down(&holder.release);
    assert_int_equal_or_say((intptr_t)must_get(late, "a task appended to a running drain after the pool's shutdown"), 5,
        "a task appended to a running drain after the pool's shutdown returned another result");
    must_get(held, "the holding task");
    future_release(held);
    future_release(late);
    shut_down(kx);
    tpool_destroy(pool);
    kit_latch_destroy(&holder.started);
    kit_latch_destroy(&holder.release);
}

/* Several threads waiting in keyed_await_termination: all of them wake. */
static void test_keyed_await_termination_wakes_every_waiter(void **state)
{
    (void)state;
    enum { WAITERS = 2 };
    tpool_t *pool = make_pool(1, 8, bq_policy_abort(), 60000); /* its one worker: in the held task */
    keyed_t *kx = make_executor(pool);
    /* static: a failed check leaves the threads still using them intact */
    static kit_latch_t release;
    static struct awaiting jobs[WAITERS];
    static kit_worker_t waiters[WAITERS];
    assert_ok(kit_latch_init(&release, 1));
    future_t *held = submit(kx, "a", hold_key, &release);
    assert_ok(keyed_close(kx));
    for (int i = 0; i < WAITERS; i++) {
        jobs[i] = (struct awaiting){ kx, 2 * KIT_HANG_MS };
        kit_worker_start(&waiters[i], "awaiter", await_executor, &jobs[i]);
    }
    kit_await_waiting_threads(WAITERS, "two threads in keyed_await_termination"); /* the task waits in a test latch */
    kit_latch_count_down(&release);
    for (int i = 0; i < WAITERS; i++)
        assert_int_equal_or_say((intptr_t)kit_worker_must_finish(&waiters[i], "one of two threads waiting in "
                                                                 "keyed_await_termination when the last key drained"),
                                0, "waiter %d's keyed_await_termination, once the last key drained, failed", i);
    future_release(held);
    shut_down(kx);
    tpool_destroy(pool);
    kit_latch_destroy(&release);
}

/* An executor with nothing queued terminates the moment it is closed: close
 * itself must wake a thread already waiting in keyed_await_termination, as
 * no drain is left to do it. */
static void test_keyed_close_of_an_idle_executor_wakes_its_awaiter(void **state)
{
    (void)state;
    tpool_t *pool = make_pool(1, 8, bq_policy_abort(), 60000);
    keyed_t *kx = make_executor(pool);
    static struct awaiting job; /* static: a failed check leaves the thread still using it intact */
    static kit_worker_t waiter;
    job = (struct awaiting){ kx, 2 * KIT_HANG_MS };
    kit_worker_start(&waiter, "awaiter", await_executor, &job);
    kit_worker_must_block(&waiter, 200, "keyed_await_termination before close");
    assert_ok(keyed_close(kx));
    int err = (int)(intptr_t)kit_worker_must_finish(&waiter, "keyed_await_termination after the close of an "
                                                             "executor with nothing queued");
    if (err != 0)
        fail_msg("keyed_await_termination returned %s after keyed_close of an idle executor; expected 0",
                 kit_errno_name(err));
    shut_down(kx);
    tpool_destroy(pool);
}

/* The map holds exactly the keys with work; once every key is idle it is
 * empty (the drain removes its key after its last task, so wait for that). */
static void test_keyed_active_keys_empties_when_idle(void **state)
{
    (void)state;
    enum { KEYS = 5 };
    tpool_t *pool = make_pool(4, 8, bq_policy_abort(), 100);
    keyed_t *kx = make_executor(pool);
    static kit_latch_t release; /* static: a failed check leaves the tasks still using it intact */
    assert_ok(kit_latch_init(&release, 1));
    static atomic_long ran; /* static: a failed check leaves the tasks still using it intact */
    atomic_store(&ran, 0);
    future_t *last[KEYS];
    char key[16];
    for (int k = 0; k < KEYS; k++) {
        snprintf(key, sizeof key, "key-%d", k);
        future_release(submit(kx, key, hold_key, &release));
        last[k] = submit(kx, key, count_up, &ran);
    }
    assert_int_equal(keyed_active_keys(kx), KEYS);
    future_release(submit(kx, "key-0", count_up, &ran)); /* a busy key is not counted twice */
    assert_int_equal(keyed_active_keys(kx), KEYS);
    kit_latch_count_down(&release);
    for (int k = 0; k < KEYS; k++) {
        must_get(last[k], "the last task of a key");
        future_release(last[k]);
    }
    await_active_keys(kx, 0);
    assert_ok(keyed_close(kx));
    assert_ok(keyed_await_termination(kx, 0)); /* already terminated: no wait */
    shut_down(kx);
    tpool_destroy(pool);
    kit_latch_destroy(&release);
}

static void *nap_and_count(void *counter)
{
    kit_sleep_us(200);
    atomic_fetch_add((atomic_long *)counter, 1);
    return NULL;
}

/* destroy waits for every accepted task, then gives back every block; a
 * future the caller still holds outlives the executor. */
static void test_keyed_destroy_frees_everything(void **state)
{
    (void)state;
    long before = kit_live_allocations();
    tpool_t *pool = make_pool(3, 16, bq_policy_abort(), 100);
    keyed_t *kx = make_executor(pool);
    static atomic_long ran; /* static: a failed check leaves the tasks still using it intact */
    atomic_store(&ran, 0);
    char key[16];
    for (int i = 0; i < 60; i++) {
        snprintf(key, sizeof key, "key-%d", i % 6);
        future_release(submit(kx, key, nap_and_count, &ran));
    }
    future_t *kept = submit(kx, "key-0", plus_one, (void *)0);
    keyed_destroy(kx);
    assert_int_equal_or_say(atomic_load(&ran), 60,
        "tasks that had run when keyed_destroy returned (it waits for every accepted one)");
    assert_true(future_is_done(kept));
    assert_int_equal_or_say((intptr_t)must_get(kept,
        "a future kept past destroy"), 1, "a future kept past destroy returned another result");
    future_release(kept);
    tpool_destroy(pool);
    assert_no_leak_since(before);
}

/* ---- stress ------------------------------------------------------------------------------------ */

enum { MAX_KEYS = 8, MAX_SUBMITTERS = 6 };

struct key_log {
    atomic_long used;
    long *entries;           /* task ids (submitter * per + seq) in the order they ran */
    atomic_int in_flight;    /* tasks of this key running right now */
    atomic_int max_in_flight;
};

struct stress {
    keyed_t *kx;
    int keys, submitters;
    long per_submitter;
    unsigned submit_pause_us; /* random pause between two submits */
    unsigned task_pause_us;   /* random pause inside each task */
    uint64_t seed;
    struct key_log logs[MAX_KEYS];
    struct stress_job *jobs;  /* submitters * per_submitter */
    atomic_long ran, rejected;
};

struct stress_job {
    struct stress *run;
    int key;
    long id;
};

struct submitter {
    struct stress *run;
    int index;
};

static const char *const key_names[MAX_KEYS] = { "acct-0", "acct-1", "acct-2", "acct-3",
                                                 "acct-4", "acct-5", "acct-6", "acct-7" };

static void raise_max(atomic_int *max, int value)
{
    int seen = atomic_load(max);
    while (value > seen && !atomic_compare_exchange_weak(max, &seen, value))
        ;
}

static void *record_run(void *raw)
{
    struct stress_job *job = raw;
    struct stress *run = job->run;
    struct key_log *log = &run->logs[job->key];
    raise_max(&log->max_in_flight, atomic_fetch_add(&log->in_flight, 1) + 1);
    if (run->task_pause_us) {
        kit_rng_t rng; /* seeded from the task: the same pauses in every run of a seed */
        kit_rng_seed(&rng, run->seed, (uint64_t)job->id + 1000000);
        kit_jitter(&rng, run->task_pause_us); /* widen any overlap */
    }
    log->entries[atomic_fetch_add(&log->used, 1)] = job->id;
    atomic_fetch_sub(&log->in_flight, 1);
    atomic_fetch_add(&run->ran, 1);
    return NULL;
}

static void *submit_many(void *raw)
{
    struct submitter *self = raw;
    struct stress *run = self->run;
    kit_rng_t rng;
    kit_rng_seed(&rng, run->seed, (uint64_t)self->index + 1);
    for (long seq = 0; seq < run->per_submitter; seq++) {
        struct stress_job *job = &run->jobs[self->index * run->per_submitter + seq];
        *job = (struct stress_job){ run, (int)kit_rng_below(&rng, (uint64_t)run->keys),
                                    self->index * run->per_submitter + seq };
        future_t *f = NULL;
        if (keyed_submit(run->kx, key_names[job->key], record_run, job, &f) == 0)
            future_release(f); /* fire and forget: the executor keeps its own reference */
        else
            atomic_fetch_add(&run->rejected, 1);
        if (run->submit_pause_us)
            kit_jitter(&rng, run->submit_pause_us);
    }
    return NULL;
}

/* Submitters released together by a start gate; then close and await. */
static void run_stress(struct stress *run)
{
    long total = run->submitters * run->per_submitter;
    tpool_t *pool = make_pool(4, 64, bq_policy_abort(), 100);
    run->kx = make_executor(pool);
    run->seed = kit_test_seed();
    run->jobs = calloc((size_t)total, sizeof *run->jobs);
    assert_non_null_or_say(run->jobs, "the test could not allocate its jobs");
    for (int k = 0; k < run->keys; k++) {
        run->logs[k].entries = calloc((size_t)total, sizeof(long));
        assert_non_null_or_say(run->logs[k].entries, "the test could not allocate its log");
    }
    static struct submitter submitters[MAX_SUBMITTERS]; /* static: outlives a failed join */
    for (int i = 0; i < run->submitters; i++)
        submitters[i] = (struct submitter){ run, i };
    kit_test_run_group((size_t)run->submitters, "submitter", submit_many, submitters, sizeof submitters[0]);
    assert_ok(keyed_close(run->kx));
    assert_ok(keyed_await_termination(run->kx, KIT_HANG_MS));
    assert_int_equal(keyed_active_keys(run->kx), 0);
    keyed_destroy(run->kx);
    tpool_destroy(pool);
    assert_int_equal_or_say(atomic_load(&run->rejected), 0, "submits that were refused");
    long lost = total - atomic_load(&run->ran);
    if (lost != 0)
        fail_msg("%ld of %ld tasks never ran (stranded in a queue whose drain had left)", lost, total);
}

static void free_stress(struct stress *run)
{
    for (int k = 0; k < run->keys; k++)
        free(run->logs[k].entries);
    free(run->jobs);
}

/* Per key, each submitter's tasks ran in the order its keyed_submit calls returned. */
static long count_disorder(const struct stress *run)
{
    long disorder = 0;
    for (int k = 0; k < run->keys; k++) {
        long last[MAX_SUBMITTERS];
        for (int s = 0; s < run->submitters; s++)
            last[s] = -1;
        const struct key_log *log = &run->logs[k];
        for (long i = 0; i < atomic_load(&log->used); i++) {
            long submitter = log->entries[i] / run->per_submitter, seq = log->entries[i] % run->per_submitter;
            disorder += seq <= last[submitter];
            last[submitter] = seq;
        }
    }
    return disorder;
}

static void test_keyed_stress_fifo_per_key_many_submitters(void **state)
{
    (void)state;
    static struct stress run;
    memset(&run, 0, sizeof run);
    run.keys = 4;
    run.submitters = 6;
    run.per_submitter = kit_test_slow() ? 400 : 1500;
    run.submit_pause_us = 20;
    run_stress(&run);
    long disorder = count_disorder(&run);
    free_stress(&run);
    if (disorder != 0)
        fail_msg("%ld tasks ran before a task their submitter had submitted earlier to the same key", disorder);
}

static void test_keyed_stress_same_key_never_overlaps(void **state)
{
    (void)state;
    static struct stress run;
    memset(&run, 0, sizeof run);
    run.keys = 3;
    run.submitters = 4;
    run.per_submitter = kit_test_slow() ? 200 : 1000;
    run.submit_pause_us = 20;
    run.task_pause_us = 40;
    run_stress(&run);
    int worst = 0;
    for (int k = 0; k < run.keys; k++)
        worst = atomic_load(&run.logs[k].max_in_flight) > worst ? atomic_load(&run.logs[k].max_in_flight) : worst;
    free_stress(&run);
    if (worst != 1)
        fail_msg("up to %d tasks of one key ran at the same time (must be 1)", worst);
}

/* Many keys, tiny tasks, submitters about as fast as the drains: drains keep
 * finding their queue empty just as a new task arrives. Random delays before
 * every mutex lock stretch the gap between "the queue is empty" and "the key
 * is removed" - if those are two critical sections, tasks get stranded. */
static void test_keyed_stress_submit_races_leaving_drain(void **state)
{
    (void)state;
    static struct stress run;
    memset(&run, 0, sizeof run);
    run.keys = 8;
    run.submitters = 4;
    run.per_submitter = kit_test_slow() ? 400 : 1200;
    run.submit_pause_us = 30;
    kit_lock_delays(30, kit_test_seed());
    run_stress(&run);
    kit_lock_delays(0, 0);
    free_stress(&run);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_keyed_create_rejects_bad_arguments),
    cmocka_unit_test(test_keyed_create_out_of_memory_leaks_nothing),
    cmocka_unit_test(test_keyed_calls_with_bad_arguments_give_einval),
    cmocka_unit_test(test_keyed_submit_returns_the_task_result),
    cmocka_unit_test(test_keyed_submit_same_key_runs_in_submission_order),
    cmocka_unit_test(test_keyed_submit_different_keys_run_in_parallel),
    cmocka_unit_test(test_keyed_submit_same_key_waits_for_the_previous_task),
    cmocka_unit_test(test_keyed_submit_failed_task_does_not_stop_the_key),
    cmocka_unit_test(test_keyed_submit_cancelled_task_is_skipped),
    cmocka_unit_test(test_keyed_submit_rolls_back_when_the_pool_rejects),
    cmocka_unit_test(test_keyed_submit_on_caller_runs_pool_runs_on_the_caller),
    cmocka_unit_test(test_keyed_submit_dropped_drain_cancels_its_tasks),
    cmocka_unit_test(test_keyed_submit_out_of_memory_changes_nothing),
    cmocka_unit_test(test_keyed_submit_same_key_wait_returns_edeadlk),
    cmocka_unit_test(test_keyed_submit_inline_drain_keeps_the_outer_lane),
    cmocka_unit_test(test_keyed_close_rejects_new_and_drains_accepted),
    cmocka_unit_test(test_keyed_await_termination_sleeps_until_drained),
    cmocka_unit_test(test_keyed_submit_after_pool_shutdown),
    cmocka_unit_test(test_keyed_await_termination_wakes_every_waiter),
    cmocka_unit_test(test_keyed_close_of_an_idle_executor_wakes_its_awaiter),
    cmocka_unit_test(test_keyed_active_keys_empties_when_idle),
    cmocka_unit_test(test_keyed_destroy_frees_everything),
    cmocka_unit_test(test_keyed_stress_fifo_per_key_many_submitters),
    cmocka_unit_test(test_keyed_stress_same_key_never_overlaps),
    cmocka_unit_test(test_keyed_stress_submit_races_leaving_drain),
};

KIT_TEST_MAIN(tests)
