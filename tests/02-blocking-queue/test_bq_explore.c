/**
 * @file test_bq_explore.c
 * @brief Chapter 02 under the schedule explorer: two condition variables,
 *        each side woken by the other, close and destroy against sleepers,
 *        and deadlines that stolen wake-ups must not stretch - on virtual
 *        time, with fixed seeds.
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_test.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bq.h"
#include "kit_errno.h"
#include "kit_scenario.h"
#include "kit_sched.h"
#include "kit_time.h"

#define EACH 2 /* items per producer, and per consumer */

struct side {
    bq_t *q;
    int index;
    int results[EACH];
    intptr_t got[EACH];
};

/* Items are ids + 1: never NULL, so a NULL out of a successful take is a bug. */
static void *item_of(int producer, int n)
{
    return (void *)(intptr_t)(producer * 100 + n + 1);
}

static void *produce(void *raw)
{
    struct side *s = raw;
    bq_policy_t block = bq_policy_block();
    for (int i = 0; i < EACH; i++) {
        /* Producer 1 goes through the policy: its reject runs without the lock. */
        if (s->index == 0)
            s->results[i] = bq_put(s->q, item_of(s->index, i));
        else
            s->results[i] = bq_try_put(s->q, item_of(s->index, i), &block);
    }
    return NULL;
}

static void *consume(void *raw)
{
    struct side *s = raw;
    for (int i = 0; i < EACH; i++) {
        void *item = NULL;
        s->results[i] = bq_take(s->q, &item);
        s->got[i] = (intptr_t)item;
    }
    return NULL;
}

static void *put_once(void *raw)
{
    struct side *s = raw;
    s->results[0] = bq_put(s->q, item_of(s->index, 0));
    return NULL;
}

static void start(pthread_t *thread, void *(*fn)(void *), struct side *s, bq_t *q, int index)
{
    memset(s, 0, sizeof *s);
    s->q = q;
    s->index = index;
    explore_ok(pthread_create(thread, NULL, fn, s));
}

static void check_every_item_once(struct side *consumers)
{
    int seen[2][EACH] = { { 0 } };
    for (int c = 0; c < 2; c++) {
        for (int i = 0; i < EACH; i++) {
            explore_ok(consumers[c].results[i]);
            intptr_t id = consumers[c].got[i] - 1;
            int p = (int)(id / 100), n = (int)(id % 100);
            kit_explore_check(id >= 0 && p < 2 && n < EACH, "a take returned item %ld, which nobody put",
                              (long)consumers[c].got[i]);
            kit_explore_check(!seen[p][n], "item %ld was taken twice", (long)consumers[c].got[i]);
            seen[p][n] = 1;
        }
    }
}

static void two_and_two(void *ctx)
{
    (void)ctx;
    bq_t *q = NULL;
    pthread_t producers[2], consumers[2];
    struct side put[2], took[2];
    explore_ok(bq_create(&q, 1));
    for (int i = 0; i < 2; i++)
        start(&consumers[i], consume, &took[i], q, i);
    for (int i = 0; i < 2; i++)
        start(&producers[i], produce, &put[i], q, i);
    for (int i = 0; i < 2; i++) {
        explore_ok(pthread_join(producers[i], NULL));
        for (int j = 0; j < EACH; j++)
            explore_ok(put[i].results[j]);
        explore_ok(pthread_join(consumers[i], NULL));
    }
    check_every_item_once(took);
    bq_destroy(q);
}

static void test_bq_explore_two_producers_two_consumers(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "pct:1:3 random:1", .schedules = 600, .spurious = 1 };
    kit_explore(&options, two_and_two, NULL);
}

static void *take_once(void *raw)
{
    struct side *s = raw;
    void *item = NULL;
    s->results[0] = bq_take(s->q, &item);
    s->got[0] = (intptr_t)item;
    return NULL;
}

/* Two takers asleep, then two puts in a row: each put must wake a taker,
 * also when the first taker has not run yet and the queue now holds two
 * (a put that signals only when the queue was empty wakes one of them). */
static void two_puts_for_two_sleepers(void *ctx)
{
    (void)ctx;
    bq_t *q = NULL;
    pthread_t takers[2];
    struct side took[2];
    explore_ok(bq_create(&q, 4));
    for (int i = 0; i < 2; i++)
        start(&takers[i], take_once, &took[i], q, i);
    kit_explore_await_sleepers(2);
    explore_ok(bq_put(q, item_of(0, 0)));
    explore_ok(bq_put(q, item_of(0, 1)));
    for (int i = 0; i < 2; i++) {
        explore_ok(pthread_join(takers[i], NULL));
        explore_ok(took[i].results[0]);
    }
    kit_explore_check(took[0].got[0] != took[1].got[0], "both takers returned item %ld", (long)took[0].got[0]);
    bq_destroy(q);
}

