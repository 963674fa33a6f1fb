/**
 * @file main.c
 * @brief Chapter 00 program: watch an unlocked results list lose and double records.
 *
 * Workers append distinct records (worker w appends w*items .. w*items +
 * items - 1) while the master keeps harvesting the list, as in the story.
 * Afterwards the master counts how often it saw each record: every one
 * exactly once is correct; 0 times is a lost record, twice a duplicate.
 * The same run then repeats with results_t, the locked list.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_cli.h"
#include "kit_errno.h"
#include "kit_log.h"
#include "kit_thread.h"
#include "kit_time.h"
#include "kit_trace.h"
#include "results.h"
#include "unsafe_list.h"

static long workers = 4, items = 200000, window = 0;
static kit_run_t run;

static const kit_opt_t options[] = {
    { "workers", KIT_OPT_LONG, "N", "worker threads appending records", &workers, 1, 64, NULL },
    { "items", KIT_OPT_LONG, "N", "records each worker appends", &items, 1, 5000000, NULL },
    { "window", KIT_OPT_LONG, "N", "yields inside the unsafe list's race window", &window, 0, 1000, NULL },
    KIT_RUN_OPTIONS(run),
};

static const kit_cli_t cli = {
    "ch00-shared-results",
    "Workers append records to a shared list while the master harvests it: first\n"
    "  without a lock (records are lost and duplicated), then with results_t (none are).",
    "examples:\n  ch00-shared-results --workers 8 --items 100000\n  ch00-shared-results --window 2   # a wider race window",
    options, sizeof options / sizeof options[0],
};

/* Which list the workers fill: the unsafe one or results_t. */
struct shared {
    struct unsafe_list unsafe;
    results_t *safe;
    bool use_safe;
    atomic_int appending; /* workers still running: the master harvests until 0 */
    int append_errors;    /* results_append failures (only if allocation fails) */
};

struct worker_job {
    struct shared *shared;
    long first;
    int errors;
};

static void *append_records(void *raw)
{
    struct worker_job *job = raw;
    kit_trace_begin("worker", "appending");
    for (long r = job->first; r < job->first + items; r++) {
        if (job->shared->use_safe)
            job->errors += results_append(job->shared->safe, r) != 0;
        else
            unsafe_append(&job->shared->unsafe, r);
    }
    kit_trace_end("worker");
    kit_log("worker", "appended records %ld..%ld", job->first, job->first + items - 1);
    atomic_fetch_sub(&job->shared->appending, 1);
    return NULL;
}

/* One harvest: take what is in the list now and count each record seen. */
static void harvest(struct shared *shared, long *buffer, size_t length, unsigned char *seen)
{
    size_t n = 0;
    if (shared->use_safe)
        results_drain(shared->safe, buffer, length, &n);
    else
        n = unsafe_drain(&shared->unsafe, buffer, length);
    for (size_t i = 0; i < n; i++)
        if (buffer[i] >= 0 && buffer[i] < workers * items && seen[buffer[i]] < 255)
            seen[buffer[i]]++;
}

struct tally {
    long lost, duplicated;
};

static struct tally count_seen(const unsigned char *seen, long total)
{
    struct tally tally = { 0, 0 };
    for (long r = 0; r < total; r++) {
        tally.lost += seen[r] == 0;
        tally.duplicated += seen[r] > 1;
    }
    return tally;
}

static struct tally run_once(struct shared *shared, const char *label)
{
    long total = workers * items;
    unsigned char *seen = calloc((size_t)total, 1);
    long *buffer = malloc((size_t)total * sizeof *buffer);
    struct worker_job *jobs = calloc((size_t)workers, sizeof *jobs);
    pthread_t *threads = calloc((size_t)workers, sizeof *threads);
    if (!seen || !buffer || !jobs || !threads) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    kit_log("master", "%s: %ld workers x %ld records, harvesting while they append", label, workers, items);
    atomic_store(&shared->appending, (int)workers);
    for (long w = 0; w < workers; w++)
        jobs[w] = (struct worker_job){ shared, w * items, 0 };
    if (kit_thread_start_group(threads, (size_t)workers, "worker", append_records, jobs, sizeof *jobs) != 0) {
        fprintf(stderr, "cannot start the workers\n");
        exit(1);
    }
    kit_trace_begin("master", "harvesting");
    while (atomic_load(&shared->appending) > 0)
        harvest(shared, buffer, (size_t)total, seen); /* the master reads while they write */
    kit_trace_end("master");
    for (long w = 0; w < workers; w++) {
        pthread_join(threads[w], NULL);
        shared->append_errors += jobs[w].errors;
    }
    harvest(shared, buffer, (size_t)total, seen); /* whatever came in after the last harvest */
    struct tally tally = count_seen(seen, total);
    free(threads);
    free(jobs);
    free(buffer);
    free(seen);
    return tally;
}

static void print_line(const char *label, struct tally tally)
{
    printf("%-14s %9ld appended: %7ld lost, %7ld duplicated  %s\n", label, workers * items, tally.lost,
           tally.duplicated, tally.lost || tally.duplicated ? "<- the race" : "ok");
}

int main(int argc, char **argv)
{
    kit_cli_parse(&cli, argc, argv);
    kit_run_begin(&run);
    struct shared shared = { .use_safe = false };
    if (unsafe_list_init(&shared.unsafe, (size_t)(workers * items), window) != 0) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    struct tally unsafe = run_once(&shared, "unsafe list");
    unsafe_list_free(&shared.unsafe);

    int err = results_create(&shared.safe, 1024);
    if (err != 0) {
        fprintf(stderr, "results_create: %s%s\n", kit_errno_name(err),
                err == ENOSYS ? " - not implemented yet: write exercises/00-shared-results/results.c" : "");
        return 1;
    }
    shared.use_safe = true;
    struct tally safe = run_once(&shared, "results_t");
    results_destroy(shared.safe);
    int failed = kit_run_end(&run);

    printf("\n");
    print_line("unsafe list:", unsafe);
    print_line("results_t:", safe);
    if (unsafe.lost == 0 && unsafe.duplicated == 0)
        printf("(the unsafe list got lucky this time; the race is still there: try --window 2 or more --items)\n");
    bool kept_all = safe.lost == 0 && safe.duplicated == 0 && shared.append_errors == 0;
    printf("invariant: every record harvested exactly once with results_t: %s\n", kept_all ? "holds" : "BROKEN");
    return kept_all && !failed ? 0 : 1;
}
