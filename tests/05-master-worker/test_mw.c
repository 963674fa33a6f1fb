/**
 * @file test_mw.c
 * @brief Chapter 05 tests: every task ends up exactly once as a result, a
 *        failure or a rejection; completion is decided by the pending
 *        counter; back-pressure bounds the results and its trap is detected.
 *
 * Process functions run on the component's workers, so they never assert:
 * they count what they saw in atomics, and the main thread checks.
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_test.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_errno.h"
#include "kit_time.h"
#include "mw.h"

/* ---- helpers ------------------------------------------------------------------- */

static long scaled(long normal, long slow)
{
    return kit_test_slow() ? slow : normal;
}

static mw_t *make_mw(mw_config_t config)
{
    mw_t *mw = NULL;
    assert_ok(mw_create(&mw, &config));
    assert_non_null_or_say(mw, "mw_create returned 0 but left *out NULL");
    return mw;
}

static mw_stats_t stats_of(mw_t *mw)
{
    mw_stats_t stats;
    assert_ok(mw_stats(mw, &stats));
    return stats;
}

static void assert_conserved(mw_stats_t s)
{
    if (s.submitted != s.completed + s.failed + s.rejected + s.pending)
        fail_msg("conservation broken: submitted %zu != completed %zu + failed %zu + rejected %zu + pending %zu",
                 s.submitted, s.completed, s.failed, s.rejected, s.pending);
}

static void *as_data(long value)
{
    return (void *)(intptr_t)value;
}

static long data_value(void *data)
{
    return (long)(intptr_t)data;
}

static long expected_data(long id)
{
    return id * 3 + 1;
}

/* Takes every stored result (the results must have ended: closed, nothing
 * pending); counts each id in seen[], which has room for `ids` ids. Returns
 * how many results there were; *wrong counts bad data or ids. */
static long drain_results(mw_t *mw, int *seen, long ids, long *wrong)
{
    mw_result_t result;
    long taken = 0;
    int err;
    while ((err = mw_take_result(mw, &result, KIT_HANG_MS)) == 0) {
        taken++;
        if (result.task_id < 0 || result.task_id >= ids || data_value(result.data) != expected_data(result.task_id) ||
            result.cost_us < 0)
            (*wrong)++;
        else
            seen[result.task_id]++;
    }
    assert_code_or_say(err, ECANCELED,
        "mw_take_result once the results had ended (the end of the results, not a time-out)");
    return taken;
}

/* kit_threads_named(), polled until it says `expected` (a new thread names
 * itself, a joined one is forgotten as it ends, each a moment later). */
static long await_threads_named(const char *prefix, long expected)
{
    int64_t start = kit_now_ns();
    long count = kit_threads_named(prefix);
    while (count != expected && kit_elapsed_ms(start) < KIT_HANG_MS) {
        kit_sleep_ms(1);
        count = kit_threads_named(prefix);
    }
    return count;
}

/* ---- process functions ---------------------------------------------------------- */

static int process_triple(mw_t *mw, const mw_task_t *task, void **result, void *ctx)
{
    (void)mw;
    (void)ctx;
    *result = as_data(expected_data(task->id));
    return 0;
}

/* Deterministic per task: whether it fails, and with which code. */
static bool should_fail(uint64_t seed, long id, int percent)
{
    kit_rng_t rng;
    kit_rng_seed(&rng, seed, (uint64_t)id);
    return (int)kit_rng_below(&rng, 100) < percent;
}

static int error_for(long id)
{
    return 100 + (int)(id % 7);
}

/* A seeded workload: some tasks fail; in the "spawn" range some submit a child. */
struct seeded {
    uint64_t seed;
    int fail_percent;
    long spawn_below;        /* tasks with id < spawn_below and id odd submit child id + offset */
    long child_offset;
    long child_timeout_ms;   /* how long a child submission may wait for room */
    unsigned jitter_us;      /* random pause inside each task */
    atomic_long produced;    /* tasks that produced a result */
    atomic_int child_errors; /* child submissions that were not accepted */
};

static int process_seeded(mw_t *mw, const mw_task_t *task, void **result, void *ctx)
{
    struct seeded *plan = ctx;
    if (plan->jitter_us) {
        kit_rng_t rng;
        kit_rng_seed(&rng, plan->seed ^ 0x5A5A, (uint64_t)task->id);
        kit_jitter(&rng, plan->jitter_us);
    }
    if (task->id < plan->spawn_below && task->id % 2 == 1 &&
        mw_submit(mw, task->id + plan->child_offset, NULL, plan->child_timeout_ms) != 0)
        atomic_fetch_add(&plan->child_errors, 1);
    if (should_fail(plan->seed, task->id, plan->fail_percent))
        return error_for(task->id);
    *result = as_data(expected_data(task->id));
    atomic_fetch_add(&plan->produced, 1);
    return 0;
}

/* Holds the task `held_id` until released; the rest return at once. */
struct hold {
    long held_id;
    kit_latch_t started;  /* counted down when the held task starts */
    kit_latch_t release;  /* the held task waits for this */
    bool until_stop;      /* instead: wait until mw_stop_requested(), submit a sub-task, then fail */
    atomic_int subtask_error; /* what that sub-task's mw_submit returned (-1: not tried) */
    atomic_int timed_out; /* the held task gave up waiting (a test bug or a hang) */
};

/* The id of the sub-task a held task submits once it has seen the stop. */
static const long LATE_SUBTASK = 1000;

static int process_hold(mw_t *mw, const mw_task_t *task, void **result, void *ctx)
{
    struct hold *hold = ctx;
    *result = as_data(expected_data(task->id));
    if (task->id != hold->held_id)
        return 0;
    kit_latch_count_down(&hold->started);
    if (hold->until_stop) { /* a long task that checks for a stop now and then */
        int64_t start = kit_now_ns();
        while (!mw_stop_requested(mw) && kit_elapsed_ms(start) < KIT_HANG_MS)
            kit_sleep_ms(1);
        atomic_store(&hold->subtask_error, mw_submit(mw, LATE_SUBTASK, NULL, 0)); /* after the deadline */
        return ECANCELED;
    }
    if (kit_latch_wait(&hold->release, KIT_HANG_MS) != 0)
        atomic_fetch_add(&hold->timed_out, 1);
    return 0;
}

static void hold_init(struct hold *hold, long held_id)
{
    memset(hold, 0, sizeof *hold);
    hold->held_id = held_id;
    atomic_store(&hold->subtask_error, -1);
    assert_ok(kit_latch_init(&hold->started, 1));
    assert_ok(kit_latch_init(&hold->release, 1));
}

static void hold_destroy(struct hold *hold)
{
    assert_int_equal_or_say(atomic_load(&hold->timed_out), 0,
        "a held task was never released: its waits that timed out");
    kit_latch_destroy(&hold->started);
    kit_latch_destroy(&hold->release);
}

/* A tree of tasks in heap order: task n submits n*fanout+1 .. n*fanout+fanout,
 * those below `total`. The document's recursive directory scan. */
struct tree {
    long fanout, total;
    kit_latch_t *root_started; /* if set, counted down when the root starts */
    kit_latch_t *root_go;      /* if set, the root waits for it before submitting */
    atomic_int child_errors;
};

static long tree_size(long fanout, long depth)
{
    long size = 0, level = 1;
    for (long d = 0; d <= depth; d++, level *= fanout)
        size += level;
    return size;
}

static int process_tree(mw_t *mw, const mw_task_t *task, void **result, void *ctx)
{
    struct tree *tree = ctx;
    if (task->id == 0 && tree->root_go) {
        kit_latch_count_down(tree->root_started);
        if (kit_latch_wait(tree->root_go, KIT_HANG_MS) != 0)
            atomic_fetch_add(&tree->child_errors, 1000);
    }
    for (long k = 1; k <= tree->fanout; k++) {
        long child = task->id * tree->fanout + k;
        if (child < tree->total && mw_submit(mw, child, NULL, KIT_HANG_MS) != 0)
            atomic_fetch_add(&tree->child_errors, 1);
    }
    *result = as_data(expected_data(task->id));
    return 0;
}

/* ---- a consumer thread ------------------------------------------------------------- */

struct consumer {
    mw_t *mw;
    long ids;              /* size of seen[] */
    int *seen;             /* per id, how often it was taken */
    atomic_long *produced; /* the process function's count, or NULL */
    kit_latch_t ready;     /* counted down once registered */
    kit_latch_t go;        /* the consumer waits for this before taking */
    unsigned pause_us;     /* after each take */
    uint64_t seed;
    long taken, wrong, most_in_flight;
    int end_error;         /* what ended the loop (ECANCELED expected) */
    int begin_error, finish_error;
};

static void *consume(void *raw)
{
    struct consumer *c = raw;
    kit_rng_t rng;
    kit_rng_seed(&rng, c->seed, 77);
    c->begin_error = mw_consumer_begin(c->mw);
    kit_latch_count_down(&c->ready);
    kit_latch_wait(&c->go, KIT_HANG_MS);
    mw_result_t result;
    while ((c->end_error = mw_take_result(c->mw, &result, KIT_HANG_MS)) == 0) {
        c->taken++;
        if (c->produced) { /* produced - taken: results made and not yet consumed */
            long in_flight = atomic_load(c->produced) - c->taken;
            if (in_flight > c->most_in_flight)
                c->most_in_flight = in_flight;
        }
        if (result.task_id >= 0 && result.task_id < c->ids && data_value(result.data) == expected_data(result.task_id))
            c->seen[result.task_id]++;
        else
            c->wrong++;
        if (c->pause_us)
            kit_jitter(&rng, c->pause_us);
    }
    c->finish_error = mw_consumer_end(c->mw);
    return NULL;
}

static void consumer_start(struct consumer *c, kit_worker_t *thread, mw_t *mw, long ids)
{
    memset(c, 0, sizeof *c);
    c->mw = mw;
    c->ids = ids;
    c->seen = calloc((size_t)ids, sizeof *c->seen);
    assert_non_null_or_say(c->seen, "the test could not allocate its tally");
    c->seed = kit_test_seed();
    assert_ok(kit_latch_init(&c->ready, 1));
    assert_ok(kit_latch_init(&c->go, 1));
    kit_worker_start(thread, "consumer", consume, c);
    assert_ok(kit_latch_wait(&c->ready, KIT_HANG_MS));
}

