/**
 * @file main.c
 * @brief Chapter 05 program: the source document's master-worker demo, its
 *        deadlock trap, and (in measure.c) what the pattern costs and gains.
 *
 * Default: the master submits 100 tasks to 4 workers through a queue of 16,
 * each waiting at most 100 ms for room (the document's offer with a
 * timeout). A task "works" for 50 ms and fails now and then (seeded). A
 * collector thread takes the results while the workers run; afterwards the
 * master lists the failures and rejections and checks conservation:
 * submitted = completed + failed + rejected. `--fanout N` makes every task
 * submit N sub-tasks (the document's recursive directory scan).
 *
 * `--trap`: a result limit, and a master that waits for completion before
 * consuming. mw_await() reports EDEADLK instead of hanging; the program
 * explains it, starts a consumer, and finishes.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "kit_cli.h"
#include "kit_errno.h"
#include "kit_log.h"
#include "kit_rand.h"
#include "kit_thread.h"
#include "kit_time.h"
#include "kit_trace.h"
#include "measure.h"
#include "mw.h"

static long tasks = 100, workers = 4, capacity = 16, fail_rate = 10, task_ms = 50;
static long submit_timeout_ms = 100, result_limit = 0, fanout = 0;
static bool compare, sweep, false_sharing, trap;
static measure_options_t measure = { .batch = 100000, .work_us = 5, .sweep_tasks = 200, .sweep_work_us = 500,
                                     .sleep_ms = 2, .increments = 20000000, .repeat = 3 };
static kit_run_t run;

static const kit_opt_t options[] = {
    { "tasks", KIT_OPT_LONG, "N", "tasks the master submits", &tasks, 1, 1000000, NULL },
    { "workers", KIT_OPT_LONG, "N", "worker threads", &workers, 1, 256, NULL },
    { "capacity", KIT_OPT_LONG, "N", "task queue capacity", &capacity, 1, 1000000, NULL },
    { "fail-rate", KIT_OPT_LONG, "PCT", "percentage of tasks that fail (seeded)", &fail_rate, 0, 100, NULL },
    { "task-ms", KIT_OPT_LONG, "MS", "simulated work per task", &task_ms, 0, 60000, NULL },
    { "submit-timeout-ms", KIT_OPT_LONG, "MS", "how long a submit waits for room before the task is rejected",
      &submit_timeout_ms, 0, 600000, NULL },
    { "result-limit", KIT_OPT_LONG, "N", "most results stored unconsumed (0 = no limit; --trap: 8)", &result_limit,
      0, 1000000, NULL },
    { "fanout", KIT_OPT_LONG, "N", "sub-tasks each task submits (a one-level directory scan)", &fanout, 0, 100,
      NULL },
    { "trap", KIT_OPT_FLAG, NULL, "the deadlock trap: wait for completion before consuming", &trap, 0, 0, NULL },
    { "compare", KIT_OPT_FLAG, NULL, "time one CPU-bound batch: single thread, chapter-03 pool, master-worker",
      &compare, 0, 0, NULL },
    { "batch", KIT_OPT_LONG, "N", "--compare: tasks in the batch", &measure.batch, 1, 10000000, NULL },
    { "work-us", KIT_OPT_LONG, "US", "--compare: CPU time of one task", &measure.work_us, 1, 1000000, NULL },
    { "sweep", KIT_OPT_FLAG, NULL, "throughput at 1, 2, 4, 8, 16 workers, CPU-bound and sleep-bound", &sweep, 0, 0,
      NULL },
    { "sweep-tasks", KIT_OPT_LONG, "N", "--sweep: tasks per batch", &measure.sweep_tasks, 1, 1000000, NULL },
    { "sweep-work-us", KIT_OPT_LONG, "US", "--sweep: CPU time of one CPU-bound task", &measure.sweep_work_us, 1,
      1000000, NULL },
    { "sleep-ms", KIT_OPT_LONG, "MS", "--sweep: sleep of one sleep-bound task", &measure.sleep_ms, 0, 10000, NULL },
    { "false-sharing", KIT_OPT_FLAG, NULL, "per-worker counters in one cache line vs padded apart", &false_sharing,
      0, 0, NULL },
    { "increments", KIT_OPT_LONG, "N", "--false-sharing: additions per worker", &measure.increments, 1,
      1000000000, NULL },
    { "repeat", KIT_OPT_LONG, "N", "measuring modes: report the best of N runs", &measure.repeat, 1, 100, NULL },
    KIT_RUN_OPTIONS(run),
};

static const kit_cli_t cli = {
    "ch05-master-worker",
    "A master submits tasks to a bounded queue; workers process them and publish\n"
    "  results, failures and rejections; the master checks that none is lost.",
    "examples:\n"
    "  ch05-master-worker --fail-rate 30 --fanout 2 --capacity 300   # sub-tasks, all counted\n"
    "  ch05-master-worker --capacity 2 --submit-timeout-ms 5     # some tasks rejected, all recorded\n"
    "  ch05-master-worker --result-limit 4                       # workers wait for the collector\n"
    "  ch05-master-worker --trap                                 # the deadlock trap, detected\n"
    "  ch05-master-worker --compare | --sweep | --false-sharing --quiet",
    options, sizeof options / sizeof options[0],
};

static uint64_t seed;

/* ---- the work -------------------------------------------------------------------- */

