/**
 * @file test_tpool_explore.c
 * @brief Chapter 03 under the schedule explorer: the idle-exit race, core
 *        threads running at once, a failing task's worker, keep-alive and
 *        shutdown - on virtual time, with fixed seeds; and generated
 *        scenarios of every call, checked against a model of the pool
 *        (kit_scenario.h).
 *
 * Virtual time makes the pool's timing exact: a worker idle for keep_alive_ms
 * leaves exactly then, and "shutdown wakes idle workers" means no virtual
 * time passes before they leave. For the idle-exit race, a keep-alive may
 * also run out at any switch point (timeouts_race), as on a loaded machine
 * where the worker's poll gives up just as a task arrives.
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_test.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_errno.h"
#include "kit_scenario.h"
#include "kit_sched.h"
#include "kit_time.h"
#include "tpool.h"

#define HOUR_MS (3600L * 1000)

static tpool_t *make_pool(size_t core, long keep_alive_ms)
{
    tpool_t *p = NULL;
    tpool_config_t config = { .core_threads = core, .queue_capacity = 4, .keep_alive_ms = keep_alive_ms,
                              .reject = bq_policy_abort(), .name = "xp" };
    explore_ok(tpool_create(&p, &config));
    return p;
}

static tpool_stats_t stats_of(tpool_t *p)
{
    tpool_stats_t stats;
    explore_ok(tpool_stats(p, &stats));
    return stats;
}

static void count_task(void *raw)
{
    kit_tally_add(raw);
}

/* ---- The idle-exit race -------------------------------------------------------------- */

/* One worker, a keep-alive that may run out at any moment, and tasks that
 * arrive just then: every task must still run. A task stranded in the queue
 * with no worker leaves the body waiting for ever - reported at once. */
static void tasks_racing_a_retiring_worker(void *ctx)
{
    (void)ctx;
    kit_tally_t ran;
    kit_tally_init(&ran);
    tpool_t *p = make_pool(1, 10);
    for (int i = 0; i < 3; i++) {
        explore_ok(tpool_execute(p, count_task, &ran));
        kit_tally_await(&ran, i + 1);
    }
    tpool_destroy(p);
    kit_tally_destroy(&ran);
}

static void test_tpool_explore_idle_exit_race(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:2 pct:1:3 random:1", .schedules = 750, .timeouts_race = true };
    kit_explore(&options, tasks_racing_a_retiring_worker, NULL);
}

/* ---- An execute racing the shutdown ---------------------------------------------------- */

struct racing_shutdown {
    tpool_t *p;
    kit_tally_t ran;
    int executed; /* what the racing tpool_execute returned */
};

static void *execute_once(void *raw)
{
    struct racing_shutdown *r = raw;
    r->executed = tpool_execute(r->p, count_task, &r->ran);
    return NULL;
}

static void *shut_down(void *raw)
{
    return (void *)(intptr_t)tpool_shutdown(raw);
}

/* A worker that retires the moment the queue is empty (keep-alive 0), an
 * execute on one thread, the shutdown on another, and an await on the
 * test's: a task the execute accepted (it returned 0) was accepted before
 * the shutdown, so the pool cannot be terminated before it has run - though
 * the execute may still be on its way to the queue when the shutdown comes
 * and the last worker leaves. */
static void execute_racing_the_shutdown(void *ctx)
{
    (void)ctx;
    struct racing_shutdown r = { .p = make_pool(1, 0) };
    kit_tally_init(&r.ran);
    explore_ok(tpool_execute(r.p, count_task, &r.ran));
    kit_tally_await(&r.ran, 1); /* a worker was started; it retires once it finds the queue empty */
    pthread_t executer, shutter;
    explore_ok(pthread_create(&executer, NULL, execute_once, &r));
    explore_ok(pthread_create(&shutter, NULL, shut_down, r.p));
    explore_ok(tpool_await_termination(r.p, LONG_MAX));
    int ran_before = kit_tally_count(&r.ran);
    explore_ok(pthread_join(executer, NULL));
    explore_ok(pthread_join(shutter, NULL));
    kit_explore_check(r.executed != 0 || ran_before == 2,
                      "tpool_await_termination returned 0 before a task ran that tpool_execute had accepted (it "
                      "returned 0, so the task came before the shutdown): the pool was declared terminated while "
                      "that execute was still on its way to the queue");
    kit_explore_check(r.executed == 0 || r.executed == ECANCELED, "tpool_execute racing tpool_shutdown returned %s, "
                      "expected 0 or ECANCELED", kit_errno_name(r.executed));
    tpool_destroy(r.p);
    kit_tally_destroy(&r.ran);
}

