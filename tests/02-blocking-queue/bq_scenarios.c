/**
 * @file bq_scenarios.c
 * @brief Chapter 02's generated scenarios (kit_scenario.h): the queue's sequential
 *        model, the calls a scenario draws, and how each is printed.
 *
 * Apart from the test that runs them, so that both sides of a judged test
 * link the same spec: the judge draws and checks with it (its model and its
 * printing), the subject makes its calls on the object under test - the
 * policies' functions included, which run there, beside the code under test.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bq.h"
#include "kit_errno.h"
#include "kit_scenario.h"

/* ---- Generated scenarios (kit_scenario.h) ------------------------------------------
 * The queue's sequential model: its items, oldest first, whether it is
 * closed, and the counters bq_stats() reads. A call takes effect if the
 * model allows the result it returned; a timed call that returned
 * ETIMEDOUT takes effect at its deadline. */

struct queue_model {
    int capacity, count;
    bool closed;
    long ids[16];
    long enqueued, taken, discarded, run_by_caller, rejected;
};

enum { PUT, OFFER, TAKE, POLL, TRY_PUT_ABORT, TRY_PUT_CALLER_RUNS, TRY_PUT_DISCARD, TRY_PUT_DISCARD_OLDEST, CLOSE, SIZE,
       STATS };

/* The groups of the shapes: puts that wait for room, takes that wait for an
 * item, and puts that never wait (a policy acts on a full queue). */
enum { PUTS = 1, TAKES, TRY_PUTS };

static long draw_capacity(kit_rng_t *rng)
{
    return 1 + (long)kit_rng_below(rng, 2);
}

static void queue_of(long capacity, void *state)
{
    struct queue_model *m = state;
    *m = (struct queue_model){ .capacity = (int)capacity };
}

static void *make_queue(long capacity, void *state)
{
    queue_of(capacity, state);
    bq_t *q = NULL;
    errno = bq_create(&q, (size_t)capacity);
    return errno == 0 ? q : NULL;
}

static void close_queue(void *q)
{
    bq_close(q);
}

static void destroy_queue(void *q)
{
    bq_destroy(q);
}

static bool full(const struct queue_model *m)
{
    return !m->closed && m->count == m->capacity;
}

static bool empty(const struct queue_model *m)
{
    return !m->closed && m->count == 0;
}

static bool put_waits(const void *state, const kit_call_t *call)
{
    (void)call;
    return full(state);
}

static bool take_waits(const void *state, const kit_call_t *call)
{
    (void)call;
    return empty(state);
}

static bool never_waits(const void *state, const kit_call_t *call)
{
    (void)state;
    (void)call;
    return false;
}

/* Discard-oldest on a full queue: the oldest goes to on_discard, the new item in. */
static void evict_oldest_for(struct queue_model *m, long id)
{
    memmove(&m->ids[0], &m->ids[1], (size_t)(m->count - 1) * sizeof m->ids[0]);
    m->ids[m->count - 1] = id;
    m->discarded++;
    m->enqueued++;
}

/* A put of any kind: 0 appends; `when_full` is what it returns on a full
 * queue (ETIMEDOUT for offer, EAGAIN for abort; 0 for caller-runs, which
 * runs the item instead); ECANCELED on a closed one. */
static bool put_result(struct queue_model *m, const kit_call_t *call, int when_full, bool counts_rejections)
{
    if (call->ret == ECANCELED) {
        m->rejected += counts_rejections && m->closed;
        return m->closed;
    }
    if (m->closed)
        return false;
    if (m->count < m->capacity && call->ret == 0) {
        m->ids[m->count++] = call->arg;
        m->enqueued++;
        return true;
    }
    if (m->count < m->capacity || call->ret != when_full)
        return false;
    if (call->op == TRY_PUT_CALLER_RUNS)
        m->run_by_caller++;
    else if (call->op == TRY_PUT_DISCARD)
        m->discarded++;
    else if (call->op == TRY_PUT_DISCARD_OLDEST)
        evict_oldest_for(m, call->arg);
    else
        m->rejected += counts_rejections;
    return true;
}

static bool put_takes_effect(void *state, const kit_call_t *call)
{
    return call->ret != ETIMEDOUT && put_result(state, call, ECANCELED, false);
}

static bool offer_takes_effect(void *state, const kit_call_t *call)
{
    return put_result(state, call, ETIMEDOUT, false);
}