/* A task's payload: owned by the master until the task succeeds. */
struct job {
    long n;
};

static struct job *new_job(long n)
{
    struct job *job = malloc(sizeof *job);
    if (job)
        job->n = n;
    return job;
}

static bool fails(long task_id)
{
    kit_rng_t rng;
    kit_rng_seed(&rng, seed, (uint64_t)task_id);
    return (long)kit_rng_below(&rng, 100) < fail_rate;
}

/* The document's recursive scan, one level deep: a top-level task submits
 * its sub-tasks. A rejected one is recorded; its payload comes back to the master. */
static void submit_subtasks(mw_t *mw, long parent)
{
    for (long k = 0; parent < tasks && k < fanout; k++) {
        long child = tasks + parent * fanout + k;
        struct job *job = new_job(child);
        int err = job ? mw_submit(mw, child, job, submit_timeout_ms) : ENOMEM;
        if (err == EINVAL || err == ENOMEM)
            free(job); /* not recorded: still ours */
    }
}

static int process_job(mw_t *mw, const mw_task_t *task, void **result, void *ctx)
{
    (void)ctx;
    struct job *job = task->payload;
    submit_subtasks(mw, task->id);
    kit_sleep_ms(task_ms); /* simulated work */
    if (fails(task->id))
        return EIO; /* the payload comes back in the failed list */
    long *square = malloc(sizeof *square);
    if (square == NULL)
        return ENOMEM;
    *square = job->n * job->n;
    free(job); /* done with it: after a success the payload is ours to free */
    *result = square;
    return 0;
}

/* ---- the collector: consumes while the workers run ---------------------------------- */

struct collector {
    mw_t *mw;
    long taken;
    long cost_us; /* summed */
};

static void *collect(void *raw)
{
    struct collector *c = raw;
    mw_result_t result;
    while (mw_take_result(c->mw, &result, 600000) == 0) { /* ECANCELED: the results have ended */
        long *square = result.data;
        kit_log("master", "result of task %ld: %ld (%.1f ms)", result.task_id, *square, result.cost_us / 1000.0);
        free(square);
        c->taken++;
        c->cost_us += result.cost_us;
    }
    mw_consumer_end(c->mw);
    return NULL;
}

static int start_collector(struct collector *c, pthread_t *thread)
{
    mw_consumer_begin(c->mw); /* announced before it runs: mw_await() knows someone consumes */
    int err = kit_thread_start(thread, "collector", collect, c);
    if (err != 0) {
        mw_consumer_end(c->mw);
        fprintf(stderr, "cannot start the collector: %s\n", kit_errno_name(err));
    }
    return err;
}

/* ---- reporting ------------------------------------------------------------------------- */

/* Takes every record of one list, prints their ids, frees their payloads. */
static long list_records(mw_t *mw, int (*take)(mw_t *, mw_failure_t *), const char *what)
{
    mw_failure_t record;
    long count = 0;
    printf("%-9s", what);
    while (take(mw, &record) == 0) {
        if (count < 20)
            printf(" %ld(%s)", record.task.id, kit_errno_name(record.error));
        free(record.task.payload);
        count++;
    }
    printf(count > 20 ? " ... %ld in all\n" : count == 0 ? " none\n" : "\n", count);
    return count;
}

static int report(mw_t *mw, const struct collector *c)
{
    mw_stats_t s;
    mw_stats(mw, &s);
    printf("\nresults:  %ld collected while the workers ran, mean cost %.1f ms; at most %zu stored at once\n",
           c->taken, c->taken ? c->cost_us / 1000.0 / c->taken : 0.0, s.most_unconsumed);
    list_records(mw, mw_take_failed, "failed:");
    list_records(mw, mw_take_rejected, "rejected:");
    bool holds = s.submitted == s.completed + s.failed + s.rejected && (long)s.completed == c->taken;
    printf("submitted %zu = completed %zu + failed %zu + rejected %zu: %s (seed %lu)\n", s.submitted, s.completed,
           s.failed, s.rejected, holds ? "holds, nothing lost" : "BROKEN", (unsigned long)seed);
    return holds ? 0 : 1;
}

/* ---- the two demo modes ----------------------------------------------------------------- */

