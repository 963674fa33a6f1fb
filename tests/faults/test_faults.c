/**
 * @file test_faults.c
 * @brief Faults: every allocation and every thread creation the structures of
 *        chapters 03-06 make, failed in turn; and chapter 08's lock, whose
 *        read lock allocates when more threads read at once than it has room for.
 *
 * For each public function that allocates, kit_sweep_allocation_failures()
 * runs a short scenario once per allocation it makes, with that one
 * allocation failing. Whatever fails must say so (ENOMEM, or EAGAIN for a
 * thread), lose nothing it had accepted, run nothing it refused, and leak
 * nothing; the structure must still work afterwards. Thread creation is
 * failed the same way with kit_fail_thread_create().
 *
 * These run in `make test` (chapter "faults" of the rubric, 0 points): they
 * hold the reference solutions to the reliability bar, not the students.
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_test.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "future.h"
#include "keyed.h"
#include "kit_gate.h"
#include "kit_thread.h"
#include "mw.h"
#include "rwl.h"
#include "tpool.h"

enum { TASKS = 3 };

static atomic_int ran[TASKS];

static void count_run(void *arg)
{
    atomic_fetch_add(&ran[(intptr_t)arg], 1);
}

static tpool_config_t pool_config(size_t core)
{
    /* A long keep-alive: no worker retires in the middle of a sweep run. */
    return (tpool_config_t){ core, 4, 60000, bq_policy_block(), "fault" };
}

/* Accepted tasks ran exactly once, refused ones never: 0, else EFAULT. */
static int check_runs(const int *errors)
{
    for (int i = 0; i < TASKS; i++)
        if (atomic_load(&ran[i]) != (errors[i] == 0 ? 1 : 0))
            return EFAULT;
    return 0;
}

static int first_error(const int *errors)
{
    for (int i = 0; i < TASKS; i++)
        if (errors[i] != 0)
            return errors[i];
    return 0;
}

/* create, execute three tasks, destroy (which waits for them). */
static int pool_round(void *ctx)
{
    (void)ctx;
    for (int i = 0; i < TASKS; i++)
        atomic_store(&ran[i], 0);
    tpool_t *p = NULL;
    tpool_config_t config = pool_config(2);
    int err = tpool_create(&p, &config);
    if (err != 0)
        return p == NULL ? err : EFAULT;
    int errors[TASKS];
    for (int i = 0; i < TASKS; i++)
        errors[i] = tpool_execute(p, count_run, (void *)(intptr_t)i);
    tpool_destroy(p); /* every accepted task has run once it returns */
    return check_runs(errors) ? EFAULT : first_error(errors);
}

static void test_faults_tpool_allocation_sweep(void **state)
{
    (void)state;
    kit_sweep_allocation_failures("tpool create + execute x3 + destroy", pool_round, NULL);
}

/* A worker that cannot be started: EAGAIN when no worker is alive (the
 * task is refused, never run); otherwise the live workers take it. The pool
 * keeps working and grows again once threads can be made. */
static void test_faults_tpool_thread_creation_sweep(void **state)
{
    (void)state;
    for (long nth = 1; nth <= 2; nth++) {
        for (int i = 0; i < TASKS; i++)
            atomic_store(&ran[i], 0);
        tpool_t *p = NULL;
        tpool_config_t config = pool_config(2);
        assert_ok(tpool_create(&p, &config));
        int errors[TASKS];
        kit_fail_thread_create(nth);
        for (int i = 0; i < TASKS; i++)
            errors[i] = tpool_execute(p, count_run, (void *)(intptr_t)i);
        kit_fail_thread_create(0);
        for (int i = 0; i < TASKS; i++)
            assert_true(errors[i] == 0 || errors[i] == EAGAIN);
        assert_int_equal(errors[0], nth == 1 ? EAGAIN : 0); /* the first worker could not start */
        assert_ok(tpool_execute(p, count_run, (void *)(intptr_t)0)); /* it grows again */
        tpool_destroy(p);
        for (int i = 1; i < TASKS; i++)
            assert_int_equal(atomic_load(&ran[i]), errors[i] == 0 ? 1 : 0);
    }
}

static void *answer(void *arg)
{
    return arg;
}

/* submit a task through a future, get its result, release, destroy. */
static int future_round(void *ctx)
{
    (void)ctx;
    tpool_t *p = NULL;
    tpool_config_t config = pool_config(1);
    int err = tpool_create(&p, &config);
    if (err != 0)
        return err;
    future_t *f = (future_t *)&f;
    err = tpool_submit(p, answer, (void *)(intptr_t)42, &f);
    if (err == 0) {
        void *result = NULL;
        int got = future_get(f, &result);
        future_release(f);
        if (got != 0 || result != (void *)(intptr_t)42)
            err = EFAULT;
    } else if (f != NULL) {
        err = EFAULT; /* out must be NULL after a failure */
    }
    tpool_destroy(p);
    return err;
}