static bool abort_takes_effect(void *state, const kit_call_t *call)
{
    return put_result(state, call, EAGAIN, true);
}

static bool caller_runs_takes_effect(void *state, const kit_call_t *call)
{
    return put_result(state, call, 0, true);
}

static bool discard_takes_effect(void *state, const kit_call_t *call)
{
    return put_result(state, call, 0, true);
}

/* A take of either kind: 0 removes the oldest; `when_empty` on an empty open queue. */
static bool take_result(struct queue_model *m, const kit_call_t *call, int when_empty)
{
    if (m->count == 0 && m->closed)
        return call->ret == ECANCELED;
    if (m->count == 0)
        return call->ret == when_empty && when_empty != 0;
    if (call->ret != 0 || m->ids[0] != call->out)
        return false;
    memmove(&m->ids[0], &m->ids[1], (size_t)(m->count - 1) * sizeof m->ids[0]);
    m->count--;
    m->taken++;
    return true;
}

static bool take_takes_effect(void *state, const kit_call_t *call)
{
    return take_result(state, call, 0);
}

static bool poll_takes_effect(void *state, const kit_call_t *call)
{
    return take_result(state, call, ETIMEDOUT);
}

static bool close_takes_effect(void *state, const kit_call_t *call)
{
    struct queue_model *m = state;
    m->closed = true;
    return call->ret == 0;
}

static bool size_takes_effect(void *state, const kit_call_t *call)
{
    const struct queue_model *m = state;
    return call->out == m->count;
}

/* bq_stats packed into one number: a byte a counter. */
static long packed(size_t enqueued, size_t taken, size_t discarded, size_t run_by_caller, size_t rejected)
{
    return (long)(enqueued | taken << 8 | discarded << 16 | run_by_caller << 24 | rejected << 32);
}

static bool stats_takes_effect(void *state, const kit_call_t *call)
{
    const struct queue_model *m = state;
    return call->ret == 0 && call->out == packed((size_t)m->enqueued, (size_t)m->taken, (size_t)m->discarded,
                                                 (size_t)m->run_by_caller, (size_t)m->rejected);
}

static void *item(long id)
{
    return (void *)(intptr_t)id;
}

static void run_nothing(void *item)
{
    (void)item;
}

static int run_call(void *q, long op, long arg, long timeout_ms, long *out)
{
    void *got = NULL;
    bq_policy_t abort_policy = bq_policy_abort(), caller_runs = bq_policy_caller_runs(run_nothing),
                discard = bq_policy_discard(run_nothing), discard_oldest = bq_policy_discard_oldest(run_nothing);
    bq_stats_t stats;
    int err = 0;
    switch (op) {
    case PUT: return bq_put(q, item(arg));
    case OFFER: return bq_offer(q, item(arg), timeout_ms);
    case TRY_PUT_ABORT: return bq_try_put(q, item(arg), &abort_policy);
    case TRY_PUT_CALLER_RUNS: return bq_try_put(q, item(arg), &caller_runs);
    case TRY_PUT_DISCARD: return bq_try_put(q, item(arg), &discard);
    case TRY_PUT_DISCARD_OLDEST: return bq_try_put(q, item(arg), &discard_oldest);
    case TAKE: err = bq_take(q, &got); break;
    case POLL: err = bq_poll(q, &got, timeout_ms); break;
    case CLOSE: return bq_close(q);
    case SIZE: *out = (long)bq_size(q); return 0;
    case STATS:
        err = bq_stats(q, &stats);
        *out = packed(stats.enqueued, stats.taken, stats.discarded, stats.run_by_caller, stats.rejected);
        return err;
    }
    *out = err == 0 ? (long)(intptr_t)got : -1;
    return err;
}

#define RUN_AS(name, op)                                                                                   \
    static int name(void *q, long arg, long timeout_ms, long *out)                                         \
    {                                                                                                      \
        return run_call(q, op, arg, timeout_ms, out);                                                      \
    }
RUN_AS(run_put, PUT)
RUN_AS(run_offer, OFFER)
RUN_AS(run_take, TAKE)
RUN_AS(run_poll, POLL)
RUN_AS(run_abort, TRY_PUT_ABORT)
RUN_AS(run_caller_runs, TRY_PUT_CALLER_RUNS)
RUN_AS(run_discard, TRY_PUT_DISCARD)
RUN_AS(run_discard_oldest, TRY_PUT_DISCARD_OLDEST)
RUN_AS(run_close, CLOSE)
RUN_AS(run_size, SIZE)
RUN_AS(run_stats, STATS)