static void consumer_finish(struct consumer *c, kit_worker_t *thread)
{
    kit_worker_must_finish(thread, "consumer after the results ended");
    kit_latch_destroy(&c->ready);
    kit_latch_destroy(&c->go);
    assert_code_or_say(c->begin_error, 0, "the consumer's mw_consumer_begin");
    assert_code_or_say(c->finish_error, 0, "the consumer's mw_consumer_end");
    assert_code_or_say(c->end_error, ECANCELED, "the consumer's last mw_take_result, once the results ended,");
    assert_int_equal_or_say(c->wrong, 0, "results the consumer took with an unknown id or wrong data");
    for (long id = 0; id < c->ids; id++)
        if (c->seen[id] != 1)
            fail_msg("task %ld: result taken %d times, expected once", id, c->seen[id]);
    free(c->seen);
}

/* ---- arguments -------------------------------------------------------------------------- */

static const mw_config_t basic = { .workers = 2, .queue_capacity = 4, .process = process_triple };

static void test_mw_create_rejects_bad_arguments(void **state)
{
    (void)state;
    mw_t *mw = (mw_t *)&mw; /* not NULL: create must reset it on failure */
    assert_err(mw_create(NULL, &basic), EINVAL);
    assert_err(mw_create(&mw, NULL), EINVAL);
    assert_null_or_say(mw, "mw_create failed with EINVAL but did not set *out to NULL");
    mw_config_t bad = basic;
    bad.workers = 0;
    assert_err(mw_create(&mw, &bad), EINVAL);
    bad = basic;
    bad.queue_capacity = 0;
    assert_err(mw_create(&mw, &bad), EINVAL);
    bad = basic;
    bad.process = NULL;
    assert_err(mw_create(&mw, &bad), EINVAL);
    bad = basic;
    bad.queue_capacity = SIZE_MAX;
    assert_err(mw_create(&mw, &bad), EINVAL);
    assert_null_or_say(mw, "mw_create failed with EINVAL but did not set *out to NULL");
}

static int create_and_destroy(void *ctx)
{
    mw_t *mw = (mw_t *)&mw; /* not NULL: create must reset it on failure */
    int err = mw_create(&mw, ctx);
    if (err != 0 && mw != NULL)
        return err == ENOSYS ? ENOSYS : EFAULT; /* out must be NULL after a failure (a stub is told as one) */
    mw_destroy(mw);
    return err;
}

/* Every allocation create makes, failed in turn - however many it makes:
 * ENOMEM, out NULL, nothing leaked. */
static void test_mw_create_undoes_partial_work(void **state)
{
    (void)state;
    mw_config_t config = basic;
    assert_true_or_say(kit_sweep_allocation_failures("mw_create", create_and_destroy, &config) >= 1,
        "mw_create allocated nothing: the component must live in memory it allocates");
}

/* A task calling mw_await, mw_stop or mw_destroy on its own component would
 * wait for itself. */
struct reentry {
    atomic_int await_error, stop_error;
};

static int process_awaiting(mw_t *mw, const mw_task_t *task, void **result, void *ctx)
{
    struct reentry *seen = ctx;
    (void)task;
    (void)result;
    atomic_store(&seen->await_error, mw_await(mw, 0));
    mw_destroy(mw); /* must do nothing from inside */
    return 0;
}

static int process_stopping(mw_t *mw, const mw_task_t *task, void **result, void *ctx)
{
    struct reentry *seen = ctx;
    (void)task;
    (void)result;
    atomic_store(&seen->stop_error, mw_stop(mw, 0));
    return 0;
}

/* Runs one task of `process` to completion and returns what it saw. */
static const struct reentry *run_one_reentering_task(mw_process_fn process)
{
    static struct reentry seen; /* static: a failed check leaves the threads using it intact */
    seen = (struct reentry){ -1, -1 };
    mw_config_t config = basic;
    config.process = process;
    config.ctx = &seen;
    mw_t *mw = make_mw(config);
    assert_ok(mw_start(mw));
    assert_ok(mw_submit(mw, 1, NULL, KIT_HANG_MS));
    assert_ok(mw_await(mw, KIT_HANG_MS));
    assert_int_equal(stats_of(mw).completed, 1);
    mw_destroy(mw);
    return &seen;
}

/* The core's functions: a NULL component or out-parameter, a negative
 * timeout, await before start and a second start give EINVAL, and count nothing. */
static void test_mw_calls_with_bad_arguments_give_einval(void **state)
{
    (void)state;
    mw_t *mw = make_mw(basic);
    mw_result_t result;
    mw_failure_t failure;
    mw_stats_t stats;
    assert_err(mw_start(NULL), EINVAL);
    assert_err(mw_submit(NULL, 1, NULL, 0), EINVAL);
    assert_err(mw_submit(mw, 1, NULL, -1), EINVAL);
    assert_err(mw_await(NULL, 0), EINVAL);
    assert_err(mw_await(mw, -1), EINVAL);
    assert_err(mw_await(mw, 0), EINVAL); /* not started */
    assert_err(mw_close(NULL), EINVAL);
    assert_err(mw_take_result(NULL, &result, 0), EINVAL);
    assert_err(mw_take_result(mw, NULL, 0), EINVAL);
    assert_err(mw_take_result(mw, &result, -1), EINVAL);
    assert_err(mw_take_result(mw, &result, 0), ETIMEDOUT); /* open, nothing yet */
    assert_err(mw_take_failed(NULL, &failure), EINVAL);
    assert_err(mw_take_failed(mw, NULL), EINVAL);
    assert_err(mw_take_failed(mw, &failure), ENOENT);
    assert_err(mw_take_rejected(NULL, &failure), EINVAL);
    assert_err(mw_take_rejected(mw, NULL), EINVAL);
    assert_err(mw_take_rejected(mw, &failure), ENOENT);
    assert_err(mw_stats(NULL, &stats), EINVAL);
    assert_err(mw_stats(mw, NULL), EINVAL);
    assert_int_equal(stats_of(mw).submitted, 0); /* none of the above counted anything */
    assert_ok(mw_start(mw));
    assert_err(mw_start(mw), EINVAL);
    assert_ok(mw_await(mw, KIT_HANG_MS));
    mw_destroy(mw);
    mw_destroy(NULL);
}

/* After mw_await a task is refused - and recorded with its payload, not
 * lost - and the results have ended. */
static void test_mw_submit_after_await_is_recorded_as_rejected(void **state)
{
    (void)state;
    mw_t *mw = make_mw(basic);
    mw_result_t result;
    mw_failure_t failure;
    assert_ok(mw_start(mw));
    assert_ok(mw_await(mw, KIT_HANG_MS));
    int payload = 7;
    assert_err(mw_submit(mw, 9, &payload, 0), ECANCELED); /* closed: recorded, not lost */
    assert_ok(mw_take_rejected(mw, &failure));
    assert_int_equal_or_say(failure.task.id, 9,
        "mw_take_rejected gave another task than the one refused after the close");
    assert_ptr_equal_or_say(failure.task.payload, &payload,
        "the rejected task came back with another payload than its own");
    assert_code_or_say(failure.error, ECANCELED, "the error recorded for the task refused after the close");
    assert_err(mw_take_result(mw, &result, 0), ECANCELED); /* the results have ended */
    mw_destroy(mw);
}

/* mw_await from a task would wait for that task: EDEADLK; mw_destroy from
 * a task does nothing. */
static void test_mw_await_from_a_task_gives_edeadlk(void **state)
{
    (void)state;
    const struct reentry *seen = run_one_reentering_task(process_awaiting);
    assert_code_or_say(atomic_load(&seen->await_error), EDEADLK, "mw_await called by a task of its own component");
}

/* The extensions' functions: a NULL component, a negative timeout, or a
 * consumer ended that was never announced give EINVAL; no stop is
 * requested before mw_stop(). */
static void test_mw_extension_calls_with_bad_arguments_give_einval(void **state)
{
    (void)state;
    mw_t *mw = make_mw(basic);
    assert_err(mw_stop(NULL, 0), EINVAL);
    assert_err(mw_stop(mw, -1), EINVAL);
    assert_err(mw_consumer_begin(NULL), EINVAL);
    assert_err(mw_consumer_end(NULL), EINVAL);
    assert_err(mw_consumer_end(mw), EINVAL); /* none announced */
    assert_false(mw_stop_requested(NULL));
    assert_false(mw_stop_requested(mw)); /* no stop yet */
    assert_int_equal(stats_of(mw).submitted, 0); /* none of the above counted anything */
    mw_destroy(mw);
}

/* mw_stop from a task would wait for that task: EDEADLK. */
static void test_mw_stop_from_a_task_gives_edeadlk(void **state)
{
    (void)state;
    const struct reentry *seen = run_one_reentering_task(process_stopping);
    assert_code_or_say(atomic_load(&seen->stop_error), EDEADLK, "mw_stop called by a task of its own component");
}

/* ---- results, failures, rejections ------------------------------------------------------- */

static void test_mw_submit_every_result_exactly_once(void **state)
{
    (void)state;
    long tasks = scaled(4000, 800);
    mw_t *mw = make_mw((mw_config_t){ .workers = 4, .queue_capacity = 8, .process = process_triple });
    assert_ok(mw_start(mw));
    for (long id = 0; id < tasks; id++)
        assert_ok(mw_submit(mw, id, NULL, KIT_HANG_MS));
    assert_ok(mw_await(mw, KIT_HANG_MS));
    mw_stats_t s = stats_of(mw);
    assert_int_equal(s.submitted, tasks);
    assert_int_equal(s.completed, tasks);
    assert_int_equal(s.failed + s.rejected + s.pending, 0);
    assert_int_equal(s.unconsumed, tasks);

    int *seen = calloc((size_t)tasks, sizeof *seen);
    long wrong = 0;
    assert_int_equal_or_say(drain_results(mw, seen, tasks, &wrong), tasks,
        "results stored, of the tasks that completed");
    assert_int_equal_or_say(wrong, 0, "results with an unknown id or wrong data");
    for (long id = 0; id < tasks; id++)
        if (seen[id] != 1)
            fail_msg("task %ld: %d results, expected exactly one", id, seen[id]);
    free(seen);
    mw_destroy(mw);
}

/* Waits (test side) until nothing is pending or a worker is gone. */
static mw_stats_t settle(mw_t *mw, size_t workers)
{
    int64_t start = kit_now_ns();
    mw_stats_t s = stats_of(mw);
    while (s.pending > 0 && s.workers_alive == workers && kit_elapsed_ms(start) < KIT_HANG_MS) {
        kit_sleep_ms(1);
        s = stats_of(mw);
    }
    return s;
}

static const long FAILING_MARK = 1000; /* a payload >= this makes process_marked fail */

