/**
 * @file bench.h
 * @brief The benchmark harness: interleaved rounds, medians, ratios, targets, a table and JSON.
 *
 * A benchmark is a bench_spec_t: a few *variants* - ways of doing the same
 * work (the kit's queue, GLib's queue, ...) - and the *comparisons* between
 * them that the benchmark exists to show. bench_run() runs every variant
 * once per round, in the same order every round (A B C A B C ...), so that
 * a burst of load from another program hits all of them alike; each
 * comparison is computed *within* a round, from values measured seconds
 * apart. Absolute numbers drift on a shared machine; ratios measured side
 * by side hold much better. A whole run goes in sweeps (bench_sweep()):
 * every benchmark runs its next round, then every benchmark again, so a
 * benchmark's rounds are spread over the whole run and a slow minute of the
 * machine falls on one round of many benchmarks, not on every round of one. Every figure is reported as the median of the
 * rounds, with the smallest and largest value beside it.
 *
 * Wall time comes from CLOCK_MONOTONIC (kit_now_ns()), CPU time from
 * getrusage() (bench_cpu_ms()).
 */
#ifndef BENCH_H
#define BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum {
    BENCH_MAX_VARIANTS = 6,    /**< variants in one benchmark */
    BENCH_MAX_COMPARISONS = 6, /**< comparisons in one benchmark */
    BENCH_MAX_ROUNDS = 50,     /**< rounds of one run */
    BENCH_TITLE_MAX = 200      /**< longest title kept */
};

/** @brief One way of doing the benchmark's work. */
typedef struct bench_variant {
    const char *name; /**< as printed: "bq", "GAsyncQueue" */
    /** One run, given the benchmark's params and the variant's own `arg`.
     *  Returns the measured value in the benchmark's unit, or a negative
     *  number if the run went wrong (it has printed why). */
    double (*run)(const void *params, long arg);
    long arg;         /**< what sets this variant apart, when it is a number: keys, keep-alive */
} bench_variant_t;

/** @brief What a comparison computes from two variants of the same round. */
typedef enum bench_kind {
    BENCH_RATIO,     /**< value of a / value of b; a target is a minimum */
    BENCH_DIFFERENCE /**< value of a - value of b; a target is a maximum */
} bench_kind_t;

/** @brief A number the benchmark exists to show, and optionally its target. */
typedef struct bench_comparison {
    const char *label;  /**< what it means, as printed: "bq / GAsyncQueue" */
    int a, b;           /**< indexes into the variants */
    bench_kind_t kind;  /**< ratio or difference */
    bool has_target;    /**< whether `target` applies */
    double target;      /**< ratio: at least this; difference: at most this */
} bench_comparison_t;

/** @brief A benchmark: its variants, its comparisons, and what they mean. */
typedef struct bench_spec {
    const char *id;     /**< short name, the key in results.json: "queue-1x1" */
    const char *title;  /**< one line above its table */
    const char *unit;   /**< of every variant's value: "M items/s" */
    const void *params; /**< passed to every run */
    bench_variant_t variants[BENCH_MAX_VARIANTS];          /**< ended by a NULL name */
    bench_comparison_t comparisons[BENCH_MAX_COMPARISONS]; /**< ended by a NULL label */
} bench_spec_t;

/** @brief Values of one variant or comparison, one per round. */
typedef struct bench_series {
    double values[BENCH_MAX_ROUNDS]; /**< in round order */
    int count;                       /**< rounds measured */
} bench_series_t;

/** @brief Everything one benchmark measured. */
typedef struct bench_result {
    bench_spec_t spec;                                 /**< what was run (a copy: its params are gone) */
    char title[BENCH_TITLE_MAX];                       /**< a copy of spec.title */
    bench_series_t variants[BENCH_MAX_VARIANTS];       /**< as spec->variants */
    bench_series_t comparisons[BENCH_MAX_COMPARISONS]; /**< as spec->comparisons */
    bool failed;                                       /**< a run went wrong */
} bench_result_t;

/**
 * @brief Run @p spec's rounds of this sweep (bench_sweep()) and, on the last sweep, print its table.
 * @param[in]  spec   the benchmark.
 * @param[in]  rounds 1 .. BENCH_MAX_ROUNDS.
 * @param[in,out] out every value measured: filled in on the first sweep, added to on the others.
 * @return 0, or 1 if a run went wrong (the table shows the rounds that ran).
 */
int bench_run(const bench_spec_t *spec, int rounds, bench_result_t *out);

/**
 * @brief Say which sweep of the run the next bench_run() calls belong to.
 *
 * A run calls every benchmark @p count times, with @p sweep from 0 to
 * count - 1. Each time, bench_run() runs the rounds of its benchmark that
 * fall in this sweep (a benchmark of R rounds runs round r in sweep
 * r * count / R), keeps what they measured in its `out`, which the caller
 * passes again every sweep, and prints its table on the last sweep. Without
 * a call, a run is one sweep: every round at once.
 */
void bench_sweep(int sweep, int count);

/** @brief The median of a series (the mean of the middle two for an even count). */
double bench_median(const bench_series_t *series);
/** @brief The smallest value of a series. */
double bench_min(const bench_series_t *series);
/** @brief The largest value of a series. */
double bench_max(const bench_series_t *series);

/** @brief True when the comparison's median meets its target (true without a target). */
bool bench_target_met(const bench_comparison_t *comparison, const bench_series_t *series);

/**
 * @brief Print every comparison that has a target, with met / missed: the closing summary.
 * @return how many targets were missed (`make bench` then exits 1).
 */
int bench_print_targets(FILE *out, const bench_result_t *results, size_t count);

/**
 * @brief Write every result to @p path as JSON, with the date, the number
 *        of cores online and @p load_at_start (see bench_load_average()).
 * @return 0, or an errno value if the file could not be written.
 */
int bench_write_json(const char *path, const bench_result_t *results, size_t count, double load_at_start);

/**
 * @brief The system's load average over the last minute (Linux: /proc/loadavg),
 *        or -1 where it cannot be read. Above 0 or so, other programs are
 *        using the cores the benchmarks measure.
 */
double bench_load_average(void);

/** @brief CPU time used so far by the whole process (every thread), in milliseconds. */
double bench_cpu_ms(void);

/** @brief CPU-bound work: a serial chain of @p rounds multiplications starting from @p x. */
uint64_t bench_spin(uint64_t x, long rounds);

/** @brief Rounds of bench_spin() that take about @p us microseconds on this machine's cores. */
long bench_spin_rounds(long us);

/** @brief Processors online (what `nproc` prints). */
long bench_cores(void);

/** @brief Format @p count with thousands separators ("2,000,000") into @p out. */
const char *bench_thousands(long count, char *out, size_t size);

#endif
