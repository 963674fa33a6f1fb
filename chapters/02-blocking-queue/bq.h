/**
 * @file bq.h
 * @brief Chapter 02: a bounded blocking queue with two condition variables
 *        and a pluggable reject policy.
 *
 * The source document's BlockingQueue: a ring of `void *` items, one mutex,
 * and one condition variable *per condition*: producers wait on `not_full`,
 * consumers on `not_empty`. A put wakes one consumer, a take wakes one
 * producer - only the side that can now proceed, and only if someone of
 * that side is waiting. Compare chapter 01, where every change woke
 * everybody.
 *
 * What happens when the queue is full is a *policy*, chosen per call to
 * bq_try_put(): wait (bq_policy_block()), wait a while (bq_policy_timeout()),
 * drop the new item (bq_policy_discard()), drop the oldest
 * (bq_policy_discard_oldest()), refuse (bq_policy_abort()) or run the item
 * on the calling thread (bq_policy_caller_runs()); or a policy you write.
 *
 * **Thread safety.** Once bq_create() has returned, every function may be
 * called from any thread, concurrently with every other one on the same
 * queue - including from a reject policy, which runs without the lock -
 * except bq_destroy(): no call may start once it has begun (see its @pre).
 * The built-in policies' item functions (`on_discard`, `run`) are called on
 * the thread that called bq_try_put(), without the queue's lock held.
 *
 * **Ownership.** An item belongs to the queue once a put/offer returns 0 or
 * bq_try_put() returns 0 (then it was enqueued, run by the caller, or given
 * to `on_discard` - "handled"). Any error return - ETIMEDOUT included -
 * means the caller keeps the item. An item leaves the queue through
 * bq_take()/bq_poll() (the taker owns it) or through `on_discard`
 * (discard-oldest evicts it). The queue never frees items: bq_destroy()
 * leaves queued items to the caller, who should drain them first.
 *
 * **Timeouts** are relative milliseconds: 0 = do not wait, negative = EINVAL.
 * A timed wait computes one absolute CLOCK_MONOTONIC deadline and keeps it
 * across wake-ups, so a spurious or stolen wake-up never extends it. On
 * ETIMEDOUT nothing changed: the caller keeps the item (bq_offer()), or
 * `out` is untouched (bq_poll()). A closed queue wins over the deadline:
 * a timed call that finds the queue closed - and, for bq_poll(), empty -
 * returns ECANCELED, also when its time is up too, and also with 0 ms.
 *
 * @ingroup ch02
 */
#ifndef BQ_H
#define BQ_H

#include <stddef.h>

/** @defgroup ch02 Chapter 02 - blocking queue and reject policies
 *  @brief Two condition variables, signal the side that can proceed, and what to do when full.
 *  @{ */

/** @brief An opaque bounded FIFO of `void *` items. */
typedef struct bq bq_t;

/** @brief A function that receives an item: `on_discard` or `run`. */
typedef void (*bq_item_fn)(void *item);

/** @brief A reject policy: what bq_try_put() does with an item that finds the queue full. */
typedef struct bq_policy bq_policy_t;

/**
 * @brief The policy's decision, called *without* the queue's lock held, when
 *        the queue was full. It may call back into the queue (block and
 *        timeout do). Return 0 if the item was handled (enqueued, run, or
 *        given away), or an error code if the caller keeps it.
 */
typedef int (*bq_reject_fn)(bq_t *q, void *item, const bq_policy_t *policy);

/** @brief A reject policy: a function and its parameters. */
struct bq_policy {
    bq_reject_fn reject;   /**< called without the queue lock held, when the queue is full */
    long timeout_ms;       /**< used by bq_policy_timeout */
    bq_item_fn item_fn;    /**< on_discard or run, for the built-ins that take one */
    void *ctx;             /**< free for a user-written policy */
};

/** @brief Counters, read together under the queue's lock by bq_stats().
 *  With the built-in policies, every item handed to bq_try_put() with valid
 *  arguments is counted in exactly one of enqueued, discarded (the new
 *  item), run_by_caller and rejected; discard-oldest counts the new item as
 *  enqueued and the evicted one as discarded. */
typedef struct bq_stats {
    size_t enqueued;       /**< items that entered the queue */
    size_t taken;          /**< items that left through take or poll */
    size_t discarded;      /**< items given to `on_discard` (the new one or the oldest) */
    size_t run_by_caller;  /**< items run by caller-runs */
    size_t rejected;       /**< bq_try_put() calls that returned an error after the argument check,
                                ECANCELED from a closed queue included (the caller kept the item) */
} bq_stats_t;

/**
 * @brief Create an empty queue.
 * @param[out] out      the queue; NULL on failure.
 * @param[in]  capacity at most this many items, >= 1.
 * @return 0; EINVAL (NULL @p out, @p capacity 0 or too large); ENOMEM; or a
 *         pthread error. On failure nothing is allocated.
 * @see bq_destroy
 */
int bq_create(bq_t **out, size_t capacity);

/**
 * @brief Append @p item, waiting as long as the queue is full.
 * @param[in] q    the queue.
 * @param[in] item any pointer (NULL is a valid item).
 * @return 0 (the queue owns @p item); EINVAL for a NULL @p q; ECANCELED if the
 *         queue is or gets closed (the caller keeps @p item).
 * @par Thread safety
 * Any number of producers and consumers; each producer's items are taken in
 * the order it put them.
 */
int bq_put(bq_t *q, void *item);

