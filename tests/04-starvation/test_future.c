/**
 * @file test_future.c
 * @brief Chapter 04 tests: futures deliver, wait, wake everyone, cancel safely,
 *        and a pool that would starve says so instead of hanging.
 *
 * Every task that must not finish on its own waits at a start gate the test
 * opens (a *gated* task): "it is still running" is then a fact the test
 * controls, not a guess about timing. Threads other than the main thread
 * only record what they saw; the main thread asserts.
 *
 * What a test shares with the threads it starts (calls, jobs, latches,
 * workers) is static, not on the test's stack: a test that fails leaves
 * through cmocka's longjmp while such a thread may still run, and that
 * thread must then find its objects alive, not a stack frame reused by
 * the failure report.
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_test.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "future.h"
#include "kit_errno.h"
#include "kit_time.h"

/* Under ThreadSanitizer and valgrind (KIT_SLOW=1) loops run fewer times. */
static long rounds(long normal, long slow)
{
    return getenv("KIT_SLOW") ? slow : kit_test_repeat(normal);
}

static tpool_t *make_pool_with(size_t threads, size_t capacity, bq_policy_t policy, const char *name)
{
    /* A long keep-alive: workers stay for the whole test, so the number of
     * threads, and who is idle, is what the test made it. */
    tpool_config_t config = { .core_threads = threads, .queue_capacity = capacity, .keep_alive_ms = 60000,
                              .reject = policy, .name = name };
    tpool_t *p = NULL;
    assert_ok(tpool_create(&p, &config));
    assert_non_null_or_say(p, "tpool_create returned 0 but left *out NULL");
    return p;
}

static tpool_t *make_pool(size_t threads, size_t capacity)
{
    return make_pool_with(threads, capacity, bq_policy_block(), "pool");
}

static future_t *submit(tpool_t *p, void *(*fn)(void *), void *arg)
{
    future_t *f = NULL;
    assert_ok(tpool_submit(p, fn, arg, &f));
    assert_non_null_or_say(f, "tpool_submit returned 0 but left *out NULL");
    return f;
}

/* ---- tasks ----------------------------------------------------------------- */

/* A task that runs until the test opens its gate, then returns `result`. */
struct gated_task {
    kit_gate_t gate;
    atomic_int runs; /* how often the body started */
    void *result;
};

static void gated_init(struct gated_task *task, void *result)
{
    assert_ok(kit_gate_init(&task->gate));
    atomic_init(&task->runs, 0);
    task->result = result;
}

static void *gated_body(void *raw)
{
    struct gated_task *task = raw;
    atomic_fetch_add(&task->runs, 1);
    kit_gate_wait(&task->gate);
    return task->result;
}

/* Waits until the gated task is running on a worker (it stands at its gate). */
static void await_running(struct gated_task *task, const char *what)
{
    if (kit_gate_await_arrivals(&task->gate, 1, KIT_HANG_MS) != 0)
        fail_msg("%s: the task never started", what);
}

static void *return_arg(void *arg)
{
    return arg;
}

/* Counts its runs in the atomic_int it is given. */
static void *count_run(void *raw)
{
    atomic_fetch_add((atomic_int *)raw, 1);
    return raw;
}

static void *fail_with_eproto(void *raw)
{
    future_fail(EPROTO);
    return raw; /* ignored: the task failed */
}

static void *fail_with_zero(void *raw)
{
    future_fail(0);
    return raw;
}

/* ---- a thread that waits on a future --------------------------------------- */

struct get_call {
    future_t *f;
    long timeout_ms; /* < 0: future_get; otherwise future_get_timed */
    int err;
    void *result;
};

static void *call_get(void *raw)
{
    struct get_call *call = raw;
    call->err = call->timeout_ms < 0 ? future_get(call->f, &call->result)
                                     : future_get_timed(call->f, &call->result, call->timeout_ms);
    return NULL;
}

static void start_getter(kit_worker_t *worker, struct get_call *call, future_t *f, long timeout_ms)
{
    *call = (struct get_call){ .f = f, .timeout_ms = timeout_ms, .err = -1, .result = NULL };
    kit_worker_start(worker, "getter", call_get, call);
}

/* ---- the restaurant: an order waits for a dish cooked on `kitchen` ----------- */

struct order {
    tpool_t *kitchen;    /* where the dish is cooked */
    kit_gate_t *counter; /* if set: every waiter takes an order before anyone cooks */
    char *dish;          /* what the cook task returns */
    int err;             /* future_get's answer for the dish */
    void *served;
};

static void *take_order(void *raw)
{
    struct order *order = raw;
    if (order->counter)
        kit_gate_wait(order->counter);
    future_t *dish = NULL;
    order->err = tpool_submit(order->kitchen, return_arg, order->dish, &dish);
    if (order->err == 0)
        order->err = future_get(dish, &order->served);
    future_release(dish);
    return order;
}

/* ---- bad arguments ---------------------------------------------------------- */

static void test_tpool_submit_rejects_bad_arguments(void **state)
{
    (void)state;
    tpool_t *p = make_pool(1, 1);
    int x = 0;
    future_t *f = (future_t *)&f; /* not NULL: submit must reset it on failure */
    assert_err(tpool_submit(NULL, return_arg, &x, &f), EINVAL);
    assert_null_or_say(f, "tpool_submit failed with EINVAL but did not set *out to NULL");
    f = (future_t *)&f;
    assert_err(tpool_submit(p, NULL, &x, &f), EINVAL);
    assert_null_or_say(f, "tpool_submit failed with EINVAL but did not set *out to NULL");
    assert_err(tpool_submit(p, return_arg, &x, NULL), EINVAL);
    tpool_destroy(p);
}

static void test_future_functions_reject_bad_arguments(void **state)
{
    (void)state;
    void *result = &result;
    assert_err(future_get(NULL, &result), EINVAL);
    assert_err(future_get_timed(NULL, &result, 10), EINVAL);
    assert_err(future_cancel(NULL), EINVAL);
    assert_err(future_create(NULL), EINVAL);
    assert_err(future_run(NULL, return_arg, NULL), EINVAL);
    assert_false(future_is_done(NULL));
    assert_int_equal(future_state(NULL), FUTURE_CANCELLED);
    assert_null(future_retain(NULL));
    future_set_lane(NULL, &result); /* harmless */
    future_release(NULL);           /* harmless */

    future_t *f = NULL;
    assert_ok(future_create(&f));
    assert_err(future_get_timed(f, &result, -1), EINVAL);
    assert_err(future_run(f, NULL, NULL), EINVAL);
    assert_ptr_equal_or_say(result, &result, "a call refused with EINVAL changed *result");
    assert_int_equal(future_state(f), FUTURE_PENDING);
    future_release(f);
}

/* One tpool_submit() whose task must run exactly once if it returns 0, and
 * never if it fails (with ENOMEM: nothing to leak, no future). */
static atomic_int submitted_runs;
static tpool_t *sweep_pool;