static void test_bq_explore_each_put_wakes_a_sleeping_taker(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:2 random:2", .schedules = 1000, .spurious = 1 };
    kit_explore(&options, two_puts_for_two_sleepers, NULL);
}

/* Two takers asleep on an empty queue, two putters on a full one, and close. */
static void close_against_both_sides(void *ctx)
{
    (void)ctx;
    bq_t *empty = NULL, *full = NULL;
    pthread_t takers[2], putters[2];
    struct side took[2], put[2];
    explore_ok(bq_create(&empty, 1));
    explore_ok(bq_create(&full, 1));
    explore_ok(bq_put(full, item_of(9, 0)));
    for (int i = 0; i < 2; i++) {
        start(&takers[i], consume, &took[i], empty, i);
        start(&putters[i], produce, &put[i], full, 0);
    }
    kit_explore_await_sleepers(4);
    explore_ok(bq_close(empty));
    explore_ok(bq_close(full));
    for (int i = 0; i < 2; i++) {
        explore_ok(pthread_join(takers[i], NULL));
        explore_ok(pthread_join(putters[i], NULL));
        explore_err(took[i].results[0], ECANCELED);
        explore_err(put[i].results[0], ECANCELED);
    }
    bq_destroy(empty);
    bq_destroy(full);
}

static void test_bq_explore_close_wakes_every_sleeper(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "pct:2:3 random:2", .schedules = 500 };
    kit_explore(&options, close_against_both_sides, NULL);
}

/* Two takers asleep on an empty queue, two putters on a full one, and
 * destroy: it must wake all of them, and wait for them to leave, before it
 * frees anything. */
static void destroy_against_sleepers(void *ctx)
{
    (void)ctx;
    bq_t *empty = NULL, *full = NULL;
    pthread_t takers[2], putters[2];
    struct side took[2], put[2];
    explore_ok(bq_create(&empty, 1));
    explore_ok(bq_create(&full, 1));
    explore_ok(bq_put(full, item_of(9, 0)));
    for (int i = 0; i < 2; i++) {
        start(&takers[i], take_once, &took[i], empty, i);
        start(&putters[i], put_once, &put[i], full, i);
    }
    kit_explore_await_sleepers(4);
    bq_destroy(empty);
    bq_destroy(full);
    for (int i = 0; i < 2; i++) {
        explore_ok(pthread_join(takers[i], NULL));
        explore_ok(pthread_join(putters[i], NULL));
        explore_err(took[i].results[0], ECANCELED);
        explore_err(put[i].results[0], ECANCELED);
    }
}

static void test_bq_explore_destroy_wakes_every_sleeper(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:2", .schedules = 1000, .spurious = 1 };
    kit_explore(&options, destroy_against_sleepers, NULL);
}

/* One taker asleep, and destroy, whose own wait may wake up for nothing:
 * woken while the taker has not yet left, it must wait again, or it frees
 * the queue under the taker's feet. Small enough to search every schedule. */
static void destroy_against_one_sleeper(void *ctx)
{
    (void)ctx;
    bq_t *q = NULL;
    pthread_t taker;
    struct side took;
    explore_ok(bq_create(&q, 1));
    start(&taker, take_once, &took, q, 0);
    kit_explore_await_sleepers(1);
    bq_destroy(q);
    explore_ok(pthread_join(taker, NULL));
    explore_err(took.results[0], ECANCELED);
}

static void test_bq_explore_destroy_waits_again_after_a_spurious_wakeup(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:2", .schedules = 10000, .spurious = 1 };
    kit_explore(&options, destroy_against_one_sleeper, NULL);
}

/* ---- Deadlines against stolen wake-ups, on virtual time ---------------------------------- */

/* Every 40 ms, put an item and take it straight back: each put wakes the
 * poller, which may find the queue empty again. */
static void *steal(void *raw)
{
    struct side *s = raw;
    for (int i = 0; i < 3; i++) {
        void *item = NULL;
        kit_sleep_ms(40);
        s->results[i % EACH] = bq_put(s->q, item_of(5, i));
        (void)bq_poll(s->q, &item, 0);
    }
    return NULL;
}

static void poll_against_stolen_wakeups(void *ctx)
{
    (void)ctx;
    bq_t *q = NULL;
    pthread_t stealer;
    struct side s;
    explore_ok(bq_create(&q, 1));
    start(&stealer, steal, &s, q, 0);
    int64_t start_ns = kit_now_ns();
    void *item = NULL;
    int err = bq_poll(q, &item, 100);
    long waited_ms = (long)((kit_now_ns() - start_ns) / 1000000);
    explore_ok(pthread_join(stealer, NULL));
    kit_explore_check(err == 0 || err == ETIMEDOUT, "a 100 ms poll returned %s", kit_errno_name(err));
    kit_explore_check(err != 0 || item != NULL, "a poll returned 0 without an item: nothing was put but non-NULL ones");
    kit_explore_check(err != ETIMEDOUT || waited_ms == 100,
                      "a 100 ms poll timed out after %ld ms of (virtual) time: wake-ups that found nothing "
                      "restarted its clock", waited_ms);
    bq_destroy(q);
}