static void print_create(long capacity, char *text, size_t size)
{
    snprintf(text, size, "bq_t *q; bq_create(&q, %ld)", capacity);
}

static void print_call(const kit_call_t *call, const char *name, char *text, size_t size)
{
    switch (call->op) {
    case PUT: snprintf(text, size, "bq_put(q, item%ld)", call->arg); break;
    case OFFER: snprintf(text, size, "bq_offer(q, item%ld, %ld)", call->arg, call->timeout_ms); break;
    case TAKE: snprintf(text, size, "bq_take(q, &item)"); break;
    case POLL: snprintf(text, size, "bq_poll(q, &item, %ld)", call->timeout_ms); break;
    case TRY_PUT_ABORT: snprintf(text, size, "bq_try_put(q, item%ld, &abort)", call->arg); break;
    case TRY_PUT_CALLER_RUNS: snprintf(text, size, "bq_try_put(q, item%ld, &caller_runs)", call->arg); break;
    case TRY_PUT_DISCARD: snprintf(text, size, "bq_try_put(q, item%ld, &discard)", call->arg); break;
    case TRY_PUT_DISCARD_OLDEST: snprintf(text, size, "bq_try_put(q, item%ld, &discard_oldest)", call->arg); break;
    case STATS: snprintf(text, size, "bq_stats(q, &stats)"); break;
    default: snprintf(text, size, "%s(q)", name);
    }
}

static void print_out(const kit_call_t *call, char *text, size_t size)
{
    long o = call->out;
    if (call->ret != 0)
        snprintf(text, size, "-> %s", kit_errno_name(call->ret));
    else if (call->op == TAKE || call->op == POLL)
        snprintf(text, size, "-> 0, item%ld", o);
    else if (call->op == SIZE)
        snprintf(text, size, "-> %ld", o);
    else if (call->op == STATS)
        snprintf(text, size, "-> enqueued %ld, taken %ld, discarded %ld, run_by_caller %ld, rejected %ld", o & 255,
                 o >> 8 & 255, o >> 16 & 255, o >> 24 & 255, o >> 32 & 255);
    else
        snprintf(text, size, "-> 0");
}

static void print_state(const void *state, char *text, size_t size)
{
    const struct queue_model *m = state;
    int at = snprintf(text, size, "the queue%s", m->closed ? " is closed and" : "");
    if (m->count == 0)
        at += snprintf(text + at, size - (size_t)at, " is empty");
    else
        at += snprintf(text + at, size - (size_t)at, " %s", m->count == m->capacity ? "is full, holding" : "holds");
    for (int i = 0; i < m->count && at < (int)size; i++)
        at += snprintf(text + at, size - (size_t)at, " item%ld", m->ids[i]);
    if (at < (int)size)
        snprintf(text + at, size - (size_t)at,
                 "; counted: enqueued %ld, taken %ld, discarded %ld, run_by_caller %ld, rejected %ld", m->enqueued,
                 m->taken, m->discarded, m->run_by_caller, m->rejected);
}

