/**
 * @file bench_queue.c
 * @brief Benchmark 1, queue handoff: chapter 02's bq, chapter 01's msgq and GLib's GAsyncQueue.
 *
 * P producers put `items` pointers in total, P consumers take them; the
 * clock runs from the moment a start gate lets every thread go until the
 * last one is joined. bq and msgq hold at most `capacity` items, so a fast
 * producer waits for room; GAsyncQueue is unbounded, so it never does.
 * Every consumer adds up what it takes: a lost or duplicated pointer fails
 * the run.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench_suite.h"

#include <glib.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bq.h"
#include "kit_gate.h"
#include "kit_thread.h"
#include "kit_time.h"
#include "msgq.h"

enum { MAX_PAIRS = 8 };

typedef struct queue_params {
    long items;      /* pointers handed over in total */
    int pairs;       /* producers, and as many consumers */
    size_t capacity; /* of bq and msgq */
} queue_params_t;

/* The three queues behind one shape: put one pointer, take one pointer. */
typedef struct queue_ops {
    void (*put)(void *queue, void *item);
    void *(*take)(void *queue);
} queue_ops_t;

/* What each producer and consumer thread is given. */
typedef struct queue_job {
    const queue_ops_t *ops;
    void *queue;
    kit_gate_t *gate;
    long first, count; /* a producer puts first + 1 .. first + count; a consumer takes count */
    uint64_t sum;      /* a consumer's total of what it took */
} queue_job_t;

static void bq_put_item(void *q, void *item) { bq_put(q, item); }
static void *bq_take_item(void *q)
{
    void *item = NULL;
    bq_take(q, &item);
    return item;
}

static void msgq_put_item(void *q, void *item) { msgq_put(q, (msg_t){ .body = item }); }
static void *msgq_take_item(void *q)
{
    msg_t msg = { 0 };
    msgq_take(q, &msg);
    return msg.body;
}

static void glib_put_item(void *q, void *item) { g_async_queue_push(q, item); }
static void *glib_take_item(void *q) { return g_async_queue_pop(q); }

static const queue_ops_t bq_ops = { bq_put_item, bq_take_item };
static const queue_ops_t msgq_ops = { msgq_put_item, msgq_take_item };
static const queue_ops_t glib_ops = { glib_put_item, glib_take_item };

static void *producer(void *raw)
{
    queue_job_t *job = raw;
    kit_gate_wait(job->gate);
    for (long i = 1; i <= job->count; i++) /* never NULL: GAsyncQueue refuses NULL */
        job->ops->put(job->queue, (void *)(uintptr_t)(job->first + i));
    return NULL;
}

static void *consumer(void *raw)
{
    queue_job_t *job = raw;
    kit_gate_wait(job->gate);
    for (long i = 0; i < job->count; i++)
        job->sum += (uintptr_t)job->ops->take(job->queue);
    return NULL;
}

/* A run with a thread missing would hang (its partner waits forever), and
 * there is nothing to measure without threads: stop the program instead. */
static void start_threads(queue_job_t *jobs, pthread_t *threads, int pairs)
{
    for (int i = 0; i < 2 * pairs; i++) {
        int err = kit_thread_start(&threads[i], i < pairs ? "producer" : "consumer", i < pairs ? producer : consumer,
                                   &jobs[i]);
        if (err != 0) {
            fprintf(stderr, "queue bench: cannot start a thread (error %d)\n", err);
            exit(1);
        }
    }
}

/* One run: returns million items per second, or -1 if something was lost. */
static double handoff(const queue_params_t *p, const queue_ops_t *ops, void *queue)
{
    queue_job_t jobs[2 * MAX_PAIRS];
    pthread_t threads[2 * MAX_PAIRS];
    kit_gate_t gate;
    if (kit_gate_init(&gate) != 0)
        return -1;
    long share = p->items / p->pairs;
    for (int i = 0; i < 2 * p->pairs; i++)
        jobs[i] = (queue_job_t){ ops, queue, &gate, (i % p->pairs) * share, share, 0 };
    start_threads(jobs, threads, p->pairs);
    kit_gate_await_arrivals(&gate, 2 * (size_t)p->pairs, 10000); /* all ready: time only the handoff */
    int64_t start = kit_now_ns();
    kit_gate_open(&gate);
    uint64_t sum = 0;
    for (int i = 0; i < 2 * p->pairs; i++) {
        pthread_join(threads[i], NULL);
        sum += jobs[i].sum;
    }
    double seconds = (double)(kit_now_ns() - start) / 1e9;
    kit_gate_destroy(&gate);
    uint64_t n = (uint64_t)(share * p->pairs);
    if (sum != n * (n + 1) / 2) { /* the pointers were 1 .. n, each taken once */
        fprintf(stderr, "queue bench: items lost or duplicated\n");
        return -1;
    }
    return (double)n / seconds / 1e6;
}

static double run_bq(const void *params, long arg)
{
    (void)arg;
    const queue_params_t *p = params;
    bq_t *q = NULL;
    if (bq_create(&q, p->capacity) != 0)
        return -1;
    double result = handoff(p, &bq_ops, q);
    bq_destroy(q);
    return result;
}

static double run_msgq(const void *params, long arg)
{
    (void)arg;
    const queue_params_t *p = params;
    msgq_t *q = NULL;
    if (msgq_create(&q, p->capacity) != 0)
        return -1;
    double result = handoff(p, &msgq_ops, q);
    msgq_destroy(q);
    return result;
}

static double run_glib(const void *params, long arg)
{
    (void)arg;
    GAsyncQueue *q = g_async_queue_new();
    double result = handoff(params, &glib_ops, q);
    g_async_queue_unref(q);
    return result;
}

static int queue_bench(const char *id, int pairs, const bench_options_t *o, bench_result_t *out)
{
    queue_params_t params = { .items = o->queue_items, .pairs = pairs, .capacity = 1024 };
    char title[160], items[32];
    snprintf(title, sizeof title, "1. Queue handoff, %d producer%s / %d consumer%s: %s pointers, capacity %zu",
             pairs, pairs > 1 ? "s" : "", pairs, pairs > 1 ? "s" : "",
             bench_thousands(o->queue_items, items, sizeof items), params.capacity);
    bench_spec_t spec = {
        .id = id, .title = title, .unit = "M items/s", .params = &params,
        .variants = { { "bq (ch02, two condvars)", run_bq, 0 },
                      { "msgq (ch01, one condvar, broadcast)", run_msgq, 0 },
                      { "GAsyncQueue (GLib, unbounded)", run_glib, 0 } },
        .comparisons = { { "bq / GAsyncQueue", 0, 2, BENCH_RATIO, true, 0.7 }, /* docs/performance.md */
                         { "bq / msgq", 0, 1, BENCH_RATIO, false, 0 } },
    };
    return bench_run(&spec, o->rounds, out);
}

int bench_queue_1x1(const bench_options_t *o, bench_result_t *out)
{
    return queue_bench("queue-1x1", 1, o, out);
}

int bench_queue_4x4(const bench_options_t *o, bench_result_t *out)
{
    return queue_bench("queue-4x4", 4, o, out);
}
