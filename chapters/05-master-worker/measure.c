/**
 * @file measure.c
 * @brief Chapter 05 program: what master-worker costs and gains, measured here.
 *
 * - `--compare` reproduces the source document's table: one batch of
 *   CPU-bound tasks run on one thread, on the chapter-03 pool (each task
 *   writes its own slot), and through master-worker (each result an
 *   immutable record the master collects). Same work, same checksum.
 * - `--sweep` runs a CPU-bound and a sleep-bound batch at 1..16 workers:
 *   CPU-bound work stops scaling at the number of cores, sleeping work does not.
 * - `--false-sharing` gives every worker its own counter: first packed side
 *   by side in one cache line, then each on its own line (alignas(64)).
 *   The counters are written with relaxed atomics, so the compiler cannot
 *   keep them in registers: every addition really goes to memory.
 */
#define _POSIX_C_SOURCE 200809L
#include "measure.h"

#include <errno.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "kit_errno.h"
#include "kit_gate.h"
#include "kit_log.h"
#include "kit_time.h"
#include "tpool.h"

enum { LONG_WAIT_MS = 600000 }; /* "as long as it takes" for a measured run */

int ch05_create(mw_t **out, const mw_config_t *config)
{
    int err = mw_create(out, config);
    if (err != 0)
        fprintf(stderr, "mw_create: %s%s\n", kit_errno_name(err),
                err == ENOSYS ? " - not implemented yet: write exercises/05-master-worker/mw_core.c" : "");
    return err;
}

static long online_cores(void)
{
#ifdef _SC_NPROCESSORS_ONLN
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores > 0 ? cores : 1;
#else
    return 1;
#endif
}

/* ---- CPU-bound work ------------------------------------------------------------ */

static long rounds_per_us = 1; /* set by calibrate() before any worker starts */

/* A serial chain of multiplications: no shortcut for the compiler to take. */
static uint64_t spin(uint64_t x, long rounds)
{
    for (long i = 0; i < rounds; i++)
        x = (x ^ (x >> 31)) * 0x9E3779B97F4A7C15ULL + (uint64_t)i;
    return x;
}

/* Rounds per microsecond: the fastest of five readings of ~20 ms each (a
 * reading that another program interrupted is slower, never faster). */
static void calibrate(void)
{
    volatile uint64_t sink = 0;
    long rounds = 1000;
    double ms = 0;
    while (ms < 20.0) { /* long enough for a stable reading */
        rounds *= 2;
        int64_t start = kit_now_ns();
        sink = spin(sink, rounds);
        ms = kit_elapsed_ms(start);
    }
    for (int i = 0; i < 4; i++) {
        int64_t start = kit_now_ns();
        sink = spin(sink, rounds);
        double again = kit_elapsed_ms(start);
        ms = again < ms ? again : ms;
    }
    rounds_per_us = (long)(rounds / (ms * 1000.0)) + 1;
}

static long task_rounds; /* rounds of one CPU-bound task; set before the workers start */

static uintptr_t cpu_value(long id)
{
    return (uintptr_t)spin((uint64_t)id, task_rounds);
}

static int process_cpu(mw_t *mw, const mw_task_t *task, void **result, void *ctx)
{
    (void)mw;
    (void)ctx;
    *result = (void *)cpu_value(task->id);
    return 0;
}

static long task_sleep_ms; /* of one sleep-bound task; set before the workers start */

static int process_sleep(mw_t *mw, const mw_task_t *task, void **result, void *ctx)
{
    (void)mw;
    (void)ctx;
    kit_sleep_ms(task_sleep_ms);
    *result = (void *)(uintptr_t)task->id;
    return 0;
}

/* ---- --compare ------------------------------------------------------------------ */

struct pool_slot {
    long id;
    uintptr_t value; /* written by the one task that owns the slot */
};

static void pool_task(void *arg)
{
    struct pool_slot *slot = arg;
    slot->value = cpu_value(slot->id);
}

static int run_single(long tasks, uintptr_t *checksum)
{
    for (long id = 0; id < tasks; id++)
        *checksum += cpu_value(id);
    return 0;
}

static int run_pool(long tasks, long workers, uintptr_t *checksum)
{
    tpool_config_t config = { .core_threads = (size_t)workers, .queue_capacity = 1024, .keep_alive_ms = 1000,
                              .reject = bq_policy_block(), .name = "pool" };
    struct pool_slot *slots = calloc((size_t)tasks, sizeof *slots);
    tpool_t *pool = NULL;
    int err = slots ? tpool_create(&pool, &config) : ENOMEM;
    for (long id = 0; err == 0 && id < tasks; id++) {
        slots[id].id = id;
        err = tpool_execute(pool, pool_task, &slots[id]);
    }
    if (pool) {
        tpool_shutdown(pool);
        tpool_await_termination(pool, LONG_WAIT_MS);
        tpool_destroy(pool);
    }
    for (long id = 0; err == 0 && id < tasks; id++)
        *checksum += slots[id].value;
    free(slots);
    return err;
}