/* future_get returns once the result is stored; the pool lets go of the
 * task - drops its reference to the future, frees its own record - after
 * that. An attempt counts what it leaves allocated once the pool's only
 * worker is idle again, asleep waiting for the next task. */
static void await_idle_worker(void)
{
    kit_await_waiting_threads(1, "the pool's worker, idle again after its task");
}

static int submit_and_get(void *ctx)
{
    (void)ctx;
    future_t *f = (future_t *)&f;
    atomic_store(&submitted_runs, 0);
    int err = tpool_submit(sweep_pool, count_run, &submitted_runs, &f);
    if (err == ENOSYS) {
        kit_fail_allocation(0); /* disarmed before the test ends here */
        fail_msg("tpool_submit returned ENOSYS: not implemented yet - write it in exercises/04-starvation/");
    }
    if (err != 0 && f != NULL) {
        kit_fail_allocation(0);
        fail_msg("tpool_submit returned %s but left the future pointer set: after a failure it must be NULL",
                 kit_errno_name(err));
    }
    if (err == 0) {
        kit_fail_allocation(0); /* the task and the get must not fail for the sweep's sake */
        assert_ok(future_get_timed(f, NULL, KIT_HANG_MS));
        future_release(f);
        await_idle_worker();
    }
    return err;
}

static int create_and_release(void *ctx)
{
    (void)ctx;
    future_t *f = (future_t *)&f;
    int err = future_create(&f);
    if (err == ENOSYS) {
        kit_fail_allocation(0); /* disarmed before the test ends here */
        fail_msg("future_create returned ENOSYS: not implemented yet - write it in exercises/04-starvation/");
    }
    if (err != 0 && f != NULL) {
        kit_fail_allocation(0);
        fail_msg("future_create returned %s but left the future pointer set: after a failure it must be NULL",
                 kit_errno_name(err));
    }
    future_release(f);
    return err;
}

/* Each allocation future_create and tpool_submit make, failed in turn:
 * ENOMEM and nothing leaked, or success and the task runs once. */
static void test_tpool_submit_undoes_partial_work_without_memory(void **state)
{
    (void)state;
    assert_true_or_say(kit_sweep_allocation_failures("future_create", create_and_release, NULL) >= 1,
        "tpool_submit allocated nothing: each future must live in memory it allocates");
    sweep_pool = make_pool(1, 4);
    tpool_t *warm = sweep_pool;
    future_t *first = submit(warm, count_run, &submitted_runs); /* the worker exists before the sweep */
    assert_ok(future_get_timed(first, NULL, KIT_HANG_MS));
    future_release(first);
    await_idle_worker();
    kit_sweep_allocation_failures("tpool_submit", submit_and_get, NULL);
    tpool_destroy(sweep_pool);
}

/* ---- delivery and waiting ------------------------------------------------------ */

static void test_future_get_returns_the_result(void **state)
{
    (void)state;
    tpool_t *p = make_pool(2, 4);
    int value = 42;
    future_t *f = submit(p, return_arg, &value);
    void *result = NULL;
    assert_ok(future_get(f, &result));
    assert_ptr_equal_or_say(result, &value, "future_get gave another result than the task returned");
    assert_true(future_is_done(f));
    assert_int_equal(future_state(f), FUTURE_DONE);
    result = NULL;
    assert_ok(future_get(f, &result)); /* a finished future answers every time, at once */
    assert_ptr_equal_or_say(result, &value, "a second future_get on a finished future gave another result");
    result = NULL;
    assert_ok(future_get_timed(f, &result, 0));
    assert_ptr_equal_or_say(result, &value, "future_get_timed(0 ms) on a finished future gave another result");
    assert_ok(future_get(f, NULL)); /* the result may be ignored */
    future_release(f);

    future_t *null_result = submit(p, return_arg, NULL);
    result = &value;
    assert_ok(future_get(null_result, &result));
    assert_null_or_say(result,
        "future_get gave a result other than the NULL the task returned (NULL is a result like any other)");
    future_release(null_result);
    tpool_destroy(p);
}

/* Submits a gated task returning `result` to pool p and waits until it runs. */
static future_t *start_gated(tpool_t *p, struct gated_task *task, void *result)
{
    gated_init(task, result);
    future_t *f = submit(p, gated_body, task);
    await_running(task, "gated task");
    return f;
}

static void test_future_get_blocks_until_the_task_finishes(void **state)
{
    (void)state;
    tpool_t *p = make_pool(1, 4);
    int value = 7;
    static struct gated_task task;
    future_t *f = start_gated(p, &task, &value);
    assert_int_equal(future_state(f), FUTURE_RUNNING);
    assert_false(future_is_done(f));

    static struct get_call call;
    static kit_worker_t getter;
    start_getter(&getter, &call, f, -1);
    kit_worker_must_block(&getter, 200, "future_get on a running task");
    kit_gate_open(&task.gate);
    kit_worker_must_finish(&getter, "future_get after the task finished");
    assert_code_or_say(call.err, 0, "the future_get that waited for the task");
    assert_ptr_equal_or_say(call.result, &value, "the waiting future_get got another result than the task returned");
    assert_int_equal(future_state(f), FUTURE_DONE);
    future_release(f);
    tpool_destroy(p);
    kit_gate_destroy(&task.gate);
}

static void test_future_get_timed_waits_at_least_its_timeout(void **state)
{
    (void)state;
    tpool_t *p = make_pool(1, 4);
    int value = 9;
    static struct gated_task task;
    future_t *f = start_gated(p, &task, &value);

    void *result = &result;
    assert_err(future_get_timed(f, &result, 0), ETIMEDOUT); /* 0: do not wait */
    int64_t start = kit_now_ns();
    assert_err(future_get_timed(f, &result, 150), ETIMEDOUT);
    double waited = kit_elapsed_ms(start);
    if (waited < 150.0)
        fail_msg("future_get_timed(150 ms) gave up after %.1f ms", waited);
    assert_ptr_equal_or_say(result, &result, "future_get_timed gave ETIMEDOUT but changed *result");
    assert_int_equal(future_state(f), FUTURE_RUNNING); /* a timeout changes nothing */

    kit_gate_open(&task.gate);
    assert_ok(future_get_timed(f, &result, KIT_HANG_MS));
    assert_ptr_equal_or_say(result, &value, "future_get_timed gave another result than the task returned");
    future_release(f);
    tpool_destroy(p);
    kit_gate_destroy(&task.gate);
}

/* A wait woken every 20 ms for nothing must still end at its one deadline:
 * recomputing "now + timeout" after each wake-up would never time out. */
