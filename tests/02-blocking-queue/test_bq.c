/**
 * @file test_bq.c
 * @brief Chapter 02 tests: the two-condvar queue waits, wakes the side that can
 *        proceed, keeps one deadline, and every reject policy accounts for its item.
 *
 * Workers never assert (cmocka is not thread-safe): a worker makes one call,
 * records what it returned, how long it took and on which thread, and the
 * main thread checks the record after joining it.
 *
 * What a test shares with the threads it starts (calls, jobs, latches,
 * workers) is static, not on the test's stack: a test that fails leaves
 * through cmocka's longjmp while such a thread may still run, and that
 * thread must then find its objects alive, not a stack frame reused by
 * the failure report.
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_test.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "bq.h"
#include "kit_errno.h"
#include "kit_time.h"

/* Long enough that a call which waits for it would fail the test visibly,
 * short enough that the runner's own limit does not hit first. */
enum { LONG_WAIT_MS = 20000, AT_ONCE_BOUND_MS = 5000 };

static void *item(intptr_t n)
{
    return (void *)n;
}

static int64_t ns_of_ms(long ms)
{
    return (int64_t)ms * 1000000;
}

static bq_t *make_queue(size_t capacity)
{
    bq_t *q = NULL;
    assert_ok(bq_create(&q, capacity));
    assert_non_null_or_say(q, "bq_create returned 0 but left *out NULL");
    return q;
}

static void put_all(bq_t *q, intptr_t first, intptr_t last)
{
    for (intptr_t n = first; n <= last; n++)
        assert_ok(bq_put(q, item(n)));
}

static intptr_t take_value(bq_t *q)
{
    void *out = item(-1);
    assert_ok(bq_take(q, &out));
    return (intptr_t)out;
}

static bq_stats_t stats_of(bq_t *q)
{
    bq_stats_t stats;
    assert_ok(bq_stats(q, &stats));
    return stats;
}

/* Resets the wake-up injection even when a test fails half-way. */
static int stop_injecting(void **state)
{
    (void)state;
    kit_spurious_wakeups(false);
    kit_wakeups_every(0);
    return 0;
}

/* ---- One call on a worker thread ---------------------------------------- */

enum call_kind { CALL_PUT, CALL_OFFER, CALL_TAKE, CALL_POLL, CALL_TRY_PUT };

struct call {
    bq_t *q;
    enum call_kind kind;
    void *item;                /* in: what to put; out: what was taken */
    long timeout_ms;           /* for offer and poll */
    const bq_policy_t *policy; /* for try_put */
    int err;                   /* out: the call's return code */
    int64_t elapsed_ns;        /* out: how long the call took */
    pthread_t thread;          /* out: the thread that made it */
};

static int make_call(struct call *call)
{
    switch (call->kind) {
    case CALL_PUT:
        return bq_put(call->q, call->item);
    case CALL_OFFER:
        return bq_offer(call->q, call->item, call->timeout_ms);
    case CALL_TAKE:
        return bq_take(call->q, &call->item);
    case CALL_POLL:
        return bq_poll(call->q, &call->item, call->timeout_ms);
    case CALL_TRY_PUT:
        return bq_try_put(call->q, call->item, call->policy);
    }
    return -1;
}

static void *call_on_worker(void *raw)
{
    struct call *call = raw;
    call->thread = pthread_self();
    int64_t start = kit_now_ns(); /* before the call computes its deadline: a strict lower bound */
    call->err = make_call(call);
    call->elapsed_ns = kit_now_ns() - start;
    return NULL;
}

/* ---- Items that remember what happened to them --------------------------- */

/* The policies' callbacks receive only the item, so the item carries its
 * own record: how often it was discarded or run, and on which thread. */
struct tracked {
    int id;
    atomic_int discarded;
    atomic_int ran;
    atomic_int taken;
    atomic_int rejected;
    pthread_t ran_on;
};

static void discard_tracked(void *raw)
{
    struct tracked *t = raw;
    atomic_fetch_add(&t->discarded, 1);
}

static void run_tracked(void *raw)
{
    struct tracked *t = raw;
    t->ran_on = pthread_self();
    atomic_fetch_add(&t->ran, 1);
}

static void init_tracked(struct tracked *items, int count)
{
    for (int i = 0; i < count; i++) {
        items[i].id = i;
        atomic_init(&items[i].discarded, 0);
        atomic_init(&items[i].ran, 0);
        atomic_init(&items[i].taken, 0);
        atomic_init(&items[i].rejected, 0);
    }
}

/* ---- Arguments ------------------------------------------------------------- */

static void test_bq_create_rejects_bad_arguments(void **state)
{
    (void)state;
    bq_t *q = (bq_t *)&q; /* not NULL: create must reset it on failure */
    assert_err(bq_create(NULL, 1), EINVAL);
    assert_err(bq_create(&q, 0), EINVAL);
    assert_null_or_say(q, "bq_create failed with EINVAL but did not set *out to NULL");
    q = (bq_t *)&q;
    assert_err(bq_create(&q, SIZE_MAX), EINVAL); /* the ring's size would overflow */
    assert_null_or_say(q, "bq_create failed with EINVAL but did not set *out to NULL");
}

static int create_and_destroy(void *ctx)
{
    bq_t *q = (bq_t *)&q;
    int err = bq_create(&q, *(size_t *)ctx);
    if (err == ENOSYS) {
        kit_fail_allocation(0); /* disarmed before the test ends here */
        fail_msg("bq_create returned ENOSYS: not implemented yet - write it in exercises/02-blocking-queue/");
    }
    if (err != 0 && q != NULL) {
        kit_fail_allocation(0);
        fail_msg("bq_create returned %s but left the queue pointer set: after a failure it must be NULL",
                 kit_errno_name(err));
    }
    bq_destroy(q);
    return err;
}

/* Each allocation create makes (however many that is), failed in turn. */
static void test_bq_create_undoes_partial_work_without_memory(void **state)
{
    (void)state;
    size_t capacity = 8;
    assert_true_or_say(kit_sweep_allocation_failures("bq_create", create_and_destroy, &capacity) >= 1,
        "bq_create allocated nothing: the queue must live in memory it allocates");
}

static void test_bq_calls_with_bad_arguments_give_einval(void **state)
{
    (void)state;
    bq_t *q = make_queue(2);
    put_all(q, 1, 1); /* one item, one free slot: a bad call must not touch either */
    void *out = item(-7);
    bq_stats_t stats;
    static bq_policy_t abort_policy;
    abort_policy = bq_policy_abort();
    static bq_policy_t no_function;
    no_function = (bq_policy_t){ .reject = NULL };

    assert_err(bq_put(NULL, item(2)), EINVAL);
    assert_err(bq_offer(NULL, item(2), 10), EINVAL);
    assert_err(bq_offer(q, item(2), -1), EINVAL);
    assert_err(bq_take(NULL, &out), EINVAL);
    assert_err(bq_take(q, NULL), EINVAL);
    assert_err(bq_poll(NULL, &out, 0), EINVAL);
    assert_err(bq_poll(q, NULL, 0), EINVAL);
    assert_err(bq_poll(q, &out, -1), EINVAL);
    assert_err(bq_try_put(NULL, item(2), &abort_policy), EINVAL);
    assert_err(bq_try_put(q, item(2), NULL), EINVAL);
    assert_err(bq_try_put(q, item(2), &no_function), EINVAL); /* refused although there is room */
    assert_err(bq_stats(NULL, &stats), EINVAL);
    assert_err(bq_stats(q, NULL), EINVAL);
    assert_err(bq_close(NULL), EINVAL);
    assert_int_equal(bq_size(NULL), 0);
    assert_int_equal(bq_capacity(NULL), 0);
    bq_destroy(NULL);

    assert_ptr_equal_or_say(out, item(-7), "a call refused with EINVAL changed its out-parameter");
    assert_int_equal(bq_capacity(q), 2);
    assert_int_equal(bq_size(q), 1); /* nothing slipped in, nothing was taken */
    size_t rejected = stats_of(q).rejected;
    if (rejected != 0)
        fail_msg("bq_stats(...).rejected is %zu after calls refused for bad arguments; expected 0: EINVAL for a "
                 "NULL queue or policy, or a policy whose reject is NULL, is not counted (bq.h)", rejected);
    assert_int_equal_or_say(take_value(q), 1, "bq_take gave another item than the one put");
    bq_destroy(q);
}

