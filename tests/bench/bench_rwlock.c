/**
 * @file bench_rwlock.c
 * @brief Benchmark 8, readers-writer locks: chapter 08's rwl against glibc's
 *        pthread_rwlock_t, on reader-heavy and on writer-heavy work.
 *
 * Four threads make `ops` lock calls in all, each a read or, with the
 * benchmark's share, a write, in a seeded random order (the same for every
 * variant). A read holds the lock while it checks a small table and does
 * `read_us` of work; a write adds one to every entry of the table and does
 * `write_us` of work. The variants: rwl (writers first), pthread_rwlock_t as
 * glibc makes it by default (readers first), pthread_rwlock_t set to prefer
 * writers (PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP, rwl's policy), and
 * a plain pthread_mutex_t, under which readers take turns too. Every run
 * checks itself: each read finds every entry equal, and the table ends at
 * the number of writes made.
 */
#define _GNU_SOURCE /* pthread_rwlockattr_setkind_np: glibc's writer-preferring kind */
#include "bench_suite.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "kit_gate.h"
#include "kit_rand.h"
#include "kit_thread.h"
#include "kit_time.h"
#include "rwl.h"

enum { RW_THREADS = 4, TABLE = 16 };

typedef struct rw_params {
    long ops;            /* lock calls in all, shared by the threads */
    long write_permille; /* writes per 1000 calls */
    long read_rounds;    /* bench_spin() rounds a read does while it holds the lock */
    long write_rounds;   /* ... and a write */
} rw_params_t;

/* The four locks behind one shape. */
typedef struct rw_ops {
    int (*read_lock)(void *lock);
    int (*read_unlock)(void *lock);
    int (*write_lock)(void *lock);
    int (*write_unlock)(void *lock);
} rw_ops_t;

static int rwl_rd(void *l) { return rwl_read_lock(l); }
static int rwl_rd_un(void *l) { return rwl_read_unlock(l); }
static int rwl_wr(void *l) { return rwl_write_lock(l); }
static int rwl_wr_un(void *l) { return rwl_write_unlock(l); }
static int glibc_rd(void *l) { return pthread_rwlock_rdlock(l); }
static int glibc_wr(void *l) { return pthread_rwlock_wrlock(l); }
static int glibc_un(void *l) { return pthread_rwlock_unlock(l); }
static int mutex_lock(void *l) { return pthread_mutex_lock(l); }
static int mutex_unlock(void *l) { return pthread_mutex_unlock(l); }

static const rw_ops_t rwl_ops = { rwl_rd, rwl_rd_un, rwl_wr, rwl_wr_un };
static const rw_ops_t glibc_ops = { glibc_rd, glibc_un, glibc_wr, glibc_un };
static const rw_ops_t mutex_ops = { mutex_lock, mutex_unlock, mutex_lock, mutex_unlock };

/* What the locks protect: a write adds one to every entry. */
static long table[TABLE];

typedef struct rw_job {
    const rw_params_t *p;
    const rw_ops_t *ops;
    void *lock;
    kit_gate_t *gate;
    int index;
    long ops_count;
    long writes; /* out */
    long torn;   /* out: reads that found the entries different */
    long errors; /* out: lock calls that failed */
    uint64_t sink;
} rw_job_t;

static void read_once(rw_job_t *job)
{
    if (job->ops->read_lock(job->lock) != 0) {
        job->errors++;
        return;
    }
    long first = table[0];
    for (int k = 1; k < TABLE; k++)
        if (table[k] != first)
            job->torn++;
    job->sink = bench_spin(job->sink + (uint64_t)first, job->p->read_rounds);
    if (job->ops->read_unlock(job->lock) != 0)
        job->errors++;
}

static void write_once(rw_job_t *job)
{
    if (job->ops->write_lock(job->lock) != 0) {
        job->errors++;
        return;
    }
    for (int k = 0; k < TABLE; k++)
        table[k]++;
    job->sink = bench_spin(job->sink, job->p->write_rounds);
    job->writes++;
    if (job->ops->write_unlock(job->lock) != 0)
        job->errors++;
}

static void *rw_worker(void *raw)
{
    rw_job_t *job = raw;
    kit_rng_t rng;
    kit_rng_seed(&rng, 8, (uint64_t)job->index); /* the same calls, in the same order, for every variant */
    kit_gate_wait(job->gate);
    for (long i = 0; i < job->ops_count; i++) {
        if ((long)kit_rng_below(&rng, 1000) < job->p->write_permille)
            write_once(job);
        else
            read_once(job);
    }
    return NULL;
}