static mw_t *create_and_start(size_t limit)
{
    mw_config_t config = { .workers = (size_t)workers, .queue_capacity = (size_t)capacity, .process = process_job,
                           .result_limit = limit };
    mw_t *mw = NULL;
    if (ch05_create(&mw, &config) != 0)
        return NULL;
    int err = mw_start(mw);
    if (err != 0) {
        fprintf(stderr, "mw_start: %s\n", kit_errno_name(err));
        mw_destroy(mw);
        return NULL;
    }
    return mw;
}

static void submit_all(mw_t *mw)
{
    kit_log("master", "submitting %ld tasks (each may wait %ld ms for room)", tasks, submit_timeout_ms);
    for (long id = 0; id < tasks; id++) {
        struct job *job = new_job(id);
        int err = job ? mw_submit(mw, id, job, submit_timeout_ms) : ENOMEM;
        if (err == ENOSYS || err == EINVAL || err == ENOMEM) {
            free(job); /* not recorded: still ours */
            fprintf(stderr, "mw_submit: %s\n", kit_errno_name(err));
            return;
        }
    }
}

static int finish(mw_t *mw, struct collector *c, pthread_t collector)
{
    int err = mw_await(mw, 600000);
    if (err != 0)
        fprintf(stderr, "mw_await: %s\n", kit_errno_name(err));
    else
        kit_log("master", "all tasks finished, every worker joined");
    if (err != 0)
        mw_stop(mw, 0); /* whatever happened, no worker is left behind */
    pthread_join(collector, NULL);
    int status = report(mw, c);
    mw_destroy(mw);
    return err == 0 ? status : 1;
}

static int run_demo(void)
{
    mw_t *mw = create_and_start((size_t)result_limit);
    if (mw == NULL)
        return 1;
    struct collector c = { .mw = mw };
    pthread_t collector;
    if (start_collector(&c, &collector) != 0) {
        mw_destroy(mw);
        return 1;
    }
    submit_all(mw);
    return finish(mw, &c, collector);
}

static void explain_trap(mw_t *mw, double waited_ms)
{
    mw_stats_t s;
    mw_stats(mw, &s);
    printf("\nmw_await returned EDEADLK after %.0f ms: %zu of %zu workers wait for room among the results,\n"
           "%zu results are stored unconsumed (the limit), %zu tasks are pending, and nobody consumes.\n"
           "This is the source document's deadlock trap: with a result limit (its Semaphore), the\n"
           "master must consume WHILE the workers run. Here it waited for completion first, so the\n"
           "workers wait for the master and the master waits for the workers. The Java version hangs;\n"
           "mw_await sees that nobody can make progress and says so. Nothing was lost.\n"
           "The fix: start a consumer, then wait again.\n\n",
           waited_ms, s.workers_blocked, s.workers_alive, s.unconsumed, s.pending);
}

static int run_trap(void)
{
    size_t limit = result_limit > 0 ? (size_t)result_limit : 8;
    if (capacity < tasks)
        capacity = tasks; /* all tasks fit: the master gets to its await without waiting */
    mw_t *mw = create_and_start(limit);
    if (mw == NULL)
        return 1;
    submit_all(mw);
    kit_log("master", "waiting for completion BEFORE consuming (result limit %zu)", limit);
    int64_t start = kit_now_ns();
    int err = mw_await(mw, 600000);
    if (err == EDEADLK)
        explain_trap(mw, kit_elapsed_ms(start));
    else
        printf("\nmw_await returned %s: the results never filled up (is --result-limit >= --tasks?)\n",
               kit_errno_name(err));
    struct collector c = { .mw = mw };
    pthread_t collector;
    if (start_collector(&c, &collector) != 0) {
        mw_destroy(mw);
        return 1;
    }
    int status = finish(mw, &c, collector);
    return err == EDEADLK || err == 0 ? status : 1;
}

int main(int argc, char **argv)
{
    kit_cli_parse(&cli, argc, argv);
    if (compare + sweep + false_sharing + trap > 1)
        kit_cli_fail(&cli, "choose one of --compare, --sweep, --false-sharing, --trap");
    seed = kit_run_begin(&run);
    measure.workers = workers;
    int status;
    if (compare || sweep || false_sharing) {
        kit_log_to(NULL); /* measuring: no log lines in the timed runs */
        status = compare ? measure_compare(&measure) : sweep ? measure_sweep(&measure)
                                                              : measure_false_sharing(&measure);
    } else {
        kit_log("master", "%ld tasks, %ld workers, queue capacity %ld, fail rate %ld%%, result limit %ld%s",
                tasks, workers, capacity, fail_rate, trap && result_limit == 0 ? 8 : result_limit,
                fanout ? ", with sub-tasks" : "");
        status = trap ? run_trap() : run_demo();
    }
    return kit_run_end(&run) || status ? 1 : 0;
}