/* ---- Order, blocking, deadlines ------------------------------------------------ */

static void test_bq_fifo_order_across_wrap(void **state)
{
    (void)state;
    bq_t *q = make_queue(3);
    put_all(q, 1, 3);
    assert_int_equal(bq_size(q), 3);
    assert_int_equal_or_say(take_value(q), 1, "bq_take gave another item than the oldest (first in, first out)");
    assert_ok(bq_offer(q, item(4), 0)); /* wraps around the ring; room, so 0 ms is enough */
    assert_int_equal_or_say(take_value(q), 2, "bq_take gave another item than the oldest (first in, first out)");
    assert_ok(bq_offer(q, NULL, 0)); /* NULL is an item like any other */
    void *out = item(-1);
    assert_ok(bq_poll(q, &out, 0));
    assert_ptr_equal_or_say(out, item(3), "bq_poll gave another item than the oldest (first in, first out)");
    assert_int_equal_or_say(take_value(q), 4,
        "bq_take gave another item than the oldest, after the ring wrapped around");
    assert_ok(bq_poll(q, &out, 0));
    assert_null_or_say(out, "bq_poll took an item other than the NULL that was put");
    assert_int_equal(bq_size(q), 0);
    bq_stats_t stats = stats_of(q);
    assert_int_equal(stats.enqueued, 5);
    assert_int_equal(stats.taken, 5);
    bq_destroy(q);
}

static void test_bq_put_blocks_while_full_until_take(void **state)
{
    (void)state;
    bq_t *q = make_queue(1);
    put_all(q, 1, 1);
    static struct call call;
    call = (struct call){ .q = q, .kind = CALL_PUT, .item = item(2), .err = -1 };
    static kit_worker_t putter;
    kit_worker_start(&putter, "putter", call_on_worker, &call);
    kit_worker_must_block(&putter, 200, "bq_put on a full queue");
    assert_int_equal_or_say(take_value(q), 1, "bq_take gave another item than the one that filled the queue");
    kit_worker_must_finish(&putter, "bq_put after a take made room");
    assert_code_or_say(call.err, 0, "the bq_put that waited for room");
    assert_int_equal_or_say(take_value(q), 2, "bq_take gave another item than the one the waiting put brought");
    bq_destroy(q);
}

static void test_bq_take_blocks_while_empty_until_put(void **state)
{
    (void)state;
    bq_t *q = make_queue(2);
    static struct call call;
    call = (struct call){ .q = q, .kind = CALL_TAKE, .item = item(-1), .err = -1 };
    static kit_worker_t taker;
    kit_worker_start(&taker, "taker", call_on_worker, &call);
    kit_worker_must_block(&taker, 200, "bq_take on an empty queue");
    put_all(q, 42, 42);
    kit_worker_must_finish(&taker, "bq_take after a put");
    assert_code_or_say(call.err, 0, "the bq_take that waited for an item");
    assert_ptr_equal_or_say(call.item, item(42), "the waiting bq_take got another item than the one put");
    bq_destroy(q);
}

static void test_bq_offer_waits_its_timeout_when_full(void **state)
{
    (void)state;
    bq_t *q = make_queue(1);
    put_all(q, 1, 1);
    int64_t start = kit_now_ns();
    assert_err(bq_offer(q, item(2), 200), ETIMEDOUT);
    int64_t waited = kit_now_ns() - start;
    if (waited < ns_of_ms(200))
        fail_msg("bq_offer(200 ms) gave up after %.1f ms", (double)waited / 1e6);
    assert_err(bq_offer(q, item(3), 0), ETIMEDOUT); /* 0 ms: do not wait at all */
    assert_int_equal(bq_size(q), 1);
    assert_int_equal_or_say(take_value(q), 1, "bq_take gave another item than the one queued: a refused offer got in");
    bq_destroy(q);
}

static void test_bq_offer_proceeds_as_soon_as_there_is_room(void **state)
{
    (void)state;
    bq_t *q = make_queue(1);
    int64_t start = kit_now_ns();
    assert_ok(bq_offer(q, item(1), LONG_WAIT_MS)); /* room now: no waiting */
    if (kit_elapsed_ms(start) > AT_ONCE_BOUND_MS)
        fail_msg("bq_offer waited %.0f ms although there was room", kit_elapsed_ms(start));

    static struct call call;
    call = (struct call){ .q = q, .kind = CALL_OFFER, .item = item(2), .timeout_ms = LONG_WAIT_MS, .err = -1 };
    static kit_worker_t offerer;
    kit_worker_start(&offerer, "offerer", call_on_worker, &call);
    kit_worker_must_block(&offerer, 200, "bq_offer on a full queue");
    assert_int_equal_or_say(take_value(q), 1, "bq_take gave another item than the one that filled the queue");
    kit_worker_must_finish(&offerer, "bq_offer after a take made room");
    assert_code_or_say(call.err, 0,
        "the bq_offer that waited for room (released by the take, long before its deadline)");
    assert_int_equal_or_say(take_value(q), 2, "bq_take gave another item than the one the waiting offer brought");
    bq_destroy(q);
}

static void test_bq_poll_waits_its_timeout_when_empty(void **state)
{
    (void)state;
    bq_t *q = make_queue(1);
    void *out = item(-7);
    int64_t start = kit_now_ns();
    assert_err(bq_poll(q, &out, 200), ETIMEDOUT);
    int64_t waited = kit_now_ns() - start;
    if (waited < ns_of_ms(200))
        fail_msg("bq_poll(200 ms) gave up after %.1f ms", (double)waited / 1e6);
    assert_err(bq_poll(q, &out, 0), ETIMEDOUT);
    assert_ptr_equal_or_say(out, item(-7), "bq_poll gave ETIMEDOUT but changed *out");
    bq_stats_t stats = stats_of(q);
    assert_int_equal(stats.taken, 0);
    bq_destroy(q);
}