static int process_marked(mw_t *mw, const mw_task_t *task, void **result, void *ctx)
{
    (void)mw;
    (void)ctx;
    long mark = *(const long *)task->payload;
    if (mark >= FAILING_MARK)
        return error_for(task->id);
    *result = as_data(expected_data(task->id));
    return 0;
}

static void test_mw_process_failure_does_not_kill_the_worker(void **state)
{
    (void)state;
    enum { TASKS = 10 };
    static long payloads[TASKS]; /* static: read by the worker */
    mw_t *mw = make_mw((mw_config_t){ .workers = 1, .queue_capacity = TASKS, .process = process_marked });
    for (long id = 0; id < TASKS; id++) { /* odd ids fail */
        payloads[id] = id % 2 ? FAILING_MARK + id : id;
        assert_ok(mw_submit(mw, id, &payloads[id], 0));
    }
    assert_ok(mw_start(mw));
    mw_stats_t s = settle(mw, 1);
    assert_int_equal(s.workers_alive, 1); /* the one worker survived five failures */
    if (s.pending != 0)
        fail_msg("every task has ended (%zu completed, %zu failed), yet pending is %zu: a failed task must be "
                 "counted as finished too, or mw_await waits for it for ever", s.completed, s.failed, s.pending);
    assert_ok(mw_await(mw, KIT_HANG_MS));
    s = stats_of(mw);
    assert_int_equal(s.completed, TASKS / 2);
    assert_int_equal(s.failed, TASKS / 2);
    assert_conserved(s);
    mw_failure_t failure;
    for (long id = 1; id < TASKS; id += 2) { /* in order, each with its payload and error */
        assert_ok(mw_take_failed(mw, &failure));
        assert_int_equal_or_say(failure.task.id, id,
            "mw_take_failed gave another task than the next one that failed (oldest first)");
        assert_ptr_equal_or_say(failure.task.payload, &payloads[id],
            "failed task %ld came back with another payload than its own", id);
        assert_code_or_say(failure.error, error_for(id), "the error recorded for failed task %ld", id);
    }
    assert_err(mw_take_failed(mw, &failure), ENOENT);
    mw_result_t result;
    for (long id = 0; id < TASKS; id += 2) {
        assert_ok(mw_take_result(mw, &result, 0));
        assert_int_equal_or_say(result.task_id, id,
            "mw_take_result gave another task's result than the next one done (oldest first)");
        assert_int_equal_or_say(data_value(result.data), expected_data(id),
            "task %ld's result holds other data than its process function made", id);
    }
    mw_destroy(mw);
}

static void test_mw_submit_rejects_when_full_and_records_it(void **state)
{
    (void)state;
    static struct hold hold; /* static: a failed check leaves the threads using it intact */
    hold_init(&hold, 0);
    mw_t *mw = make_mw((mw_config_t){ .workers = 1, .queue_capacity = 1, .process = process_hold, .ctx = &hold });
    int payloads[4];
    assert_ok(mw_start(mw));
    assert_ok(mw_submit(mw, 0, &payloads[0], KIT_HANG_MS));
    assert_ok(kit_latch_wait(&hold.started, KIT_HANG_MS)); /* the only worker is busy with task 0 */
    assert_ok(mw_submit(mw, 1, &payloads[1], 0));          /* fills the queue */
    int64_t start = kit_now_ns();
    assert_err(mw_submit(mw, 2, &payloads[2], 100), ETIMEDOUT);
    assert_true_or_say(kit_elapsed_ms(start) >= 100.0,
        "mw_submit(100 ms) on a full queue gave ETIMEDOUT after %.1f ms, before its timeout", kit_elapsed_ms(start));
    assert_err(mw_submit(mw, 3, &payloads[3], 0), ETIMEDOUT);
    mw_stats_t s = stats_of(mw);
    assert_int_equal(s.submitted, 4);
    assert_int_equal(s.rejected, 2);
    assert_int_equal(s.pending, 2);
    assert_conserved(s);

    mw_failure_t failure;
    for (long id = 2; id <= 3; id++) { /* recorded, oldest first, payload given back */
        assert_ok(mw_take_rejected(mw, &failure));
        assert_int_equal_or_say(failure.task.id, id,
            "mw_take_rejected gave another task than the next one refused (oldest first)");
        assert_ptr_equal_or_say(failure.task.payload, &payloads[id],
            "rejected task %ld came back with another payload than its own", id);
        assert_code_or_say(failure.error, ETIMEDOUT, "the error recorded for rejected task %ld", id);
    }
    assert_err(mw_take_rejected(mw, &failure), ENOENT);
    kit_latch_count_down(&hold.release);
    assert_ok(mw_await(mw, KIT_HANG_MS));
    s = stats_of(mw);
    assert_int_equal(s.completed, 2);
    assert_int_equal(s.submitted, s.completed + s.failed + s.rejected);
    mw_destroy(mw);
    hold_destroy(&hold);
}

/* ---- completion ---------------------------------------------------------------------- */

struct slow_callback {
    long held_id;
    kit_latch_t entered, release;
    atomic_int done;
};

static void on_result_slow(mw_t *mw, const mw_result_t *result, void *ctx)
{
    (void)mw;
    struct slow_callback *cb = ctx;
    if (result->task_id == cb->held_id) {
        kit_latch_count_down(&cb->entered);
        kit_latch_wait(&cb->release, KIT_HANG_MS);
    }
    atomic_fetch_add(&cb->done, 1);
}

struct await_call {
    mw_t *mw;
    long timeout_ms;
    int err;
    double elapsed_ms;
};

static void *await_on_thread(void *raw)
{
    struct await_call *call = raw;
    int64_t start = kit_now_ns();
    call->err = mw_await(call->mw, call->timeout_ms);
    call->elapsed_ms = kit_elapsed_ms(start);
    return NULL;
}

/* A result is published when on_result returns: while the callback of one
 * task is still running, mw_await must not return. */
static void test_mw_await_waits_for_the_last_result(void **state)
{
    (void)state;
    enum { TASKS = 20 };
    static struct slow_callback cb; /* static: a failed check leaves the threads using it intact */
    cb = (struct slow_callback){ .held_id = 7 };
    assert_ok(kit_latch_init(&cb.entered, 1));
    assert_ok(kit_latch_init(&cb.release, 1));
    mw_t *mw = make_mw((mw_config_t){ .workers = 2, .queue_capacity = TASKS, .process = process_triple,
                                      .on_result = on_result_slow, .ctx = &cb });
    assert_ok(mw_start(mw));
    for (long id = 0; id < TASKS; id++)
        assert_ok(mw_submit(mw, id, NULL, KIT_HANG_MS));
    assert_ok(kit_latch_wait(&cb.entered, KIT_HANG_MS));
    int64_t start = kit_now_ns(); /* the other worker finishes the rest */
    while (stats_of(mw).pending > 1 && kit_elapsed_ms(start) < KIT_HANG_MS)
        kit_sleep_ms(1);
    assert_int_equal(stats_of(mw).pending, 1); /* only task 7 is left */
    static struct await_call call; /* static: a failed check leaves the threads using it intact */
    call = (struct await_call){ mw, KIT_HANG_MS, -1, 0 };
    static kit_worker_t awaiter;
    kit_worker_start(&awaiter, "awaiter", await_on_thread, &call);
    kit_worker_must_block(&awaiter, 200, "mw_await while task 7's result is still being published");
    kit_latch_count_down(&cb.release);
    kit_worker_must_finish(&awaiter, "mw_await after the last result was published");
    assert_code_or_say(call.err, 0, "mw_await once the last result was published");
    assert_int_equal_or_say(atomic_load(&cb.done), TASKS,
        "result callbacks that had returned when mw_await returned (none may still run)");
    mw_stats_t s = stats_of(mw);
    assert_int_equal(s.completed, TASKS);
    assert_int_equal(s.unconsumed, 0); /* given to on_result, never stored */
    mw_destroy(mw);
    kit_latch_destroy(&cb.entered);
    kit_latch_destroy(&cb.release);
}

/* The root waits until the master is asleep in mw_await - the idle workers
 * and the awaiting master: `workers` threads in condition waits - so every
 * sub-task is submitted while the master waits for completion. Lock delays
 * (0: none) stretch the gaps between critical sections meanwhile. */
static void run_tree_under_await(mw_t *mw, struct tree *tree, int workers, long delay_us, uint64_t seed)
{
    /* static: should a check fail, the threads still using them find them intact */
    static kit_latch_t started, go;
    static struct await_call call;
    static kit_worker_t awaiter;
    assert_ok(kit_latch_init(&started, 1));
    assert_ok(kit_latch_init(&go, 1));
    tree->root_started = &started;
    tree->root_go = &go;
    assert_ok(mw_submit(mw, 0, NULL, KIT_HANG_MS)); /* the master submits only the root */
    assert_ok(kit_latch_wait(&started, KIT_HANG_MS));
    call = (struct await_call){ mw, KIT_HANG_MS, -1, 0 };
    kit_worker_start(&awaiter, "awaiter", await_on_thread, &call);
    /* the awaiting master and the idle workers (the root's worker waits in a test latch, not counted) */
    kit_await_waiting_threads(workers, "the awaiting master and the idle workers");
    kit_lock_delays(delay_us, seed);
    kit_latch_count_down(&go);
    kit_worker_must_finish(&awaiter, "mw_await on a tree of sub-tasks");
    kit_lock_delays(0, 0);
    assert_code_or_say(call.err, 0, "mw_await on a tree of sub-tasks");
    mw_stats_t s = stats_of(mw);
    assert_int_equal_or_say(atomic_load(&tree->child_errors), 0, "sub-task submissions that were refused");
    if (s.pending != 0)
        fail_msg("await returned with %zu of %ld tasks completed and %zu pending: sub-tasks were not waited for",
                 s.completed, tree->total, s.pending);
    if (s.completed != (size_t)tree->total)
        fail_msg("await returned with nothing pending, yet mw_stats counts %zu of %ld tasks completed: completions "
                 "were lost from the count - two workers that update it at once, not both under the lock, lose one",
                 s.completed, tree->total);
    assert_int_equal(s.submitted, tree->total);
    int *seen = calloc((size_t)tree->total, sizeof *seen);
    long wrong = 0;
    assert_int_equal_or_say(drain_results(mw, seen, tree->total, &wrong), tree->total,
        "results stored, of the tree's tasks");
    assert_int_equal_or_say(wrong, 0, "results with an unknown id or wrong data");
    for (long id = 0; id < tree->total; id++)
        assert_int_equal_or_say(seen[id], 1, "results stored for task %ld (each exactly once)", id);
    free(seen);
    kit_latch_destroy(&started);
    kit_latch_destroy(&go);
}