static void test_tpool_explore_execute_racing_shutdown(void **state)
{
    (void)state;
    /* The window is a few steps wide on three threads (the execute between its
     * check and the queue, the shutdown between its flag and closing the queue,
     * the awaiter between them): about 1 schedule in 1,000 to 5,000 meets it. */
    kit_explore_t options = { .strategy = "pct:2:4 pct:3:4 random:2 random:5", .schedules = 2500 };
    kit_explore(&options, execute_racing_the_shutdown, NULL);
}

/* ---- core_threads tasks at once ------------------------------------------------------- */

struct meeting {
    kit_tally_t arrived;
    int size;
};

/* Each task waits for all the others: they can only all finish if all run at once. */
static void meet_the_others(void *raw)
{
    struct meeting *m = raw;
    kit_tally_add(&m->arrived);
    kit_tally_await(&m->arrived, m->size);
}

static void core_tasks_meet(void *ctx)
{
    (void)ctx;
    struct meeting m = { .size = 2 };
    kit_tally_init(&m.arrived);
    tpool_t *p = make_pool(2, HOUR_MS);
    for (int i = 0; i < m.size; i++)
        explore_ok(tpool_execute(p, meet_the_others, &m));
    explore_ok(tpool_shutdown(p));
    explore_ok(tpool_await_termination(p, LONG_MAX));
    tpool_stats_t stats = stats_of(p);
    kit_explore_check(stats.completed == 2 && stats.active == 0 && stats.threads == 0,
                      "after termination: completed %zu (expected 2), active %zu, threads %zu (expected 0)",
                      stats.completed, stats.active, stats.threads);
    tpool_destroy(p);
    kit_tally_destroy(&m.arrived);
}

static void test_tpool_explore_core_tasks_run_at_once(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "pct:2:3 random:2", .schedules = 600, .spurious = 1 };
    kit_explore(&options, core_tasks_meet, NULL);
}

/* ---- A failing task keeps its worker ---------------------------------------------------- */

struct on_thread {
    kit_tally_t ran;
    pthread_t ran_on[2];
};

static void fail_on_this_thread(void *raw)
{
    struct on_thread *o = raw;
    o->ran_on[0] = pthread_self();
    tpool_task_fail(EIO);
    kit_tally_add(&o->ran);
}

static void run_on_this_thread(void *raw)
{
    struct on_thread *o = raw;
    o->ran_on[1] = pthread_self();
    kit_tally_add(&o->ran);
}

static void failed_task_then_another(void *ctx)
{
    (void)ctx;
    struct on_thread o;
    kit_tally_init(&o.ran);
    tpool_t *p = make_pool(1, HOUR_MS);
    explore_ok(tpool_execute(p, fail_on_this_thread, &o));
    kit_tally_await(&o.ran, 1);
    explore_ok(tpool_execute(p, run_on_this_thread, &o));
    kit_tally_await(&o.ran, 2);
    kit_explore_check(pthread_equal(o.ran_on[0], o.ran_on[1]),
                      "the task after a failed one ran on another thread: the failure killed its worker");
    tpool_destroy(p);
    kit_tally_destroy(&o.ran);
}

static void test_tpool_explore_failed_task_keeps_its_worker(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:2 random:4", .schedules = 600 };
    kit_explore(&options, failed_task_then_another, NULL);
}

/* ---- The counters add up at every instant ------------------------------------------------- */

static void just_fail(void *raw)
{
    (void)raw;
    tpool_task_fail(EIO);
}

/* A snapshot taken while failing tasks finish: each completed task failed,
 * so completed and failed move together - a task counted in one and not
 * yet in the other was counted in two critical sections. */
static void check_failures_counted_with_completions(tpool_t *p, const char *when)
{
    tpool_stats_t st = stats_of(p);
    kit_explore_check(st.completed == st.failed,
                      "tpool_stats %s says completed %zu and failed %zu, and every task submitted fails: a task was "
                      "counted completed but not failed - the two counts of one task are made in two critical "
                      "sections, and a read in between sees half (tpool.h: tpool_stats reads every counter at one "
                      "instant; failed counts the completed tasks that called tpool_task_fail)",
                      when, st.completed, st.failed);
    kit_explore_check(st.submitted == 2 && st.completed <= st.submitted,
                      "tpool_stats %s says submitted %zu and completed %zu, with 2 tasks submitted", when,
                      st.submitted, st.completed);
}