static void test_bq_poll_proceeds_as_soon_as_an_item_arrives(void **state)
{
    (void)state;
    bq_t *q = make_queue(1);
    put_all(q, 1, 1);
    void *out = item(-1);
    int64_t start = kit_now_ns();
    assert_ok(bq_poll(q, &out, LONG_WAIT_MS)); /* an item is there: no waiting */
    if (kit_elapsed_ms(start) > AT_ONCE_BOUND_MS)
        fail_msg("bq_poll waited %.0f ms although an item was queued", kit_elapsed_ms(start));
    assert_ptr_equal_or_say(out, item(1), "bq_poll gave another item than the one queued");

    static struct call call;
    call = (struct call){ .q = q, .kind = CALL_POLL, .item = item(-1), .timeout_ms = LONG_WAIT_MS, .err = -1 };
    static kit_worker_t poller;
    kit_worker_start(&poller, "poller", call_on_worker, &call);
    kit_worker_must_block(&poller, 200, "bq_poll on an empty queue");
    put_all(q, 7, 7);
    kit_worker_must_finish(&poller, "bq_poll after a put");
    assert_code_or_say(call.err, 0, "the bq_poll that waited for an item");
    assert_ptr_equal_or_say(call.item, item(7), "the waiting bq_poll got another item than the one put");
    bq_destroy(q);
}

/* Every 20 ms the waiting thread is woken with nothing for it, as if another
 * thread kept taking the item it was woken for. One deadline, kept across
 * those wake-ups, still expires at 300 ms; a wait that restarts "now + 300 ms"
 * after each wake-up never does. */
static void check_times_out_despite_wakeups(struct call *call, const char *what)
{
    long injected_before = kit_spurious_count();
    kit_wakeups_every(20);
    kit_worker_t waiter;
    kit_worker_start(&waiter, what, call_on_worker, call);
    int joined = kit_worker_join(&waiter, AT_ONCE_BOUND_MS, NULL);
    kit_wakeups_every(0);
    if (joined != 0)
        fail_msg("%s(300 ms) still waiting after %d ms of early wake-ups: its deadline restarts at every "
                 "wake-up", what, AT_ONCE_BOUND_MS);
    assert_code_or_say(call->err, ETIMEDOUT, "%s(300 ms), woken early again and again,", what);
    if (call->elapsed_ns < ns_of_ms(300))
        fail_msg("%s(300 ms) gave up after %.1f ms: an early wake-up ended the wait", what,
                 (double)call->elapsed_ns / 1e6);
    assert_true_or_say(kit_spurious_count() > injected_before,
        "%s(300 ms) was never woken early: it does not wait on a condition variable", what);
}

static void test_bq_poll_times_out_despite_stolen_wakeups(void **state)
{
    (void)state;
    bq_t *q = make_queue(1);
    static struct call call;
    call = (struct call){ .q = q, .kind = CALL_POLL, .item = item(-7), .timeout_ms = 300, .err = -1 };
    check_times_out_despite_wakeups(&call, "bq_poll");
    assert_ptr_equal_or_say(call.item, item(-7), "bq_poll gave ETIMEDOUT but changed *out");
    bq_destroy(q);
}

static void test_bq_offer_times_out_despite_stolen_wakeups(void **state)
{
    (void)state;
    bq_t *q = make_queue(1);
    put_all(q, 1, 1);
    static struct call call;
    call = (struct call){ .q = q, .kind = CALL_OFFER, .item = item(2), .timeout_ms = 300, .err = -1 };
    check_times_out_despite_wakeups(&call, "bq_offer");
    assert_int_equal(bq_size(q), 1);
    assert_int_equal_or_say(take_value(q), 1,
        "bq_take gave another item than the one queued: the timed-out offer got in");
    bq_destroy(q);
}

/* With injection on, every first wait returns at once with nothing changed:
 * an `if` around the wait would then give up, or take from an empty ring. */
static void test_bq_spurious_wakeups_do_not_release_waiters(void **state)
{
    (void)state;
    bq_t *q = make_queue(1);
    kit_spurious_wakeups(true);
    static struct call take_call;
    take_call = (struct call){ .q = q, .kind = CALL_TAKE, .item = item(-1), .err = -1 };
    static kit_worker_t taker;
    kit_worker_start(&taker, "taker", call_on_worker, &take_call);
    kit_worker_must_block(&taker, 200, "bq_take on an empty queue woken spuriously");
    /* Asleep, not only not yet returned: on a busy machine 200 ms may pass
     * before the taker reaches its wait, and the count below needs it to. */
    kit_await_waiting_threads(1, "bq_take on an empty queue, woken spuriously once");
    put_all(q, 1, 1);
    kit_worker_must_finish(&taker, "bq_take after a put");
    assert_code_or_say(take_call.err, 0, "the bq_take that waited for an item");
    assert_ptr_equal_or_say(take_call.item, item(1), "the waiting bq_take got another item than the one put");

    put_all(q, 2, 2); /* full again */
    static struct call put_call;
    put_call = (struct call){ .q = q, .kind = CALL_PUT, .item = item(3), .err = -1 };
    static kit_worker_t putter;
    kit_worker_start(&putter, "putter", call_on_worker, &put_call);
    kit_worker_must_block(&putter, 200, "bq_put on a full queue woken spuriously");
    kit_await_waiting_threads(1, "bq_put on a full queue, woken spuriously once");
    kit_spurious_wakeups(false);
    assert_true_or_say(kit_spurious_count() >= 2,
        "fewer than two waits were woken spuriously: bq_take and bq_put must wait on a condition variable");
    assert_int_equal_or_say(take_value(q), 2,
        "bq_take gave another item than the one queued: did a spuriously woken bq_put put?");
    kit_worker_must_finish(&putter, "bq_put after a take");
    assert_code_or_say(put_call.err, 0, "the bq_put that waited for room");
    assert_int_equal_or_say(take_value(q), 3, "bq_take gave another item than the one the waiting put brought");
    bq_destroy(q);
}

/* ---- bq_try_put and the reject policies ------------------------------------- */

/* A user-written policy that only records how it was called. */
struct reject_record {
    int calls;
    bq_t *queue;
    void *item;
    const bq_policy_t *policy;
};

static int record_and_refuse(bq_t *q, void *rejected, const bq_policy_t *policy)
{
    struct reject_record *record = policy->ctx;
    record->calls++;
    record->queue = q;
    record->item = rejected;
    record->policy = policy;
    return EAGAIN;
}

static void test_bq_try_put_enqueues_without_calling_reject_when_there_is_room(void **state)
{
    (void)state;
    bq_t *q = make_queue(2);
    static struct reject_record record;
    record = (struct reject_record){ 0 };
    static bq_policy_t policy;
    policy = (bq_policy_t){ .reject = record_and_refuse, .ctx = &record };
    assert_ok(bq_try_put(q, item(1), &policy));
    assert_ok(bq_try_put(q, item(2), &policy));
    assert_int_equal_or_say(record.calls, 0, "bq_try_put called the policy's reject while the queue had room");
    assert_err(bq_try_put(q, item(3), &policy), EAGAIN); /* full: now the policy decides */
    assert_int_equal_or_say(record.calls, 1, "bq_try_put on a full queue did not call the policy's reject once");
    assert_ptr_equal_or_say(record.queue, q, "the policy's reject was not handed the queue");
    assert_ptr_equal_or_say(record.item, item(3), "the policy's reject was not handed the item that did not fit");
    assert_ptr_equal_or_say(record.policy, &policy, "the policy's reject was not handed its own policy");
    bq_stats_t stats = stats_of(q);
    assert_int_equal(stats.enqueued, 2);
    assert_int_equal(stats.rejected, 1);
    assert_int_equal_or_say(take_value(q), 1, "bq_take gave another item than the oldest: the rejected one got in?");
    assert_int_equal_or_say(take_value(q), 2, "bq_take gave another item than the oldest: the rejected one got in?");
    bq_destroy(q);
}