static void test_mw_submit_counts_subtasks(void **state)
{
    (void)state;
    enum { WORKERS = 4 };
    static struct tree tree; /* static: a failed check leaves the threads using it intact */
    tree = (struct tree){ .fanout = 3, .total = tree_size(3, 4) }; /* 121 tasks */
    mw_t *mw = make_mw((mw_config_t){ .workers = WORKERS, .queue_capacity = (size_t)tree.total,
                                      .process = process_tree, .ctx = &tree });
    assert_ok(mw_start(mw));
    run_tree_under_await(mw, &tree, WORKERS, 0, 0);
    mw_destroy(mw);
}

static void test_mw_await_times_out_while_a_task_runs(void **state)
{
    (void)state;
    static struct hold hold; /* static: a failed check leaves the threads using it intact */
    hold_init(&hold, 0);
    mw_t *mw = make_mw((mw_config_t){ .workers = 1, .queue_capacity = 2, .process = process_hold, .ctx = &hold });
    assert_ok(mw_start(mw));
    assert_ok(mw_submit(mw, 0, NULL, KIT_HANG_MS));
    assert_ok(kit_latch_wait(&hold.started, KIT_HANG_MS));
    int64_t start = kit_now_ns();
    assert_err(mw_await(mw, 150), ETIMEDOUT);
    assert_true_or_say(kit_elapsed_ms(start) >= 150.0,
        "mw_await(150 ms) gave ETIMEDOUT after %.1f ms, before its timeout", kit_elapsed_ms(start));
    assert_err(mw_await(mw, 0), ETIMEDOUT);       /* 0: just check */

    /* Stolen wake-ups every 20 ms: one deadline must still end the wait. */
    kit_wakeups_every(20);
    static struct await_call call; /* static: a failed check leaves the threads using it intact */
    call = (struct await_call){ mw, 300, -1, 0 };
    static kit_worker_t awaiter;
    kit_worker_start(&awaiter, "awaiter", await_on_thread, &call);
    kit_worker_must_finish(&awaiter, "mw_await(300) woken every 20 ms");
    kit_wakeups_every(0);
    assert_code_or_say(call.err, ETIMEDOUT, "mw_await(300 ms), woken every 20 ms for nothing,");
    assert_true_or_say(call.elapsed_ms >= 300.0,
        "mw_await(300 ms), woken every 20 ms, gave up after %.1f ms: one deadline, computed once", call.elapsed_ms);

    kit_latch_count_down(&hold.release);
    assert_ok(mw_await(mw, KIT_HANG_MS));
    assert_int_equal(stats_of(mw).completed, 1);
    mw_destroy(mw);
    hold_destroy(&hold);
}

static void test_mw_await_joins_every_worker(void **state)
{
    (void)state;
    enum { WORKERS = 6 };
    char name[] = "mwjoin";
    mw_t *mw = make_mw((mw_config_t){ .workers = WORKERS, .queue_capacity = 8, .process = process_triple,
                                      .name = name });
    name[0] = 'X'; /* the name was copied: the workers are still mwjoin-<n> */
    assert_ok(mw_start(mw));
    assert_int_equal(stats_of(mw).workers_alive, WORKERS);
    assert_int_equal_or_say(await_threads_named("mwjoin-", WORKERS), WORKERS,
                            "threads named mwjoin-*, once the workers started");
    for (long id = 0; id < 100; id++)
        assert_ok(mw_submit(mw, id, NULL, KIT_HANG_MS));
    assert_ok(mw_await(mw, KIT_HANG_MS)); /* one poison pill each, then join */
    assert_int_equal(stats_of(mw).workers_alive, 0);
    assert_int_equal_or_say(await_threads_named("mwjoin-", 0), 0,
                            "worker threads left once mw_await returned (no thread left behind)");
    assert_ok(mw_await(mw, 0)); /* again: already done */
    assert_int_equal(stats_of(mw).completed, 100);
    mw_destroy(mw);

    mw = make_mw((mw_config_t){ .workers = 2, .queue_capacity = 8, .process = process_triple }); /* no name */
    assert_ok(mw_start(mw));
    if (await_threads_named("worker-", 2) != 2)
        fail_msg("a component created without a name has %ld threads named worker-<n>; expected 2",
                 kit_threads_named("worker-"));
    assert_ok(mw_await(mw, KIT_HANG_MS));
    mw_destroy(mw);
}

/* ---- result back-pressure ------------------------------------------------------------ */

/* Test side: wait until every worker is blocked on the result limit, or the
 * limit is broken (more stored than allowed). */
static mw_stats_t await_blocked_workers(mw_t *mw, size_t workers, size_t limit)
{
    int64_t start = kit_now_ns();
    mw_stats_t s = stats_of(mw);
    while (s.workers_blocked < workers && s.unconsumed <= limit && kit_elapsed_ms(start) < KIT_HANG_MS) {
        kit_sleep_ms(1);
        s = stats_of(mw);
    }
    return s;
}

static void test_mw_result_limit_bounds_unconsumed_results(void **state)
{
    (void)state;
    enum { WORKERS = 4, LIMIT = 4 };
    long tasks = scaled(400, 100);
    static struct seeded plan; /* static: a failed check leaves the threads using it intact */
    plan = (struct seeded){ .seed = kit_test_seed() };
    mw_t *mw = make_mw((mw_config_t){ .workers = WORKERS, .queue_capacity = (size_t)tasks, .process = process_seeded,
                                      .result_limit = LIMIT, .ctx = &plan });
    static struct consumer c; /* static: a failed check leaves the threads using it intact */
    static kit_worker_t consumer;
    consumer_start(&c, &consumer, mw, tasks); /* registered, not consuming yet */
    c.produced = &plan.produced;
    c.pause_us = 200;
    assert_ok(mw_start(mw));
    for (long id = 0; id < tasks; id++)
        assert_ok(mw_submit(mw, id, NULL, 0));
    mw_stats_t s = await_blocked_workers(mw, WORKERS, LIMIT);
    assert_int_equal(s.unconsumed, LIMIT);        /* full, */
    assert_int_equal(s.workers_blocked, WORKERS); /* and every worker waits for room */
    kit_latch_count_down(&c.go);                  /* now the master consumes while they run */
    assert_ok(mw_await(mw, KIT_HANG_MS));         /* a registered consumer: no EDEADLK */
    consumer_finish(&c, &consumer);
    s = stats_of(mw);
    assert_int_equal_or_say(c.taken, tasks, "results the consumer took, of the tasks that completed");
    assert_int_equal(s.most_unconsumed, LIMIT);   /* reached, never exceeded */
    if (c.most_in_flight > LIMIT + WORKERS)       /* measured here: stored + held by blocked workers */
        fail_msg("%ld results made and not consumed at once; the limit allows %d stored + %d held",
                 c.most_in_flight, LIMIT, WORKERS);
    mw_destroy(mw);
}

/* The master submits, closes, consumes until the results end, then awaits.
 * Every result must arrive: the end comes only after the last one is stored. */
static void consume_on_the_master(long tasks)
{
    enum { LIMIT = 2 };
    mw_t *mw = make_mw((mw_config_t){ .workers = 4, .queue_capacity = (size_t)tasks, .process = process_triple,
                                      .result_limit = LIMIT });
    assert_ok(mw_start(mw));
    for (long id = 0; id < tasks; id++)
        assert_ok(mw_submit(mw, id, NULL, 0));
    assert_ok(mw_close(mw)); /* no more tasks from the master: the results will end */
    int *seen = calloc((size_t)tasks, sizeof *seen);
    long wrong = 0;
    assert_int_equal_or_say(drain_results(mw, seen, tasks, &wrong), tasks,
        "results stored, of the tasks that completed");
    assert_int_equal_or_say(wrong, 0, "results with an unknown id or wrong data");
    free(seen);
    assert_ok(mw_await(mw, KIT_HANG_MS));
    mw_stats_t s = stats_of(mw);
    assert_int_equal(s.completed, tasks);
    assert_true_or_say(s.most_unconsumed <= LIMIT,
        "mw_stats: most_unconsumed is %zu, above the result limit %d", s.most_unconsumed, LIMIT);
    mw_destroy(mw);
}

static void test_mw_take_result_consuming_master_never_deadlocks(void **state)
{
    (void)state;
    long rounds = scaled(10, 2);
    for (long round = 0; round < rounds; round++)
        consume_on_the_master(scaled(300, 100));
}

struct take_call {
    mw_t *mw;
    long timeout_ms;
    int err;
    double elapsed_ms;
};

static void *take_on_thread(void *raw)
{
    struct take_call *call = raw;
    mw_result_t result;
    int64_t start = kit_now_ns();
    call->err = mw_take_result(call->mw, &result, call->timeout_ms);
    call->elapsed_ms = kit_elapsed_ms(start);
    return NULL;
}

/* A consumer waiting for a result that does not come: ETIMEDOUT after its
 * timeout (a lower bound), also when its wait keeps being woken for nothing -
 * one deadline for the whole call. */
static void test_mw_take_result_times_out_on_one_deadline(void **state)
{
    (void)state;
    /* static: should a check fail, the waiting thread finds them intact */
    static struct take_call call;
    static kit_worker_t taker;
    mw_t *mw = make_mw(basic);
    assert_ok(mw_start(mw));
    kit_wakeups_every(20);
    call = (struct take_call){ mw, 300, -1, 0 };
    kit_worker_start(&taker, "taker", take_on_thread, &call);
    kit_worker_must_finish(&taker, "mw_take_result(300) woken every 20 ms with no result coming");
    kit_wakeups_every(0);
    assert_code_or_say(call.err, ETIMEDOUT, "mw_take_result(300 ms), woken every 20 ms with no result coming,");
    if (call.elapsed_ms < 300.0)
        fail_msg("mw_take_result(300) gave up after %.1f ms: a timeout is a lower bound", call.elapsed_ms);
    assert_ok(mw_await(mw, KIT_HANG_MS));
    mw_destroy(mw);
}

/* The document's trap: a limit of 3, two workers, 20 tasks, and a master
 * that waits for completion before consuming: every worker ends up waiting
 * for room. Returns the component, caught in the trap. */
enum { TRAP_WORKERS = 2, TRAP_LIMIT = 3, TRAP_TASKS = 20 };

