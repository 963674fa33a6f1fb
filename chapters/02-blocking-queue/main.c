/**
 * @file main.c
 * @brief Chapter 02 program: producers hand jobs to a one-slot queue, and a
 *        reject policy decides what happens to the ones that do not fit.
 *
 * The source document's test, replayed on the queue alone: one consumer, a
 * queue of capacity 1, and four producers that finish their work at about
 * the same moment and each try to hand over a job with bq_try_put(). The
 * consumer takes the first, the queue holds the second, and the others find
 * it full: the reject policy decides. A bare run replays the scenario once
 * per built-in policy; `--policy` picks one. Each replay ends with a line that
 * accounts for every job: offered = consumed + run-by-caller + discarded +
 * rejected, read from bq_stats() and checked against what the program saw.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bq.h"
#include "kit_cli.h"
#include "kit_errno.h"
#include "kit_log.h"
#include "kit_rand.h"
#include "kit_thread.h"
#include "kit_time.h"
#include "kit_trace.h"

enum policy_kind { BLOCK, TIMEOUT, DISCARD, DISCARD_OLDEST, ABORT, CALLER_RUNS, POLICY_KINDS };

static const char *const policy_names[POLICY_KINDS] = {
    "block", "timeout", "discard", "discard-oldest", "abort", "caller-runs",
};

static const char *const policy_stories[POLICY_KINDS] = {
    "a producer that finds the queue full waits for room",
    "a producer waits a while for room, then gives up and keeps its job",
    "the new job is dropped: on_discard frees it",
    "the oldest queued job is evicted to on_discard; the new one takes its place",
    "the producer is refused with EAGAIN and keeps its job",
    "the producer runs the job itself, on its own thread",
};

/* The timeout policy's wait in a bare run: longer than one job takes the
 * consumer, shorter than two, so some producers make it and some do not. */
#define DEFAULT_TIMEOUT_MS 150

/* What ENOSYS means when the program runs on the exercise. */
#define ENOSYS_HINT " - not implemented yet: write exercises/02-blocking-queue/bq.c"

static long producers = 4, consumers = 1, capacity = 1, items = 1;
static long produce_ms = 100, consume_ms = 100;
static kit_list_t delays; /* per-producer work time, overrides --produce-ms */
static const char *policy_text; /* NULL: every policy in turn */
static kit_run_t run;

static const kit_opt_t options[] = {
    { "policy", KIT_OPT_STRING, "NAME",
      "block|timeout:MS|discard|discard-oldest|abort|caller-runs (default: each in turn)", &policy_text, 0, 0, NULL },
    { "producers", KIT_OPT_LONG, "N", "producer threads", &producers, 1, 64, NULL },
    { "consumers", KIT_OPT_LONG, "N", "consumer threads", &consumers, 1, 64, NULL },
    { "capacity", KIT_OPT_LONG, "N", "queue capacity", &capacity, 1, 1000000, NULL },
    { "items", KIT_OPT_LONG, "N", "jobs each producer offers", &items, 1, 1000000, NULL },
    { "produce-ms", KIT_OPT_LONG, "MS", "simulated work before each job is offered (+ up to 10% seeded jitter)",
      &produce_ms, 0, 60000, NULL },
    { "delays", KIT_OPT_LIST, "MS,MS,...", "work time of producer 0, 1, ... (scripts an interleaving)", &delays, 0,
      60000, NULL },
    { "consume-ms", KIT_OPT_LONG, "MS", "simulated time to run one job (consumer or caller)", &consume_ms, 0, 60000,
      NULL },
    KIT_RUN_OPTIONS(run),
};

static const kit_cli_t cli = {
    "ch02-blocking-queue",
    "Producers hand jobs to a bounded queue (two condition variables) with bq_try_put;\n"
    "  when it is full, a reject policy decides. Watch who waits on which condition.",
    "examples:\n"
    "  ch02-blocking-queue --policy discard-oldest\n"
    "  ch02-blocking-queue --policy timeout:250 --consume-ms 200\n"
    "  ch02-blocking-queue --policy caller-runs --producers 2 --items 4\n"
    "  ch02-blocking-queue --delays 0,0,300,600      # producers 2 and 3 arrive late\n"
    "  ch02-blocking-queue --producers 8 --consumers 3 --items 1000 --produce-ms 0 --consume-ms 0 --quiet",
    options, sizeof options / sizeof options[0],
};

/* A policy picked on the command line, or one of the bare run's six. */
struct choice {
    enum policy_kind kind;
    long timeout_ms; /* TIMEOUT only */
};

/* A job: what producers offer and consumers (or callers) run. Whoever
 * runs or drops a job frees it. */
typedef struct job {
    int id;
    int producer;
} job_t;

