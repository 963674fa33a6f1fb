/**
 * @file bq.c
 * @brief Chapter 02 exercise: a bounded blocking queue with two condition
 *        variables and pluggable reject policies.
 *
 * Read chapters/02-blocking-queue/README.md, run `make run CH=02`, then
 * implement the functions below; `make grade CH=02` scores them. Every
 * function returns ENOSYS until you do.
 *
 * The rules of this chapter: ONE mutex guards everything; TWO condition
 * variables, one per condition - producers wait on `not_full`, consumers on
 * `not_empty`; a change signals only the side that can now proceed, and
 * only when a thread of that side is waiting (count them); every wait sits
 * in a `while` loop; a timed wait computes ONE absolute deadline
 * (kit_deadline_after) and reuses it on every turn of that loop; and the
 * reject policy is called AFTER the lock is released.
 */
#define _POSIX_C_SOURCE 200809L
#include "bq.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "kit_log.h"
#include "kit_time.h"
#include "kit_trace.h"

struct bq {
    /* TODO: immutable after create: capacity and a ring of `void *` slots.
     * A mutex and two condvars, not_full and not_empty - made with
     * kit_cond_init(), so that timed waits use CLOCK_MONOTONIC.
     * Guarded by the mutex: head (index of the oldest item), count, the
     * number of threads asleep on each condvar, a closed flag, and a
     * bq_stats_t. */
    int placeholder; /* delete me */
};

int bq_create(bq_t **out, size_t capacity)
{
    /* TODO: EINVAL for NULL out (otherwise set *out = NULL first), capacity
     * 0, or a capacity whose ring would overflow size_t. Allocate the queue
     * and its ring, initialise the mutex and both condvars; if any step
     * fails, undo the earlier ones and return its error. Undo with a goto
     * ladder, the kit's one way (exercises/00-shared-results/HINTS.md,
     * hint 3): each failed step jumps to the label that undoes the step
     * before it; the labels, below the `return 0;`, fall through in
     * reverse order (destroy_not_full, destroy_lock, free_ring, free_q). */
    (void)out;
    (void)capacity;
    return ENOSYS;
}

/* Suggested helpers, all called with the lock held:
 *   push_locked(q, item)  - add at the tail, count it in the stats, and wake
 *                           one consumer if one is asleep
 *                           (PAGE: signal-the-other-side).
 *   pop_locked(q)         - the mirror image on the other side.
 *   wait_for_room_locked(q, deadline) and wait_for_item_locked(q, deadline)
 *                         - deadline NULL waits forever. Sleep (counted)
 *                           while you cannot proceed, the queue is open and
 *                           the deadline has not passed, then decide what
 *                           happened: closed? room (or an item) after all?
 *                           timed out? The program's trace shows each wait:
 *                           log kit_log("bq", "full, waiting on not_full")
 *                           or kit_log("bq", "empty, waiting on not_empty")
 *                           each time before you wait.
 *   Careful: a timed wait can return ETIMEDOUT just as the condition became
 *   true - check the condition, not only the return code. */

int bq_put(bq_t *q, void *item)
{
    /* TODO: EINVAL for NULL q. Wait for room (no deadline) and push;
     * closed -> ECANCELED (the caller keeps item). */
    (void)q;
    (void)item;
    return ENOSYS;
}

int bq_offer(bq_t *q, void *item, long timeout_ms)
{
    /* TODO: EINVAL for NULL q or a negative timeout. Turn timeout_ms into
     * ONE deadline before locking (kit_deadline_after), then as bq_put, but
     * give up with ETIMEDOUT when the deadline passes while still full
     * (0 ms on a full queue: ETIMEDOUT at once). Closed wins: ECANCELED.
     * (PAGE: one-deadline) */
    (void)q;
    (void)item;
    (void)timeout_ms;
    return ENOSYS;
}

int bq_take(bq_t *q, void **out)
{
    /* TODO: EINVAL for NULL arguments. Wait for an item (no deadline) and
     * pop it. An item is delivered even after close; closed and empty ->
     * ECANCELED with *out untouched. */
    (void)q;
    (void)out;
    return ENOSYS;
}