static mw_t *make_trapped_mw(void)
{
    mw_t *mw = make_mw((mw_config_t){ .workers = TRAP_WORKERS, .queue_capacity = TRAP_TASKS,
                                      .process = process_triple, .result_limit = TRAP_LIMIT });
    assert_ok(mw_start(mw));
    for (long id = 0; id < TRAP_TASKS; id++)
        assert_ok(mw_submit(mw, id, NULL, 0));
    mw_stats_t s = await_blocked_workers(mw, TRAP_WORKERS, TRAP_LIMIT);
    assert_int_equal(s.workers_blocked, TRAP_WORKERS);
    return mw;
}

/* Waiting before consuming is detected: EDEADLK, not a hang, and nothing changed. */
static void test_mw_await_detects_the_result_limit_trap(void **state)
{
    (void)state;
    mw_t *mw = make_mw((mw_config_t){ .workers = TRAP_WORKERS, .queue_capacity = TRAP_TASKS,
                                      .process = process_triple, .result_limit = TRAP_LIMIT });
    assert_ok(mw_start(mw));
    for (long id = 0; id < TRAP_TASKS; id++)
        assert_ok(mw_submit(mw, id, NULL, 0));
    assert_err(mw_await(mw, KIT_HANG_MS), EDEADLK); /* detected, not hung */
    mw_stats_t s = stats_of(mw);
    if (s.workers_blocked != TRAP_WORKERS || s.unconsumed != TRAP_LIMIT || s.pending != TRAP_TASKS - TRAP_LIMIT)
        fail_msg("once mw_await said EDEADLK, mw_stats said %ld workers blocked, %ld results unconsumed and %ld "
                 "tasks pending: expected %d, %d and %d (%d tasks submitted, %d finished and stored, the others "
                 "waiting for room)", (long)s.workers_blocked, (long)s.unconsumed, (long)s.pending, TRAP_WORKERS,
                 TRAP_LIMIT, TRAP_TASKS - TRAP_LIMIT, TRAP_TASKS, TRAP_LIMIT);
    assert_conserved(s);
    mw_destroy(mw);
}

/* Two masters already waiting in mw_await when the trap closes: the worker
 * that completes it must wake both, each with EDEADLK - not one of them,
 * leaving the other to its time-out. The tasks wait at a latch until both
 * masters wait, so the trap forms under them. */
static kit_latch_t trap_release; /* static: the workers may still wait on it if a check fails */

static int process_released_triple(mw_t *mw, const mw_task_t *task, void **result, void *ctx)
{
    (void)mw;
    (void)ctx;
    kit_latch_wait(&trap_release, KIT_HANG_MS);
    *result = as_data(expected_data(task->id));
    return 0;
}

static void test_mw_trap_wakes_every_waiting_master(void **state)
{
    (void)state;
    enum { MASTERS = 2 };
    /* static: should a check fail, the waiting threads find them intact */
    static struct await_call calls[MASTERS];
    static kit_worker_t masters[MASTERS];
    assert_ok(kit_latch_init(&trap_release, 1));
    mw_t *mw = make_mw((mw_config_t){ .workers = TRAP_WORKERS, .queue_capacity = TRAP_TASKS,
                                      .process = process_released_triple, .result_limit = TRAP_LIMIT });
    assert_ok(mw_start(mw));
    for (long id = 0; id < TRAP_TASKS; id++)
        assert_ok(mw_submit(mw, id, NULL, 0));
    for (int i = 0; i < MASTERS; i++) {
        calls[i] = (struct await_call){ mw, 2 * KIT_HANG_MS, -1, 0 };
        kit_worker_start(&masters[i], "master", await_on_thread, &calls[i]);
    }
    for (int i = 0; i < MASTERS; i++)
        kit_worker_must_block(&masters[i], 100, "a master in mw_await while the tasks are held");
    kit_latch_count_down(&trap_release); /* now the results fill up and the workers block */
    for (int i = 0; i < MASTERS; i++) {
        kit_worker_must_finish(&masters[i], "one of two masters in mw_await when the result-limit trap closed");
        if (calls[i].err != EDEADLK)
            fail_msg("a master's mw_await returned %s when the trap closed under it; expected EDEADLK",
                     kit_errno_name(calls[i].err));
    }
    mw_destroy(mw);
    kit_latch_destroy(&trap_release);
}

/* A registered consumer that is busy elsewhere: await waits (it cannot know
 * the consumer will not come back) until its timeout; once the consumer is
 * gone, the trap is reported again. */
static void test_mw_await_waits_while_a_consumer_is_announced(void **state)
{
    (void)state;
    mw_t *mw = make_trapped_mw();
    assert_ok(mw_consumer_begin(mw));
    int64_t start = kit_now_ns();
    assert_err(mw_await(mw, 200), ETIMEDOUT);
    assert_true_or_say(kit_elapsed_ms(start) >= 200.0,
        "mw_await(200 ms) gave ETIMEDOUT after %.1f ms, before its timeout", kit_elapsed_ms(start));
    assert_ok(mw_consumer_end(mw));
    assert_err(mw_await(mw, KIT_HANG_MS), EDEADLK);
    mw_destroy(mw);
}

/* Nothing is lost in the trap: consume, and the same await completes. */
static void test_mw_await_completes_once_the_trapped_results_are_taken(void **state)
{
    (void)state;
    mw_t *mw = make_trapped_mw();
    assert_err(mw_await(mw, KIT_HANG_MS), EDEADLK);
    assert_ok(mw_close(mw));
    int seen[TRAP_TASKS] = { 0 };
    long wrong = 0;
    assert_int_equal_or_say(drain_results(mw, seen, TRAP_TASKS, &wrong), TRAP_TASKS,
        "results stored, of the tasks that completed");
    assert_int_equal_or_say(wrong, 0, "results with an unknown id or wrong data");
    assert_ok(mw_await(mw, KIT_HANG_MS));
    assert_int_equal(stats_of(mw).completed, TRAP_TASKS);
    mw_destroy(mw);
}

/* The trap with idle workers: a limit of 2, 4 workers, 3 tasks, nobody
 * consuming. Two results fill the limit, the third task's worker waits for
 * room, the other workers idle - they cannot help: the wait can never end. */
static void test_mw_await_detects_the_trap_with_idle_workers(void **state)
{
    (void)state;
    enum { WORKERS = 4, LIMIT = 2, TASKS = 3 };
    mw_t *mw = make_mw((mw_config_t){ .workers = WORKERS, .queue_capacity = 8, .process = process_triple,
                                      .result_limit = LIMIT });
    assert_ok(mw_start(mw));
    for (long id = 0; id < TASKS; id++)
        assert_ok(mw_submit(mw, id, NULL, 0));
    int err = mw_await(mw, KIT_HANG_MS);
    if (err != EDEADLK)
        fail_msg("mw_await returned %s; expected EDEADLK: every pending task is held by a worker waiting for "
                 "room and nobody consumes, so the wait could never end (idle workers cannot help)",
                 kit_errno_name(err));
    mw_stats_t s = stats_of(mw);
    assert_int_equal(s.unconsumed, LIMIT);
    assert_int_equal(s.pending, TASKS - LIMIT);
    assert_int_equal(s.workers_blocked, TASKS - LIMIT);
    mw_result_t result;
    assert_ok(mw_take_result(mw, &result, 0)); /* room for the held result: now it can end */
    assert_ok(mw_await(mw, KIT_HANG_MS));
    assert_int_equal(stats_of(mw).completed, TASKS);
    mw_destroy(mw);
}

/* The last task fails, so no result is stored to wake anyone: the end of
 * the results itself must wake every consumer waiting in mw_take_result(),
 * each with ECANCELED - not one of them, leaving the rest to their time-out. */
static kit_latch_t failing_release; /* static: the worker may still be waiting on it if a check fails */

static int process_wait_then_fail(mw_t *mw, const mw_task_t *task, void **result, void *ctx)
{
    (void)mw;
    (void)task;
    (void)result;
    (void)ctx;
    kit_latch_wait(&failing_release, KIT_HANG_MS);
    return EIO;
}

static void test_mw_end_of_results_wakes_every_waiting_consumer(void **state)
{
    (void)state;
    enum { CONSUMERS = 2 };
    /* static: should a check fail, the waiting threads find them intact */
    static struct take_call calls[CONSUMERS];
    static kit_worker_t takers[CONSUMERS];
    assert_ok(kit_latch_init(&failing_release, 1));
    mw_config_t config = basic;
    config.process = process_wait_then_fail;
    mw_t *mw = make_mw(config);
    assert_ok(mw_start(mw));
    assert_ok(mw_submit(mw, 1, NULL, KIT_HANG_MS));
    assert_ok(mw_close(mw));
    for (int i = 0; i < CONSUMERS; i++) {
        calls[i] = (struct take_call){ mw, 2 * KIT_HANG_MS, -1, 0 };
        kit_worker_start(&takers[i], "consumer", take_on_thread, &calls[i]);
    }
    for (int i = 0; i < CONSUMERS; i++)
        kit_worker_must_block(&takers[i], 100, "a consumer waiting in mw_take_result while the task runs");
    kit_latch_count_down(&failing_release);
    for (int i = 0; i < CONSUMERS; i++) {
        kit_worker_must_finish(&takers[i], "one of two consumers waiting in mw_take_result when the last task failed");
        if (calls[i].err != ECANCELED)
            fail_msg("a consumer's mw_take_result returned %s once the last task had failed after mw_close; "
                     "expected ECANCELED: the results have ended", kit_errno_name(calls[i].err));
    }
    assert_ok(mw_await(mw, KIT_HANG_MS));
    mw_destroy(mw);
    kit_latch_destroy(&failing_release);
}

/* The only announced consumer leaves while the master already waits in
 * mw_await and every worker waits for room: the master must be woken to
 * report the trap, not left asleep until its timeout. */
static void test_mw_consumer_end_wakes_a_waiting_master(void **state)
{
    (void)state;
    enum { WORKERS = 2, LIMIT = 2, TASKS = 8 };
    /* static: should a check fail, the awaiting thread finds them intact */
    static struct await_call call;
    static kit_worker_t awaiter;
    mw_t *mw = make_mw((mw_config_t){ .workers = WORKERS, .queue_capacity = TASKS, .process = process_triple,
                                      .result_limit = LIMIT });
    assert_ok(mw_consumer_begin(mw));
    assert_ok(mw_start(mw));
    for (long id = 0; id < TASKS; id++)
        assert_ok(mw_submit(mw, id, NULL, 0));
    mw_stats_t s = await_blocked_workers(mw, WORKERS, LIMIT);
    assert_int_equal(s.workers_blocked, WORKERS);
    call = (struct await_call){ mw, 2 * KIT_HANG_MS, -1, 0 };
    kit_worker_start(&awaiter, "awaiter", await_on_thread, &call);
    kit_await_waiting_threads(WORKERS + 1, "the awaiting master and the workers waiting for room");
    assert_ok(mw_consumer_end(mw)); /* nobody will make room any more */
    kit_worker_must_finish(&awaiter, "mw_await after the only announced consumer left (mw_consumer_end)");
    assert_code_or_say(call.err, EDEADLK, "mw_await after the only announced consumer left");
    assert_ok(mw_close(mw));
    int seen[TASKS] = { 0 };
    long wrong = 0;
    assert_int_equal_or_say(drain_results(mw, seen, TASKS, &wrong), TASKS,
        "results stored, of the tasks that completed: one was lost");
    assert_ok(mw_await(mw, KIT_HANG_MS));
    mw_destroy(mw);
}