/* A policy that looks at the queue from inside reject. The queue's mutex is
 * not re-entrant: if bq_try_put still held it, bq_size would wait for it
 * forever - on this thread, which holds it. */
struct lock_probe {
    size_t size_seen;
    bq_stats_t stats_seen;
    int stats_err;
};

static int probe_the_queue(bq_t *q, void *rejected, const bq_policy_t *policy)
{
    (void)rejected;
    struct lock_probe *probe = policy->ctx;
    probe->size_seen = bq_size(q);
    probe->stats_err = bq_stats(q, &probe->stats_seen);
    return EAGAIN;
}

static void test_bq_try_put_calls_reject_without_the_lock(void **state)
{
    (void)state;
    bq_t *q = make_queue(1);
    put_all(q, 1, 1);
    static struct lock_probe probe;
    probe = (struct lock_probe){ .size_seen = 99, .stats_err = -1 };
    static bq_policy_t policy;
    policy = (bq_policy_t){ .reject = probe_the_queue, .ctx = &probe };
    static struct call call;
    call = (struct call){ .q = q, .kind = CALL_TRY_PUT, .item = item(2), .policy = &policy, .err = -1 };
    static kit_worker_t producer;
    kit_worker_start(&producer, "producer", call_on_worker, &call);
    kit_worker_must_finish(&producer, "bq_try_put whose reject calls bq_size (is the lock still held?)");
    assert_code_or_say(call.err, EAGAIN, "bq_try_put whose reject returns EAGAIN");
    assert_int_equal_or_say(probe.size_seen, 1,
        "bq_size called from inside the reject saw another size than the full queue's");
    assert_code_or_say(probe.stats_err, 0, "bq_stats called from inside the reject");
    assert_int_equal_or_say(probe.stats_seen.enqueued, 1,
        "bq_stats called from inside the reject saw another count of items enqueued than 1");
    assert_int_equal(stats_of(q).rejected, 1);
    bq_destroy(q);
}

static void test_bq_try_put_block_waits_for_room(void **state)
{
    (void)state;
    bq_t *q = make_queue(1);
    put_all(q, 1, 1);
    static bq_policy_t policy;
    policy = bq_policy_block();
    static struct call call;
    call = (struct call){ .q = q, .kind = CALL_TRY_PUT, .item = item(2), .policy = &policy, .err = -1 };
    static kit_worker_t producer;
    kit_worker_start(&producer, "producer", call_on_worker, &call);
    kit_worker_must_block(&producer, 200, "bq_try_put with the block policy on a full queue");
    assert_int_equal_or_say(take_value(q), 1, "bq_take gave another item than the one that filled the queue");
    kit_worker_must_finish(&producer, "bq_try_put (block) after a take made room");
    assert_code_or_say(call.err, 0, "bq_try_put with the block policy, released by a take,");
    assert_int_equal_or_say(take_value(q), 2, "bq_take gave another item than the one the blocked bq_try_put brought");
    bq_stats_t stats = stats_of(q);
    assert_int_equal(stats.enqueued, 2);
    assert_int_equal(stats.rejected, 0);
    assert_int_equal(stats.discarded, 0);
    bq_destroy(q);
}

static void test_bq_try_put_timeout_gives_up_after_its_timeout(void **state)
{
    (void)state;
    bq_t *q = make_queue(1);
    put_all(q, 1, 1);
    static bq_policy_t short_wait;
    short_wait = bq_policy_timeout(150);
    int64_t start = kit_now_ns();
    assert_err(bq_try_put(q, item(2), &short_wait), ETIMEDOUT); /* the caller keeps item 2 */
    if (kit_now_ns() - start < ns_of_ms(150))
        fail_msg("the timeout(150) policy gave up after %.1f ms", kit_elapsed_ms(start));
    assert_int_equal(stats_of(q).rejected, 1);

    static bq_policy_t long_wait;
    long_wait = bq_policy_timeout(LONG_WAIT_MS);
    static struct call call;
    call = (struct call){ .q = q, .kind = CALL_TRY_PUT, .item = item(3), .policy = &long_wait, .err = -1 };
    static kit_worker_t producer;
    kit_worker_start(&producer, "producer", call_on_worker, &call);
    kit_worker_must_block(&producer, 200, "bq_try_put with the timeout policy on a full queue");
    assert_int_equal_or_say(take_value(q), 1, "bq_take gave another item than the one that filled the queue");
    kit_worker_must_finish(&producer, "bq_try_put (timeout) after a take made room");
    assert_code_or_say(call.err, 0, "bq_try_put with the timeout policy, released by a take before its deadline,");
    assert_int_equal_or_say(take_value(q), 3,
        "bq_take gave another item than the one the waiting bq_try_put brought (2 was refused)");
    bq_stats_t stats = stats_of(q);
    assert_int_equal(stats.enqueued, 2);
    assert_int_equal(stats.rejected, 1);
    bq_destroy(q);
}

static void test_bq_try_put_discard_gives_the_new_item_away(void **state)
{
    (void)state;
    static struct tracked items[4];
    init_tracked(items, 4);
    bq_t *q = make_queue(2);
    assert_ok(bq_put(q, &items[0]));
    assert_ok(bq_put(q, &items[1]));
    static bq_policy_t with_callback;
    with_callback = bq_policy_discard(discard_tracked);
    assert_ok(bq_try_put(q, &items[2], &with_callback)); /* handled: on_discard owns it */
    assert_int_equal_or_say(atomic_load(&items[2].discarded), 1,
        "the discard policy did not hand the new item to on_discard once");
    static bq_policy_t without_callback;
    without_callback = bq_policy_discard(NULL);
    assert_ok(bq_try_put(q, &items[3], &without_callback)); /* dropped, but counted */

    bq_stats_t stats = stats_of(q);
    assert_int_equal(stats.discarded, 2);
    assert_int_equal(stats.enqueued, 2);
    assert_int_equal(stats.rejected, 0);
    assert_ptr_equal_or_say((struct tracked *)(void *)take_value(q), &items[0],
        "bq_take gave another item than the oldest: the discard policy changed the queue");
    assert_ptr_equal_or_say((struct tracked *)(void *)take_value(q), &items[1],
        "bq_take gave another item than the second oldest: the discard policy changed the queue");
    assert_int_equal_or_say(atomic_load(&items[0].discarded) + atomic_load(&items[1].discarded), 0,
        "the discard policy handed a queued item to on_discard (discards of the queued items)");
    bq_destroy(q);
}

static void test_bq_try_put_discard_oldest_evicts_the_oldest(void **state)
{
    (void)state;
    static struct tracked items[5];
    init_tracked(items, 5);
    bq_t *q = make_queue(3);
    for (int i = 0; i < 3; i++)
        assert_ok(bq_put(q, &items[i]));
    static bq_policy_t with_callback;
    with_callback = bq_policy_discard_oldest(discard_tracked);
    assert_ok(bq_try_put(q, &items[3], &with_callback));
    assert_int_equal_or_say(atomic_load(&items[0].discarded), 1,
        "discard-oldest did not hand the evicted oldest item to on_discard once");
    static bq_policy_t without_callback;
    without_callback = bq_policy_discard_oldest(NULL);
    assert_ok(bq_try_put(q, &items[4], &without_callback)); /* evicts items[1], counted */

    bq_stats_t stats = stats_of(q);
    assert_int_equal(stats.discarded, 2);
    assert_int_equal(stats.enqueued, 5);
    assert_int_equal(stats.rejected, 0);
    assert_int_equal(bq_size(q), 3);
    for (int i = 2; i < 5; i++) { /* the new items are queued, in order */
        assert_ptr_equal_or_say((struct tracked *)(void *)take_value(q), &items[i],
            "bq_take after discard-oldest gave another item than item %d (the newer ones stay, in order)", i);
        assert_int_equal_or_say(atomic_load(&items[i].discarded), 0,
            "discard-oldest handed item %d, which stays queued, to on_discard", i);
    }
    bq_destroy(q);
}

