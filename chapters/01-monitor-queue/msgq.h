/**
 * @file msgq.h
 * @brief Chapter 01: a bounded message queue built as a monitor.
 *
 * The source document's MessageQueue: producers put messages, consumers take
 * them, and the queue's capacity makes a fast producer wait for a slow
 * consumer ("peak shaving"). It is a *monitor*: one mutex guards all state
 * and one condition variable carries every "something changed" event.
 *
 * Because producers (waiting for room) and consumers (waiting for a message)
 * sleep on the *same* condition variable, every change must wake *all*
 * sleepers with pthread_cond_broadcast(): pthread_cond_signal() wakes one
 * thread, and if that thread is of the wrong kind (a consumer woken by a
 * consumer's take) it goes back to sleep and the thread that could have
 * proceeded never hears about it. Chapter 02 removes that waste with one
 * condition variable per condition.
 *
 * Thread safety: once msgq_create() has returned, msgq_put(), msgq_take(),
 * msgq_close() and msgq_size() may be called from any thread, concurrently
 * with each other, by any number of producers and consumers. msgq_destroy()
 * may run while threads still sleep in put or take (it wakes them), but no
 * call may *start* once it has begun.
 *
 * Ownership: the queue stores msg_t values by copy; the queue never touches
 * what `body` points to. A message given to msgq_put() belongs to the queue
 * only if msgq_put() returns 0, and to the caller of msgq_take() once it
 * returns 0. On any error the caller keeps it.
 *
 * @ingroup ch01
 */
#ifndef MSGQ_H
#define MSGQ_H

#include <stddef.h>

/** @defgroup ch01 Chapter 01 - monitor message queue
 *  @brief One mutex, one condition variable, broadcast.
 *  @{ */

/** @brief A message: an id and a body the queue carries but never reads. */
typedef struct msg {
    int id;     /**< the producer's label for the message */
    void *body; /**< payload, owned as described in msgq.h */
} msg_t;

/** @brief An opaque bounded FIFO of msg_t. */
typedef struct msgq msgq_t;

/**
 * @brief Create an empty queue holding at most @p capacity messages.
 * @param[out] out      the queue; NULL on failure.
 * @param[in]  capacity maximum number of queued messages, >= 1.
 * @return 0; EINVAL (NULL @p out, @p capacity 0, or a capacity whose ring
 *         of messages would not fit in a size_t: @p capacity >
 *         SIZE_MAX / sizeof(msg_t) is always EINVAL); ENOMEM (the size fits,
 *         the memory cannot be had - also for a capacity that is merely
 *         huge); or a pthread error. On failure nothing is allocated.
 * @see msgq_destroy
 */
int msgq_create(msgq_t **out, size_t capacity);

/**
 * @brief Append a message, waiting while the queue is full.
 * @param[in] q   the queue.
 * @param[in] msg the message, copied into the queue.
 * @return 0 (the queue owns the message); EINVAL if @p q is NULL;
 *         ECANCELED if the queue is closed, before or during the wait (the
 *         caller keeps the message).
 * @par Thread safety
 * Any number of producers and consumers may call concurrently. Messages from
 * one producer are taken in the order that producer put them.
 */
int msgq_put(msgq_t *q, msg_t msg);

/**
 * @brief Remove the oldest message, waiting while the queue is empty.
 * @param[in]  q   the queue.
 * @param[out] out the message (unchanged on error).
 * @return 0; EINVAL if @p q or @p out is NULL; ECANCELED once the queue is
 *         closed *and* empty: messages put before msgq_close() are still
 *         delivered.
 * @par Thread safety
 * As msgq_put(); each message is taken by exactly one consumer.
 */
int msgq_take(msgq_t *q, msg_t *out);

/**
 * @brief Close the queue: wake every waiting thread; later puts fail, takes
 *        drain what is left and then fail. Closing twice is harmless.
 * @param[in] q the queue.
 * @return 0, or EINVAL if @p q is NULL.
 */
int msgq_close(msgq_t *q);

/** @brief Messages queued now (0 for NULL); stale as soon as it returns. */
size_t msgq_size(msgq_t *q);

/**
 * @brief Free the queue. NULL is a no-op.
 *
 * Threads still asleep in msgq_put() or msgq_take() are woken as by
 * msgq_close() - puts fail with ECANCELED, takes get what is left, then
 * ECANCELED - and the memory is freed only after the last of them has left.
 * @pre No thread will *start* a msgq call on @p q any more (a call that
 *      begins while destroy runs would use freed memory), and every call
 *      made before has returned or sleeps in @p q. Bodies of messages
 *      still queued are not freed: drain them first if they own memory.
 * @see msgq_create
 */
void msgq_destroy(msgq_t *q);

/** @} */
#endif