static const kit_op_t queue_ops[] = {
    [PUT] = { .name = "bq_put", .weight = 3, .group = PUTS,
              .run = run_put, .take_effect = put_takes_effect, .waits = put_waits,
              .rule = "bq_put waits as long as the queue is full, then appends: 0; ECANCELED if the queue is or gets "
                      "closed" },
    [OFFER] = { .name = "bq_offer", .weight = 2, .group = PUTS, .timed = true,
                .run = run_offer, .take_effect = offer_takes_effect,
                .waits = put_waits,
                .rule = "bq_offer waits at most timeout_ms for room: 0; ETIMEDOUT only if still full at the deadline;"
                        " ECANCELED if closed" },
    [TAKE] = { .name = "bq_take", .weight = 3, .group = TAKES,
               .run = run_take, .take_effect = take_takes_effect, .waits = take_waits,
               .rule = "bq_take waits as long as the queue is empty, then removes the oldest item; ECANCELED once the"
                       " queue is closed and empty" },
    [POLL] = { .name = "bq_poll", .weight = 2, .group = TAKES, .timed = true,
               .run = run_poll, .take_effect = poll_takes_effect,
               .waits = take_waits,
               .rule = "bq_poll waits at most timeout_ms: the oldest item; ETIMEDOUT only if still empty at the "
                       "deadline; ECANCELED once closed and empty" },
    [TRY_PUT_ABORT] = { .name = "bq_try_put", .weight = 1, .group = TRY_PUTS,
                        .run = run_abort, .take_effect = abort_takes_effect,
                        .waits = never_waits,
                        .rule = "bq_try_put enqueues if there is room; on a full queue the abort policy returns "
                                "EAGAIN; ECANCELED if closed; each error counted once in rejected" },
    [TRY_PUT_CALLER_RUNS] = { .name = "bq_try_put", .weight = 1, .group = TRY_PUTS, .run = run_caller_runs,
                              .take_effect = caller_runs_takes_effect, .waits = never_waits,
                              .rule = "bq_try_put enqueues if there is room; on a full queue caller-runs runs the "
                                      "item on the caller and returns 0, counted once in run_by_caller" },
    [TRY_PUT_DISCARD] = { .name = "bq_try_put", .weight = 1, .group = TRY_PUTS,
                          .run = run_discard, .take_effect = discard_takes_effect,
                          .waits = never_waits,
                          .rule = "bq_try_put enqueues if there is room; on a full queue discard gives the new item "
                                  "to on_discard and returns 0, counted once in discarded" },
    [TRY_PUT_DISCARD_OLDEST] = { .name = "bq_try_put", .weight = 1, .group = TRY_PUTS, .run = run_discard_oldest,
                                 .take_effect = discard_takes_effect, .waits = never_waits,
                                 .rule = "bq_try_put enqueues if there is room; on a full queue discard-oldest evicts"
                                         " the oldest item (discarded) and enqueues the new one" },
    [CLOSE] = { .name = "bq_close", .weight = 1, .once = true, .run = run_close, .take_effect = close_takes_effect,
                .waits = never_waits,
                .rule = "bq_close wakes every waiter; puts fail with ECANCELED; takes drain what is left, then fail" },
    [SIZE] = { .name = "bq_size", .weight = 1, .run = run_size, .take_effect = size_takes_effect,
               .waits = never_waits, .post = true,
               .rule = "bq_size returns the number of items queued at one instant during the call" },
    /* Called only once the threads are done: a policy counts its item in a
     * critical section of its own, after the one that found the queue full
     * (it runs outside the lock), so a read in between may see either. */
    [STATS] = { .name = "bq_stats", .weight = 0, .run = run_stats, .take_effect = stats_takes_effect,
                .waits = never_waits, .post = true,
                .rule = "bq_stats reads every counter at one instant: each item counted once, in enqueued, discarded,"
                        " run_by_caller or rejected" },
};

/* Both sides blocked, and the transitions between full and empty: a full
 * queue of 2 or 3, producers asleep on it and two or three takes in a row
 * before a woken one runs (a take that signals only when the queue was full
 * leaves the second producer asleep beside room); takers asleep on an empty
 * queue and puts in a row (the put side's twin); policies racing each other
 * on a full queue, each counting what it did (a count made outside the lock
 * loses one, and bq_stats shows it). */
static const kit_shape_t queue_shapes[] = {
    { .param = 2, .fill = PUTS, .sleepers = PUTS, .mover = TAKES },
    { .param = 3, .fill = PUTS, .sleepers = PUTS, .mover = TAKES },
    { .param = 2, .sleepers = TAKES, .mover = PUTS },
    { .param = 3, .sleepers = TAKES, .mover = TRY_PUTS },
    { .param = 1, .fill = PUTS, .sleepers = TRY_PUTS, .mover = TRY_PUTS },
};

const kit_spec_t queue_spec = {
    .object = "q",
    .state_size = sizeof(struct queue_model),
    .param = draw_capacity,
    .create = make_queue,
    .model = queue_of,
    .release = close_queue,
    .released_ret = ECANCELED,
    .destroy = destroy_queue,
    .print_create = print_create,
    .print_call = print_call,
    .print_out = print_out,
    .print_state = print_state,
    .ops = queue_ops,
    .nops = (int)(sizeof queue_ops / sizeof queue_ops[0]),
    .shapes = queue_shapes,
    .nshapes = (int)(sizeof queue_shapes / sizeof queue_shapes[0]),
};

/* The specs of the chapter's scenarios, by which a judged test's subject finds the one its judge names. */
const kit_spec_t *const kit_scenario_specs[] = { &queue_spec, NULL };
