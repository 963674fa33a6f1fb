/**
 * @file bench_suite.h
 * @brief The benchmarks of `make bench`, and the sizes they run at.
 *
 * Each function runs one benchmark (bench_run()), prints its table and
 * fills in @p out; it returns 0, or 1 if a run went wrong.
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

/** @brief 1. Queue handoff, 1 producer / 1 consumer. */
int bench_queue_1x1(const bench_options_t *o, bench_result_t *out);
/** @brief 1. Queue handoff, 4 producers / 4 consumers. */
int bench_queue_4x4(const bench_options_t *o, bench_result_t *out);
/** @brief 2. Pool overhead: tpool, GThreadPool and a thread per task. */
int bench_pool(const bench_options_t *o, bench_result_t *out);
/** @brief 3. Idle cost: CPU time of idle structures against no threads at all. */
int bench_idle(const bench_options_t *o, bench_result_t *out);
/** @brief 4. Idle reclaim: from the last task to the last worker retiring. */
int bench_reclaim(const bench_options_t *o, bench_result_t *out);
/** @brief 5. Master-worker speedup on a CPU-bound batch. */
int bench_mw(const bench_options_t *o, bench_result_t *out);
/** @brief 6. Keyed executor throughput with 1, 8 and 1,000 keys, on tasks that do some work. */
int bench_keyed(const bench_options_t *o, bench_result_t *out);
/** @brief 6. The same with empty tasks: what the keyed executor costs per task. */
int bench_keyed_overhead(const bench_options_t *o, bench_result_t *out);
/** @brief 8. Readers-writer locks, 2% writes: rwl, glibc's pthread_rwlock_t both ways, a mutex. */
int bench_rwlock_reader_heavy(const bench_options_t *o, bench_result_t *out);
/** @brief 8. The same with half of the calls writes. */
int bench_rwlock_writer_heavy(const bench_options_t *o, bench_result_t *out);

/** @brief The explorer: schedules a second on a chapter's exploration tests (bench_explore.c). */
int bench_explore_00(const bench_options_t *o, bench_result_t *out);
int bench_explore_01(const bench_options_t *o, bench_result_t *out);
int bench_explore_02(const bench_options_t *o, bench_result_t *out);
int bench_explore_03(const bench_options_t *o, bench_result_t *out);
int bench_explore_04(const bench_options_t *o, bench_result_t *out);
int bench_explore_05(const bench_options_t *o, bench_result_t *out);
int bench_explore_06(const bench_options_t *o, bench_result_t *out);
int bench_explore_08(const bench_options_t *o, bench_result_t *out);
/** @brief The explorer: one switch between two contexts, against a hand-over between two threads. */
int bench_explore_switch(const bench_options_t *o, bench_result_t *out);

#endif