/* The master submits the batch, closes, and collects every record while
 * the workers may still be running. */
static int run_master_worker(long tasks, long workers, uintptr_t *checksum)
{
    mw_config_t config = { .workers = (size_t)workers, .queue_capacity = 1024, .process = process_cpu };
    mw_t *mw = NULL;
    int err = ch05_create(&mw, &config);
    if (err == 0)
        err = mw_start(mw);
    for (long id = 0; err == 0 && id < tasks; id++)
        err = mw_submit(mw, id, NULL, LONG_WAIT_MS);
    if (err == 0)
        err = mw_close(mw);
    mw_result_t result;
    while (err == 0 && (err = mw_take_result(mw, &result, LONG_WAIT_MS)) == 0)
        *checksum += (uintptr_t)result.data;
    if (err == ECANCELED) /* the end of the results */
        err = mw_await(mw, LONG_WAIT_MS);
    mw_destroy(mw);
    return err;
}

/* The three ways to run the batch, timed together on each repetition. */
enum { SINGLE, POOL, MASTER_WORKER, APPROACHES };
static const char *const approach_names[APPROACHES] = { "single thread", "chapter-03 pool", "master-worker" };

static int run_approach(int approach, const measure_options_t *o, uintptr_t *checksum)
{
    *checksum = 0;
    if (approach == SINGLE)
        return run_single(o->batch, checksum);
    if (approach == POOL)
        return run_pool(o->batch, o->workers, checksum);
    return run_master_worker(o->batch, o->workers, checksum);
}

static double min_ms(double best, double ms)
{
    return best < 0 || ms < best ? ms : best;
}

int measure_compare(const measure_options_t *o)
{
    calibrate();
    task_rounds = o->work_us * rounds_per_us;
    printf("--compare: %ld CPU-bound tasks of ~%ld us, %ld worker threads, %ld core(s), best of %ld runs\n\n",
           o->batch, o->work_us, o->workers, online_cores(), o->repeat);
    double best[APPROACHES] = { -1, -1, -1 };
    uintptr_t checksum[APPROACHES] = { 0 };
    int err[APPROACHES] = { 0 };
    for (long r = 0; r < o->repeat; r++)
        for (int a = 0; a < APPROACHES; a++) {
            int64_t start = kit_now_ns();
            if (err[a] == 0 && (err[a] = run_approach(a, o, &checksum[a])) == 0)
                best[a] = min_ms(best[a], kit_elapsed_ms(start));
        }
    printf("  %-22s %10s %10s %12s\n", "approach", "time (ms)", "speedup", "tasks/s");
    bool ok = true;
    for (int a = 0; a < APPROACHES; a++) {
        bool same = err[a] == 0 && checksum[a] == checksum[SINGLE];
        ok = ok && same;
        if (err[a] != 0)
            printf("  %-22s failed: %s\n", approach_names[a], kit_errno_name(err[a]));
        else
            printf("  %-22s %10.0f %9.2fx %12.0f   %s\n", approach_names[a], best[a], best[SINGLE] / best[a],
                   o->batch / (best[a] / 1000.0), same ? "same checksum" : "CHECKSUM DIFFERS");
    }
    return ok ? 0 : 1;
}

/* ---- --sweep ---------------------------------------------------------------------- */

static void count_result(mw_t *mw, const mw_result_t *result, void *ctx)
{
    (void)mw;
    (void)result;
    atomic_fetch_add((atomic_long *)ctx, 1);
}

/* Runs `tasks` tasks on `workers` workers once; returns tasks per second, or -1. */
static double throughput_once(long workers, long tasks, mw_process_fn process)
{
    atomic_long done = 0;
    mw_config_t config = { .workers = (size_t)workers, .queue_capacity = (size_t)tasks, .process = process,
                           .on_result = count_result, .ctx = &done };
    mw_t *mw = NULL;
    if (ch05_create(&mw, &config) != 0)
        return -1;
    int64_t start = kit_now_ns();
    int err = mw_start(mw);
    for (long id = 0; err == 0 && id < tasks; id++)
        err = mw_submit(mw, id, NULL, LONG_WAIT_MS);
    if (err == 0)
        err = mw_await(mw, LONG_WAIT_MS);
    double seconds = kit_elapsed_ms(start) / 1000.0;
    mw_destroy(mw);
    return err == 0 && atomic_load(&done) == tasks ? tasks / seconds : -1;
}

/* The best throughput of `repeat` runs, or -1. */
static double throughput(long workers, const measure_options_t *o, mw_process_fn process)
{
    double best = 0;
    for (long r = 0; r < o->repeat; r++) {
        double rate = throughput_once(workers, o->sweep_tasks, process);
        if (rate < 0)
            return -1;
        best = rate > best ? rate : best;
    }
    return best;
}