int bq_poll(bq_t *q, void **out, long timeout_ms)
{
    /* TODO: as bq_take with one deadline; still empty at the deadline ->
     * ETIMEDOUT, with *out untouched; closed and empty -> ECANCELED, even
     * when the deadline has passed too. Never return 0 without an item. */
    (void)q;
    (void)out;
    (void)timeout_ms;
    return ENOSYS;
}

int bq_try_put(bq_t *q, void *item, const bq_policy_t *policy)
{
    /* TODO: EINVAL for NULL q, NULL policy or a NULL policy->reject.
     * Closed -> ECANCELED; room -> push; full -> the policy decides, and
     * try_put returns what policy->reject(q, item, policy) returns. Decide
     * under the lock, but call the policy only after unlocking
     * (PAGE: reject-outside-lock); log kit_log("bq", "full: handing the
     * item to the reject policy") before you call it. Every error return
     * after the argument check - ECANCELED from a closed queue and the
     * policy's own errors too - counts one stats.rejected. */
    (void)q;
    (void)item;
    (void)policy;
    return ENOSYS;
}

size_t bq_size(bq_t *q)
{
    /* TODO: count, read under the lock (0 for NULL). */
    (void)q;
    return 0;
}

size_t bq_capacity(bq_t *q)
{
    /* TODO: the capacity (0 for NULL); it never changes, so no lock. */
    (void)q;
    return 0;
}

int bq_stats(bq_t *q, bq_stats_t *out)
{
    /* TODO: EINVAL for NULL arguments; copy the counters under the lock. */
    (void)q;
    (void)out;
    return ENOSYS;
}

int bq_close(bq_t *q)
{
    /* TODO: set closed under the lock and wake EVERY waiter on BOTH condvars. */
    (void)q;
    return ENOSYS;
}

void bq_destroy(bq_t *q)
{
    /* TODO: NULL is a no-op. Threads may still be asleep in the queue:
     * close it and wait until every counted sleeper has left - on a third
     * condvar of its own, which the last sleeper to leave a closed queue
     * signals. Then destroy the condvars and the mutex and free. Items
     * still queued belong to the caller. */
    (void)q;
}

/* ---- The reject policies (each called WITHOUT the queue lock) ------------- */

static int reject_not_written(bq_t *q, void *item, const bq_policy_t *policy)
{
    (void)q;
    (void)item;
    (void)policy;
    return ENOSYS;
}

bq_policy_t bq_policy_block(void)
{
    /* TODO: a reject function that simply calls bq_put(q, item). */
    return (bq_policy_t){ .reject = reject_not_written };
}

bq_policy_t bq_policy_timeout(long timeout_ms)
{
    /* TODO: keep timeout_ms in the policy; reject calls
     * bq_offer(q, item, policy->timeout_ms). */
    (void)timeout_ms;
    return (bq_policy_t){ .reject = reject_not_written };
}

bq_policy_t bq_policy_discard(bq_item_fn on_discard)
{
    /* TODO: keep on_discard in item_fn; reject counts stats.discarded under
     * the lock, then (outside it) gives the item to on_discard if there is
     * one, and returns 0: the item was handled. It does not look at the
     * queue again (bq.h): the item it is handed is dropped. */
    (void)on_discard;
    return (bq_policy_t){ .reject = reject_not_written };
}

bq_policy_t bq_policy_discard_oldest(bq_item_fn on_discard)
{
    /* TODO: reject looks at the queue again, under the lock (bq.h):
     * closed -> ECANCELED; still full (room may have come since bq_try_put
     * looked) -> evict the oldest item and count it as discarded; then
     * queue the new item. The evicted item goes to on_discard (if any)
     * after unlocking. */
    (void)on_discard;
    return (bq_policy_t){ .reject = reject_not_written };
}

bq_policy_t bq_policy_abort(void)
{
    /* TODO: reject returns EAGAIN; the caller keeps the item. */
    return (bq_policy_t){ .reject = reject_not_written };
}

bq_policy_t bq_policy_caller_runs(bq_item_fn run)
{
    /* TODO: keep run in item_fn; reject returns EINVAL if it is NULL,
     * otherwise calls run(item) on this thread, counts stats.run_by_caller
     * under the lock, and returns 0. */
    (void)run;
    return (bq_policy_t){ .reject = reject_not_written };
}