static void test_future_get_timed_times_out_when_woken_repeatedly(void **state)
{
    (void)state;
    tpool_t *p = make_pool(1, 4);
    static struct gated_task task;
    future_t *f = start_gated(p, &task, NULL);

    long woken_before = kit_spurious_count();
    kit_wakeups_every(20);
    static struct get_call call;
    static kit_worker_t getter;
    int64_t start = kit_now_ns();
    start_getter(&getter, &call, f, 200);
    kit_worker_must_finish(&getter, "future_get_timed(200 ms) woken every 20 ms");
    double waited = kit_elapsed_ms(start);
    kit_wakeups_every(0);
    assert_code_or_say(call.err, ETIMEDOUT, "future_get_timed(200 ms), woken early again and again,");
    if (waited < 200.0)
        fail_msg("future_get_timed(200 ms) gave up after %.1f ms", waited);
    assert_true_or_say(kit_spurious_count() > woken_before,
        "future_get_timed was never woken early: it does not wait on a condition variable");

    kit_gate_open(&task.gate);
    assert_ok(future_get(f, NULL));
    future_release(f);
    tpool_destroy(p);
    kit_gate_destroy(&task.gate);
}

/* With injected spurious wake-ups every first wait returns at once with
 * nothing finished: an `if` around the wait would return without a result. */
static void test_future_get_spurious_wakeups_do_not_release_waiters(void **state)
{
    (void)state;
    tpool_t *p = make_pool(1, 4);
    int value = 3;
    static struct gated_task task;
    future_t *f = start_gated(p, &task, &value);

    long woken_before = kit_spurious_count();
    kit_spurious_wakeups(true);
    static struct get_call plain, timed;
    static kit_worker_t plain_getter, timed_getter;
    start_getter(&plain_getter, &plain, f, -1);
    start_getter(&timed_getter, &timed, f, KIT_HANG_MS);
    kit_worker_must_block(&plain_getter, 200, "future_get woken spuriously");
    kit_worker_must_block(&timed_getter, 0, "future_get_timed woken spuriously");
    /* Both asleep, not only not yet returned: on a busy machine 200 ms may
     * pass before a getter reaches its wait, and the count below needs it to. */
    kit_await_waiting_threads(2, "future_get and future_get_timed, each woken spuriously once");
    kit_spurious_wakeups(false);
    assert_true_or_say(kit_spurious_count() >= woken_before + 2,
        "fewer than two waits were woken spuriously: future_get and future_get_timed must wait on a condvar");

    kit_gate_open(&task.gate);
    kit_worker_must_finish(&plain_getter, "future_get after the task finished");
    kit_worker_must_finish(&timed_getter, "future_get_timed after the task finished");
    assert_code_or_say(plain.err, 0, "the future_get woken spuriously, once the task finished,");
    assert_code_or_say(timed.err, 0, "the future_get_timed woken spuriously, once the task finished,");
    assert_ptr_equal_or_say(plain.result, &value,
        "the future_get woken spuriously got another result than the task returned");
    assert_ptr_equal_or_say(timed.result, &value,
        "the future_get_timed woken spuriously got another result than the task returned");
    future_release(f);
    tpool_destroy(p);
    kit_gate_destroy(&task.gate);
}

enum { WAITERS = 4 };

/* Four threads asleep on one future: finishing it must wake all four. */
static void test_future_get_releases_every_waiter(void **state)
{
    (void)state;
    tpool_t *p = make_pool(1, 4);
    int value = 11;
    static struct gated_task task;
    future_t *f = start_gated(p, &task, &value); /* the only worker stands at the gate, not in a wait */

    static struct get_call calls[WAITERS];
    static kit_worker_t getters[WAITERS];
    for (int i = 0; i < WAITERS; i++)
        start_getter(&getters[i], &calls[i], f, -1);
    kit_await_waiting_threads(WAITERS, "threads in future_get");
    kit_gate_open(&task.gate);
    for (int i = 0; i < WAITERS; i++) {
        kit_worker_must_finish(&getters[i], "a waiter when the future finished");
        assert_code_or_say(calls[i].err, 0, "waiter %d's future_get", i);
        assert_ptr_equal_or_say(calls[i].result, &value, "waiter %d got another result than the task returned", i);
    }
    future_release(f);
    tpool_destroy(p);
    kit_gate_destroy(&task.gate);
}

/* A waiter that wakes must find the result already there. Random delays
 * before every mutex lock give woken waiters time to run between any two
 * critical sections of the thread that finishes the future. */
static void test_future_get_sees_the_result_published_before_the_wake_up(void **state)
{
    (void)state;
    enum { READERS = 3 };
    tpool_t *p = make_pool(1, 4);
    long n = rounds(30, 6), wrong = 0, failed_gets = 0;
    kit_lock_delays(400, kit_test_seed());
    for (long r = 0; r < n; r++) {
        static struct gated_task task;
        gated_init(&task, &task); /* the result is the task's own address: new every round */
        future_t *f = submit(p, gated_body, &task);
        await_running(&task, "gated task");
        static struct get_call calls[READERS];
        static kit_worker_t readers[READERS];
        for (int i = 0; i < READERS; i++)
            start_getter(&readers[i], &calls[i], f, -1);
        kit_await_waiting_threads(READERS, "threads in future_get");
        kit_gate_open(&task.gate);
        for (int i = 0; i < READERS; i++) {
            kit_worker_must_finish(&readers[i], "a waiter when the future finished");
            failed_gets += calls[i].err != 0;
            wrong += calls[i].err == 0 && calls[i].result != &task;
        }
        future_release(f);
        tpool_destroy(p); /* waits for the task to end, so its gate can go */
        kit_gate_destroy(&task.gate);
        p = make_pool(1, 4);
    }
    kit_lock_delays(0, 0);
    tpool_destroy(p);
    if (wrong || failed_gets)
        fail_msg("of %ld wake-ups, %ld returned 0 without the result, %ld failed", n * READERS, wrong,
                 failed_gets);
}

/* ---- cancellation ------------------------------------------------------------ */

static void test_future_cancel_before_start_prevents_running(void **state)
{
    (void)state;
    tpool_t *p = make_pool(1, 4);
    static struct gated_task busy;
    gated_init(&busy, NULL);
    future_t *first = submit(p, gated_body, &busy);
    await_running(&busy, "the task keeping the only worker busy");
    atomic_int runs;
    atomic_init(&runs, 0);
    future_t *queued = submit(p, count_run, &runs); /* waits in the queue */
    assert_int_equal(future_state(queued), FUTURE_PENDING);
    assert_false(future_is_done(queued));

    static struct get_call call;
    static kit_worker_t getter;
    start_getter(&getter, &call, queued, -1);
    kit_worker_must_block(&getter, 100, "future_get on a queued task");
    assert_ok(future_cancel(queued));
    kit_worker_must_finish(&getter, "future_get when its future was cancelled");
    assert_code_or_say(call.err, ECANCELED, "the future_get waiting when its future was cancelled");
    assert_ok(future_cancel(queued)); /* already cancelled: still 0 */
    assert_int_equal(future_state(queued), FUTURE_CANCELLED);
    assert_true(future_is_done(queued));
    void *result = &result;
    assert_err(future_get(queued, &result), ECANCELED);
    assert_ptr_equal_or_say(result, &result, "future_get gave ECANCELED but changed *result");

    kit_gate_open(&busy.gate);
    assert_ok(future_get(first, NULL));
    tpool_destroy(p); /* every queued task has had its turn */
    assert_int_equal_or_say(atomic_load(&runs), 0, "the cancelled task ran anyway: runs of it");
    future_release(queued);
    future_release(first);
    kit_gate_destroy(&busy.gate);
}