/**
 * @brief Append @p item, waiting at most @p timeout_ms for room.
 * @param[in] q          the queue.
 * @param[in] item       the item.
 * @param[in] timeout_ms 0 = do not wait; > 0 = wait at most this long.
 * @return 0; EINVAL (NULL @p q, negative @p timeout_ms); ETIMEDOUT (still
 *         full at the deadline - with 0 ms, full now: ETIMEDOUT, not EAGAIN);
 *         ECANCELED (closed, even if the deadline has passed too). On error
 *         the caller keeps @p item: on ETIMEDOUT as on any other error.
 */
int bq_offer(bq_t *q, void *item, long timeout_ms);

/**
 * @brief Remove the oldest item, waiting as long as the queue is empty.
 * @param[in]  q   the queue.
 * @param[out] out the item; unchanged on error.
 * @return 0; EINVAL (NULL argument); ECANCELED once the queue is closed and
 *         empty (items put before the close are still delivered).
 */
int bq_take(bq_t *q, void **out);

/**
 * @brief Remove the oldest item, waiting at most @p timeout_ms.
 * @param[in]  q          the queue.
 * @param[out] out        the item; unchanged on error.
 * @param[in]  timeout_ms 0 = do not wait; > 0 = wait at most this long.
 * @return 0; EINVAL (NULL argument, negative @p timeout_ms); ETIMEDOUT (still
 *         empty at the deadline; 0 ms on an empty queue); ECANCELED (closed
 *         and empty, even if the deadline has passed too).
 */
int bq_poll(bq_t *q, void **out, long timeout_ms);

/**
 * @brief Enqueue @p item if there is room, otherwise let @p policy decide.
 *
 * The policy's reject function runs after the queue's lock is released: a
 * policy may block, call back into the queue, or run the item, without
 * deadlocking on the lock (the Java original holds a re-entrant lock here;
 * a pthread mutex is not re-entrant).
 * @param[in] q      the queue.
 * @param[in] item   the item.
 * @param[in] policy one of the built-ins below or your own.
 * @return 0 if the item was handled (enqueued, run by the caller, or given to
 *         `on_discard`); ECANCELED if the queue is closed (the policy is not
 *         asked); the policy's error otherwise (EAGAIN for abort, ETIMEDOUT,
 *         ECANCELED, EINVAL from caller-runs without a `run` function). On
 *         every one of these errors the caller keeps the item, and the
 *         call is counted once in bq_stats_t::rejected - ECANCELED from a
 *         closed queue and the policy's EINVAL included.
 *         EINVAL, not counted and with nothing enqueued, for a NULL @p q or
 *         @p policy or a policy whose `reject` is NULL - checked first, even
 *         when the queue has room.
 */
int bq_try_put(bq_t *q, void *item, const bq_policy_t *policy);

/** @brief Items queued now (0 for NULL); stale as soon as it returns. */
size_t bq_size(bq_t *q);

/** @brief The capacity given to bq_create() (0 for NULL). */
size_t bq_capacity(bq_t *q);

/**
 * @brief Read the counters, all at one instant.
 * @param[in]  q   the queue.
 * @param[out] out the counters.
 * @return 0 or EINVAL (NULL argument).
 */
int bq_stats(bq_t *q, bq_stats_t *out);

/**
 * @brief Close the queue: every waiter wakes; puts fail with ECANCELED; takes
 *        drain what is left, then fail with ECANCELED. Closing twice is harmless.
 * @param[in] q the queue.
 * @return 0 or EINVAL (NULL @p q).
 */
int bq_close(bq_t *q);

/**
 * @brief Free the queue. NULL is a no-op.
 *
 * Threads still asleep in a put, offer, take or poll are woken as by
 * bq_close() (puts fail with ECANCELED and keep their item; takes get what
 * is left, then ECANCELED), and the memory is freed only after the last of
 * them has left.
 * @pre No thread will *start* a bq call on @p q any more (one that begins
 *      while destroy runs would use freed memory), and every call made
 *      before has returned or sleeps in @p q. Items still queued are not freed.
 * @see bq_create
 */
void bq_destroy(bq_t *q);

/** @brief Wait until there is room (bq_put()). Never rejects unless the queue is closed. */
bq_policy_t bq_policy_block(void);

/** @brief Wait up to @p timeout_ms for room (bq_offer()); ETIMEDOUT after that. */
bq_policy_t bq_policy_timeout(long timeout_ms);

/**
 * @brief Drop the new item: give it to @p on_discard (which may free it) and
 *        report it handled. @p on_discard may be NULL (the item is then just
 *        counted as discarded; whoever made it must not expect it back).
 *        The policy does not look at the queue again: it drops the item it
 *        is handed even if the queue gained room or was closed since
 *        bq_try_put() found it full.
 */
bq_policy_t bq_policy_discard(bq_item_fn on_discard);

/**
 * @brief Make room by evicting the oldest queued item (given to
 *        @p on_discard, outside the lock) and enqueue the new one.
 *        @p on_discard may be NULL.
 *
 * It re-checks the queue under the lock: if the queue was closed since
 * bq_try_put() found it full, ECANCELED (nothing evicted, the caller keeps
 * the item); if it has room again, the new item is enqueued and nothing is
 * evicted; only a queue still full loses its oldest item.
 */
bq_policy_t bq_policy_discard_oldest(bq_item_fn on_discard);

/** @brief Refuse: bq_try_put() returns EAGAIN and the caller keeps the item. */
bq_policy_t bq_policy_abort(void);

/**
 * @brief Run the item on the calling thread: `run(item)` before bq_try_put()
 *        returns 0. Slows the producer down to the speed of the work - a
 *        natural back-pressure. A NULL @p run makes every rejection EINVAL.
 */
bq_policy_t bq_policy_caller_runs(bq_item_fn run);

/** @} */
#endif