static void test_bq_explore_poll_deadline_holds_despite_stolen_wakeups(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:2 random:3", .schedules = 600, .spurious = 1 };
    kit_explore(&options, poll_against_stolen_wakeups, NULL);
}

/* ---- Waking only the side that can proceed -----------------------------------------
 * bq.h: "A put wakes one consumer, a take wakes one producer - only the side
 * that can now proceed, and only if someone of that side is waiting." The
 * scheduler counts the futile wake-ups: a thread woken that finds nothing
 * to do and waits again at once. Three sleepers of one side, one change
 * that lets one of them through: the other two must sleep on, unwoken. */

#define SLEEPERS 3

static void check_no_futile_wakeup(long before, const char *change, const char *sleepers)
{
    long futile = kit_sched_futile_wakeups() - before;
    kit_explore_check(futile == 0,
                      "%s woke %ld sleeping %s, and %ld of them found nothing to do and slept again: with only %s "
                      "asleep, it must wake one of them (bq.h: only the side that can now proceed)",
                      change, futile + 1, sleepers, futile, sleepers);
}

static void one_put_for_sleeping_takers(void *ctx)
{
    (void)ctx;
    bq_t *q = NULL;
    pthread_t takers[SLEEPERS];
    struct side took[SLEEPERS];
    explore_ok(bq_create(&q, 2));
    for (int i = 0; i < SLEEPERS; i++)
        start(&takers[i], take_once, &took[i], q, i);
    kit_explore_await_sleepers(SLEEPERS);
    long before = kit_sched_futile_wakeups();
    explore_ok(bq_put(q, item_of(0, 0)));
    kit_explore_await_quiet();
    check_no_futile_wakeup(before, "one bq_put", "takers");
    explore_ok(bq_close(q));
    for (int i = 0; i < SLEEPERS; i++)
        explore_ok(pthread_join(takers[i], NULL));
    bq_destroy(q);
}

static void test_bq_explore_a_put_wakes_one_sleeping_taker(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dpor:2", .schedules = 1000 };
    kit_explore(&options, one_put_for_sleeping_takers, NULL);
}

static void one_take_for_sleeping_producers(void *ctx)
{
    (void)ctx;
    bq_t *q = NULL;
    pthread_t producers[SLEEPERS];
    struct side put[SLEEPERS];
    explore_ok(bq_create(&q, 1));
    explore_ok(bq_put(q, item_of(9, 0)));
    for (int i = 0; i < SLEEPERS; i++)
        start(&producers[i], put_once, &put[i], q, i);
    kit_explore_await_sleepers(SLEEPERS);
    long before = kit_sched_futile_wakeups();
    void *item = NULL;
    explore_ok(bq_take(q, &item));
    kit_explore_await_quiet();
    check_no_futile_wakeup(before, "one bq_take", "producers");
    explore_ok(bq_close(q));
    for (int i = 0; i < SLEEPERS; i++)
        explore_ok(pthread_join(producers[i], NULL));
    bq_destroy(q);
}

static void test_bq_explore_a_take_wakes_one_sleeping_producer(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dpor:2", .schedules = 1000 };
    kit_explore(&options, one_take_for_sleeping_producers, NULL);
}

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

static void *make_queue(long capacity, void *state)
{
    struct queue_model *m = state;
    *m = (struct queue_model){ .capacity = (int)capacity };
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

static const kit_spec_t queue_spec = {
    .object = "q",
    .state_size = sizeof(struct queue_model),
    .param = draw_capacity,
    .create = make_queue,
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

/* Scenarios nobody wrote: a few calls (a full queue, a poll that timed
 * out, a close), then two or three threads of a few calls each, every
 * interleaving of each searched up to equivalence; some order of the calls
 * must explain each history, and a call still asleep at the
 * end one the queue keeps waiting. */
static void test_bq_explore_generated_scenarios(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dpor:2", .schedules = 300, .spurious = 1, .timeouts_race = true };
    kit_scenarios(&queue_spec, 250, &options);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_bq_explore_two_producers_two_consumers),
    cmocka_unit_test(test_bq_explore_each_put_wakes_a_sleeping_taker),
    cmocka_unit_test(test_bq_explore_close_wakes_every_sleeper),
    cmocka_unit_test(test_bq_explore_destroy_wakes_every_sleeper),
    cmocka_unit_test(test_bq_explore_destroy_waits_again_after_a_spurious_wakeup),
    cmocka_unit_test(test_bq_explore_poll_deadline_holds_despite_stolen_wakeups),
    cmocka_unit_test(test_bq_explore_a_put_wakes_one_sleeping_taker),
    cmocka_unit_test(test_bq_explore_a_take_wakes_one_sleeping_producer),
    cmocka_unit_test(test_bq_explore_generated_scenarios),
};

KIT_TEST_MAIN(tests)
