/**
 * @file main.c
 * @brief Chapter 03 program: the source document's thread-pool test, replayed; and --compare.
 *
 * The default run is the document's test: a pool with one core thread, a
 * queue of one and a keep-alive of one second gets four tasks of one second
 * each, with the caller-runs policy. The trace shows task 0 starting the
 * worker, task 1 waiting in the queue, task 2 finding the queue full and
 * running on the caller (main), task 3 queued once there is room - and, a
 * second after the last task, the idle worker retiring.
 *
 * `--compare` shows why pools exist: the same batch of short tasks run once
 * with a fresh thread per task (Thread-Per-Message) and once on the pool.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_cli.h"
#include "kit_errno.h"
#include "kit_gate.h"
#include "kit_log.h"
#include "kit_time.h"
#include "kit_trace.h"
#include "tpool.h"

static long core = 1, capacity = 1, keep_alive_ms = 1000, tasks = 4, task_ms = 1000;
static kit_list_t delays; /* per-task work time, overrides --task-ms */
static const char *policy_text = "caller-runs";
static bool compare;
static long batch = 20000, work_us = 5;
static kit_run_t run;

static const kit_opt_t options[] = {
    { "core", KIT_OPT_LONG, "N", "core threads: the most workers alive at once", &core, 1, 256, NULL },
    { "queue", KIT_OPT_LONG, "N", "queue capacity: tasks waiting for a worker", &capacity, 1, 1000000, NULL },
    { "keep-alive-ms", KIT_OPT_LONG, "MS", "an idle worker retires after this long", &keep_alive_ms, 0, 600000, NULL },
    { "tasks", KIT_OPT_LONG, "N", "tasks to execute", &tasks, 1, 100000, NULL },
    { "task-ms", KIT_OPT_LONG, "MS", "how long each task works (sleeps)", &task_ms, 0, 60000, NULL },
    { "delays", KIT_OPT_LIST, "MS,MS,...", "work time of task 0, 1, ... (scripts an interleaving)", &delays, 0, 60000,
      NULL },
    { "policy", KIT_OPT_STRING, "POLICY",
      "when the queue is full: block, timeout:MS, discard, discard-oldest, abort, caller-runs", &policy_text, 0, 0,
      NULL },
    { "compare", KIT_OPT_FLAG, NULL, "time a batch of short tasks: a thread per task, then the pool", &compare, 0, 0,
      NULL },
    { "batch", KIT_OPT_LONG, "N", "tasks in the --compare batch", &batch, 1, 10000000, NULL },
    { "work-us", KIT_OPT_LONG, "US", "busy work per --compare task, in microseconds", &work_us, 0, 1000000, NULL },
    KIT_RUN_OPTIONS(run),
};

static const kit_cli_t cli = {
    "ch03-thread-pool",
    "A pool of core threads, a bounded queue and a reject policy; idle workers\n"
    "  retire after the keep-alive. Default: the source document's test (core 1,\n"
    "  queue 1, keep-alive 1 s, 4 tasks of 1 s, caller-runs).",
    "examples:\n"
    "  ch03-thread-pool --policy abort            # task 2 is refused: EAGAIN\n"
    "  ch03-thread-pool --policy timeout:1500     # task 2 waits up to 1.5 s for room\n"
    "  ch03-thread-pool --delays 1000,1000,500    # main finishes task 2 first: task 3 runs on main\n"
    "  ch03-thread-pool --core 2 --tasks 8 --task-ms 300 --keep-alive-ms 500\n"
    "  ch03-thread-pool --compare --core 2        # thread per task vs a pool of 2",
    options, sizeof options / sizeof options[0],
};

/* ---- the replay -------------------------------------------------------------- */

struct demo_task {
    int id;
    kit_latch_t *settled; /* counted down once the task ran, was dropped or was refused */
};

static long work_time_of(int task)
{
    return (size_t)task < delays.count ? delays.values[task] : task_ms;
}

static void run_demo_task(void *raw)
{
    struct demo_task *task = raw;
    kit_log("task", "task %d running", task->id);
    kit_trace_begin("task", "task %d", task->id);
    kit_sleep_ms(work_time_of(task->id));
    kit_trace_end("task");
    kit_log("task", "task %d done", task->id);
    kit_latch_count_down(task->settled);
}