static void test_faults_future_allocation_sweep(void **state)
{
    (void)state;
    kit_sweep_allocation_failures("tpool_submit + future_get", future_round, NULL);
}

static int double_it(mw_t *mw, const mw_task_t *task, void **result, void *ctx)
{
    (void)mw;
    (void)ctx;
    long *doubled = malloc(sizeof *doubled);
    if (doubled == NULL)
        return ENOMEM; /* a failure, reported as one: the worker carries on */
    *doubled = 2 * task->id;
    *result = doubled;
    return 0;
}

/* Takes everything out and checks conservation: every accepted task is a
 * result or a failure, each result right. 0, or EFAULT. */
static int drain_and_check(mw_t *mw, int accepted)
{
    mw_stats_t stats;
    mw_result_t result;
    mw_failure_t failure;
    int seen = 0, wrong = 0;
    while (mw_take_result(mw, &result, 0) == 0) {
        wrong += *(long *)result.data != 2 * result.task_id;
        free(result.data);
        seen++;
    }
    while (mw_take_failed(mw, &failure) == 0)
        seen++;
    if (mw_stats(mw, &stats) != 0 || wrong || seen != accepted ||
        stats.submitted != stats.completed + stats.failed + stats.rejected)
        return EFAULT;
    return 0;
}

/* create, start, submit three tasks, await, check, destroy. */
static int mw_round(void *ctx)
{
    (void)ctx;
    mw_config_t config = { .workers = 2, .queue_capacity = 4, .process = double_it, .name = "fault" };
    mw_t *mw = NULL;
    int err = mw_create(&mw, &config);
    if (err != 0)
        return mw == NULL ? err : EFAULT;
    err = mw_start(mw);
    int accepted = 0;
    for (long id = 1; err == 0 && id <= TASKS; id++) {
        int submitted = mw_submit(mw, id, NULL, 1000);
        accepted += submitted == 0;
        err = submitted;
    }
    if (mw_await(mw, KIT_HANG_MS) != 0 || drain_and_check(mw, accepted) != 0)
        err = err ? err : EFAULT;
    mw_destroy(mw);
    return err;
}

static void test_faults_mw_allocation_sweep(void **state)
{
    (void)state;
    kit_sweep_allocation_failures("mw create + start + submit x3 + await", mw_round, NULL);
}

/* Starting the workers when a thread cannot be made: EAGAIN, no thread left
 * behind, nothing leaked, and destroy still works. */
static void test_faults_mw_thread_creation_sweep(void **state)
{
    (void)state;
    for (long nth = 1; nth <= 3; nth++) {
        long before = kit_live_allocations();
        mw_config_t config = { .workers = 3, .queue_capacity = 4, .process = double_it, .name = "fault" };
        mw_t *mw = NULL;
        assert_ok(mw_create(&mw, &config));
        assert_ok(mw_submit(mw, 1, NULL, 0)); /* queued before the start */
        kit_fail_thread_create(nth);
        int err = mw_start(mw);
        kit_fail_thread_create(0);
        assert_err(err, EAGAIN);
        mw_stats_t stats;
        assert_ok(mw_stats(mw, &stats));
        assert_int_equal(stats.workers_alive, 0);
        assert_int_equal(stats.submitted, stats.completed + stats.failed + stats.rejected);
        mw_failure_t failure;
        mw_result_t result;
        while (mw_take_rejected(mw, &failure) == 0)
            ;
        while (mw_take_result(mw, &result, 0) == 0) /* a worker that did start may have run it */
            free(result.data);
        mw_destroy(mw);
        assert_no_leak_since(before);
    }
}

static void *keyed_answer(void *arg)
{
    return arg;
}

/* keyed_create, submit three tasks on two keys, get them, close, destroy. */
static int keyed_round(void *ctx)
{
    (void)ctx;
    tpool_t *p = NULL;
    tpool_config_t config = pool_config(2);
    int err = tpool_create(&p, &config);
    if (err != 0)
        return err;
    keyed_t *kx = NULL;
    err = keyed_create(&kx, p);
    static const char *const keys[TASKS] = { "alpha", "beta", "alpha" };
    for (int i = 0; err == 0 && i < TASKS; i++) {
        future_t *f = NULL;
        err = keyed_submit(kx, keys[i], keyed_answer, (void *)(intptr_t)(i + 1), &f);
        void *result = NULL;
        if (err == 0 && (future_get(f, &result) != 0 || result != (void *)(intptr_t)(i + 1)))
            err = EFAULT;
        future_release(f);
    }
    if (kx != NULL && (keyed_close(kx) != 0 || keyed_await_termination(kx, KIT_HANG_MS) != 0 ||
                       keyed_active_keys(kx) != 0))
        err = err ? err : EFAULT;
    keyed_destroy(kx);
    tpool_destroy(p);
    return err;
}