static void stats_while_failing_tasks_finish(void *ctx)
{
    (void)ctx;
    tpool_t *p = make_pool(2, HOUR_MS);
    explore_ok(tpool_execute(p, just_fail, NULL));
    explore_ok(tpool_execute(p, just_fail, NULL));
    check_failures_counted_with_completions(p, "while the tasks ran");
    check_failures_counted_with_completions(p, "a moment later");
    explore_ok(tpool_shutdown(p));
    explore_ok(tpool_await_termination(p, LONG_MAX));
    check_failures_counted_with_completions(p, "after termination");
    tpool_stats_t st = stats_of(p);
    kit_explore_check(st.completed == 2, "after termination, tpool_stats says completed %zu: 2 tasks ran",
                      st.completed);
    tpool_destroy(p);
}

static void test_tpool_explore_stats_add_up_at_every_instant(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "random:1 pct:2:3", .schedules = 100 };
    kit_explore(&options, stats_while_failing_tasks_finish, NULL);
}

/* ---- Keep-alive and shutdown, on virtual time --------------------------------------------- */

static void keep_alive_exactly(void *ctx)
{
    (void)ctx;
    kit_tally_t ran;
    kit_tally_init(&ran);
    tpool_t *p = make_pool(1, 100);
    explore_ok(tpool_execute(p, count_task, &ran));
    kit_tally_await(&ran, 1);
    kit_sleep_ms(50); /* virtual: the worker has been idle for at most 50 ms */
    tpool_stats_t stats = stats_of(p);
    kit_explore_check(stats.threads == 1 && stats.retired == 0,
                      "50 ms into a 100 ms keep-alive: %zu workers (expected 1), %zu retired (expected 0)",
                      stats.threads, stats.retired);
    kit_sleep_ms(100); /* now idle for more than 100 ms */
    stats = stats_of(p);
    kit_explore_check(stats.threads == 0 && stats.retired == 1,
                      "150 ms after its task, past a 100 ms keep-alive: %zu workers (expected 0), %zu retired",
                      stats.threads, stats.retired);
    tpool_destroy(p);
    kit_tally_destroy(&ran);
}

/* Two workers idle since the same instant reach their keep-alive together:
 * each retirement is counted, however the two interleave (a count raised
 * outside the lock loses one of them). */
static void two_retire_together(void *ctx)
{
    (void)ctx;
    kit_tally_t ran;
    kit_tally_init(&ran);
    tpool_t *p = make_pool(2, 100);
    explore_ok(tpool_execute(p, count_task, &ran));
    explore_ok(tpool_execute(p, count_task, &ran));
    kit_tally_await(&ran, 2);
    kit_sleep_ms(150); /* virtual: both idle past their 100 ms keep-alive */
    tpool_stats_t stats = stats_of(p);
    /* every worker started has retired: at least as many as were ever alive at once */
    kit_explore_check(stats.threads == 0 && stats.retired >= stats.largest,
                      "150 ms after their tasks, past a 100 ms keep-alive: %zu workers (expected 0), %zu retired, "
                      "though %zu were alive at once (each retirement must be counted, under the pool's lock)",
                      stats.threads, stats.retired, stats.largest);
    tpool_destroy(p);
    kit_tally_destroy(&ran);
}

static void test_tpool_explore_workers_retire_after_keep_alive(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:2 random:5", .schedules = 600 };
    kit_explore(&options, keep_alive_exactly, NULL);
}

static void test_tpool_explore_workers_retiring_together_are_all_counted(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "random:7", .schedules = 300 };
    kit_explore(&options, two_retire_together, NULL);
}

static void shutdown_with_idle_workers(void *ctx)
{
    (void)ctx;
    kit_tally_t ran;
    kit_tally_init(&ran);
    tpool_t *p = make_pool(2, HOUR_MS);
    for (int i = 0; i < 2; i++)
        explore_ok(tpool_execute(p, count_task, &ran));
    kit_tally_await(&ran, 2);
    int64_t start = kit_now_ns();
    explore_ok(tpool_shutdown(p));
    explore_ok(tpool_await_termination(p, LONG_MAX));
    long waited_ms = (long)((kit_now_ns() - start) / 1000000);
    kit_explore_check(waited_ms == 0, "termination took %ld ms of (virtual) time: shutdown did not wake the idle "
                      "workers, they left when their keep-alive ran out", waited_ms);
    tpool_destroy(p);
    kit_tally_destroy(&ran);
}