static void drop_demo_task(void *raw)
{
    struct demo_task *task = raw;
    kit_log("task", "task %d dropped by the pool", task->id);
    kit_latch_count_down(task->settled);
}

static void fail_usage_number(const char *text)
{
    kit_cli_fail(&cli, "--policy %s: the timeout must be a number of milliseconds, 0..600000", text);
}

/* The pool supplies the policies' item functions itself (tpool.h): NULL here. */
static bq_policy_t parse_policy(const char *text)
{
    if (strcmp(text, "block") == 0)
        return bq_policy_block();
    if (strncmp(text, "timeout:", 8) == 0) {
        char *end;
        errno = 0;
        long ms = strtol(text + 8, &end, 10);
        if (errno != 0 || end == text + 8 || *end != '\0' || ms < 0 || ms > 600000)
            fail_usage_number(text);
        return bq_policy_timeout(ms);
    }
    if (strcmp(text, "discard") == 0)
        return bq_policy_discard(NULL);
    if (strcmp(text, "discard-oldest") == 0)
        return bq_policy_discard_oldest(NULL);
    if (strcmp(text, "abort") == 0)
        return bq_policy_abort();
    if (strcmp(text, "caller-runs") == 0)
        return bq_policy_caller_runs(NULL);
    kit_cli_fail(&cli, "--policy %s: expected block, timeout:MS, discard, discard-oldest, abort or caller-runs", text);
}

static int make_pool(tpool_t **pool, size_t core_threads, size_t queue_capacity, bq_policy_t policy)
{
    tpool_config_t config = { core_threads, queue_capacity, keep_alive_ms, policy, "pool" };
    int err = tpool_create(pool, &config);
    if (err != 0)
        fprintf(stderr, "tpool_create: %s%s\n", kit_errno_name(err),
                err == ENOSYS ? " - not implemented yet: write exercises/03-thread-pool/tpool.c" : "");
    return err;
}

/* Says what became of each task, from the counters before and after. */
static void execute_all(tpool_t *pool, struct demo_task *records, kit_latch_t *settled)
{
    tpool_stats_t before = { 0 }, after = { 0 };
    for (int i = 0; i < tasks; i++) {
        records[i] = (struct demo_task){ i, settled };
        kit_log("main", "execute task %d", i);
        tpool_stats(pool, &before);
        int err = tpool_execute_or_drop(pool, run_demo_task, drop_demo_task, &records[i]);
        tpool_stats(pool, &after);
        if (err != 0) {
            kit_log("main", "task %d refused: %s (the task is still ours)", i, kit_errno_name(err));
            kit_latch_count_down(settled);
        } else if (after.ran_by_caller > before.ran_by_caller) {
            kit_log("main", "task %d ran here, on the caller: the queue was full", i);
        } else if (after.dropped == before.dropped) {
            kit_log("main", "task %d accepted: %zu worker(s), %zu queued", i, after.threads, after.queued);
        }
    }
}

/* Watching the pool is the program's business, not the pool's: a program may
 * sleep-poll the stats to show when the idle workers leave. */
static void watch_workers_retire(tpool_t *pool)
{
    int64_t start = kit_now_ns();
    tpool_stats_t s = { 0 };
    while (tpool_stats(pool, &s) == 0 && s.threads > 0 && kit_elapsed_ms(start) < keep_alive_ms + 5000.0)
        kit_sleep_ms(10);
    if (s.threads == 0)
        kit_log("main", "every worker retired: the idle pool holds no thread");
}

static int replay(void)
{
    bq_policy_t policy = parse_policy(policy_text);
    tpool_t *pool;
    if (make_pool(&pool, (size_t)core, (size_t)capacity, policy) != 0)
        return 1;
    kit_latch_t settled;
    struct demo_task *records = calloc((size_t)tasks, sizeof *records);
    if (records == NULL || kit_latch_init(&settled, (size_t)tasks) != 0) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    kit_log("main", "pool: core %ld, queue %ld, keep-alive %ld ms, policy %s; %ld tasks of %ld ms%s", core, capacity,
            keep_alive_ms, policy_text, tasks, task_ms, delays.count > 0 ? " unless --delays says otherwise" : "");
    execute_all(pool, records, &settled);
    kit_latch_wait(&settled, LONG_MAX);
    kit_log("main", "every task has run or been dropped; the workers now idle for %ld ms", keep_alive_ms);
    watch_workers_retire(pool);
    tpool_shutdown(pool);
    tpool_await_termination(pool, LONG_MAX);
    tpool_stats_t s = { 0 };
    tpool_stats(pool, &s);
    tpool_destroy(pool);
    kit_latch_destroy(&settled);
    free(records);
    int failed = kit_run_end(&run);

    bool adds_up = s.completed + s.dropped + s.rejected == s.submitted;
    printf("\nsubmitted %zu = completed %zu (%zu on the caller) + dropped %zu + rejected %zu: %s\n", s.submitted,
           s.completed, s.ran_by_caller, s.dropped, s.rejected, adds_up ? "every task accounted for" : "TASKS LOST");
    printf("workers: %zu at most, %zu retired after %ld ms idle\n", s.largest, s.retired, keep_alive_ms);
    return adds_up && !failed ? 0 : 1;
}