static void test_future_cancel_after_start_fails(void **state)
{
    (void)state;
    tpool_t *p = make_pool(1, 4);
    int value = 5;
    static struct gated_task task;
    future_t *f = start_gated(p, &task, &value);
    assert_err(future_cancel(f), EBUSY);
    assert_int_equal(future_state(f), FUTURE_RUNNING); /* nothing changed */
    kit_gate_open(&task.gate);
    void *result = NULL;
    assert_ok(future_get(f, &result)); /* the result still arrives */
    assert_ptr_equal_or_say(result, &value,
        "future_get after a refused cancel gave another result than the task returned");
    assert_err(future_cancel(f), EBUSY); /* finished: too late as well */
    assert_int_equal(future_state(f), FUTURE_DONE);
    assert_int_equal_or_say(atomic_load(&task.runs), 1, "the task whose cancel came too late did not run once");
    future_release(f);
    tpool_destroy(p);
    kit_gate_destroy(&task.gate);
}

struct cancel_round {
    atomic_int runs;
    int cancel_err;
    int get_err;
};

/* Cancel fired at a task just as a worker picks it up, many times over, with
 * random delays before every lock. Whatever the interleaving: cancel 0 means
 * the task never runs and get says ECANCELED; EBUSY means it runs once and
 * get returns its result. */
static void test_future_stress_cancel_races_task_start(void **state)
{
    (void)state;
    long n = rounds(400, 60);
    struct cancel_round *round = calloc((size_t)n, sizeof *round);
    assert_non_null_or_say(round, "the test could not allocate its rounds");
    tpool_t *p = make_pool(1, 4);
    kit_rng_t rng;
    kit_rng_seed(&rng, kit_test_seed(), 1);
    kit_lock_delays(40, kit_test_seed());
    for (long i = 0; i < n; i++) {
        atomic_init(&round[i].runs, 0);
        future_t *f = submit(p, count_run, &round[i].runs);
        kit_jitter(&rng, 120); /* at once, after a yield, or a little later: sweep across the start */
        round[i].cancel_err = future_cancel(f);
        round[i].get_err = future_get(f, NULL);
        future_release(f);
    }
    kit_lock_delays(0, 0);
    tpool_destroy(p); /* every task has run or been skipped */
    long cancelled = 0, busy = 0, ran_after_cancel = 0, lost = 0, odd = 0;
    for (long i = 0; i < n; i++) {
        int runs = atomic_load(&round[i].runs);
        if (round[i].cancel_err == 0) {
            cancelled++;
            ran_after_cancel += runs != 0 || round[i].get_err != ECANCELED;
        } else if (round[i].cancel_err == EBUSY) {
            busy++;
            lost += runs != 1 || round[i].get_err != 0;
        } else {
            odd++;
        }
    }
    free(round);
    print_message("%ld rounds: %ld cancelled in time, %ld too late\n", n, cancelled, busy);
    if (ran_after_cancel || lost || odd)
        fail_msg("%ld cancelled tasks ran (or did not say ECANCELED), %ld started tasks did not finish "
                 "once, %ld cancels returned neither 0 nor EBUSY",
                 ran_after_cancel, lost, odd);
}

/* ---- failure, release, dropping ----------------------------------------------- */

static void test_future_fail_propagates_the_error(void **state)
{
    (void)state;
    tpool_t *p = make_pool(1, 4);
    int value = 1;
    future_t *f = submit(p, fail_with_eproto, &value);
    void *result = &result;
    assert_err(future_get(f, &result), EPROTO);
    assert_ptr_equal_or_say(result, &result,
        "future_get of a failed task changed *result (a failed task has no result)");
    assert_int_equal(future_state(f), FUTURE_FAILED);
    assert_true(future_is_done(f));
    assert_err(future_get_timed(f, &result, 0), EPROTO);
    future_release(f);

    future_t *zero = submit(p, fail_with_zero, &value);
    assert_err(future_get(zero, NULL), EIO); /* failing "with 0" is still a failure */
    assert_int_equal(future_state(zero), FUTURE_FAILED);
    future_release(zero);

    future_t *after = submit(p, return_arg, &value); /* the worker carries on */
    assert_ok(future_get(after, &result));
    assert_ptr_equal_or_say(result, &value, "the task after a failed one gave another result");
    assert_int_equal(future_state(after), FUTURE_DONE); /* one task's failure is not the next one's */
    future_release(after);
    tpool_destroy(p);
}

/* The caller and the pool each hold a reference; whichever lets go last frees. */
static void test_future_release_in_any_order_frees_everything(void **state)
{
    (void)state;
    long before = kit_live_allocations();
    tpool_t *p = make_pool(2, 64);

    static struct gated_task task; /* the caller lets go while the task still runs */
    gated_init(&task, NULL);
    future_t *early = submit(p, gated_body, &task);
    await_running(&task, "gated task");
    future_release(early);
    kit_gate_open(&task.gate);

    int value = 2; /* the caller lets go after the task finished */
    future_t *late = submit(p, return_arg, &value);
    assert_ok(future_get(late, NULL));
    future_release(late);

    future_t *shared = submit(p, return_arg, &value); /* a second owner */
    assert_ptr_equal(future_retain(shared), shared);
    future_release(shared);
    void *result = NULL;
    assert_ok(future_get(shared, &result)); /* still alive: one reference left */
    assert_ptr_equal_or_say(result, &value, "future_get through the reference left gave another result");
    future_release(shared);

    long n = rounds(200, 40); /* racing the finish: release at once or after a get */
    for (long i = 0; i < n; i++) {
        future_t *f = submit(p, return_arg, &value);
        if (i % 2)
            assert_ok(future_get(f, NULL));
        future_release(f);
    }
    tpool_destroy(p);
    kit_gate_destroy(&task.gate);
    assert_no_leak_since(before);
}

