/**
 * @file rwl.h
 * @brief Chapter 08: a readers-writer lock that prefers writers.
 *
 * Many threads may read shared data at once; a thread that changes it must
 * be alone. A readers-writer lock has two modes: *shared* (read), held by
 * any number of threads together, and *exclusive* (write), held by one
 * thread while nobody holds it in either mode. Built from one mutex and two
 * condition variables - readers wait on one, writers on the other - like
 * chapter 02's queue.
 *
 * **Writers get preference.** Once a writer waits, new readers wait too,
 * even though the readers inside could be joined: the writer only waits for
 * the readers already in to leave. So a stream of readers, each arriving
 * before the last one left, can never keep a writer out for ever (with
 * *reader* preference it can: the lock is never free). When a writer
 * unlocks, the next waiting writer goes first; only when no writer waits
 * are all waiting readers let in at once. The price is the mirror image: a
 * steady stream of writers can keep readers waiting.
 *
 * **A writer is woken alone.** An unlock wakes the threads that can now go
 * in, and only if one of them waits: the last reader out wakes one waiting
 * writer, a writer's unlock the next writer alone - or, when no writer
 * waits, every waiting reader. With only writers asleep, no unlock wakes a
 * writer that must then sleep again because another got in first (chapter
 * 02's queue keeps the same promise for its two sides; one condition
 * variable broadcast on every change, chapter 01's monitor, does not).
 *
 * **Each lock knows who holds it.** It records the thread that holds it for
 * writing and, for reading, every thread that holds it with how many times
 * it took it (a table in the lock, which grows as more threads read at
 * once). That is how it answers, instead of hanging or corrupting itself:
 * - EDEADLK to a thread that asks for the write lock while it holds the
 *   read lock (the *upgrade deadlock*: the writer would wait for its own
 *   read lock to go), asks for the write lock twice, or asks for the read
 *   lock while it holds the write lock;
 * - EPERM to a thread that unlocks what it does not hold;
 * - and 0 to a thread that takes the read lock again while it already holds
 *   it, even if a writer waits: it is counted, and must unlock as many
 *   times. Making it wait would deadlock - the writer waits for this very
 *   thread to leave.
 *
 * A lock is held by a thread, not by a piece of code: the thread that locks
 * unlocks. A thread must release what it holds before it ends: a lock held
 * by a thread that has ended stays held (and the system may give its id to
 * a new thread, which then appears to hold it).
 *
 * **Timeouts** are relative milliseconds: 0 = do not wait (take the lock
 * only if it is free for this thread now), negative = EINVAL. A timed wait
 * computes one absolute CLOCK_MONOTONIC deadline and keeps it across
 * wake-ups, so a spurious or stolen wake-up never extends it. On ETIMEDOUT
 * nothing is held and nothing changed - and a writer that gives up lets in
 * the readers it was holding back.
 *
 * **Thread safety.** Once rwl_create() has returned, every function but
 * rwl_destroy() may be called from any thread, concurrently with the others.
 *
 * @ingroup ch08
 */
#ifndef RWL_H
#define RWL_H

/** @defgroup ch08 Chapter 08 - readers-writer lock
 *  @brief Many readers or one writer; a waiting writer holds back new readers.
 *  @{ */

/** @brief An opaque readers-writer lock. */
typedef struct rwl rwl_t;

/**
 * @brief Create a free lock.
 * @param[out] out the lock; NULL on failure.
 * @return 0; EINVAL for a NULL @p out; ENOMEM; or a pthread error. On failure
 *         nothing is allocated.
 * @see rwl_destroy
 */
int rwl_create(rwl_t **out);

/**
 * @brief Take the lock for reading (shared), waiting while a writer holds it
 *        or waits for it.
 * @param[in] l the lock.
 * @return 0 (the caller holds it for reading; it unlocks with
 *         rwl_read_unlock()); EINVAL for a NULL @p l; EDEADLK if the calling
 *         thread holds the write lock; ENOMEM if the lock could not record
 *         one more reading thread (nothing is held). A thread that already
 *         holds the read lock gets it again at once, writer waiting or not.
 * @par Thread safety
 * Any number of threads may hold the read lock together.
 */
int rwl_read_lock(rwl_t *l);

/**
 * @brief rwl_read_lock(), waiting at most @p timeout_ms.
 * @param[in] l          the lock.
 * @param[in] timeout_ms 0 = do not wait; > 0 = wait at most this long.
 * @return as rwl_read_lock(), and: EINVAL for a negative @p timeout_ms;
 *         ETIMEDOUT if a writer still held or waited for the lock at the
 *         deadline - never before it (nothing is held).
 */
int rwl_read_lock_timed(rwl_t *l, long timeout_ms);

/**
 * @brief Release one read hold of the calling thread; the last reader out
 *        lets a waiting writer in.
 * @param[in] l the lock.
 * @return 0; EINVAL for a NULL @p l; EPERM if the calling thread does not
 *         hold the read lock (nothing changes).
 */
int rwl_read_unlock(rwl_t *l);

/**
 * @brief Take the lock for writing (exclusive), waiting until no thread
 *        holds it; from the moment it waits, new readers wait behind it.
 * @param[in] l the lock.
 * @return 0 (the caller holds it alone; it unlocks with rwl_write_unlock());
 *         EINVAL for a NULL @p l; EDEADLK, at once, if the calling thread
 *         holds the lock already, for reading (release it first: there is
 *         no upgrade) or for writing.
 * @par Thread safety
 * At most one thread holds the write lock, and never while any thread holds
 * the read lock.
 */
int rwl_write_lock(rwl_t *l);

/**
 * @brief rwl_write_lock(), waiting at most @p timeout_ms.
 * @param[in] l          the lock.
 * @param[in] timeout_ms 0 = do not wait; > 0 = wait at most this long.
 * @return as rwl_write_lock(), and: EINVAL for a negative @p timeout_ms;
 *         ETIMEDOUT if some thread still held the lock at the deadline -
 *         never before it. The writer then stops holding back new readers.
 */
int rwl_write_lock_timed(rwl_t *l, long timeout_ms);

/**
 * @brief Release the write lock: the next waiting writer goes first; if no
 *        writer waits, every waiting reader is let in.
 * @param[in] l the lock.
 * @return 0; EINVAL for a NULL @p l; EPERM if the calling thread does not
 *         hold the write lock (nothing changes).
 */
int rwl_write_unlock(rwl_t *l);

/**
 * @brief Free the lock. NULL is a no-op.
 * @param[in] l the lock.
 * @pre No thread holds @p l or waits for it, and none will call it again:
 *      destroying a lock in use is undefined behaviour (a thread asleep in
 *      it would wake up inside freed memory).
 * @see rwl_create
 */
void rwl_destroy(rwl_t *l);

/** @} */
#endif
