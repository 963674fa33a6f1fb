/**
 * @file bench_suite.h
 * @brief The benchmarks of `make bench`, and the sizes they run at.
 *
 * Each function runs one benchmark (bench_run()), prints its table and
 * fills in @p out; it returns 0, or 1 if a run went wrong. The functions
 * are those of bench_list.h, where every benchmark is registered. A
 * benchmark of a new chapter takes its sizes from constants of its own
 * file (and `rounds` from here); one that wants options adds its fields
 * below and its lines to bench_main.c's option table.
 */
#ifndef BENCH_SUITE_H
#define BENCH_SUITE_H

#include "bench.h"

/** @brief Sizes and round count, from the command line (bench_main.c). */
typedef struct bench_options {
    int rounds;          /**< interleaved rounds of every benchmark but 3 */
    int idle_rounds;     /**< 3: rounds (each variant of each round lasts idle_ms) */
    long queue_items;    /**< 1: pointers handed over per run */
    long pool_tasks;     /**< 2: empty tasks per run on tpool and GThreadPool */
    long thread_tasks;   /**< 2: tasks per run with a thread each */
    long idle_ms;        /**< 3: how long each idle structure is watched */
    long mw_tasks;       /**< 5: CPU-bound tasks in the master-worker batch */
    long mw_task_us;     /**< 5: CPU time of one such task, about */
    long keyed_tasks;    /**< 6: tasks per run through the keyed executor */
    long keyed_task_us;  /**< 6: CPU time of one such task, about */
    long rwlock_ops;     /**< 8: lock calls per run, shared by the threads */
    long rwlock_read_us; /**< 8: work a read does while it holds the lock, about */
    long rwlock_write_us; /**< 8: work a write does while it holds the lock, about */
} bench_options_t;

/* One declaration per line of bench_list.h: `int bench_x(const bench_options_t *o, bench_result_t *out);`. */
#define BENCHMARK(only, function, chapters) int function(const bench_options_t *o, bench_result_t *out);
#include "bench_list.h"
#undef BENCHMARK


#endif
