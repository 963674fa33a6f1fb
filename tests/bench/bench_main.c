/**
 * @file bench_main.c
 * @brief `make bench`: run the benchmarks, print their tables and the targets, write results.json.
 *
 * The defaults are the sizes the kit's Performance page reports; the
 * options exist to try other sizes, or to run one benchmark alone.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bench_suite.h"
#include "kit_cli.h"
#include "kit_thread.h"
#include "kit_time.h"

static long rounds = 9, idle_rounds = 5;
static long queue_items = 2000000, pool_tasks = 1000000, thread_tasks = 20000, idle_ms = 2000;
static long mw_tasks = 1000, mw_task_us = 200, keyed_tasks = 100000, keyed_task_us = 5;
static long rwlock_ops = 60000, rwlock_read_us = 5, rwlock_write_us = 5;
static const char *only = "all";
static const char *json_path = "build/bench/results.json";

typedef int (*bench_fn)(const bench_options_t *o, bench_result_t *out);

/* Every benchmark, in the order they run, with the --only name that selects it: bench_list.h. */
static const struct {
    const char *name;
    bench_fn run;
} benchmarks[] = {
#define BENCHMARK(only, function, chapters) { #only, function },
#include "bench_list.h"
#undef BENCHMARK
};
enum { BENCHMARKS = sizeof benchmarks / sizeof benchmarks[0] };

/* What --only accepts: "all", then each name of benchmarks[] once (list_names() fills it). */
static const char *benchmark_names[BENCHMARKS + 2] = { "all" };

static const kit_opt_t options[] = {
    { "rounds", KIT_OPT_LONG, "N", "rounds of every benchmark but idle, and sweeps of the run", &rounds, 1, BENCH_MAX_ROUNDS,
      NULL },
    { "idle-rounds", KIT_OPT_LONG, "N", "rounds of the idle benchmark", &idle_rounds, 1, BENCH_MAX_ROUNDS, NULL },
    { "only", KIT_OPT_CHOICE, "NAME", "run one benchmark", &only, 0, 0, benchmark_names },
    { "json", KIT_OPT_STRING, "FILE", "where to write the results", &json_path, 0, 0, NULL },
    { "queue-items", KIT_OPT_LONG, "N", "1: pointers per queue run", &queue_items, 8, 100000000, NULL },
    { "pool-tasks", KIT_OPT_LONG, "N", "2: empty tasks per pool run", &pool_tasks, 1, 100000000, NULL },
    { "thread-tasks", KIT_OPT_LONG, "N", "2: tasks per thread-per-task run", &thread_tasks, 1, 10000000, NULL },
    { "idle-ms", KIT_OPT_LONG, "MS", "3: how long each idle structure is watched", &idle_ms, 1, 600000, NULL },
    { "mw-tasks", KIT_OPT_LONG, "N", "5: CPU-bound tasks in the batch", &mw_tasks, 1, 10000000, NULL },
    { "mw-task-us", KIT_OPT_LONG, "US", "5: CPU time of one task", &mw_task_us, 1, 1000000, NULL },
    { "keyed-tasks", KIT_OPT_LONG, "N", "6: tasks per keyed-executor run", &keyed_tasks, 1, 100000000, NULL },
    { "keyed-task-us", KIT_OPT_LONG, "US", "6: CPU time of one task", &keyed_task_us, 0, 1000000, NULL },
    { "rwlock-ops", KIT_OPT_LONG, "N", "8: lock calls per readers-writer lock run", &rwlock_ops, 4, 100000000, NULL },
    { "rwlock-read-us", KIT_OPT_LONG, "US", "8: work of one read, in the lock", &rwlock_read_us, 0, 1000000, NULL },
    { "rwlock-write-us", KIT_OPT_LONG, "US", "8: work of one write, in the lock", &rwlock_write_us, 0, 1000000,
      NULL },
};

