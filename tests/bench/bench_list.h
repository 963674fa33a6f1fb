/**
 * @file bench_list.h
 * @brief Every benchmark of `make bench`, one line each, in the order they run:
 *        the one place a benchmark is registered.
 *
 * BENCHMARK(only, function, chapters):
 * - `only`: the name `kit-bench --only NAME` selects it by (benchmarks may
 *   share one: `--only queue` runs both queue benchmarks);
 * - `function`: `int function(const bench_options_t *o, bench_result_t *out)`,
 *   written in a bench_*.c file of this folder (bench_rwlock.c is a model):
 *   it builds a bench_spec_t and returns bench_run()'s result;
 * - `chapters`: the chapters whose reference it calls, as one string. The
 *   Makefile reads them from this file and links their solutions (with the
 *   earlier chapters each of them uses).
 *
 * bench_suite.h declares the functions and bench_main.c runs them from these
 * lines; no other file names a benchmark. The file is read once per use,
 * each time with its own BENCHMARK(): it has no include guard, on purpose.
 */
BENCHMARK(queue, bench_queue_1x1, "01-monitor-queue 02-blocking-queue")
BENCHMARK(queue, bench_queue_4x4, "01-monitor-queue 02-blocking-queue")
BENCHMARK(pool, bench_pool, "03-thread-pool")
BENCHMARK(idle, bench_idle, "03-thread-pool 05-master-worker 06-keyed-executor")
BENCHMARK(reclaim, bench_reclaim, "03-thread-pool")
BENCHMARK(mw, bench_mw, "05-master-worker")
BENCHMARK(keyed, bench_keyed, "06-keyed-executor")
BENCHMARK(keyed, bench_keyed_overhead, "06-keyed-executor")
BENCHMARK(rwlock, bench_rwlock_reader_heavy, "08-rwlock")
BENCHMARK(rwlock, bench_rwlock_writer_heavy, "08-rwlock")
BENCHMARK(explore, bench_explore_00, "")
BENCHMARK(explore, bench_explore_01, "")
BENCHMARK(explore, bench_explore_02, "")
BENCHMARK(explore, bench_explore_03, "")
BENCHMARK(explore, bench_explore_04, "")
BENCHMARK(explore, bench_explore_05, "")
BENCHMARK(explore, bench_explore_06, "")
BENCHMARK(explore, bench_explore_08, "")
BENCHMARK(explore, bench_explore_switch, "")