/* tpool_shutdown_now drops the queued tasks: their waiters must wake. */
static void shutdown_now_cancels_queued_futures(void)
{
    tpool_t *p = make_pool(1, 4);
    struct gated_task busy;
    gated_init(&busy, NULL);
    future_t *running = submit(p, gated_body, &busy);
    await_running(&busy, "the task keeping the only worker busy");
    atomic_int runs;
    atomic_init(&runs, 0);
    future_t *queued[2] = { submit(p, count_run, &runs), submit(p, count_run, &runs) };

    struct get_call call;
    kit_worker_t getter;
    start_getter(&getter, &call, queued[0], -1);
    kit_await_waiting_threads(1, "a thread waiting for a queued task");
    assert_ok(tpool_shutdown_now(p)); /* drops both queued tasks */
    kit_worker_must_finish(&getter, "a waiter whose task the pool dropped");
    assert_code_or_say(call.err, ECANCELED, "the future_get waiting for a task the pool dropped");
    assert_err(future_get(queued[1], NULL), ECANCELED);
    assert_int_equal(future_state(queued[1]), FUTURE_CANCELLED);
    kit_gate_open(&busy.gate);
    assert_ok(future_get(running, NULL)); /* the running task was not interrupted */
    tpool_stats_t stats;
    assert_ok(tpool_stats(p, &stats));
    assert_int_equal(stats.dropped, 2);
    tpool_destroy(p);
    assert_int_equal_or_say(atomic_load(&runs), 0, "the tasks tpool_shutdown_now dropped ran anyway: runs of them");
    for (int i = 0; i < 2; i++)
        future_release(queued[i]);
    future_release(running);
    kit_gate_destroy(&busy.gate);
}

/* The discard policy drops the newest task when the queue is full. */
static void discard_policy_cancels_the_dropped_future(void)
{
    tpool_t *p = make_pool_with(1, 1, bq_policy_discard(NULL), "discard");
    struct gated_task busy;
    gated_init(&busy, NULL);
    future_t *running = submit(p, gated_body, &busy);
    await_running(&busy, "the task keeping the only worker busy");
    atomic_int runs;
    atomic_init(&runs, 0);
    future_t *waiting = submit(p, count_run, &runs);  /* fills the queue */
    future_t *discarded = submit(p, count_run, &runs); /* accepted, then discarded */
    assert_int_equal(future_state(discarded), FUTURE_CANCELLED);
    assert_err(future_get(discarded, NULL), ECANCELED);
    kit_gate_open(&busy.gate);
    assert_ok(future_get(waiting, NULL));
    tpool_destroy(p);
    assert_int_equal_or_say(atomic_load(&runs), 1, "runs of the tasks: only the one waited for runs");
    future_release(discarded);
    future_release(waiting);
    future_release(running);
    kit_gate_destroy(&busy.gate);
}

static void test_tpool_submit_dropped_tasks_cancel_their_futures(void **state)
{
    (void)state;
    shutdown_now_cancels_queued_futures();
    discard_policy_cancels_the_dropped_future();
}

static void test_tpool_submit_rejected_task_gives_no_future(void **state)
{
    (void)state;
    long before = kit_live_allocations();
    tpool_t *p = make_pool_with(1, 1, bq_policy_abort(), "abort");
    static struct gated_task busy;
    gated_init(&busy, NULL);
    future_t *running = submit(p, gated_body, &busy);
    await_running(&busy, "the task keeping the only worker busy");
    atomic_int runs;
    atomic_init(&runs, 0);
    future_t *queued = submit(p, count_run, &runs);
    future_t *f = (future_t *)&f;
    assert_err(tpool_submit(p, count_run, &runs, &f), EAGAIN); /* queue full: abort */
    assert_null_or_say(f, "tpool_submit refused with EAGAIN but did not set *out to NULL");
    kit_gate_open(&busy.gate);
    assert_ok(future_get(queued, NULL));
    assert_ok(tpool_shutdown(p));
    f = (future_t *)&f;
    assert_err(tpool_submit(p, count_run, &runs, &f), ECANCELED);
    assert_null_or_say(f, "tpool_submit refused with ECANCELED but did not set *out to NULL");
    tpool_destroy(p);
    assert_int_equal_or_say(atomic_load(&runs), 1, "runs of the tasks: a refused task ran");
    future_release(queued);
    future_release(running);
    kit_gate_destroy(&busy.gate);
    assert_no_leak_since(before);
}

/* ---- starvation ----------------------------------------------------------------- */

static char dishes[][24] = { "di san xian", "kung pao chicken", "spicy diced chicken", "grilled wings" };

/* The source document's restaurant on pool @p p of two: two orders taken
 * at once, each waiting for a dish only this pool could cook. The first
 * waiter to ask still has a colleague who might cook; the second has nobody
 * left, so it gets EDEADLK - and leaving frees its thread to cook the first
 * dish. @p before says what the pool went through first, for the messages. */
static void restaurant_starves_once(tpool_t *p, const char *before)
{
    static kit_gate_t counter;
    assert_ok(kit_gate_init(&counter));
    static struct order orders[2];
    future_t *taken[2];
    for (int i = 0; i < 2; i++) {
        orders[i] = (struct order){ .kitchen = p, .counter = &counter, .dish = dishes[i], .err = -1 };
        taken[i] = submit(p, take_order, &orders[i]);
    }
    if (kit_gate_await_arrivals(&counter, 2, KIT_HANG_MS) != 0)
        fail_msg("%sthe two orders were not both taken by the pool's two workers", before);
    kit_gate_open(&counter); /* both workers now hold an order: nobody is free to cook */
    for (int i = 0; i < 2; i++)
        if (future_get_timed(taken[i], NULL, KIT_HANG_MS) != 0)
            fail_msg("%sorder %d is still waiting after %ld ms: the starved pool hung, no wait got EDEADLK", before, i,
                     KIT_HANG_MS);
    int starved = 0, served = 0;
    for (int i = 0; i < 2; i++) {
        starved += orders[i].err == EDEADLK;
        served += orders[i].err == 0 && orders[i].served == dishes[i];
    }
    if (starved != 1 || served != 1)
        fail_msg("%sexpected one order served and one EDEADLK; got %s and %s", before, kit_errno_name(orders[0].err),
                 kit_errno_name(orders[1].err));
    for (int i = 0; i < 2; i++)
        future_release(taken[i]);
    kit_gate_destroy(&counter);
}

static void test_future_get_shared_pool_starvation_is_detected(void **state)
{
    (void)state;
    tpool_t *p = make_pool_with(2, 8, bq_policy_block(), "shared");
    restaurant_starves_once(p, "");
    tpool_destroy(p);
}

/* Pool of two: one worker is busy (not waiting on the pool), the other waits
 * for a task queued behind it. The busy one will finish and run that task,
 * so the wait is not a deadlock: it must wait, then get the result. Twice,
 * on the same pool: the first wait must leave nothing counted behind. */