/* Task 0 waits until the master has closed, then submits a sub-task. */
struct late_parent {
    kit_latch_t started, go;
    atomic_int subtask_error; /* -1 until tried */
};

static int process_late_parent(mw_t *mw, const mw_task_t *task, void **result, void *ctx)
{
    struct late_parent *parent = ctx;
    *result = as_data(expected_data(task->id));
    if (task->id != 0)
        return 0;
    kit_latch_count_down(&parent->started);
    if (kit_latch_wait(&parent->go, KIT_HANG_MS) != 0)
        return ETIMEDOUT;
    atomic_store(&parent->subtask_error, mw_submit(mw, 1, NULL, KIT_HANG_MS));
    return 0;
}

/* mw_close stops tasks from outside; a running task's sub-tasks still get
 * in, so everything in flight can finish. */
static void test_mw_close_still_accepts_subtasks(void **state)
{
    (void)state;
    static struct late_parent parent; /* static: the worker may still use it if a check fails */
    assert_ok(kit_latch_init(&parent.started, 1));
    assert_ok(kit_latch_init(&parent.go, 1));
    atomic_store(&parent.subtask_error, -1);
    mw_t *mw = make_mw((mw_config_t){ .workers = 2, .queue_capacity = 4, .process = process_late_parent,
                                      .ctx = &parent });
    assert_ok(mw_start(mw));
    assert_ok(mw_submit(mw, 0, NULL, KIT_HANG_MS));
    assert_ok(kit_latch_wait(&parent.started, KIT_HANG_MS));
    assert_ok(mw_close(mw));
    assert_err(mw_submit(mw, 2, NULL, 0), ECANCELED); /* from outside: refused */
    kit_latch_count_down(&parent.go);
    assert_ok(mw_await(mw, KIT_HANG_MS));
    int err = atomic_load(&parent.subtask_error);
    if (err != 0)
        fail_msg("a sub-task submitted by a running task after mw_close got %s, expected 0: sub-tasks are still "
                 "accepted until a stop", kit_errno_name(err));
    mw_stats_t s = stats_of(mw);
    assert_int_equal(s.completed, 2);
    assert_int_equal(s.rejected, 1);
    int seen[2] = { 0 };
    long wrong = 0;
    assert_int_equal_or_say(drain_results(mw, seen, 2, &wrong), 2, "results stored, of the 2 tasks that completed");
    assert_int_equal_or_say(wrong, 0, "results with an unknown id or wrong data");
    mw_destroy(mw);
    kit_latch_destroy(&parent.started);
    kit_latch_destroy(&parent.go);
}

/* A refused submit leaves the payload with the caller, who may free it at
 * once; the component never frees it, not even in mw_destroy. */
static void test_mw_submit_refused_payload_stays_the_callers(void **state)
{
    (void)state;
    static struct hold hold; /* static: the worker may still use it if a check fails */
    hold_init(&hold, 0);
    long before = kit_live_allocations();
    mw_t *mw = make_mw((mw_config_t){ .workers = 1, .queue_capacity = 1, .process = process_hold, .ctx = &hold });
    assert_ok(mw_start(mw));
    assert_ok(mw_submit(mw, 0, NULL, KIT_HANG_MS));
    assert_ok(kit_latch_wait(&hold.started, KIT_HANG_MS)); /* the only worker is busy */
    assert_ok(mw_submit(mw, 1, NULL, 0));                  /* fills the queue */
    char *payload = malloc(16);
    assert_non_null_or_say(payload, "the test could not allocate a payload");
    uintptr_t address = (uintptr_t)payload;
    assert_err(mw_submit(mw, 2, payload, 0), ETIMEDOUT);
    free(payload); /* the caller keeps it: freeing it right away is allowed */
    mw_failure_t failure;
    assert_ok(mw_take_rejected(mw, &failure));
    assert_int_equal_or_say(failure.task.id, 2, "mw_take_rejected gave another task than the one refused");
    assert_true_or_say((uintptr_t)failure.task.payload == address,
        "the rejected task came back with another payload pointer than its own (it is never read)");
    kit_latch_count_down(&hold.release);
    assert_ok(mw_await(mw, KIT_HANG_MS));
    payload = malloc(16);
    assert_non_null_or_say(payload, "the test could not allocate a payload");
    assert_err(mw_submit(mw, 3, payload, 0), ECANCELED);
    free(payload); /* and its record stays untaken: mw_destroy must not free it */
    mw_destroy(mw);
    assert_no_leak_since(before);
    hold_destroy(&hold);
}

/* Several masters may wait in mw_await at once: all of them return. */
static void test_mw_await_wakes_every_waiting_master(void **state)
{
    (void)state;
    enum { MASTERS = 2 };
    /* static: should a check fail, the threads still using them find them intact */
    static struct hold hold;
    static struct await_call calls[MASTERS];
    static kit_worker_t awaiters[MASTERS];
    hold_init(&hold, 0);
    mw_t *mw = make_mw((mw_config_t){ .workers = 1, .queue_capacity = 2, .process = process_hold, .ctx = &hold });
    assert_ok(mw_start(mw));
    assert_ok(mw_submit(mw, 0, NULL, KIT_HANG_MS));
    assert_ok(kit_latch_wait(&hold.started, KIT_HANG_MS));
    for (int i = 0; i < MASTERS; i++) {
        calls[i] = (struct await_call){ mw, 2 * KIT_HANG_MS, -1, 0 };
        kit_worker_start(&awaiters[i], "awaiter", await_on_thread, &calls[i]);
    }
    /* both masters asleep in mw_await (the worker waits in a test latch, not counted) */
    kit_await_waiting_threads(MASTERS, "two masters in mw_await");
    kit_latch_count_down(&hold.release);
    for (int i = 0; i < MASTERS; i++) {
        kit_worker_must_finish(&awaiters[i], "one of two masters waiting in mw_await when the last task finished");
        assert_code_or_say(calls[i].err, 0, "master %d's mw_await, when the last task finished,", i);
    }
    assert_int_equal(stats_of(mw).workers_alive, 0);
    mw_destroy(mw);
    hold_destroy(&hold);
}

static int process_slow(mw_t *mw, const mw_task_t *task, void **result, void *ctx)
{
    (void)mw;
    (void)ctx;
    kit_sleep_ms(30);
    *result = as_data(expected_data(task->id));
    return 0;
}

/* cost_us is how long the process function ran: a 30 ms task costs at least 30000 us. */
static void test_mw_result_records_its_cost(void **state)
{
    (void)state;
    mw_t *mw = make_mw((mw_config_t){ .workers = 1, .queue_capacity = 2, .process = process_slow });
    assert_ok(mw_start(mw));
    assert_ok(mw_submit(mw, 5, NULL, KIT_HANG_MS));
    assert_ok(mw_await(mw, KIT_HANG_MS));
    mw_result_t result;
    assert_ok(mw_take_result(mw, &result, 0));
    assert_int_equal_or_say(result.task_id, 5, "mw_take_result gave another task's result than task 5's");
    assert_int_equal_or_say(data_value(result.data), expected_data(5),
        "task 5's result holds other data than its process function made");
    if (result.cost_us < 30000)
        fail_msg("a task whose process function ran 30 ms has cost_us %ld; expected at least 30000 (microseconds "
                 "from the call to its return)", result.cost_us);
    mw_destroy(mw);
}

/* A worker that cannot start: mw_start returns the error, the workers that
 * did start are stopped and joined, every task is accounted for. */
static void test_mw_start_failure_stops_the_started_workers(void **state)
{
    (void)state;
    enum { WORKERS = 3, TASKS = 4 };
    mw_t *mw = make_mw((mw_config_t){ .workers = WORKERS, .queue_capacity = 8, .process = process_triple,
                                      .name = "mwfail" });
    for (long id = 0; id < TASKS; id++)
        assert_ok(mw_submit(mw, id, NULL, 0));
    kit_fail_thread_create(2); /* the second worker cannot start */
    int err = mw_start(mw);
    kit_fail_thread_create(0);
    assert_code_or_say(err, EAGAIN, "mw_start with a worker that could not start");
    mw_stats_t s = stats_of(mw);
    assert_int_equal(s.workers_alive, 0);
    assert_int_equal(s.pending, 0);
    assert_int_equal(s.submitted, TASKS);
    assert_int_equal(s.submitted, s.completed + s.failed + s.rejected);
    long named = await_threads_named("mwfail-", 0);
    if (named > 0)
        fail_msg("%ld worker thread(s) still running after mw_start failed", named);
    assert_err(mw_submit(mw, 9, NULL, 0), ECANCELED); /* it can only be destroyed now */
    mw_destroy(mw);
}

/* ---- stopping ------------------------------------------------------------------------- */

struct stop_call {
    mw_t *mw;
    long timeout_ms;
    int err;
    double elapsed_ms;
};

static void *stop_on_thread(void *raw)
{
    struct stop_call *call = raw;
    int64_t start = kit_now_ns();
    call->err = mw_stop(call->mw, call->timeout_ms);
    call->elapsed_ms = kit_elapsed_ms(start);
    return NULL;
}

/* Everything done before the deadline: mw_stop returns 0. */
static void check_stop_in_time(void)
{
    mw_t *mw = make_mw((mw_config_t){ .workers = 2, .queue_capacity = 64, .process = process_triple });
    assert_ok(mw_start(mw));
    for (long id = 0; id < 50; id++)
        assert_ok(mw_submit(mw, id, NULL, KIT_HANG_MS));
    assert_ok(mw_stop(mw, KIT_HANG_MS));
    mw_stats_t s = stats_of(mw);
    assert_int_equal(s.completed, 50);
    assert_int_equal(s.workers_alive, 0);
    mw_destroy(mw);
}