/* bq_try_put() finds the queue full and then, without the lock, calls the
 * policy: by then a take may have made room, or a close may have come.
 * Calling a policy's reject function directly on such a queue stages that
 * moment every time. Discard-oldest looks again; discard does not. */
static void test_bq_try_put_policies_called_after_the_queue_changed(void **state)
{
    (void)state;
    static struct tracked items[4];
    init_tracked(items, 4);
    bq_t *q = make_queue(2);
    assert_ok(bq_put(q, &items[0])); /* room for one more: a take came after the full check */
    static bq_policy_t oldest;
    oldest = bq_policy_discard_oldest(discard_tracked);
    assert_code_or_say(oldest.reject(q, &items[1], &oldest), 0,
        "the discard-oldest policy's reject, called on a full queue,");
    if (atomic_load(&items[0].discarded) != 0)
        fail_msg("discard-oldest evicted the oldest item although the queue had room again: "
                 "it must check under the lock that the queue is still full");
    assert_int_equal(bq_size(q), 2);
    bq_stats_t stats = stats_of(q);
    assert_int_equal(stats.discarded, 0);
    assert_int_equal(stats.enqueued, 2);

    assert_ok(bq_close(q)); /* a close came after the full check */
    assert_code_or_say(oldest.reject(q, &items[2], &oldest), ECANCELED,
        "the discard-oldest policy's reject, called after a close,");
    assert_int_equal_or_say(atomic_load(&items[0].discarded) + atomic_load(&items[2].discarded), 0,
        "discard-oldest on a closed queue handed an item to on_discard (it must refuse and keep both)");
    assert_int_equal(bq_size(q), 2); /* nothing evicted, nothing added: the caller keeps items[2] */

    static bq_policy_t discard;
    discard = bq_policy_discard(discard_tracked);
    assert_code_or_say(discard.reject(q, &items[3], &discard), 0, "the discard policy's reject, called directly,");
    assert_int_equal_or_say(atomic_load(&items[3].discarded), 1,
        "the discard policy's reject did not hand the item it was given to on_discard once");
    assert_int_equal(stats_of(q).discarded, 1);

    void *out = NULL;
    assert_err(bq_offer(q, item(9), 0), ECANCELED); /* closed wins over a deadline that has passed */
    assert_ok(bq_poll(q, &out, 0));
    assert_ok(bq_poll(q, &out, 0));
    assert_err(bq_poll(q, &out, 0), ECANCELED);
    bq_destroy(q);
}

/* Item functions run without the queue's lock (bq.h): each one here calls
 * bq_size(), which would wait for ever on a lock its own thread holds. */
static bq_t *queue_seen_by_callback;

static void record_size(void *item)
{
    *(size_t *)item = bq_size(queue_seen_by_callback);
}

static void test_bq_try_put_item_functions_run_without_the_lock(void **state)
{
    (void)state;
    static size_t slots[4];
    static struct call calls[3];
    static kit_worker_t producers[3];
    static bq_policy_t policies[3];
    static const char *names[3] = { "discard", "discard-oldest", "caller-runs" };
    bq_t *q = make_queue(1);
    queue_seen_by_callback = q;
    policies[0] = bq_policy_discard(record_size);
    policies[1] = bq_policy_discard_oldest(record_size);
    policies[2] = bq_policy_caller_runs(record_size);
    slots[3] = 99;
    assert_ok(bq_put(q, &slots[3]));
    for (int i = 0; i < 3; i++) {
        slots[i] = 99;
        calls[i] = (struct call){ .q = q, .kind = CALL_TRY_PUT, .item = &slots[i], .policy = &policies[i], .err = -1 };
        kit_worker_start(&producers[i], names[i], call_on_worker, &calls[i]);
        if (kit_worker_join(&producers[i], KIT_HANG_MS, NULL) != 0)
            fail_msg("bq_try_put with the %s policy, whose item function calls bq_size: still blocked after %ld ms "
                     "- the item function was called with the queue's lock held", names[i], KIT_HANG_MS);
        assert_code_or_say(calls[i].err, 0, "bq_try_put with the %s policy", names[i]);
    }
    assert_int_equal_or_say(slots[0], 1,
        "the discard policy's on_discard saw another queue size than 1 (the queue still held one)");
    assert_true_or_say(slots[3] <= 1,
        "discard-oldest's on_discard saw the queue holding more than one item: %zu", slots[3]);
    assert_int_equal_or_say(slots[2], 1,
        "the caller-runs policy's run saw another queue size than 1 (the queue still held one)");
    bq_destroy(q);
}

static void test_bq_try_put_abort_returns_eagain_and_keeps_the_item(void **state)
{
    (void)state;
    static struct tracked items[2];
    init_tracked(items, 2);
    bq_t *q = make_queue(1);
    assert_ok(bq_put(q, &items[0]));
    static bq_policy_t policy;
    policy = bq_policy_abort();
    assert_err(bq_try_put(q, &items[1], &policy), EAGAIN); /* the caller still owns items[1] */
    assert_int_equal_or_say(atomic_load(&items[1].discarded) + atomic_load(&items[1].ran), 0,
        "the abort policy discarded or ran the item it refused (times it was discarded or run)");
    bq_stats_t stats = stats_of(q);
    assert_int_equal(stats.rejected, 1);
    assert_int_equal(stats.discarded, 0);
    assert_int_equal(stats.enqueued, 1);
    assert_int_equal(bq_size(q), 1);
    assert_ptr_equal_or_say((struct tracked *)(void *)take_value(q), &items[0],
        "bq_take gave another item than the one queued before the abort");
    bq_destroy(q);
}

static void test_bq_try_put_caller_runs_on_the_calling_thread(void **state)
{
    (void)state;
    static struct tracked items[3];
    init_tracked(items, 3);
    bq_t *q = make_queue(1);
    assert_ok(bq_put(q, &items[0]));
    static bq_policy_t policy;
    policy = bq_policy_caller_runs(run_tracked);
    static struct call call;
    call = (struct call){ .q = q, .kind = CALL_TRY_PUT, .item = &items[1], .policy = &policy, .err = -1 };
    static kit_worker_t producer;
    kit_worker_start(&producer, "producer", call_on_worker, &call);
    kit_worker_must_finish(&producer, "bq_try_put with the caller-runs policy");
    assert_code_or_say(call.err, 0, "bq_try_put with the caller-runs policy");
    assert_int_equal_or_say(atomic_load(&items[1].ran), 1, "the caller-runs policy did not run the item once");
    assert_true_or_say(pthread_equal(items[1].ran_on, call.thread),
        "the caller-runs policy ran the item on another thread than the caller of bq_try_put");
    assert_false_or_say(pthread_equal(items[1].ran_on, pthread_self()),
        "the caller-runs policy ran the item on the test's thread, not on the caller of bq_try_put");

    static bq_policy_t no_run;
    no_run = bq_policy_caller_runs(NULL);
    assert_err(bq_try_put(q, &items[2], &no_run), EINVAL); /* nothing to run it with: caller keeps it */
    bq_stats_t stats = stats_of(q);
    assert_int_equal(stats.run_by_caller, 1);
    assert_int_equal(stats.rejected, 1);
    assert_int_equal(stats.enqueued, 1);
    assert_ptr_equal_or_say((struct tracked *)(void *)take_value(q), &items[0],
        "bq_take gave another item than the one queued before the caller-runs");
    bq_destroy(q);
}