static void test_future_get_waits_while_another_worker_can_progress(void **state)
{
    (void)state;
    tpool_t *p = make_pool_with(2, 8, bq_policy_block(), "progress");
    for (int r = 0; r < 2; r++) {
        static struct gated_task busy;
        gated_init(&busy, NULL);
        future_t *running = submit(p, gated_body, &busy);
        await_running(&busy, "the task keeping one worker busy");
        static struct order order;
        order = (struct order){ .kitchen = p, .dish = dishes[r], .err = -1 };
        future_t *waiter = submit(p, take_order, &order); /* the other worker: submits, then waits */
        int early = future_get_timed(waiter, NULL, 300);
        if (early != ETIMEDOUT)
            fail_msg("round %d: the waiting worker's task did not wait (a get on it gave %s; its own "
                     "future_get said %s), but the busy worker was still able to run the queued task",
                     r, kit_errno_name(early), kit_errno_name(order.err));
        kit_gate_open(&busy.gate);
        assert_ok(future_get_timed(waiter, NULL, KIT_HANG_MS));
        assert_code_or_say(order.err, 0, "round %d: the waiting worker's future_get", r);
        assert_ptr_equal_or_say(order.served, dishes[r], "round %d: the order was served another dish", r);
        assert_ok(future_get(running, NULL));
        future_release(waiter);
        future_release(running);
        kit_gate_destroy(&busy.gate); /* its task has returned: future_get said so */
    }
    tpool_destroy(p);
}


/* A task on one worker of a pool of two, the other worker busy: it queues
 * task C and waits for it twice, 100 ms each time, while C cannot start.
 * Its first wait is counted as a blocked worker, and must be un-counted
 * when it gives up: else the second wait finds "every worker blocked" and
 * gets a false EDEADLK, though the busy worker will run C. Static: if the
 * test fails, a task still running must not write into a stack frame that
 * is gone. */
static struct twice {
    tpool_t *p;
    int submit_err, first_err, second_err; /* the task's tpool_submit and two future_get_timed on C */
    future_t *c;
} twice;

static void *wait_twice_for_a_queued_task(void *raw)
{
    (void)raw;
    twice.submit_err = tpool_submit(twice.p, return_arg, &twice, &twice.c);
    if (twice.submit_err != 0)
        return NULL;
    twice.first_err = future_get_timed(twice.c, NULL, 100);
    twice.second_err = future_get_timed(twice.c, NULL, 100);
    return NULL;
}

static void test_future_get_timed_out_own_pool_wait_is_uncounted(void **state)
{
    (void)state;
    twice = (struct twice){ .p = make_pool_with(2, 8, bq_policy_block(), "twice"), .first_err = -1,
                            .second_err = -1 };
    static struct gated_task busy;
    future_t *running = start_gated(twice.p, &busy, NULL);
    await_running(&busy, "the task keeping one worker busy");
    future_t *waiter = submit(twice.p, wait_twice_for_a_queued_task, NULL);
    assert_ok(future_get_timed(waiter, NULL, KIT_HANG_MS));
    kit_gate_open(&busy.gate); /* only now may task C start */
    assert_ok(twice.submit_err);
    if (twice.first_err != ETIMEDOUT)
        fail_msg("a worker's 100 ms future_get_timed on a task queued in its own pool, with the other worker busy, "
                 "returned %s: the busy worker can still run the task, so it must wait and give ETIMEDOUT",
                 kit_errno_name(twice.first_err));
    if (twice.second_err != ETIMEDOUT)
        fail_msg("a worker's future_get_timed on a task queued in its own pool gave up with ETIMEDOUT, and its next "
                 "one on the same task, the other worker still busy, returned %s, not ETIMEDOUT: a timed get that "
                 "times out must stop counting its worker as blocked (future.h), or the pool thinks every worker "
                 "is stuck", kit_errno_name(twice.second_err));
    assert_ok(future_get_timed(twice.c, NULL, KIT_HANG_MS));
    assert_ok(future_get(running, NULL));
    /* Its task done, the give-up must have left the pool's count of blocked
     * workers as it found it: not lower either (un-counted twice, once by the
     * timed get and again when the task finished), or a real starvation is
     * no longer seen. */
    restaurant_starves_once(twice.p, "after a worker's timed get gave up on a task of its own pool and that task "
                                     "then finished (its wait counted once and un-counted once): ");
    future_release(twice.c);
    future_release(waiter);
    future_release(running);
    tpool_destroy(twice.p);
    kit_gate_destroy(&busy.gate);
}

/* A wait that ends because its task finished is un-counted once. Pool of
 * two, one worker busy: the other submits task C and waits for it (counted
 * as blocked); the busy worker then runs C, and finishing C ends that wait.
 * Un-counted twice (by the finisher and again by the waiter), the pool's
 * count of blocked workers drops below the truth - or wraps around - and a
 * real starvation on the same pool afterwards is no longer seen. */
static void test_future_get_finished_own_pool_wait_is_uncounted_once(void **state)
{
    (void)state;
    tpool_t *p = make_pool_with(2, 8, bq_policy_block(), "once");
    static struct gated_task busy;
    future_t *running = start_gated(p, &busy, NULL);
    await_running(&busy, "the task keeping one worker busy");
    static struct order order;
    order = (struct order){ .kitchen = p, .dish = dishes[2], .err = -1 };
    future_t *waiter = submit(p, take_order, &order); /* the other worker: submits C, then waits for it */
    kit_await_waiting_threads(1, "a worker in future_get on a task queued behind a busy worker");
    kit_gate_open(&busy.gate); /* the busy worker returns and runs C, which ends the wait */
    assert_ok(future_get_timed(waiter, NULL, KIT_HANG_MS));
    assert_code_or_say(order.err, 0, "the waiting worker's future_get on the task the other worker ran");
    assert_ptr_equal_or_say(order.served, dishes[2], "the waiting worker was served another dish");
    assert_ok(future_get(running, NULL));
    restaurant_starves_once(p, "after a worker's future_get on a task of its own pool was counted as blocked and "
                               "ended when that task finished (a wait is un-counted once when it ends - by the "
                               "finisher or by the waiter, not both: future.h): ");
    future_release(waiter);
    future_release(running);
    tpool_destroy(p);
    kit_gate_destroy(&busy.gate);
}

/* A wait that ends because its future was cancelled is un-counted too: a
 * cancelled future is finished (future.h). Pool of two, one worker busy: the
 * other submits task C, publishes C's future and waits for it (counted as
 * blocked); main cancels C, still queued behind the busy worker, and the
 * wait ends with ECANCELED. Left counted, the pool believes a worker is
 * blocked for ever, and a later wait on its own work gets a false EDEADLK
 * while a worker could run it. Static: a task still running if the test
 * fails must not write into a stack frame that is gone. */
static struct cancelled_wait {
    tpool_t *p;
    kit_gate_t published; /* opened once c is set */
    future_t *c;          /* the queued task's future, which the worker waits for */
    int submit_err, get_err;
} cancelled_wait;

static void *wait_for_a_task_main_cancels(void *raw)
{
    (void)raw;
    cancelled_wait.submit_err = tpool_submit(cancelled_wait.p, return_arg, dishes[3], &cancelled_wait.c);
    kit_gate_open(&cancelled_wait.published);
    if (cancelled_wait.submit_err == 0)
        cancelled_wait.get_err = future_get(cancelled_wait.c, NULL);
    future_release(cancelled_wait.c);
    return NULL;
}