static void test_tpool_explore_shutdown_wakes_idle_workers(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "pct:6:3 random:6", .schedules = 600 };
    kit_explore(&options, shutdown_with_idle_workers, NULL);
}

/* ---- Every thread awaiting termination wakes ----------------------------------------------- */

static void *await_forever(void *raw)
{
    return (void *)(long)tpool_await_termination(raw, LONG_MAX);
}

/* Two threads await termination before the shutdown; the last worker leaves
 * either before it (keep-alive 10 ms) or because of it (keep-alive 1 h). */
static void several_await_termination(void *ctx)
{
    long keep_alive_ms = *(long *)ctx;
    kit_tally_t ran;
    kit_tally_init(&ran);
    tpool_t *p = make_pool(1, keep_alive_ms);
    explore_ok(tpool_execute(p, count_task, &ran));
    pthread_t awaiters[2];
    for (int i = 0; i < 2; i++)
        explore_ok(pthread_create(&awaiters[i], NULL, await_forever, p));
    kit_tally_await(&ran, 1);
    kit_sleep_ms(50);
    int64_t start = kit_now_ns();
    explore_ok(tpool_shutdown(p));
    for (int i = 0; i < 2; i++) {
        void *err = NULL;
        explore_ok(pthread_join(awaiters[i], &err));
        kit_explore_check(err == NULL, "tpool_await_termination in thread %d returned %s, expected 0", i,
                          kit_errno_name((int)(intptr_t)err));
    }
    long waited_ms = (long)((kit_now_ns() - start) / 1000000);
    kit_explore_check(waited_ms == 0, "the threads awaiting termination woke %ld ms (virtual) after the pool ended: "
                      "someone was not told", waited_ms);
    tpool_destroy(p);
    kit_tally_destroy(&ran);
}

static void test_tpool_explore_termination_wakes_every_awaiter(void **state)
{
    (void)state;
    long keep_alive[] = { 10, HOUR_MS };
    for (int i = 0; i < 2; i++) {
        kit_explore_t options = { .strategy = "pct:8:3 random:8", .schedules = 500, .spurious = 1 };
        kit_explore(&options, several_await_termination, &keep_alive[i]);
    }
}

/* The scenarios' spec: the sequential model, the tasks, the calls and their printing (tpool_scenarios.c). */
extern const kit_spec_t pool_spec;

/* Scenarios nobody wrote, on pools of one or two workers, a queue of one or
 * two, every policy, and keep-alives that run out at once, at any moment or
 * never: submitters racing a shutdown, awaits that time out, full queues,
 * tasks that submit tasks. Some order of the calls must explain each
 * history, and once nothing else can move every task the pool took has run
 * once or been dropped, and tpool_stats adds up. The schedules are drawn
 * (PCT and a random walk), not searched in order: the workers make each
 * schedule long, and a partial-order search on a small budget spends it on
 * their last choices (retiring, leaving), while the races that matter - a
 * submit against a shutdown, a worker's keep-alive or another submit - come
 * anywhere. */
static void test_tpool_explore_generated_scenarios(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "pct:1:3 random:1", .schedules = 20, .spurious = 1, .timeouts_race = true };
    kit_scenarios(&pool_spec, 250, &options);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_tpool_explore_idle_exit_race),
    cmocka_unit_test(test_tpool_explore_execute_racing_shutdown),
    cmocka_unit_test(test_tpool_explore_core_tasks_run_at_once),
    cmocka_unit_test(test_tpool_explore_failed_task_keeps_its_worker),
    cmocka_unit_test(test_tpool_explore_stats_add_up_at_every_instant),
    cmocka_unit_test(test_tpool_explore_workers_retire_after_keep_alive),
    cmocka_unit_test(test_tpool_explore_workers_retiring_together_are_all_counted),
    cmocka_unit_test(test_tpool_explore_shutdown_wakes_idle_workers),
    cmocka_unit_test(test_tpool_explore_termination_wakes_every_awaiter),
    cmocka_unit_test(test_tpool_explore_generated_scenarios),
};

KIT_TEST_MAIN(tests)