static void test_mw_stop_reports_what_was_not_done(void **state)
{
    (void)state;
    enum { TASKS = 10 };
    /* static: should a check fail, the threads still using them find them intact */
    static struct hold hold;
    static int payloads[TASKS];
    static struct stop_call call;
    static kit_worker_t stopper;
    hold_init(&hold, 0);
    hold.until_stop = true; /* task 0 runs until it sees the stop request */
    mw_t *mw = make_mw((mw_config_t){ .workers = 1, .queue_capacity = TASKS, .process = process_hold, .ctx = &hold });
    assert_ok(mw_start(mw));
    for (long id = 0; id < TASKS; id++)
        assert_ok(mw_submit(mw, id, &payloads[id], 0));
    assert_ok(kit_latch_wait(&hold.started, KIT_HANG_MS));
    call = (struct stop_call){ mw, 100, -1, 0 };
    kit_worker_start(&stopper, "stopper", stop_on_thread, &call);
    kit_worker_must_finish(&stopper, "mw_stop(100) with a task that checks mw_stop_requested()");
    assert_code_or_say(call.err, ETIMEDOUT, "mw_stop(100 ms) with tasks still queued (some were not done)");
    assert_true_or_say(call.elapsed_ms >= 100.0,
        "mw_stop(100 ms) returned after %.1f ms: the queued tasks must have their 100 ms", call.elapsed_ms);
    assert_true(mw_stop_requested(mw));
    if (atomic_load(&hold.subtask_error) != ECANCELED)
        fail_msg("a sub-task submitted after mw_stop's deadline got %s, expected ECANCELED (refused)",
                 kit_errno_name(atomic_load(&hold.subtask_error)));

    mw_stats_t s = stats_of(mw);
    assert_int_equal(s.failed, 1); /* task 0 gave up with ECANCELED */
    assert_int_equal(s.rejected, TASKS); /* 9 taken out of the queue, 1 sub-task refused */
    assert_int_equal(s.cancelled, TASKS - 1); /* the refused sub-task was never accepted */
    assert_int_equal(s.workers_alive, 0);
    assert_int_equal(s.submitted, s.completed + s.failed + s.rejected);
    mw_failure_t failure;
    bool seen[TASKS] = { false };
    for (long n = 0; n < TASKS; n++) { /* what was not done, each once, with its payload */
        assert_ok(mw_take_rejected(mw, &failure)); /* in the order they were cancelled: */
        long id = failure.task.id;                 /* the stop and the worker race for them */
        assert_code_or_say(failure.error, ECANCELED, "the error recorded for task %ld, cancelled by the stop", id);
        if (id == LATE_SUBTASK)
            continue;
        assert_true_or_say(id >= 1 && id < TASKS && !seen[id],
            "mw_take_rejected gave task %ld, which was not queued, or gave it twice", id);
        seen[id] = true;
        assert_ptr_equal_or_say(failure.task.payload, &payloads[id],
            "cancelled task %ld came back with another payload than its own", id);
    }
    assert_ok(mw_take_failed(mw, &failure));
    assert_code_or_say(failure.error, ECANCELED, "the error recorded for the task that gave up at the stop");
    assert_err(mw_submit(mw, 99, NULL, 0), ECANCELED);
    assert_int_equal(stats_of(mw).cancelled, TASKS - 1); /* refused after the stop: not cancelled */
    assert_ok(mw_stop(mw, 0)); /* again: nothing more was left undone */
    mw_destroy(mw);
    hold_destroy(&hold);
    check_stop_in_time();
}

/* `cancelled` counts only tasks mw_submit() had accepted: a stop before
 * mw_start cancels the queued ones; a submit refused after a stop - even one
 * whose deadline passed - is rejected, not cancelled. */
static void test_mw_stop_cancels_only_accepted_tasks(void **state)
{
    (void)state;
    static struct hold hold; /* static: the worker may still use it if a check fails */
    int payloads[4];
    mw_t *mw = make_mw(basic);
    for (long id = 0; id < 3; id++)
        assert_ok(mw_submit(mw, id, &payloads[id], 0)); /* queued, never started */
    assert_err(mw_stop(mw, 0), ETIMEDOUT);
    mw_stats_t s = stats_of(mw);
    assert_int_equal(s.rejected, 3);
    assert_int_equal(s.cancelled, 3);
    assert_int_equal(s.pending, 0);
    assert_err(mw_start(mw), ECANCELED);
    assert_err(mw_submit(mw, 3, &payloads[3], 0), ECANCELED);
    s = stats_of(mw);
    assert_int_equal(s.rejected, 4);
    if (s.cancelled != 3)
        fail_msg("cancelled is %zu after a submit refused by a stopped component; expected 3: cancelled counts "
                 "only tasks mw_submit() had accepted", s.cancelled);
    mw_destroy(mw);

    /* A stop whose deadline passes while a task runs and nothing is queued. */
    hold_init(&hold, 0);
    hold.until_stop = true;
    mw = make_mw((mw_config_t){ .workers = 1, .queue_capacity = 2, .process = process_hold, .ctx = &hold });
    assert_ok(mw_start(mw));
    assert_ok(mw_submit(mw, 0, NULL, 0));
    assert_ok(kit_latch_wait(&hold.started, KIT_HANG_MS));
    assert_ok(mw_stop(mw, 0)); /* the running task failed: done; nothing accepted was left undone */
    assert_err(mw_submit(mw, 1, NULL, 0), ECANCELED);
    s = stats_of(mw);
    assert_int_equal(s.failed, 1);
    assert_int_equal(s.rejected, 2); /* the late sub-task and the late submit */
    if (s.cancelled != 0)
        fail_msg("cancelled is %zu after mw_stop(0) found nothing queued; expected 0: submits refused after a stop "
                 "are rejected, not cancelled", s.cancelled);
    mw_destroy(mw);
    hold_destroy(&hold);
}

/* Workers stuck on a result limit that nobody consumes: a stop lifts the
 * limit, so no result is dropped and no worker is left waiting. */
static void test_mw_stop_lifts_the_result_limit(void **state)
{
    (void)state;
    enum { WORKERS = 2, LIMIT = 2, TASKS = 12 };
    mw_t *mw = make_mw((mw_config_t){ .workers = WORKERS, .queue_capacity = TASKS, .process = process_triple,
                                      .result_limit = LIMIT });
    assert_ok(mw_start(mw));
    for (long id = 0; id < TASKS; id++)
        assert_ok(mw_submit(mw, id, NULL, 0));
    mw_stats_t s = await_blocked_workers(mw, WORKERS, LIMIT);
    assert_int_equal(s.workers_blocked, WORKERS);
    assert_err(mw_stop(mw, 0), ETIMEDOUT);
    s = stats_of(mw);
    assert_int_equal(s.workers_alive, 0);
    assert_int_equal(s.completed, LIMIT + WORKERS); /* the held results were kept */
    assert_int_equal(s.cancelled, TASKS - LIMIT - WORKERS);
    assert_int_equal(s.submitted, s.completed + s.failed + s.rejected);
    int seen[TASKS] = { 0 };
    long wrong = 0;
    assert_int_equal_or_say(drain_results(mw, seen, TASKS, &wrong), LIMIT + WORKERS,
        "results stored once the stop lifted the limit (the limit's, and one per worker)");
    assert_int_equal_or_say(wrong, 0, "results with an unknown id or wrong data");
    mw_destroy(mw);
}

/* ---- robustness ---------------------------------------------------------------------- */

/* Waits loop: spurious wake-ups never let a result past the limit, nor end
 * a wait early. */
static void test_mw_result_limit_holds_under_spurious_wakeups(void **state)
{
    (void)state;
    enum { WORKERS = 3, LIMIT = 2 };
    long tasks = scaled(200, 60);
    mw_t *mw = make_mw((mw_config_t){ .workers = WORKERS, .queue_capacity = 4, .process = process_triple,
                                      .result_limit = LIMIT });
    kit_spurious_wakeups(true);
    static struct consumer c; /* static: a failed check leaves the threads using it intact */
    static kit_worker_t consumer;
    consumer_start(&c, &consumer, mw, tasks);
    c.pause_us = 300; /* slow: workers wait for room, often */
    kit_latch_count_down(&c.go);
    assert_ok(mw_start(mw));
    for (long id = 0; id < tasks; id++)
        assert_ok(mw_submit(mw, id, NULL, KIT_HANG_MS));
    assert_ok(mw_await(mw, KIT_HANG_MS));
    consumer_finish(&c, &consumer);
    kit_spurious_wakeups(false);
    assert_true_or_say(kit_spurious_count() > 0,
        "no wait was woken spuriously: the consumer and the workers must wait on a condition variable");
    mw_stats_t s = stats_of(mw);
    assert_int_equal(s.completed, tasks);
    if (s.most_unconsumed > LIMIT)
        fail_msg("%zu results stored at once with a limit of %d: a wake-up was taken for room", s.most_unconsumed,
                 LIMIT);
    mw_destroy(mw);
}

static void test_mw_destroy_frees_everything(void **state)
{
    (void)state;
    long before = kit_live_allocations();
    static struct seeded plan; /* static: a failed check leaves the threads using it intact */
    plan = (struct seeded){ .seed = 3, .fail_percent = 30 };
    mw_t *mw = make_mw((mw_config_t){ .workers = 2, .queue_capacity = 64, .process = process_seeded, .ctx = &plan });
    assert_ok(mw_start(mw));
    for (long id = 0; id < 30; id++)
        assert_ok(mw_submit(mw, id, NULL, KIT_HANG_MS));
    assert_ok(mw_await(mw, KIT_HANG_MS));
    assert_err(mw_submit(mw, 30, NULL, 0), ECANCELED); /* a rejected record too */
    mw_result_t result;
    assert_ok(mw_take_result(mw, &result, 0));          /* take one, leave the rest */
    mw_destroy(mw);
    assert_no_leak_since(before);

    /* Destroy while workers still run and tasks are queued. */
    mw = make_mw((mw_config_t){ .workers = 2, .queue_capacity = 64, .process = process_seeded, .ctx = &plan });
    plan.jitter_us = 500;
    assert_ok(mw_start(mw));
    for (long id = 0; id < 40; id++)
        assert_ok(mw_submit(mw, id, NULL, 0));
    mw_destroy(mw);
    assert_no_leak_since(before);

    /* Never started, tasks queued. */
    mw = make_mw(basic);
    assert_ok(mw_submit(mw, 1, NULL, 0));
    mw_destroy(mw);
    assert_no_leak_since(before);
}

/* ---- stress ----------------------------------------------------------------------------- */

/* Every submitted id ends up in exactly one of results, failed, rejected -
 * and failed exactly when its seed says so, with its own error. */
