/**
 * @file bench_mw.c
 * @brief Benchmark 5, master-worker speedup: a CPU-bound batch on one thread, then through chapter 05's mw.
 *
 * Every task is the same serial chain of multiplications, sized so that one
 * takes about `mw_task_us` on one core. The master submits the batch,
 * waits in mw_await() (asleep on a condition variable) and adds up the
 * results; one worker per core does the work. The best possible speedup is
 * the number of cores; what is lost on the way is the handoff through the
 * queue, publishing the results, and whatever else the machine is running.
 *
 * That last part is measured too: a *perfect split* cuts the batch into one
 * equal share per core, on plain threads, with nothing shared. Its speedup
 * is what the cores could give at that moment; mw / perfect split is what
 * the pattern itself costs, whatever the load.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench_suite.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "kit_time.h"
#include "mw.h"

enum { LONG_WAIT_MS = 600000, MAX_WORKERS = 64 };

typedef struct mw_params {
    long tasks;
    long rounds_per_task; /* of bench_spin(): about mw_task_us of CPU */
    long workers;
    uint64_t checksum;    /* of the whole batch: every run must get it */
} mw_params_t;

static uint64_t task_value(const mw_params_t *p, long id)
{
    return bench_spin((uint64_t)id, p->rounds_per_task);
}

static uint64_t batch_on_one_thread(const mw_params_t *p)
{
    uint64_t checksum = 0;
    for (long id = 0; id < p->tasks; id++)
        checksum += task_value(p, id);
    return checksum;
}

static double run_one_thread(const void *params, long arg)
{
    (void)arg;
    const mw_params_t *p = params;
    int64_t start = kit_now_ns();
    uint64_t checksum = batch_on_one_thread(p);
    double per_second = (double)p->tasks / ((double)(kit_now_ns() - start) / 1e9);
    return checksum == p->checksum ? per_second : -1;
}

/* ---- the perfect split: what the machine allows right now ---------------------------- */

typedef struct split_share {
    const mw_params_t *p;
    long first;        /* this thread computes tasks first, first + workers, ... */
    uint64_t checksum; /* of its share */
} split_share_t;

static void *compute_share(void *raw)
{
    split_share_t *share = raw;
    for (long id = share->first; id < share->p->tasks; id += share->p->workers)
        share->checksum += task_value(share->p, id);
    return NULL;
}

/* The batch cut into equal shares, one plain thread each, no queue and no
 * results to publish: on free cores no pattern can beat it. If this gets
 * well under `workers` times one thread, other programs are using the
 * cores (and then mw, whose workers share out the tasks as they go, can
 * even beat a split fixed in advance). */
static double run_perfect_split(const void *params, long arg)
{
    (void)arg;
    const mw_params_t *p = params;
    split_share_t shares[MAX_WORKERS];
    pthread_t threads[MAX_WORKERS];
    int64_t start = kit_now_ns();
    long started = 0;
    for (; started < p->workers; started++) {
        shares[started] = (split_share_t){ p, started, 0 };
        if (pthread_create(&threads[started], NULL, compute_share, &shares[started]) != 0)
            break;
    }
    uint64_t checksum = 0;
    for (long i = 0; i < started; i++) {
        pthread_join(threads[i], NULL);
        checksum += shares[i].checksum;
    }
    double per_second = (double)p->tasks / ((double)(kit_now_ns() - start) / 1e9);
    return started == p->workers && checksum == p->checksum ? per_second : -1;
}

/* ---- master-worker ----------------------------------------------------------------- */

static int process_spin(mw_t *mw, const mw_task_t *task, void **result, void *ctx)
{
    (void)mw;
    *result = (void *)(uintptr_t)task_value(ctx, task->id);
    return 0;
}

/* Submit the batch, wait for it, add up every result. */
static int run_batch(mw_t *mw, const mw_params_t *p)
{
    int err = mw_start(mw);
    for (long id = 0; err == 0 && id < p->tasks; id++)
        err = mw_submit(mw, id, NULL, LONG_WAIT_MS);
    if (err == 0)
        err = mw_await(mw, LONG_WAIT_MS);
    mw_result_t result;
    uint64_t checksum = 0;
    while (err == 0 && mw_take_result(mw, &result, 0) == 0)
        checksum += (uintptr_t)result.data;
    return err == 0 && checksum != p->checksum ? EIO : err;
}

static double run_master_worker(const void *params, long arg)
{
    (void)arg;
    const mw_params_t *p = params;
    mw_config_t config = { .workers = (size_t)p->workers, .queue_capacity = 1024, .process = process_spin,
                           .ctx = (void *)p, .name = "bench" };
    int64_t start = kit_now_ns();
    mw_t *mw = NULL;
    int err = mw_create(&mw, &config);
    if (err == 0)
        err = run_batch(mw, p);
    double per_second = (double)p->tasks / ((double)(kit_now_ns() - start) / 1e9);
    mw_destroy(mw);
    if (err != 0) {
        fprintf(stderr, "mw bench: the batch did not complete (error %d)\n", err);
        return -1;
    }
    return per_second;
}

int bench_mw(const bench_options_t *o, bench_result_t *out)
{
    long cores = bench_cores();
    mw_params_t params = { .tasks = o->mw_tasks, .rounds_per_task = bench_spin_rounds(o->mw_task_us),
                           .workers = cores < MAX_WORKERS ? cores : MAX_WORKERS };
    params.checksum = batch_on_one_thread(&params);
    char title[BENCH_TITLE_MAX];
    snprintf(title, sizeof title, "5. Master-worker speedup: %ld CPU-bound tasks of about %ld us, %ld workers",
             o->mw_tasks, o->mw_task_us, params.workers);
    bench_spec_t spec = {
        .id = "mw", .title = title, .unit = "tasks/s", .params = &params,
        .variants = { { "one thread", run_one_thread, 0 },
                      { "perfect split, one thread per core", run_perfect_split, 0 },
                      { "mw (ch05), one worker per core", run_master_worker, 0 } },
        .comparisons = { { "speedup: mw / one thread", 2, 0, BENCH_RATIO, true, 1.8 },
                         { "the machine: split / one thread", 1, 0, BENCH_RATIO, false, 0 },
                         { "mw / perfect split", 2, 1, BENCH_RATIO, false, 0 } },
    };
    return bench_run(&spec, o->rounds, out);
}