/* A user-written policy: overflow goes to a spill area named by ctx, until
 * that is full too. */
struct spill {
    void *items[2];
    size_t count;
};

static int spill_over(bq_t *q, void *rejected, const bq_policy_t *policy)
{
    (void)q;
    struct spill *spill = policy->ctx;
    if (spill->count == sizeof spill->items / sizeof spill->items[0])
        return ENOSPC;
    spill->items[spill->count++] = rejected;
    return 0;
}

static void test_bq_try_put_custom_policy_uses_its_context(void **state)
{
    (void)state;
    bq_t *q = make_queue(1);
    static struct spill spill;
    spill = (struct spill){ .count = 0 };
    static bq_policy_t policy;
    policy = (bq_policy_t){ .reject = spill_over, .ctx = &spill };
    assert_ok(bq_try_put(q, item(1), &policy)); /* room: queued */
    assert_ok(bq_try_put(q, item(2), &policy)); /* full: spilled */
    assert_ok(bq_try_put(q, item(3), &policy));
    assert_err(bq_try_put(q, item(4), &policy), ENOSPC); /* the policy's own error comes back */
    assert_int_equal_or_say(spill.count, 2,
        "the custom policy's reject was not called once for each item that did not fit");
    assert_ptr_equal_or_say(spill.items[0], item(2),
        "the custom policy's reject was handed another item than the first that did not fit");
    assert_ptr_equal_or_say(spill.items[1], item(3),
        "the custom policy's reject was handed another item than the second that did not fit");
    bq_stats_t stats = stats_of(q);
    assert_int_equal(stats.enqueued, 1);
    assert_int_equal(stats.rejected, 1);
    assert_int_equal_or_say(take_value(q), 1, "bq_take gave another item than the one queued: a rejected one got in?");
    bq_destroy(q);
}

/* ---- Close -------------------------------------------------------------------- */

enum { BLOCKED = 3 };

static void test_bq_close_wakes_every_blocked_taker(void **state)
{
    (void)state;
    bq_t *q = make_queue(1);
    static struct call calls[BLOCKED];
    static kit_worker_t takers[BLOCKED];
    for (int i = 0; i < BLOCKED; i++) {
        /* take, a long poll, take: every kind of waiting consumer */
        calls[i] = (struct call){ .q = q, .kind = i == 1 ? CALL_POLL : CALL_TAKE, .item = item(-7),
                                  .timeout_ms = LONG_WAIT_MS, .err = -1 };
        kit_worker_start(&takers[i], "taker", call_on_worker, &calls[i]);
    }
    kit_await_waiting_threads(BLOCKED, "takers on an empty queue");
    assert_ok(bq_close(q));
    for (int i = 0; i < BLOCKED; i++) {
        kit_worker_must_finish(&takers[i], "a taker blocked when the queue was closed");
        assert_code_or_say(calls[i].err, ECANCELED, "a bq_take blocked when the queue was closed");
        assert_ptr_equal_or_say(calls[i].item, item(-7), "a bq_take that gave ECANCELED changed *out");
    }
    bq_destroy(q);
}

/* Destroying a queue under sleeping threads wakes them and frees the memory
 * only after they have left: a putter and a taker (on two queues' worth of
 * states: one full, one empty) both come back with ECANCELED. */
static void test_bq_destroy_wakes_blocked_threads_first(void **state)
{
    (void)state;
    bq_t *empty = make_queue(1), *full = make_queue(1);
    assert_ok(bq_put(full, item(1)));
    static struct call take;
    take = (struct call){ .q = empty, .kind = CALL_TAKE, .item = item(-7), .err = -1 };
    static struct call put;
    put = (struct call){ .q = full, .kind = CALL_PUT, .item = item(2), .err = -1 };
    static kit_worker_t taker, putter;
    kit_worker_start(&taker, "taker", call_on_worker, &take);
    kit_worker_start(&putter, "putter", call_on_worker, &put);
    kit_await_waiting_threads(2, "a taker on an empty queue and a putter on a full one");
    bq_destroy(empty);
    bq_destroy(full);
    kit_worker_must_finish(&taker, "bq_take asleep when the queue was destroyed");
    kit_worker_must_finish(&putter, "bq_put asleep when the queue was destroyed");
    assert_code_or_say(take.err, ECANCELED, "the bq_take asleep when the queue was destroyed");
    assert_code_or_say(put.err, ECANCELED, "the bq_put asleep when the queue was destroyed");
}

static void test_bq_close_wakes_every_blocked_putter(void **state)
{
    (void)state;
    bq_t *q = make_queue(1);
    put_all(q, 10, 10);
    static bq_policy_t block;
    block = bq_policy_block();
    enum call_kind kinds[BLOCKED] = { CALL_PUT, CALL_OFFER, CALL_TRY_PUT };
    static struct call calls[BLOCKED];
    static kit_worker_t putters[BLOCKED];
    for (int i = 0; i < BLOCKED; i++) {
        calls[i] = (struct call){ .q = q, .kind = kinds[i], .item = item(i), .timeout_ms = LONG_WAIT_MS,
                                  .policy = &block, .err = -1 };
        kit_worker_start(&putters[i], "putter", call_on_worker, &calls[i]);
    }
    kit_await_waiting_threads(BLOCKED, "putters on a full queue");
    assert_ok(bq_close(q));
    for (int i = 0; i < BLOCKED; i++) {
        kit_worker_must_finish(&putters[i], "a putter blocked when the queue was closed");
        assert_code_or_say(calls[i].err, ECANCELED,
            "a put blocked when the queue was closed (each caller keeps its item)");
    }
    assert_int_equal(stats_of(q).rejected, 1); /* the bq_try_put */
    assert_int_equal_or_say(take_value(q), 10, "after the close, bq_take did not give the item queued before it");
    void *out = item(-7);
    assert_err(bq_take(q, &out), ECANCELED);
    bq_destroy(q);
}