int measure_sweep(const measure_options_t *o)
{
    static const long counts[] = { 1, 2, 4, 8, 16 };
    calibrate();
    task_rounds = o->sweep_work_us * rounds_per_us;
    task_sleep_ms = o->sleep_ms;
    printf("--sweep: %ld tasks per batch; CPU-bound: ~%ld us of work each; sleep-bound: %ld ms of sleep each;\n"
           "%ld core(s), best of %ld runs\n\n", o->sweep_tasks, o->sweep_work_us, o->sleep_ms, online_cores(),
           o->repeat);
    printf("  %-8s %18s %9s %20s %9s\n", "workers", "CPU-bound tasks/s", "speedup", "sleep-bound tasks/s", "speedup");
    double cpu_base = 0, sleep_base = 0;
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        double cpu = throughput(counts[i], o, process_cpu);
        double slept = throughput(counts[i], o, process_sleep);
        if (cpu < 0 || slept < 0)
            return 1;
        if (i == 0) {
            cpu_base = cpu;
            sleep_base = slept;
        }
        printf("  %-8ld %18.0f %8.2fx %20.0f %8.2fx\n", counts[i], cpu, cpu / cpu_base, slept, slept / sleep_base);
    }
    return 0;
}

/* ---- --false-sharing ------------------------------------------------------------------- */

enum { MAX_COUNTERS = 8 }; /* 8 longs fill one 64-byte cache line */

/* Side by side: all counters share one cache line. */
struct packed_counters {
    alignas(64) atomic_long count[MAX_COUNTERS];
};

/* Each counter alone on its cache line. */
struct padded_counter {
    alignas(64) atomic_long count;
};

static struct packed_counters packed;
static struct padded_counter padded[MAX_COUNTERS];

struct counting {
    kit_gate_t gate;       /* every worker starts adding at once */
    atomic_long *counters[MAX_COUNTERS];
    long increments;
};

static int process_count(mw_t *mw, const mw_task_t *task, void **result, void *ctx)
{
    (void)mw;
    (void)result;
    struct counting *run = ctx;
    atomic_long *mine = run->counters[task->id];
    kit_gate_wait(&run->gate);
    for (long i = 0; i < run->increments; i++) /* a relaxed load and store: real memory traffic, no lock prefix */
        atomic_store_explicit(mine, atomic_load_explicit(mine, memory_order_relaxed) + 1, memory_order_relaxed);
    return 0;
}

/* Time for `workers` workers to add to their counters together, in ms; -1 on error. */
static double time_counters(struct counting *run, long workers)
{
    mw_config_t config = { .workers = (size_t)workers, .queue_capacity = (size_t)workers,
                           .process = process_count, .ctx = run };
    mw_t *mw = NULL;
    if (kit_gate_init(&run->gate) != 0 || ch05_create(&mw, &config) != 0)
        return -1;
    double ms = -1;
    int err = mw_start(mw);
    for (long id = 0; err == 0 && id < workers; id++)
        err = mw_submit(mw, id, NULL, LONG_WAIT_MS);
    if (err == 0 && kit_gate_await_arrivals(&run->gate, (size_t)workers, LONG_WAIT_MS) == 0) {
        int64_t start = kit_now_ns();
        kit_gate_open(&run->gate);
        if (mw_await(mw, LONG_WAIT_MS) == 0)
            ms = kit_elapsed_ms(start);
    }
    kit_gate_open(&run->gate); /* never leave a worker at the gate */
    mw_destroy(mw);
    kit_gate_destroy(&run->gate);
    return ms;
}

int measure_false_sharing(const measure_options_t *o)
{
    long workers = o->workers < 2 ? 2 : o->workers > MAX_COUNTERS ? MAX_COUNTERS : o->workers;
    struct counting run = { .increments = o->increments };
    printf("--false-sharing: %ld workers each add 1 to their own counter %ld times\n"
           "(relaxed atomic load + store); %ld core(s), best of %ld runs\n\n", workers, o->increments,
           online_cores(), o->repeat);
    printf("  %-28s %9s %10s %12s %9s\n", "layout", "spacing", "time (ms)", "ns per add", "slowdown");
    double apart = -1, together = -1;
    for (long r = 0; r < o->repeat; r++) { /* alternate, so both see the same background load */
        for (long i = 0; i < workers; i++)
            run.counters[i] = &padded[i].count;
        double ms = time_counters(&run, workers);
        apart = ms < 0 ? ms : min_ms(apart, ms);
        for (long i = 0; i < workers; i++)
            run.counters[i] = &packed.count[i];
        ms = time_counters(&run, workers);
        together = ms < 0 ? ms : min_ms(together, ms);
        if (apart < 0 || together < 0)
            return 1;
    }
    double per_add = 1e6 / (double)(o->increments * workers);
    printf("  %-28s %7zu B %10.0f %12.2f %8.2fx\n", "padded (alignas(64))", sizeof padded[0], apart,
           apart * per_add, 1.0);
    printf("  %-28s %7zu B %10.0f %12.2f %8.2fx\n", "packed (one cache line)", sizeof packed.count[0], together,
           together * per_add, together / apart);
    return 0;
}