static bq_t *queue;
static enum policy_kind policy_kind; /* the replay's policy, for the log lines */
static bq_policy_t policy;
static uint64_t seed;
/* One replay's tallies, as the program itself saw them. */
static atomic_long offered, consumed, ran_by_caller, dropped, refused;
static atomic_bool saw_enosys;

/* ---- The command line ------------------------------------------------------ */

static long parse_timeout(const char *text)
{
    char *end;
    errno = 0;
    long ms = (text[0] >= '0' && text[0] <= '9') ? strtol(text, &end, 10) : -1;
    if (ms < 0 || errno != 0 || *end != '\0' || ms > 60000)
        kit_cli_fail(&cli, "--policy timeout:MS: MS must be a whole number in 0..60000, got '%s'", text);
    return ms;
}

static struct choice parse_policy(const char *text)
{
    static const char prefix[] = "timeout:";
    if (strncmp(text, prefix, sizeof prefix - 1) == 0)
        return (struct choice){ TIMEOUT, parse_timeout(text + sizeof prefix - 1) };
    for (int kind = 0; kind < POLICY_KINDS; kind++)
        if (kind != TIMEOUT && strcmp(text, policy_names[kind]) == 0)
            return (struct choice){ (enum policy_kind)kind, 0 };
    kit_cli_fail(&cli, "--policy: '%s' is not one of block, timeout:MS, discard, discard-oldest, abort, caller-runs",
                 text);
}

static void label_of(struct choice choice, char *out, size_t size)
{
    if (choice.kind == TIMEOUT)
        snprintf(out, size, "timeout:%ld", choice.timeout_ms);
    else
        snprintf(out, size, "%s", policy_names[choice.kind]);
}

/* ---- Jobs, and what the policies do with them ------------------------------- */

/* Says once, for the first call that returned it, what ENOSYS means. */
static void note_error(const char *call, int err)
{
    if (err == ENOSYS && !atomic_exchange(&saw_enosys, true))
        fprintf(stderr, "%s: ENOSYS%s\n", call, ENOSYS_HINT);
}

static void run_job(job_t *job)
{
    kit_trace_begin("job", "job %d", job->id);
    kit_sleep_ms(consume_ms);
    kit_trace_end("job");
    free(job);
}

/* bq_policy_caller_runs(run_on_caller): called on the producer's thread. */
static void run_on_caller(void *item)
{
    job_t *job = item;
    kit_log("caller-runs", "queue full: running job(%d) myself", job->id);
    run_job(job);
    atomic_fetch_add(&ran_by_caller, 1);
}

/* on_discard of both discard policies: the job is ours to free. */
static void drop_job(void *item)
{
    job_t *job = item;
    kit_log("on_discard", "job(%d) of producer-%d %s", job->id, job->producer,
            policy_kind == DISCARD_OLDEST ? "evicted: it was the oldest" : "dropped: it was the new one");
    free(job);
    atomic_fetch_add(&dropped, 1);
}

static bq_policy_t policy_for(struct choice choice)
{
    switch (choice.kind) {
    case BLOCK:
        return bq_policy_block();
    case TIMEOUT:
        return bq_policy_timeout(choice.timeout_ms);
    case DISCARD:
        return bq_policy_discard(drop_job);
    case DISCARD_OLDEST:
        return bq_policy_discard_oldest(drop_job);
    case ABORT:
        return bq_policy_abort();
    default:
        return bq_policy_caller_runs(run_on_caller);
    }
}

/* ---- Producers and consumers ------------------------------------------------------ */

static long work_time(int producer, kit_rng_t *rng)
{
    if ((size_t)producer < delays.count)
        return delays.values[producer];
    return produce_ms + (long)kit_rng_below(rng, (uint64_t)produce_ms / 10 + 1);
}

static void hand_over(job_t *job)
{
    int id = job->id; /* after a 0 the job may already be freed by whoever ran it */
    kit_log("producer", "try_put job(%d)", id);
    atomic_fetch_add(&offered, 1);
    int err = bq_try_put(queue, job, &policy);
    if (err == 0) {
        kit_log("producer", "job(%d) handed over: no longer mine", id);
        return;
    }
    kit_log("producer", "job(%d) rejected with %s: still mine, I drop it", id, kit_errno_name(err));
    note_error("bq_try_put", err);
    atomic_fetch_add(&refused, 1);
    free(job);
}

static void *produce(void *raw)
{
    int index = (int)(intptr_t)raw;
    kit_rng_t rng;
    kit_rng_seed(&rng, seed, (uint64_t)index);
    for (long n = 0; n < items; n++) {
        job_t *job = malloc(sizeof *job);
        if (job == NULL)
            break;
        *job = (job_t){ .id = (int)(index * items + n), .producer = index };
        kit_log("producer", "working on job(%d)...", job->id);
        kit_trace_begin("producer", "producing job %d", job->id);
        kit_sleep_ms(work_time(index, &rng));
        kit_trace_end("producer");
        hand_over(job);
    }
    return NULL;
}