/* ---- --compare: Thread-Per-Message vs the pool -------------------------------- */

static atomic_long compare_done;

static void busy_work(void)
{
    int64_t end = kit_now_ns() + work_us * 1000;
    while (kit_now_ns() < end)
        ; /* simulated computation: this thread is meant to use the CPU */
}

static void *thread_per_message_body(void *raw)
{
    (void)raw;
    busy_work();
    atomic_fetch_add(&compare_done, 1);
    return NULL;
}

static void pool_task(void *raw)
{
    thread_per_message_body(raw);
}

/* A fresh thread per task, created and joined; at most IN_FLIGHT alive at
 * once, so a big batch does not exhaust the system's threads. */
static double time_thread_per_message(void)
{
    enum { IN_FLIGHT = 64 };
    pthread_t threads[IN_FLIGHT];
    int64_t start = kit_now_ns();
    for (long i = 0; i < batch; i++) {
        if (i >= IN_FLIGHT)
            pthread_join(threads[i % IN_FLIGHT], NULL);
        int err = pthread_create(&threads[i % IN_FLIGHT], NULL, thread_per_message_body, NULL);
        if (err != 0) {
            fprintf(stderr, "pthread_create: %s\n", kit_errno_name(err));
            exit(1);
        }
    }
    for (long i = batch > IN_FLIGHT ? batch - IN_FLIGHT : 0; i < batch; i++)
        pthread_join(threads[i % IN_FLIGHT], NULL);
    return kit_elapsed_ms(start);
}

/* The same batch on a pool whose queue holds all of it. */
static int time_pool(double *ms, tpool_stats_t *s)
{
    tpool_t *pool;
    int64_t start = kit_now_ns();
    if (make_pool(&pool, (size_t)core, (size_t)batch, bq_policy_block()) != 0)
        return 1;
    for (long i = 0; i < batch; i++)
        if (tpool_execute(pool, pool_task, NULL) != 0)
            return 1;
    tpool_shutdown(pool);
    tpool_await_termination(pool, LONG_MAX);
    *ms = kit_elapsed_ms(start);
    tpool_stats(pool, s);
    tpool_destroy(pool);
    return 0;
}

static int compare_run(void)
{
    printf("compare: %ld tasks of %ld us of busy work each\n", batch, work_us);
    double pool_ms, thread_ms = time_thread_per_message();
    long thread_done = atomic_exchange(&compare_done, 0);
    tpool_stats_t s;
    if (time_pool(&pool_ms, &s) != 0)
        return 1;
    int failed = kit_run_end(&run);
    printf("  thread per message  %8ld threads created and joined  %9.1f ms  %7.2f us/task\n", batch, thread_ms,
           thread_ms * 1000 / (double)batch);
    printf("  pool of %-3ld         %8zu thread(s) started         %9.1f ms  %7.2f us/task\n", core, s.largest,
           pool_ms, pool_ms * 1000 / (double)batch);
    printf("the pool is %.1fx faster; completed %zu of %ld on the pool, %ld of %ld with threads\n", thread_ms / pool_ms,
           s.completed, batch, thread_done, batch);
    bool all = s.completed == (size_t)batch && thread_done == batch;
    return all && !failed ? 0 : 1;
}

int main(int argc, char **argv)
{
    kit_cli_parse(&cli, argc, argv);
    parse_policy(policy_text); /* a bad --policy is a usage error, whatever the mode */
    if (compare)
        run.quiet = true; /* thousands of tasks: no per-task lines */
    kit_run_begin(&run);
    return compare ? compare_run() : replay();
}