static void test_faults_keyed_allocation_sweep(void **state)
{
    (void)state;
    kit_sweep_allocation_failures("keyed create + submit x3 + get + close", keyed_round, NULL);
}

/* A drain that cannot be scheduled (the pool cannot start a worker and has
 * none): the submit fails with EAGAIN, the key is rolled back, and the next
 * submit of that key works. */
static void test_faults_keyed_thread_creation(void **state)
{
    (void)state;
    long before = kit_live_allocations();
    tpool_t *p = NULL;
    tpool_config_t config = pool_config(1);
    assert_ok(tpool_create(&p, &config));
    keyed_t *kx = NULL;
    assert_ok(keyed_create(&kx, p));
    future_t *f = (future_t *)&f;
    kit_fail_thread_create(1);
    int err = keyed_submit(kx, "alpha", keyed_answer, (void *)(intptr_t)7, &f);
    kit_fail_thread_create(0);
    assert_err(err, EAGAIN);
    assert_null(f);
    assert_int_equal(keyed_active_keys(kx), 0);
    void *result = NULL;
    assert_ok(keyed_submit(kx, "alpha", keyed_answer, (void *)(intptr_t)8, &f));
    assert_ok(future_get(f, &result));
    assert_ptr_equal(result, (void *)(intptr_t)8);
    future_release(f);
    keyed_destroy(kx);
    tpool_destroy(p);
    assert_no_leak_since(before);
}

/* ---- Chapter 08: readers the lock cannot record ------------------------------ */

enum { CROWD = 6 };

struct crowd_reader {
    rwl_t *l;
    kit_gate_t *leave;
    int err;        /* its read lock */
    int unlock_err; /* its read unlock: EPERM when the lock returned an error */
};

static void *read_and_stay(void *raw)
{
    struct crowd_reader *r = raw;
    r->err = rwl_read_lock(r->l);
    kit_gate_wait(r->leave); /* arrives holding the read lock, or having been refused */
    r->unlock_err = rwl_read_unlock(r->l);
    return NULL;
}

/* create; six threads take the read lock and stay until all have tried; a
 * writer must wait while any of them reads; they leave; the lock is free.
 * A reader refused with ENOMEM must hold nothing (its unlock says EPERM). */
static int crowd_round(void *ctx)
{
    (void)ctx;
    rwl_t *l = NULL;
    int err = rwl_create(&l);
    if (err != 0)
        return l == NULL ? err : EFAULT;
    kit_gate_t leave;
    if (kit_gate_init(&leave) != 0) {
        rwl_destroy(l);
        return EFAULT;
    }
    struct crowd_reader readers[CROWD];
    pthread_t threads[CROWD];
    int started = 0, reading = 0, wrong = 0;
    while (started < CROWD && err == 0) {
        readers[started] = (struct crowd_reader){ l, &leave, -1, -1 };
        err = kit_thread_start(&threads[started], "reader", read_and_stay, &readers[started]);
        started += err == 0;
    }
    if (kit_gate_await_arrivals(&leave, (size_t)started, KIT_HANG_MS) != 0)
        wrong++;
    for (int i = 0; i < started; i++)
        reading += readers[i].err == 0;
    int writer = rwl_write_lock_timed(l, 0);
    wrong += reading > 0 ? writer != ETIMEDOUT : writer != 0;
    if (writer == 0)
        rwl_write_unlock(l);
    kit_gate_open(&leave);
    for (int i = 0; i < started; i++) {
        pthread_join(threads[i], NULL);
        if (readers[i].err == 0)
            wrong += readers[i].unlock_err != 0;
        else if (readers[i].err == ENOMEM)
            wrong += readers[i].unlock_err != EPERM; /* refused: holds nothing */
        else
            wrong++;
        if (err == 0)
            err = readers[i].err;
    }
    if (rwl_write_lock_timed(l, 0) != 0 || rwl_write_unlock(l) != 0)
        wrong++; /* everyone has left: the lock is free */
    kit_gate_destroy(&leave);
    rwl_destroy(l);
    return wrong ? EFAULT : err;
}

static void test_faults_rwl_allocation_sweep(void **state)
{
    (void)state;
    kit_sweep_allocation_failures("rwl create + 6 readers at once", crowd_round, NULL);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_faults_tpool_allocation_sweep),
    cmocka_unit_test(test_faults_tpool_thread_creation_sweep),
    cmocka_unit_test(test_faults_future_allocation_sweep),
    cmocka_unit_test(test_faults_mw_allocation_sweep),
    cmocka_unit_test(test_faults_mw_thread_creation_sweep),
    cmocka_unit_test(test_faults_keyed_allocation_sweep),
    cmocka_unit_test(test_faults_keyed_thread_creation),
    cmocka_unit_test(test_faults_rwl_allocation_sweep),
};

KIT_TEST_MAIN(tests)