static void *consume(void *raw)
{
    (void)raw;
    void *item;
    int err;
    while ((err = bq_take(queue, &item)) == 0) {
        job_t *job = item;
        kit_log("consumer", "take job(%d) of producer-%d", job->id, job->producer);
        run_job(job);
        atomic_fetch_add(&consumed, 1);
    }
    note_error("bq_take", err);
    kit_log("consumer", "queue closed and empty, leaving");
    return NULL;
}

/* ---- One replay per policy ---------------------------------------------------------- */

/* Prints the closing line: every job offered ended one way, and the queue's
 * counters agree with what the program's own callbacks and threads saw. */
static bool account(const char *label, const bq_stats_t *stats)
{
    long all = atomic_load(&offered);
    size_t ended = stats->taken + stats->run_by_caller + stats->discarded + stats->rejected;
    bool balanced = ended == (size_t)all;
    bool agrees = stats->taken == (size_t)atomic_load(&consumed) &&
                  stats->run_by_caller == (size_t)atomic_load(&ran_by_caller) &&
                  stats->discarded == (size_t)atomic_load(&dropped) &&
                  stats->rejected == (size_t)atomic_load(&refused);
    printf("%-15s offered %ld = consumed %zu + run-by-caller %zu + discarded %zu + rejected %zu: %s\n", label, all,
           stats->taken, stats->run_by_caller, stats->discarded, stats->rejected,
           balanced && agrees ? "every job accounted for" : "JOBS UNACCOUNTED FOR");
    if (!agrees)
        printf("%-15s but the program saw consumed %ld, run %ld, dropped %ld, rejected %ld\n", "", atomic_load(&consumed),
               atomic_load(&ran_by_caller), atomic_load(&dropped), atomic_load(&refused));
    return balanced && agrees;
}

static void reset_tallies(void)
{
    atomic_store(&offered, 0);
    atomic_store(&consumed, 0);
    atomic_store(&ran_by_caller, 0);
    atomic_store(&dropped, 0);
    atomic_store(&refused, 0);
}

static bool replay(struct choice choice)
{
    char label[32];
    label_of(choice, label, sizeof label);
    reset_tallies();
    int err = bq_create(&queue, (size_t)capacity);
    if (err != 0) {
        fprintf(stderr, "bq_create: %s%s\n", kit_errno_name(err), err == ENOSYS ? ENOSYS_HINT : "");
        exit(1); /* nothing to replay on */
    }
    policy_kind = choice.kind;
    policy = policy_for(choice);
    kit_log("main", "=== policy %s: %s", label, policy_stories[choice.kind]);
    pthread_t *consumer_threads = kit_run_start_group((size_t)consumers, "consumer", consume);
    pthread_t *producer_threads = kit_run_start_group((size_t)producers, "producer", produce);
    kit_run_join_group(producer_threads, (size_t)producers);
    kit_log("main", "all producers done: closing the queue");
    err = bq_close(queue); /* consumers take what is left, then get ECANCELED */
    if (err != 0) {
        fprintf(stderr, "bq_close: %s%s\n", kit_errno_name(err),
                err == ENOSYS ? ENOSYS_HINT : " - the consumers would wait forever");
        exit(1);
    }
    kit_run_join_group(consumer_threads, (size_t)consumers);
    bq_stats_t stats = { 0 };
    err = bq_stats(queue, &stats);
    note_error("bq_stats", err);
    bq_destroy(queue);
    return account(label, &stats) && err == 0;
}

int main(int argc, char **argv)
{
    kit_cli_parse(&cli, argc, argv);
    struct choice only = policy_text ? parse_policy(policy_text) : (struct choice){ BLOCK, 0 };
    seed = kit_run_begin(&run);
    kit_log("main", "%ld producers, %ld consumer(s), capacity %ld, %ld job(s) each", producers, consumers, capacity,
            items);
    int replays = 0, unbalanced = 0;
    for (int kind = 0; kind < POLICY_KINDS; kind++) {
        if (policy_text && kind != (int)only.kind)
            continue;
        struct choice choice = policy_text ? only : (struct choice){ (enum policy_kind)kind, DEFAULT_TIMEOUT_MS };
        if (!replay(choice))
            unbalanced++;
        replays++;
    }
    int trace_failed = kit_run_end(&run);
    printf("\n%d of %d replays accounted for every job%s (seed %lu)\n", replays - unbalanced, replays,
           unbalanced ? ": JOBS UNACCOUNTED FOR" : "", (unsigned long)seed);
    return unbalanced == 0 && !trace_failed ? 0 : 1;
}