/* One run on @p lock: thousand lock calls per second, or -1 if the run went wrong. */
static double contend(const rw_params_t *p, const rw_ops_t *ops, void *lock)
{
    rw_job_t jobs[RW_THREADS];
    pthread_t threads[RW_THREADS];
    kit_gate_t gate;
    if (kit_gate_init(&gate) != 0)
        return -1;
    for (int k = 0; k < TABLE; k++)
        table[k] = 0;
    for (int i = 0; i < RW_THREADS; i++) {
        jobs[i] = (rw_job_t){ .p = p, .ops = ops, .lock = lock, .gate = &gate, .index = i,
                              .ops_count = p->ops / RW_THREADS };
        if (kit_thread_start(&threads[i], "rw", rw_worker, &jobs[i]) != 0) {
            fprintf(stderr, "rwlock bench: cannot start a thread\n");
            exit(1);
        }
    }
    kit_gate_await_arrivals(&gate, RW_THREADS, 10000); /* all ready: time only the lock calls */
    int64_t start = kit_now_ns();
    kit_gate_open(&gate);
    long writes = 0, torn = 0, errors = 0;
    for (int i = 0; i < RW_THREADS; i++) {
        pthread_join(threads[i], NULL);
        writes += jobs[i].writes;
        torn += jobs[i].torn;
        errors += jobs[i].errors;
    }
    double seconds = (double)(kit_now_ns() - start) / 1e9;
    kit_gate_destroy(&gate);
    if (torn != 0 || errors != 0 || table[0] != writes || table[TABLE - 1] != writes) {
        fprintf(stderr, "rwlock bench: %ld torn reads, %ld failed calls, %ld of %ld writes counted\n", torn, errors,
                table[0], writes);
        return -1;
    }
    return (double)(p->ops / RW_THREADS * RW_THREADS) / seconds / 1e3;
}

static double run_rwl(const void *params, long arg)
{
    (void)arg;
    rwl_t *l = NULL;
    if (rwl_create(&l) != 0)
        return -1;
    double result = contend(params, &rwl_ops, l);
    rwl_destroy(l);
    return result;
}

/* arg: 0 for glibc's default kind (readers first), 1 for writers first. */
static double run_glibc(const void *params, long prefer_writers)
{
    pthread_rwlockattr_t attr;
    pthread_rwlock_t lock;
    if (pthread_rwlockattr_init(&attr) != 0)
        return -1;
    if (prefer_writers)
        pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    int err = pthread_rwlock_init(&lock, &attr);
    pthread_rwlockattr_destroy(&attr);
    if (err != 0)
        return -1;
    double result = contend(params, &glibc_ops, &lock);
    pthread_rwlock_destroy(&lock);
    return result;
}

static double run_mutex(const void *params, long arg)
{
    (void)arg;
    pthread_mutex_t lock;
    if (pthread_mutex_init(&lock, NULL) != 0)
        return -1;
    double result = contend(params, &mutex_ops, &lock);
    pthread_mutex_destroy(&lock);
    return result;
}

static int rwlock_bench(const char *id, const char *kind, long write_permille, double target_vs_glibc,
                        const bench_options_t *o, bench_result_t *out)
{
    rw_params_t params = { .ops = o->rwlock_ops, .write_permille = write_permille,
                           .read_rounds = bench_spin_rounds(o->rwlock_read_us),
                           .write_rounds = bench_spin_rounds(o->rwlock_write_us) };
    char title[BENCH_TITLE_MAX], ops[32];
    snprintf(title, sizeof title,
             "8. Readers-writer lock, %s: %d threads, %s lock calls, %ld in 1000 a write; reads %ld us, writes %ld us",
             kind, RW_THREADS, bench_thousands(o->rwlock_ops, ops, sizeof ops), write_permille, o->rwlock_read_us,
             o->rwlock_write_us);
    bench_spec_t spec = {
        .id = id, .title = title, .unit = "k calls/s", .params = &params,
        .variants = { { "rwl (ch08, writers first)", run_rwl, 0 },
                      { "glibc rwlock, readers first (default)", run_glibc, 0 },
                      { "glibc rwlock, writers first", run_glibc, 1 },
                      { "pthread_mutex_t, readers take turns", run_mutex, 0 } },
        .comparisons = { { "rwl / glibc writers first", 0, 2, BENCH_RATIO, true, target_vs_glibc },
                         { "rwl / glibc readers first", 0, 1, BENCH_RATIO, false, 0 },
                         { "rwl / mutex", 0, 3, BENCH_RATIO, false, 0 } },
    };
    return bench_run(&spec, o->rounds, out);
}

int bench_rwlock_reader_heavy(const bench_options_t *o, bench_result_t *out)
{
    return rwlock_bench("rwlock-readers", "reader-heavy", 20, 0.8, o, out);
}

int bench_rwlock_writer_heavy(const bench_options_t *o, bench_result_t *out)
{
    return rwlock_bench("rwlock-writers", "writer-heavy", 500, 0.8, o, out);
}