static void test_bq_close_drains_then_cancels(void **state)
{
    (void)state;
    static struct tracked late;
    init_tracked(&late, 1);
    bq_t *q = make_queue(4);
    put_all(q, 1, 2);
    assert_ok(bq_close(q));
    assert_ok(bq_close(q)); /* twice is harmless */
    static bq_policy_t discard;
    discard = bq_policy_discard(discard_tracked);
    assert_err(bq_put(q, item(3)), ECANCELED);
    assert_err(bq_offer(q, item(3), 0), ECANCELED);
    assert_err(bq_try_put(q, &late, &discard), ECANCELED); /* refused, not discarded: still ours */
    assert_int_equal_or_say(atomic_load(&late.discarded), 0,
        "a bq_try_put refused after the close handed its item to on_discard (refused, it is still the caller's)");

    assert_int_equal_or_say(take_value(q), 1, "after the close, bq_take did not give the oldest item queued before it");
    void *out = item(-7);
    assert_ok(bq_poll(q, &out, 0));
    assert_ptr_equal_or_say(out, item(2), "after the close, bq_poll did not give the next item queued before it");
    out = item(-7);
    assert_err(bq_take(q, &out), ECANCELED);
    assert_err(bq_poll(q, &out, 0), ECANCELED);
    assert_err(bq_poll(q, &out, 100), ECANCELED); /* closed and empty: no point waiting */
    assert_ptr_equal_or_say(out, item(-7), "bq_poll gave ECANCELED but changed *out");
    bq_stats_t stats = stats_of(q);
    assert_int_equal(stats.enqueued, 2);
    assert_int_equal(stats.taken, 2);
    if (stats.rejected != 1)
        fail_msg("bq_stats(...).rejected is %zu after one bq_try_put on a closed queue; expected 1: ECANCELED from "
                 "a closed queue is counted in rejected (bq.h)", stats.rejected);
    bq_destroy(q);
}

static void test_bq_destroy_frees_everything(void **state)
{
    (void)state;
    long before = kit_live_allocations();
    bq_t *q = make_queue(64);
    put_all(q, 0, 9);
    assert_int_equal_or_say(take_value(q), 0, "bq_take gave another item than the oldest (first in, first out)");
    bq_destroy(q); /* nine items still queued: they are the caller's, not freed */
    assert_no_leak_since(before);
}

/* ---- Many producers, many consumers ------------------------------------------ */

enum { PRODUCERS = 4, CONSUMERS = 3, MAX_PER_PRODUCER = 4000 };

static int per_producer(void)
{
    /* ThreadSanitizer and valgrind run 10-50x slower: fewer items, same interleavings. */
    return getenv("KIT_SLOW") ? MAX_PER_PRODUCER / 4 : MAX_PER_PRODUCER;
}

struct producer {
    bq_t *q;
    int index;
    int count;
    bool blocking_only; /* put only, or a mix of put, offer and try_put(block) */
    uint64_t seed;
    int failures;
    int first_error;        /* what the first put that failed returned */
    const char *first_call; /* ... and which call it was */
};

struct consumer {
    bq_t *q;
    int index;
    int count; /* items per producer */
    bool blocking_only;
    uint64_t seed;
    int last_seq[PRODUCERS]; /* per producer, the last sequence number seen */
    int out_of_order;        /* a producer's items seen out of order, or garbage */
    int *mine;               /* this consumer's tally per item (merged by the main thread) */
};

static int put_one(struct producer *p, void *value, const char **call)
{
    bq_policy_t block = bq_policy_block();
    switch (p->blocking_only ? 0 : p->index % 3) {
    case 1:
        *call = "bq_offer (with a long timeout)";
        return bq_offer(p->q, value, LONG_WAIT_MS);
    case 2:
        *call = "bq_try_put (policy block)";
        return bq_try_put(p->q, value, &block);
    default:
        *call = "bq_put";
        return bq_put(p->q, value);
    }
}

static void *produce(void *raw)
{
    struct producer *p = raw;
    kit_rng_t rng;
    kit_rng_seed(&rng, p->seed, (uint64_t)p->index);
    for (int seq = 0; seq < p->count; seq++) {
        /* value = producer * count + seq: who sent it, and in which order */
        const char *call;
        int err = put_one(p, item((intptr_t)p->index * p->count + seq), &call);
        if (err != 0 && p->failures++ == 0) {
            p->first_error = err;
            p->first_call = call;
        }
        if (seq % 64 == 0)
            kit_jitter(&rng, 50);
    }
    return NULL;
}

/* Takes one item: bq_take, or short polls that time out again and again
 * while the producers are slow (a timed-out poll must lose nothing). */
static int take_one(struct consumer *c, void **out)
{
    if (c->blocking_only || c->index % 2 == 0)
        return bq_take(c->q, out);
    int err;
    while ((err = bq_poll(c->q, out, 2)) == ETIMEDOUT)
        ;
    return err;
}

static void *consume(void *raw)
{
    struct consumer *c = raw;
    kit_rng_t rng;
    kit_rng_seed(&rng, c->seed, 100 + (uint64_t)c->index);
    void *out;
    int taken = 0, total = PRODUCERS * c->count;
    while (take_one(c, &out) == 0) {
        intptr_t value = (intptr_t)out;
        if (value < 0 || value >= total) {
            c->out_of_order++;
            continue;
        }
        int producer = (int)(value / c->count), seq = (int)(value % c->count);
        if (seq <= c->last_seq[producer])
            c->out_of_order++;
        c->last_seq[producer] = seq;
        c->mine[value]++;
        if (++taken % 64 == 0)
            kit_jitter(&rng, 50);
    }
    return NULL;
}

static void start_consumers(struct consumer *consumers, kit_worker_t *threads, bq_t *q, int count,
                            bool blocking_only, uint64_t seed)
{
    for (int i = 0; i < CONSUMERS; i++) {
        consumers[i] = (struct consumer){ .q = q, .index = i, .count = count, .blocking_only = blocking_only,
                                          .seed = seed };
        consumers[i].mine = calloc((size_t)(PRODUCERS * count), sizeof(int));
        assert_non_null_or_say(consumers[i].mine, "the test could not allocate its tally");
        for (int p = 0; p < PRODUCERS; p++)
            consumers[i].last_seq[p] = -1;
        kit_worker_start(&threads[i], "consumer", consume, &consumers[i]);
    }
}

/* Every item taken exactly once, each producer's items in order. */
static void check_every_item_once(struct consumer *consumers, int count)
{
    int lost = 0, doubled = 0, disorder = 0;
    for (int value = 0; value < PRODUCERS * count; value++) {
        int total = 0;
        for (int i = 0; i < CONSUMERS; i++)
            total += consumers[i].mine[value];
        lost += total == 0;
        doubled += total > 1;
    }
    for (int i = 0; i < CONSUMERS; i++) {
        disorder += consumers[i].out_of_order;
        free(consumers[i].mine);
    }
    if (lost || doubled || disorder)
        fail_msg("%d items lost, %d duplicated, %d out of order (or garbage)", lost, doubled, disorder);
}

static void run_producers_consumers(size_t capacity, bool blocking_only)
{
    bq_t *q = make_queue(capacity);
    uint64_t seed = kit_test_seed();
    int count = per_producer();
    static struct producer producers[PRODUCERS];
    static struct consumer consumers[CONSUMERS];
    static kit_worker_t consumer_threads[CONSUMERS];
    start_consumers(consumers, consumer_threads, q, count, blocking_only, seed);
    for (int i = 0; i < PRODUCERS; i++)
        producers[i] = (struct producer){ .q = q, .index = i, .count = count, .blocking_only = blocking_only,
                                          .seed = seed };
    kit_test_run_group(PRODUCERS, "producer", produce, producers, sizeof producers[0]);
    assert_ok(bq_close(q)); /* consumers drain the rest, then see ECANCELED */
    for (int i = 0; i < CONSUMERS; i++)
        kit_worker_must_finish(&consumer_threads[i], "consumer after close");
    for (int i = 0; i < PRODUCERS; i++)
        if (producers[i].failures != 0)
            fail_msg("producer %d: %d of its %d puts into an open queue failed, expected none; the first, a call of "
                     "%s, returned %s", i, producers[i].failures, producers[i].count, producers[i].first_call,
                     kit_errno_name(producers[i].first_error));
    bq_stats_t stats = stats_of(q);
    assert_int_equal(stats.enqueued, (size_t)(PRODUCERS * count));
    assert_int_equal(stats.taken, (size_t)(PRODUCERS * count));
    bq_destroy(q);
    check_every_item_once(consumers, count);
}