static void test_future_get_cancelled_own_pool_wait_is_uncounted(void **state)
{
    (void)state;
    cancelled_wait = (struct cancelled_wait){ .p = make_pool_with(2, 8, bq_policy_block(), "cancel"), .get_err = -1 };
    assert_ok(kit_gate_init(&cancelled_wait.published));
    static struct gated_task busy;
    future_t *running = start_gated(cancelled_wait.p, &busy, NULL);
    await_running(&busy, "the task keeping one worker busy");
    future_t *waiter = submit(cancelled_wait.p, wait_for_a_task_main_cancels, NULL);
    kit_gate_wait(&cancelled_wait.published);
    assert_ok(cancelled_wait.submit_err);
    kit_await_waiting_threads(1, "a worker in future_get on a task queued behind a busy worker");
    assert_code_or_say(future_cancel(cancelled_wait.c), 0, "future_cancel on a task still queued behind a busy worker");
    assert_ok(future_get_timed(waiter, NULL, KIT_HANG_MS));
    assert_code_or_say(cancelled_wait.get_err, ECANCELED,
                       "a worker's future_get on a task of its own pool that main cancelled before it started");
    kit_gate_open(&busy.gate);
    assert_ok(future_get(running, NULL));
    restaurant_starves_once(cancelled_wait.p, "after a worker's future_get on a task of its own pool was counted as "
                                              "blocked and ended because main cancelled that task (a cancelled "
                                              "future is finished: its waiters are un-counted, future.h): ");
    future_release(waiter);
    future_release(running);
    tpool_destroy(cancelled_wait.p);
    kit_gate_destroy(&busy.gate);
    kit_gate_destroy(&cancelled_wait.published);
}

/* A chain in one pool of two: B runs on one worker; A, on the other, waits
 * for B's future - a task *running* on another worker of the pool, not
 * queued. Then B waits for a task C it queued in the same pool. Nobody is
 * left to run C: B must get EDEADLK, which it can only if A's wait was
 * counted. Static: if the test fails, tasks still running must not write
 * into a stack frame that is gone. */
static struct chain {
    kit_gate_t go;        /* B waits here until A is asleep in its future_get */
    tpool_t *p;
    future_t *b;          /* B's future, which A waits for */
    int a_err, b_err;     /* A's future_get(b); B's future_get_timed on C */
    long b_waited_ms;
} chain;

static void *chain_b(void *raw)
{
    (void)raw;
    kit_gate_wait(&chain.go);
    future_t *c = NULL;
    int64_t start = kit_now_ns();
    chain.b_err = tpool_submit(chain.p, return_arg, &chain, &c);
    if (chain.b_err == 0)
        chain.b_err = future_get_timed(c, NULL, KIT_HANG_MS);
    chain.b_waited_ms = kit_elapsed_ms(start);
    future_release(c);
    return NULL;
}

static void *chain_a(void *raw)
{
    (void)raw;
    chain.a_err = future_get(chain.b, NULL);
    return NULL;
}

static void test_future_get_counts_a_wait_for_a_task_running_on_another_worker(void **state)
{
    (void)state;
    chain = (struct chain){ .p = make_pool_with(2, 8, bq_policy_block(), "chain"), .a_err = -1, .b_err = -1 };
    assert_ok(kit_gate_init(&chain.go));
    chain.b = submit(chain.p, chain_b, NULL);
    if (kit_gate_await_arrivals(&chain.go, 1, KIT_HANG_MS) != 0)
        fail_msg("task B never started on the pool of two");
    future_t *a = submit(chain.p, chain_a, NULL);
    kit_await_waiting_threads(1, "task A in future_get on task B"); /* a gate wait is not counted */
    kit_gate_open(&chain.go);
    if (future_get_timed(a, NULL, 2 * KIT_HANG_MS) != 0)
        fail_msg("task A still waits for task B after %ld ms", 2 * KIT_HANG_MS);
    if (chain.b_err != EDEADLK)
        fail_msg("a worker waited for a task running on another worker of its pool, and that worker then "
                 "waited for a task queued in the same pool: that second future_get returned %s after %ld ms, "
                 "expected EDEADLK at once - the first wait must count as a blocked worker too (future.h)",
                 kit_errno_name(chain.b_err), chain.b_waited_ms);
    assert_code_or_say(chain.a_err, 0, "task A's future_get on task B, which runs on the other worker,");
    future_release(a);
    future_release(chain.b);
    tpool_destroy(chain.p);
    kit_gate_destroy(&chain.go);
}

/* tpool_block_begin() on the only worker of a pool that may grow starts a
 * second worker - and still counts the caller as blocked (tpool.h). A task
 * on that second worker then finds every other worker blocked: EDEADLK. */
static struct growth {
    kit_latch_t first_blocked; /* counted down once the first task's block_begin returned */
    kit_latch_t hold;          /* the first task waits here (bounded) before its block_end */
    int first_err, second_err;
} growth;

static void *block_first(void *raw)
{
    (void)raw;
    growth.first_err = tpool_block_begin(tpool_current());
    kit_latch_count_down(&growth.first_blocked);
    kit_latch_wait(&growth.hold, 2 * KIT_HANG_MS);
    if (growth.first_err == 0)
        tpool_block_end(tpool_current());
    return NULL;
}

static void *block_second(void *raw)
{
    (void)raw;
    growth.second_err = tpool_block_begin(tpool_current());
    if (growth.second_err == 0)
        tpool_block_end(tpool_current());
    return NULL;
}

static void test_tpool_block_begin_counts_the_caller_when_it_grows_the_pool(void **state)
{
    (void)state;
    tpool_t *p = make_pool_with(2, 8, bq_policy_block(), "grow");
    growth = (struct growth){ .first_err = -1, .second_err = -1 };
    assert_ok(kit_latch_init(&growth.first_blocked, 1));
    assert_ok(kit_latch_init(&growth.hold, 1));
    future_t *first = submit(p, block_first, NULL);
    int arrived = kit_latch_wait(&growth.first_blocked, KIT_HANG_MS);
    future_t *second = arrived == 0 ? submit(p, block_second, NULL) : NULL;
    int second_done = second ? future_get_timed(second, NULL, KIT_HANG_MS) : ETIMEDOUT;
    kit_latch_count_down(&growth.hold); /* first let the first task go, then judge */
    assert_ok(future_get_timed(first, NULL, 2 * KIT_HANG_MS));
    if (arrived != 0)
        fail_msg("the first task's tpool_block_begin did not return within %ld ms", KIT_HANG_MS);
    assert_code_or_say(growth.first_err, 0, "the first task's tpool_block_begin");
    assert_code_or_say(second_done, 0,
        "the wait for the second task, which needs the worker the first one's block added,");
    if (growth.second_err != EDEADLK)
        fail_msg("tpool_block_begin on the second worker of a pool that cannot grow further, the first worker "
                 "blocked: returned %s, expected EDEADLK - every other worker waits, so the caller is the last who "
                 "could run the queue (tpool.h). Either the first block_begin, which started this worker, did not "
                 "count its own caller as blocked, or the detector's comparison of the blocked workers with the "
                 "workers alive is off by one", kit_errno_name(growth.second_err));
    future_release(first);
    future_release(second);
    tpool_destroy(p);
    kit_latch_destroy(&growth.first_blocked);
    kit_latch_destroy(&growth.hold);
}