static void check_every_task_accounted(mw_t *mw, const struct seeded *plan, long ids, long *lost, long *doubled)
{
    int *seen = calloc((size_t)ids, sizeof *seen);
    long wrong = 0;
    drain_results(mw, seen, ids, &wrong);
    mw_failure_t failure;
    while (mw_take_failed(mw, &failure) == 0) {
        bool right = failure.task.id >= 0 && failure.task.id < ids && should_fail(plan->seed, failure.task.id,
                                                                                   plan->fail_percent) &&
                     failure.error == error_for(failure.task.id);
        if (right)
            seen[failure.task.id]++;
        else
            wrong++;
    }
    while (mw_take_rejected(mw, &failure) == 0) {
        if (failure.task.id >= 0 && failure.task.id < ids && failure.error == ETIMEDOUT)
            seen[failure.task.id]++;
        else
            wrong++;
    }
    for (long id = 0; id < ids; id++) {
        *lost += seen[id] == 0;
        *doubled += seen[id] > 1;
    }
    *lost += wrong;
    free(seen);
}

static void test_mw_stress_random_failures_conserve(void **state)
{
    (void)state;
    uint64_t seed = kit_test_seed();
    long runs = scaled(40, 6);
    long lost = 0, doubled = 0, broken = 0, rejections = 0, failures = 0;
    for (long run = 0; run < runs; run++) {
        kit_rng_t rng;
        kit_rng_seed(&rng, seed, (uint64_t)run);
        long tasks = 50 + (long)kit_rng_below(&rng, 150);
        static struct seeded plan; /* static: a failed check leaves the threads using it intact */
        plan = (struct seeded){ .seed = seed + (uint64_t)run, .fail_percent = (int)kit_rng_below(&rng, 60),
                               .jitter_us = 50 };
        mw_t *mw = make_mw((mw_config_t){ .workers = 1 + kit_rng_below(&rng, 4),
                                          .queue_capacity = 1 + kit_rng_below(&rng, 8),
                                          .process = process_seeded, .ctx = &plan });
        assert_ok(mw_start(mw));
        for (long id = 0; id < tasks; id++) {
            int err = mw_submit(mw, id, NULL, (long)kit_rng_below(&rng, 2)); /* 0 or 1 ms: some rejected */
            if (err != 0 && err != ETIMEDOUT)
                fail_msg("mw_submit: unexpected %d", err);
        }
        assert_ok(mw_await(mw, KIT_HANG_MS));
        mw_stats_t s = stats_of(mw);
        broken += s.submitted != (size_t)tasks || s.submitted != s.completed + s.failed + s.rejected;
        rejections += (long)s.rejected;
        failures += (long)s.failed;
        check_every_task_accounted(mw, &plan, tasks, &lost, &doubled);
        mw_destroy(mw);
    }
    if (lost || doubled || broken)
        fail_msg("%ld tasks lost (or wrong), %ld seen twice, conservation broken in %ld of %ld runs", lost, doubled,
                 broken, runs);
    assert_true_or_say(failures > 0, "no task failed in %ld runs where some fail: failures are not counted", runs);
    (void)rejections; /* how many depends on scheduling: not asserted */
}

/* The master: submits in its own thread while the main thread watches. */
struct submitter {
    mw_t *mw;
    long tasks;
    uint64_t seed;
    int unexpected;
};

static void *submit_all(void *raw)
{
    struct submitter *s = raw;
    kit_rng_t rng;
    kit_rng_seed(&rng, s->seed, 99);
    for (long id = 0; id < s->tasks; id++) {
        int err = mw_submit(s->mw, id, NULL, (long)kit_rng_below(&rng, 2));
        s->unexpected += err != 0 && err != ETIMEDOUT;
    }
    return NULL;
}

/* Every counter change comes with its counterpart in the same critical
 * section, so no snapshot may ever see submitted != completed + failed +
 * rejected + pending. Lock delays stretch the gap between two critical
 * sections, where a split update would show. */
static void test_mw_stress_stats_conserve_at_every_instant(void **state)
{
    (void)state;
    uint64_t seed = kit_test_seed();
    long tasks = scaled(600, 150);
    static struct seeded plan; /* static: a failed check leaves the threads using it intact */
    plan = (struct seeded){ .seed = seed, .fail_percent = 20, .spawn_below = tasks, .child_offset = tasks };
    /* children wait for no room: a full queue rejects them (recorded and counted) */
    mw_t *mw = make_mw((mw_config_t){ .workers = 4, .queue_capacity = 4, .process = process_seeded, .ctx = &plan });
    static struct submitter master; /* static: a failed check leaves the threads using it intact */
    master = (struct submitter){ mw, tasks, seed, 0 };
    kit_lock_delays(30, seed);
    assert_ok(mw_start(mw));
    static kit_worker_t thread;
    kit_worker_start(&thread, "master", submit_all, &master);
    long snapshots = 0, violations = 0;
    mw_stats_t s, bad = { 0 };
    int64_t start = kit_now_ns();
    do {
        s = stats_of(mw);
        snapshots++;
        if (s.submitted != s.completed + s.failed + s.rejected + s.pending) {
            violations++;
            bad = s;
        }
    } while ((!kit_worker_done(&thread) || s.pending > 0) && kit_elapsed_ms(start) < KIT_HANG_MS);
    kit_worker_must_finish(&thread, "the submitting master");
    kit_lock_delays(0, 0);
    assert_ok(mw_await(mw, KIT_HANG_MS));
    if (violations)
        fail_msg("%ld of %ld snapshots broke conservation, e.g. submitted %zu, completed %zu, failed %zu, "
                 "rejected %zu, pending %zu", violations, snapshots, bad.submitted, bad.completed, bad.failed,
                 bad.rejected, bad.pending);
    assert_int_equal_or_say(master.unexpected, 0, "mw_submit calls that returned another error than ETIMEDOUT");
    s = stats_of(mw);
    assert_int_equal(s.submitted, s.completed + s.failed + s.rejected);
    assert_int_equal(s.pending, 0);
    mw_destroy(mw);
}

/* A star: the root submits its leaves one by one while the master waits.
 * With lock delays, a leaf often finishes before its mw_submit returns: if
 * pending did not count it yet, pending would touch zero while the root
 * still has leaves to submit. Then a binary tree the same way. */
static void test_mw_stress_subtasks_with_lock_delays(void **state)
{
    (void)state;
    enum { WORKERS = 4, LEAVES = 16 };
    uint64_t seed = kit_test_seed();
    long rounds = scaled(30, 4);
    for (long round = 0; round < rounds; round++) {
        static struct tree star; /* static: a failed check leaves the threads using it intact */
        star = (struct tree){ .fanout = LEAVES, .total = LEAVES + 1 };
        mw_t *mw = make_mw((mw_config_t){ .workers = WORKERS, .queue_capacity = LEAVES + 1,
                                          .process = process_tree, .ctx = &star });
        assert_ok(mw_start(mw));
        run_tree_under_await(mw, &star, WORKERS, 400, seed + (uint64_t)round);
        mw_destroy(mw);
    }
    static struct tree tree; /* static: a failed check leaves the threads using it intact */
    tree = (struct tree){ .fanout = 2, .total = tree_size(2, 5) }; /* 63 tasks */
    mw_t *mw = make_mw((mw_config_t){ .workers = WORKERS, .queue_capacity = 64, .process = process_tree,
                                      .ctx = &tree });
    assert_ok(mw_start(mw));
    run_tree_under_await(mw, &tree, WORKERS, 50, seed);
    mw_destroy(mw);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_mw_create_rejects_bad_arguments),
    cmocka_unit_test(test_mw_create_undoes_partial_work),
    cmocka_unit_test(test_mw_calls_with_bad_arguments_give_einval),
    cmocka_unit_test(test_mw_submit_every_result_exactly_once),
    cmocka_unit_test(test_mw_process_failure_does_not_kill_the_worker),
    cmocka_unit_test(test_mw_submit_rejects_when_full_and_records_it),
    cmocka_unit_test(test_mw_submit_after_await_is_recorded_as_rejected),
    cmocka_unit_test(test_mw_submit_refused_payload_stays_the_callers),
    cmocka_unit_test(test_mw_await_waits_for_the_last_result),
    cmocka_unit_test(test_mw_submit_counts_subtasks),
    cmocka_unit_test(test_mw_close_still_accepts_subtasks),
    cmocka_unit_test(test_mw_await_times_out_while_a_task_runs),
    kit_real_threads_test(test_mw_await_joins_every_worker), /* it counts threads by name as they really start and end */
    cmocka_unit_test(test_mw_await_wakes_every_waiting_master),
    cmocka_unit_test(test_mw_await_from_a_task_gives_edeadlk),
    cmocka_unit_test(test_mw_take_result_times_out_on_one_deadline),
    cmocka_unit_test(test_mw_result_records_its_cost),
    cmocka_unit_test(test_mw_stress_random_failures_conserve),
    cmocka_unit_test(test_mw_stress_stats_conserve_at_every_instant),
    cmocka_unit_test(test_mw_stress_subtasks_with_lock_delays),
    cmocka_unit_test(test_mw_result_limit_bounds_unconsumed_results),
    cmocka_unit_test(test_mw_take_result_consuming_master_never_deadlocks),
    cmocka_unit_test(test_mw_result_limit_holds_under_spurious_wakeups),
    cmocka_unit_test(test_mw_await_detects_the_result_limit_trap),
    cmocka_unit_test(test_mw_trap_wakes_every_waiting_master),
    cmocka_unit_test(test_mw_await_waits_while_a_consumer_is_announced),
    cmocka_unit_test(test_mw_await_completes_once_the_trapped_results_are_taken),
    cmocka_unit_test(test_mw_await_detects_the_trap_with_idle_workers),
    cmocka_unit_test(test_mw_consumer_end_wakes_a_waiting_master),
    cmocka_unit_test(test_mw_end_of_results_wakes_every_waiting_consumer),
    cmocka_unit_test(test_mw_extension_calls_with_bad_arguments_give_einval),
    cmocka_unit_test(test_mw_stop_from_a_task_gives_edeadlk),
    cmocka_unit_test(test_mw_stop_reports_what_was_not_done),
    cmocka_unit_test(test_mw_stop_cancels_only_accepted_tasks),
    cmocka_unit_test(test_mw_stop_lifts_the_result_limit),
    cmocka_unit_test(test_mw_start_failure_stops_the_started_workers),
    cmocka_unit_test(test_mw_destroy_frees_everything),
};

KIT_TEST_MAIN(tests)