static const kit_cli_t cli = {
    "kit-bench",
    "Measures the kit's queues, pools and executors side by side with GLib's, and its\n"
    "  readers-writer lock with glibc's, in interleaved rounds; prints medians, min-max\n"
    "  and ratios, and writes them as JSON.",
    "examples:\n"
    "  kit-bench                       # everything, as `make bench` runs it\n"
    "  kit-bench --only queue --rounds 9",
    options, sizeof options / sizeof options[0],
};

static void list_names(void)
{
    size_t count = 1;
    for (size_t b = 0; b < BENCHMARKS; b++) {
        size_t n = 0;
        while (n < count && strcmp(benchmark_names[n], benchmarks[b].name) != 0)
            n++;
        if (n == count)
            benchmark_names[count++] = benchmarks[b].name;
    }
}

static void print_header(double load)
{
    char date[32];
    time_t now = time(NULL);
    struct tm local;
    strftime(date, sizeof date, "%Y-%m-%d %H:%M", localtime_r(&now, &local));
    printf("Concurrency kit benchmarks - %s, %ld cores online, load average %.2f at the start\n", date,
           bench_cores(), load);
    printf("Each benchmark runs its variants in turn, round after round (A B C A B C ...),\n");
    printf("and its rounds are spread over the run: every benchmark one round, then the next.\n");
    printf("Every figure is the median over the rounds, then the smallest and the largest;\n");
    printf("each ratio is taken within a round, so both sides saw the same machine.\n");
}

/* Every chosen benchmark once per sweep, one sweep per round (bench_sweep():
 * a benchmark of fewer rounds skips some sweeps, one of more runs two in
 * some): each benchmark keeps its result slot from sweep to sweep. Returns 1 if a run went wrong; *count is set to the
 * benchmarks run. */
static int run_sweeps(const bench_options_t *o, bench_result_t *results, size_t *count)
{
    int sweeps = o->rounds, failed = 0;
    for (int sweep = 0; sweep < sweeps; sweep++) {
        fprintf(stderr, "kit-bench: sweep %d of %d (each benchmark's next round)\n", sweep + 1, sweeps);
        bench_sweep(sweep, sweeps);
        *count = 0;
        for (size_t b = 0; b < BENCHMARKS; b++)
            if (strcmp(only, "all") == 0 || strcmp(only, benchmarks[b].name) == 0)
                failed |= benchmarks[b].run(o, &results[(*count)++]);
    }
    return failed;
}

int main(int argc, char **argv)
{
    list_names();
    kit_cli_parse(&cli, argc, argv);
    kit_thread_set_name("main");
    bench_options_t o = { .rounds = (int)rounds, .idle_rounds = (int)idle_rounds, .queue_items = queue_items,
                          .pool_tasks = pool_tasks, .thread_tasks = thread_tasks, .idle_ms = idle_ms,
                          .mw_tasks = mw_tasks, .mw_task_us = mw_task_us, .keyed_tasks = keyed_tasks,
                          .keyed_task_us = keyed_task_us, .rwlock_ops = rwlock_ops,
                          .rwlock_read_us = rwlock_read_us, .rwlock_write_us = rwlock_write_us };
    static bench_result_t results[BENCHMARKS];
    size_t count = 0;
    int64_t start = kit_now_ns();
    double load = bench_load_average();
    print_header(load);
    int failed = run_sweeps(&o, results, &count);
    int missed = bench_print_targets(stdout, results, count);
    int err = bench_write_json(json_path, results, count, load);
    if (err != 0)
        fprintf(stderr, "kit-bench: cannot write %s (error %d)\n", json_path, err);
    printf("\nResults: %s; benchmarks ran for %.0f s\n", json_path, kit_elapsed_ms(start) / 1000);
    if (missed > 0)
        printf("%d target%s missed (above): exit status 1\n", missed, missed == 1 ? "" : "s");
    return failed || err || missed ? 1 : 0;
}
