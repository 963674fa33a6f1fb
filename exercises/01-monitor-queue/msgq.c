/**
 * @file msgq.c
 * @brief Chapter 01 exercise: a bounded message queue built as a monitor.
 *
 * Read chapters/01-monitor-queue/README.md, run `make run CH=01`, then
 * implement the functions below; `make grade CH=01` scores them. Every
 * function returns ENOSYS until you do.
 *
 * The rules of this chapter: ONE mutex guards everything, ONE condition
 * variable carries every change, every change is announced with
 * pthread_cond_broadcast, and every wait sits in a `while` loop that
 * re-checks its condition.
 *
 * The program's trace (the page shows a run) has three lines from inside
 * the queue, logged under its lock so that their order is the order things
 * happened in: kit_log("msgq", "empty, waiting") each time a take is about
 * to wait, kit_log("msgq", "full, waiting to put message(%d)", msg.id) each
 * time a put is, and kit_log("msgq", "put message(%d), %zu queued", msg.id,
 * count) once a put has stored its message.
 */
#define _POSIX_C_SOURCE 200809L
#include "msgq.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "kit_log.h"

struct msgq {
    /* TODO: capacity and a ring of msg_t (immutable after create);
     * a mutex and ONE condition variable; and, guarded by the mutex:
     * head (index of the oldest message), count, a closed flag, and the
     * number of threads inside put/take's wait loops (destroy needs it). */
    int placeholder; /* delete me */
};

int msgq_create(msgq_t **out, size_t capacity)
{
    /* TODO: EINVAL for NULL out (set *out = NULL otherwise), capacity 0, or a
     * capacity whose ring would overflow size_t (a ring that fits but cannot
     * be allocated is ENOMEM). Allocate, initialise the mutex and the
     * condvar, undo everything on failure - with a goto ladder, the kit's
     * one way (exercises/00-shared-results/HINTS.md, hint 3): a failed step
     * jumps to the label that undoes the step before it, and the labels
     * fall through in reverse order (destroy_lock, free_ring, free_q). */
    (void)out;
    (void)capacity;
    return ENOSYS;
}

int msgq_put(msgq_t *q, msg_t msg)
{
    /* TODO: EINVAL for NULL q. Wait WHILE the queue is full and not
     * closed; a closed queue refuses the message (ECANCELED: the caller
     * keeps it); otherwise add it at the tail of the ring and announce the
     * change. Count yourself among the sleepers while you are in the wait
     * loop: destroy waits for them. */
    (void)q;
    (void)msg;
    return ENOSYS;
}

int msgq_take(msgq_t *q, msg_t *out)
{
    /* TODO: EINVAL for NULL arguments. Wait WHILE the queue is empty and
     * not closed. A closed queue still delivers what it holds: ECANCELED
     * only when it is closed AND empty. Otherwise hand out the oldest
     * message and announce the change (a producer may be waiting for this
     * slot). Count yourself among the sleepers as in put. */
    (void)q;
    (void)out;
    return ENOSYS;
}

int msgq_close(msgq_t *q)
{
    /* TODO: set closed under the lock and wake EVERY waiter. */
    (void)q;
    return ENOSYS;
}

size_t msgq_size(msgq_t *q)
{
    /* TODO: count, read under the lock (0 for NULL). */
    (void)q;
    return 0;
}

void msgq_destroy(msgq_t *q)
{
    /* TODO: NULL is a no-op. Threads may still be asleep in put or take,
     * and freeing the queue under them would wake them inside freed memory:
     * close it, and wait until the sleepers you counted have all left (the
     * last one out of a closed queue must wake you). Only then destroy the
     * condvar and the mutex, and free. */
    (void)q;
}
