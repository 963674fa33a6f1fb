/**
 * @file bench.c
 * @brief The benchmark harness: runs rounds, keeps every value, prints tables, writes JSON.
 *
 * Nothing here knows what is measured: each benchmark hands in its variants
 * and comparisons (bench.h) and gets back one series of values per variant
 * and per comparison.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "kit_time.h"

/* ---- series ------------------------------------------------------------------- */

static int compare_doubles(const void *left, const void *right)
{
    double a = *(const double *)left, b = *(const double *)right;
    return (a > b) - (a < b);
}

double bench_median(const bench_series_t *series)
{
    if (series->count == 0)
        return 0;
    double sorted[BENCH_MAX_ROUNDS];
    memcpy(sorted, series->values, (size_t)series->count * sizeof sorted[0]);
    qsort(sorted, (size_t)series->count, sizeof sorted[0], compare_doubles);
    int middle = series->count / 2;
    return series->count % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

double bench_min(const bench_series_t *series)
{
    double least = series->count ? series->values[0] : 0;
    for (int i = 1; i < series->count; i++)
        least = series->values[i] < least ? series->values[i] : least;
    return least;
}

double bench_max(const bench_series_t *series)
{
    double most = series->count ? series->values[0] : 0;
    for (int i = 1; i < series->count; i++)
        most = series->values[i] > most ? series->values[i] : most;
    return most;
}

static void append(bench_series_t *series, double value)
{
    series->values[series->count++] = value;
}

/* ---- running -------------------------------------------------------------------- */

static int count_variants(const bench_spec_t *spec)
{
    int n = 0;
    while (n < BENCH_MAX_VARIANTS && spec->variants[n].name)
        n++;
    return n;
}

static int count_comparisons(const bench_spec_t *spec)
{
    int n = 0;
    while (n < BENCH_MAX_COMPARISONS && spec->comparisons[n].label)
        n++;
    return n;
}

static double compare_values(const bench_comparison_t *c, const double *values)
{
    if (c->kind == BENCH_DIFFERENCE)
        return values[c->a] - values[c->b];
    return values[c->b] > 0 ? values[c->a] / values[c->b] : 0;
}

/* One round: every variant once, then the comparisons of this round. Round r
 * starts with variant r (mod their number): the first variant of a round runs
 * just after another benchmark (its threads just joined, its children just
 * reaped, its heap just freed) and the others just after a sibling, so no
 * variant may always be the one that starts on a machine another left. */
static int run_round(const bench_spec_t *spec, bench_result_t *out)
{
    double values[BENCH_MAX_VARIANTS];
    int variants = count_variants(spec), round = out->variants[0].count;
    for (int i = 0; i < variants; i++) {
        int v = (i + round) % variants;
        values[v] = spec->variants[v].run(spec->params, spec->variants[v].arg);
        if (values[v] < 0)
            return 1;
    }
    for (int v = 0; v < count_variants(spec); v++)
        append(&out->variants[v], values[v]);
    for (int c = 0; c < count_comparisons(spec); c++)
        append(&out->comparisons[c], compare_values(&spec->comparisons[c], values));
    return 0;
}

static void print_table(const bench_result_t *result);

/* Which part of its rounds the next bench_run() runs: see bench_sweep(). */
static int this_sweep = 0, sweeps = 1;

void bench_sweep(int sweep, int count)
{
    sweeps = count > 0 ? count : 1;
    this_sweep = sweep >= 0 && sweep < sweeps ? sweep : 0;
}

/* Round r of a benchmark's R falls in sweep r * S / R of the run's S: its rounds
 * are spread over the run as evenly as the counts allow. */
static bool round_in_this_sweep(int round, int rounds)
{
    return round * sweeps / rounds == this_sweep;
}

int bench_run(const bench_spec_t *spec, int rounds, bench_result_t *out)
{
    if (this_sweep == 0) {
        memset(out, 0, sizeof *out);
        out->spec = *spec; /* kept for the summary and the JSON, after the caller's spec is gone */
        out->spec.params = NULL;
        snprintf(out->title, sizeof out->title, "%s", spec->title);
        out->spec.title = NULL; /* use out->title */
    }
    if (rounds > BENCH_MAX_ROUNDS)
        rounds = BENCH_MAX_ROUNDS;
    for (int round = 0; round < rounds && !out->failed; round++)
        if (round_in_this_sweep(round, rounds))
            out->failed = run_round(spec, out) != 0;
    if (this_sweep == sweeps - 1) {
        printf("\n%s\n", out->title);
        print_table(out);
    }
    return out->failed;
}

/* ---- the table -------------------------------------------------------------------- */

bool bench_target_met(const bench_comparison_t *c, const bench_series_t *series)
{
    if (!c->has_target)
        return true;
    double median = bench_median(series);
    return c->kind == BENCH_RATIO ? median >= c->target : median <= c->target;
}

/* Three significant digits or so: 1234, 123, 12.3, 1.23, 0.123. */
static const char *number(double value, char *out, size_t size)
{
    double magnitude = value < 0 ? -value : value;
    int decimals = magnitude >= 100 ? 0 : magnitude >= 10 ? 1 : magnitude >= 1 ? 2 : 3;
    snprintf(out, size, "%.*f", decimals, value);
    return out;
}

enum { NAME_WIDTH = 38 };

/* One row: name, median (with its suffix), min - max, and what follows (may be ""). */
static void print_row(const char *name, const bench_series_t *s, const char *suffix, const char *after)
{
    char median[32], least[32], most[32], line[256];
    number(bench_median(s), median, sizeof median);
    strcat(median, suffix);
    snprintf(line, sizeof line, "  %-*s %10s   %9s - %-9s %s", NAME_WIDTH, name, median,
             number(bench_min(s), least, sizeof least), number(bench_max(s), most, sizeof most), after);
    size_t length = strlen(line);
    while (length > 0 && line[length - 1] == ' ') /* no trailing blanks: the table is pasted into pages */
        line[--length] = '\0';
    printf("%s\n", line);
}

static void print_comparison(const bench_comparison_t *c, const bench_series_t *s)
{
    bool ratio = c->kind == BENCH_RATIO;
    char after[64] = "", target[32];
    if (c->has_target)
        snprintf(after, sizeof after, "target %s %s%s: %s", ratio ? ">=" : "<=",
                 number(c->target, target, sizeof target), ratio ? "x" : "", bench_target_met(c, s) ? "met" : "MISSED");
    print_row(c->label, s, ratio ? "x" : "", after);
}

static void print_table(const bench_result_t *result)
{
    const bench_spec_t *spec = &result->spec;
    char heading[64];
    snprintf(heading, sizeof heading, "%s, %d rounds", spec->unit, result->variants[0].count);
    printf("  %-*s %10s   %9s - max\n", NAME_WIDTH, heading, "median", "min");
    for (int v = 0; v < count_variants(spec); v++)
        print_row(spec->variants[v].name, &result->variants[v], "", "");
    for (int c = 0; c < count_comparisons(spec); c++)
        print_comparison(&spec->comparisons[c], &result->comparisons[c]);
    if (result->failed)
        printf("  (stopped: a run went wrong, see above)\n");
    fflush(stdout);
}

static void print_target(FILE *out, const bench_spec_t *spec, const bench_comparison_t *c, const bench_series_t *s)
{
    bool ratio = c->kind == BENCH_RATIO;
    char median[48], target[48], unit[48];
    snprintf(unit, sizeof unit, ratio ? "x" : " %s", spec->unit); /* a difference is in the variants' unit */
    number(bench_median(s), median, sizeof median);
    number(c->target, target, sizeof target);
    fprintf(out, "  %-6s %-12s %-28s %s%s (target %s %s%s)\n", bench_target_met(c, s) ? "met" : "MISSED", spec->id,
            c->label, median, unit, ratio ? ">=" : "<=", target, unit);
}

int bench_print_targets(FILE *out, const bench_result_t *results, size_t count)
{
    fprintf(out, "\nTargets (medians of this run):\n");
    int printed = 0, missed = 0;
    for (size_t r = 0; r < count; r++) {
        const bench_spec_t *spec = &results[r].spec;
        for (int c = 0; c < count_comparisons(spec); c++) {
            if (!spec->comparisons[c].has_target)
                continue;
            print_target(out, spec, &spec->comparisons[c], &results[r].comparisons[c]);
            printed++;
            if (!bench_target_met(&spec->comparisons[c], &results[r].comparisons[c]))
                missed++;
        }
    }
    if (printed == 0)
        fprintf(out, "  (none in the benchmarks that ran)\n");
    return missed;
}

/* ---- JSON ------------------------------------------------------------------------- */

/* Labels and names are the kit's own literals: only quotes and backslashes need escaping. */
static void write_string(FILE *f, const char *text)
{
    fputc('"', f);
    for (; *text; text++) {
        if (*text == '"' || *text == '\\')
            fputc('\\', f);
        fputc(*text, f);
    }
    fputc('"', f);
}

static void write_series(FILE *f, const bench_series_t *s)
{
    fprintf(f, "\"median\": %.6g, \"min\": %.6g, \"max\": %.6g, \"values\": [", bench_median(s), bench_min(s),
            bench_max(s));
    for (int i = 0; i < s->count; i++)
        fprintf(f, "%s%.6g", i ? ", " : "", s->values[i]);
    fprintf(f, "]");
}

static void write_comparison(FILE *f, const bench_comparison_t *c, const bench_series_t *s)
{
    fprintf(f, "        {\"label\": ");
    write_string(f, c->label);
    fprintf(f, ", \"kind\": \"%s\", ", c->kind == BENCH_RATIO ? "ratio" : "difference");
    write_series(f, s);
    if (c->has_target)
        fprintf(f, ", \"target\": %.6g, \"target_met\": %s", c->target, bench_target_met(c, s) ? "true" : "false");
    fprintf(f, "}");
}

static void write_result(FILE *f, const bench_result_t *r)
{
    const bench_spec_t *spec = &r->spec;
    fprintf(f, "    {\"id\": ");
    write_string(f, spec->id);
    fprintf(f, ", \"title\": ");
    write_string(f, r->title);
    fprintf(f, ", \"unit\": ");
    write_string(f, spec->unit);
    fprintf(f, ", \"rounds\": %d, \"failed\": %s,\n      \"variants\": [\n", r->variants[0].count,
            r->failed ? "true" : "false");
    for (int v = 0; v < count_variants(spec); v++) {
        fprintf(f, "        {\"name\": ");
        write_string(f, spec->variants[v].name);
        fprintf(f, ", ");
        write_series(f, &r->variants[v]);
        fprintf(f, "}%s\n", v + 1 < count_variants(spec) ? "," : "");
    }
    fprintf(f, "      ],\n      \"comparisons\": [\n");
    for (int c = 0; c < count_comparisons(spec); c++) {
        write_comparison(f, &spec->comparisons[c], &r->comparisons[c]);
        fprintf(f, "%s\n", c + 1 < count_comparisons(spec) ? "," : "");
    }
    fprintf(f, "      ]}");
}

int bench_write_json(const char *path, const bench_result_t *results, size_t count, double load_at_start)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return errno;
    char date[32];
    time_t now = time(NULL);
    struct tm utc;
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &utc));
    fprintf(f, "{\n  \"date\": \"%s\",\n  \"cores\": %ld,\n  \"load_average_at_start\": %.2f,\n", date,
            bench_cores(), load_at_start);
    fprintf(f, "  \"benchmarks\": [\n");
    for (size_t r = 0; r < count; r++) {
        write_result(f, &results[r]);
        fprintf(f, "%s\n", r + 1 < count ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    return fclose(f) == 0 ? 0 : errno;
}

/* ---- measuring ---------------------------------------------------------------------- */

double bench_cpu_ms(void)
{
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    double user = (double)usage.ru_utime.tv_sec * 1e3 + (double)usage.ru_utime.tv_usec / 1e3;
    double system = (double)usage.ru_stime.tv_sec * 1e3 + (double)usage.ru_stime.tv_usec / 1e3;
    return user + system;
}

/* Each step needs the one before it: no compiler or CPU can shortcut the chain. */
uint64_t bench_spin(uint64_t x, long rounds)
{
    for (long i = 0; i < rounds; i++)
        x = (x ^ (x >> 31)) * 0x9E3779B97F4A7C15ULL + (uint64_t)i;
    return x;
}

/* The fastest of five readings of 2^20 rounds (a few ms each): a reading
 * that another program interrupted is slower, never faster. */
/* bench_spin() rounds per microsecond, measured once per process: every
 * round of every benchmark then does the same work, however busy the
 * machine was at the moment a benchmark asked. */
static double spin_rounds_per_us(void)
{
    static double rate = 0;
    if (rate > 0)
        return rate;
    volatile uint64_t sink = 0;
    long rounds = 1L << 20;
    double best_ms = 1e9;
    for (int i = 0; i < 5; i++) { /* the best of five: other programs only ever slow a try down */
        int64_t start = kit_now_ns();
        sink = bench_spin(sink, rounds);
        double ms = kit_elapsed_ms(start);
        best_ms = ms < best_ms ? ms : best_ms;
    }
    rate = (double)rounds / (best_ms * 1000.0);
    return rate;
}

long bench_spin_rounds(long us)
{
    return (long)(spin_rounds_per_us() * (double)us) + 1;
}

double bench_load_average(void)
{
    double load = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &load) != 1)
            load = -1;
        fclose(f);
    }
    return load;
}

long bench_cores(void)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores > 0 ? cores : 1;
}

const char *bench_thousands(long count, char *out, size_t size)
{
    char digits[32];
    int length = snprintf(digits, sizeof digits, "%ld", count);
    size_t at = 0;
    for (int i = 0; i < length && at + 1 < size; i++) {
        if (i > 0 && (length - i) % 3 == 0 && digits[i - 1] != '-' && at + 2 < size)
            out[at++] = ',';
        out[at++] = digits[i];
    }
    out[at] = '\0';
    return out;
}