/* The fix: waiters on one pool, cooks on another. A waiter blocks, but the
 * cooks never wait on anything, so every dish gets cooked. */
static void test_future_split_pools_serve_every_order(void **state)
{
    (void)state;
    enum { ORDERS = 8 };
    tpool_t *waiters = make_pool_with(2, ORDERS, bq_policy_block(), "waiter");
    tpool_t *cooks = make_pool_with(1, ORDERS, bq_policy_block(), "cook");
    static struct order orders[ORDERS];
    future_t *taken[ORDERS];
    for (int i = 0; i < ORDERS; i++) {
        orders[i] = (struct order){ .kitchen = cooks, .dish = dishes[i % 4], .err = -1 };
        taken[i] = submit(waiters, take_order, &orders[i]);
    }
    for (int i = 0; i < ORDERS; i++) {
        if (future_get_timed(taken[i], NULL, KIT_HANG_MS) != 0)
            fail_msg("order %d was not served within %ld ms", i, KIT_HANG_MS);
        assert_code_or_say(orders[i].err, 0, "order %d's future_get on the cook pool", i);
        assert_ptr_equal_or_say(orders[i].served, dishes[i % 4], "order %d was served another dish", i);
        future_release(taken[i]);
    }
    tpool_destroy(waiters);
    tpool_destroy(cooks);
}

/* ---- building blocks for other executors (chapter 06) ---------------------------- */

/* A thread that runs a lane's tasks one at a time (future_enter_lane) and
 * waits on a future of that same lane would wait for itself: EDEADLK at
 * once, also for a timed wait. Outside the lane, the same future is waited
 * for as usual, and future_run publishes its result. */
static void test_future_get_in_its_own_lane_gives_edeadlk(void **state)
{
    (void)state;
    long before = kit_live_allocations();
    int value = 4, lane = 0;
    future_t *f = NULL;
    assert_ok(future_create(&f));
    future_set_lane(f, &lane);
    future_enter_lane(&lane);
    assert_err(future_get(f, NULL), EDEADLK);
    assert_err(future_get_timed(f, NULL, KIT_HANG_MS), EDEADLK); /* at once, not after the timeout */
    future_enter_lane(NULL);
    assert_err(future_get_timed(f, NULL, 0), ETIMEDOUT);
    assert_ok(future_run(f, return_arg, &value));
    void *result = NULL;
    assert_ok(future_get(f, &result));
    assert_ptr_equal_or_say(result, &value, "future_get gave another result than the task returned");
    assert_ptr_equal(future_retain(f), f);
    future_release(f);
    future_release(f);
    assert_no_leak_since(before);
}

/* future_run on a cancelled future returns ECANCELED and never calls the task. */
static void test_future_run_skips_a_cancelled_future(void **state)
{
    (void)state;
    long before = kit_live_allocations();
    atomic_int runs;
    atomic_init(&runs, 0);
    future_t *cancelled = NULL;
    assert_ok(future_create(&cancelled));
    assert_ok(future_cancel(cancelled));
    assert_err(future_run(cancelled, count_run, &runs), ECANCELED);
    if (atomic_load(&runs) != 0)
        fail_msg("future_run called the task of a cancelled future %d time(s); a cancelled task never runs",
                 atomic_load(&runs));
    future_release(cancelled);
    assert_no_leak_since(before);
}

/* A future runs its task at most once: future_run of a future already run
 * returns ECANCELED, never calls the task again, and leaves its result. */
static void test_future_run_runs_a_task_once(void **state)
{
    (void)state;
    long before = kit_live_allocations();
    atomic_int runs;
    atomic_init(&runs, 0);
    future_t *f = NULL;
    assert_ok(future_create(&f));
    assert_ok(future_run(f, count_run, &runs));
    void *first = NULL, *after = NULL;
    assert_ok(future_get(f, &first));
    assert_err(future_run(f, count_run, &runs), ECANCELED);
    if (atomic_load(&runs) != 1)
        fail_msg("future_run of a future whose task had already run called it again (%d runs in all); a future "
                 "runs its task at most once (future.h)", atomic_load(&runs));
    assert_ok(future_get(f, &after));
    assert_ptr_equal_or_say(after, first, "a second future_run changed the future's result");
    future_release(f);
    assert_no_leak_since(before);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_tpool_submit_rejects_bad_arguments),
    cmocka_unit_test(test_future_functions_reject_bad_arguments),
    cmocka_unit_test(test_tpool_submit_undoes_partial_work_without_memory),
    cmocka_unit_test(test_future_get_returns_the_result),
    cmocka_unit_test(test_future_get_blocks_until_the_task_finishes),
    cmocka_unit_test(test_future_get_timed_waits_at_least_its_timeout),
    cmocka_unit_test(test_future_get_timed_times_out_when_woken_repeatedly),
    cmocka_unit_test(test_future_get_spurious_wakeups_do_not_release_waiters),
    cmocka_unit_test(test_future_get_releases_every_waiter),
    cmocka_unit_test(test_future_get_sees_the_result_published_before_the_wake_up),
    cmocka_unit_test(test_future_cancel_before_start_prevents_running),
    cmocka_unit_test(test_future_cancel_after_start_fails),
    cmocka_unit_test(test_future_stress_cancel_races_task_start),
    cmocka_unit_test(test_future_fail_propagates_the_error),
    cmocka_unit_test(test_future_release_in_any_order_frees_everything),
    cmocka_unit_test(test_tpool_submit_dropped_tasks_cancel_their_futures),
    cmocka_unit_test(test_tpool_submit_rejected_task_gives_no_future),
    cmocka_unit_test(test_future_get_shared_pool_starvation_is_detected),
    cmocka_unit_test(test_future_get_waits_while_another_worker_can_progress),
    cmocka_unit_test(test_future_get_timed_out_own_pool_wait_is_uncounted),
    cmocka_unit_test(test_future_get_finished_own_pool_wait_is_uncounted_once),
    cmocka_unit_test(test_future_get_cancelled_own_pool_wait_is_uncounted),
    cmocka_unit_test(test_future_get_counts_a_wait_for_a_task_running_on_another_worker),
    cmocka_unit_test(test_tpool_block_begin_counts_the_caller_when_it_grows_the_pool),
    cmocka_unit_test(test_future_split_pools_serve_every_order),
    cmocka_unit_test(test_future_get_in_its_own_lane_gives_edeadlk),
    cmocka_unit_test(test_future_run_skips_a_cancelled_future),
    cmocka_unit_test(test_future_run_runs_a_task_once),
};

KIT_TEST_MAIN(tests)