static void test_bq_stress_producers_consumers(void **state)
{
    (void)state;
    run_producers_consumers(2, false);
}

/* Capacity 1: producers and consumers take turns sleeping, each on its own
 * condvar, and a change is signalled only when someone of the other side
 * sleeps. A lost wake-up leaves threads asleep with work to do. */
static void test_bq_stress_capacity_one_wakes_the_right_side(void **state)
{
    (void)state;
    long rounds = kit_test_repeat(2);
    for (long r = 0; r < rounds; r++)
        run_producers_consumers(1, true);
}

/* ---- Every policy under load: where did each item go? ------------------------ */

struct policy_producer {
    bq_t *q;
    struct tracked *items; /* this producer's items */
    int count;
    bq_policy_t policy;
    uint64_t seed;
    int index;
};

static void *offer_with_policy(void *raw)
{
    struct policy_producer *p = raw;
    kit_rng_t rng;
    kit_rng_seed(&rng, p->seed, (uint64_t)p->index);
    for (int i = 0; i < p->count; i++) {
        if (bq_try_put(p->q, &p->items[i], &p->policy) != 0)
            atomic_fetch_add(&p->items[i].rejected, 1); /* still ours: record it */
        if (i % 4 == 0) /* often: so the queue is sometimes full, sometimes not */
            kit_jitter(&rng, 100);
    }
    return NULL;
}

static void *take_tracked(void *raw)
{
    bq_t *q = raw;
    void *out;
    while (bq_take(q, &out) == 0)
        atomic_fetch_add(&((struct tracked *)out)->taken, 1);
    return NULL;
}

/* Each item ends exactly one way - taken, discarded, run or rejected - and
 * the queue's counters agree with what the items saw. */
static void check_every_fate(const struct tracked *items, int total, bq_stats_t stats)
{
    size_t taken = 0, discarded = 0, ran = 0, rejected = 0;
    int wrong = 0;
    for (int i = 0; i < total; i++) {
        int t = atomic_load(&items[i].taken), d = atomic_load(&items[i].discarded);
        int r = atomic_load(&items[i].ran), x = atomic_load(&items[i].rejected);
        wrong += t + d + r + x != 1;
        taken += (size_t)t;
        discarded += (size_t)d;
        ran += (size_t)r;
        rejected += (size_t)x;
    }
    if (wrong)
        fail_msg("%d of %d items were lost or handled more than once", wrong, total);
    assert_int_equal(stats.taken, taken);
    assert_int_equal(stats.discarded, discarded);
    assert_int_equal(stats.run_by_caller, ran);
    assert_int_equal(stats.rejected, rejected);
    assert_int_equal_or_say(taken + discarded + ran + rejected, (size_t)total,
        "taken, discarded, run by the caller and rejected do not add up to the items offered");
}

static void test_bq_stress_policies_account_for_every_item(void **state)
{
    (void)state;
    bq_policy_t policies[PRODUCERS] = { bq_policy_discard_oldest(discard_tracked), bq_policy_abort(),
                                        bq_policy_caller_runs(run_tracked), bq_policy_discard(discard_tracked) };
    int count = per_producer() / 2, total = PRODUCERS * count;
    struct tracked *items = calloc((size_t)total, sizeof *items);
    assert_non_null_or_say(items, "the test could not allocate its items");
    init_tracked(items, total);
    bq_t *q = make_queue(2);
    uint64_t seed = kit_test_seed();
    static kit_worker_t consumers[2];
    for (int i = 0; i < 2; i++)
        kit_worker_start(&consumers[i], "consumer", take_tracked, q);
    static struct policy_producer producers[PRODUCERS];
    for (int i = 0; i < PRODUCERS; i++)
        producers[i] = (struct policy_producer){ q, &items[i * count], count, policies[i], seed, i };
    kit_test_run_group(PRODUCERS, "producer", offer_with_policy, producers, sizeof producers[0]);
    assert_ok(bq_close(q));
    for (int i = 0; i < 2; i++)
        kit_worker_must_finish(&consumers[i], "consumer after close");
    bq_stats_t stats = stats_of(q);
    bq_destroy(q);
    check_every_fate(items, total, stats);
    free(items);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_bq_create_rejects_bad_arguments),
    cmocka_unit_test(test_bq_create_undoes_partial_work_without_memory),
    cmocka_unit_test(test_bq_calls_with_bad_arguments_give_einval),
    cmocka_unit_test(test_bq_fifo_order_across_wrap),
    cmocka_unit_test(test_bq_put_blocks_while_full_until_take),
    cmocka_unit_test(test_bq_take_blocks_while_empty_until_put),
    cmocka_unit_test(test_bq_offer_waits_its_timeout_when_full),
    cmocka_unit_test(test_bq_offer_proceeds_as_soon_as_there_is_room),
    cmocka_unit_test(test_bq_poll_waits_its_timeout_when_empty),
    cmocka_unit_test(test_bq_poll_proceeds_as_soon_as_an_item_arrives),
    cmocka_unit_test_teardown(test_bq_poll_times_out_despite_stolen_wakeups, stop_injecting),
    cmocka_unit_test_teardown(test_bq_offer_times_out_despite_stolen_wakeups, stop_injecting),
    cmocka_unit_test_teardown(test_bq_spurious_wakeups_do_not_release_waiters, stop_injecting),
    cmocka_unit_test(test_bq_try_put_enqueues_without_calling_reject_when_there_is_room),
    cmocka_unit_test(test_bq_try_put_calls_reject_without_the_lock),
    cmocka_unit_test(test_bq_try_put_block_waits_for_room),
    cmocka_unit_test(test_bq_try_put_timeout_gives_up_after_its_timeout),
    cmocka_unit_test(test_bq_try_put_discard_gives_the_new_item_away),
    cmocka_unit_test(test_bq_try_put_discard_oldest_evicts_the_oldest),
    cmocka_unit_test(test_bq_try_put_policies_called_after_the_queue_changed),
    cmocka_unit_test(test_bq_try_put_item_functions_run_without_the_lock),
    cmocka_unit_test(test_bq_try_put_abort_returns_eagain_and_keeps_the_item),
    cmocka_unit_test(test_bq_try_put_caller_runs_on_the_calling_thread),
    cmocka_unit_test(test_bq_try_put_custom_policy_uses_its_context),
    cmocka_unit_test(test_bq_close_wakes_every_blocked_taker),
    cmocka_unit_test(test_bq_close_wakes_every_blocked_putter),
    cmocka_unit_test(test_bq_close_drains_then_cancels),
    cmocka_unit_test(test_bq_destroy_frees_everything),
    cmocka_unit_test(test_bq_destroy_wakes_blocked_threads_first),
    cmocka_unit_test(test_bq_stress_producers_consumers),
    cmocka_unit_test(test_bq_stress_capacity_one_wakes_the_right_side),
    cmocka_unit_test(test_bq_stress_policies_account_for_every_item),
};

KIT_TEST_MAIN(tests)
