/**
 * @file kit_gate.c
 * @brief Start gate and countdown latch on one mutex and one condition variable each.
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_gate.h"

#include <errno.h>

#include "kit_time.h"

int kit_gate_init(kit_gate_t *gate)
{
    int err = pthread_mutex_init(&gate->lock, NULL);
    if (err != 0)
        return err;
    err = kit_cond_init(&gate->changed);
    if (err != 0) {
        pthread_mutex_destroy(&gate->lock);
        return err;
    }
    gate->arrived = 0;
    gate->inside = 0;
    gate->open = false;
    return 0;
}

void kit_gate_destroy(kit_gate_t *gate)
{
    pthread_mutex_lock(&gate->lock);
    while (gate->inside > 0) /* released threads still leaving the wait: it is their memory too */
        pthread_cond_wait(&gate->changed, &gate->lock);
    pthread_mutex_unlock(&gate->lock);
    pthread_cond_destroy(&gate->changed);
    pthread_mutex_destroy(&gate->lock);
}

void kit_gate_wait(kit_gate_t *gate)
{
    pthread_mutex_lock(&gate->lock);
    gate->arrived++;
    /* One condvar serves two predicates here (arrivals for the main thread,
     * "open" for the others), so every change is a broadcast. */
    pthread_cond_broadcast(&gate->changed);
    /* while, not if: wake-ups can be spurious, and arrivals wake us too. */
    gate->inside++;
    while (!gate->open)
        pthread_cond_wait(&gate->changed, &gate->lock);
    if (--gate->inside == 0)
        pthread_cond_broadcast(&gate->changed); /* a destroy may be waiting for us to leave */
    pthread_mutex_unlock(&gate->lock);
}

int kit_gate_await_arrivals(kit_gate_t *gate, size_t count, long timeout_ms)
{
    struct timespec deadline;
    int err = kit_deadline_after(timeout_ms, &deadline);
    if (err != 0)
        return err;
    pthread_mutex_lock(&gate->lock);
    /* Loop on the same deadline: spurious wake-ups do not extend the wait. */
    gate->inside++;
    while (gate->arrived < count && err == 0)
        err = pthread_cond_timedwait(&gate->changed, &gate->lock, &deadline);
    if (--gate->inside == 0)
        pthread_cond_broadcast(&gate->changed);
    err = gate->arrived >= count ? 0 : ETIMEDOUT;
    pthread_mutex_unlock(&gate->lock);
    return err;
}

void kit_gate_open(kit_gate_t *gate)
{
    pthread_mutex_lock(&gate->lock);
    gate->open = true;
    pthread_cond_broadcast(&gate->changed);
    pthread_mutex_unlock(&gate->lock);
}

int kit_latch_init(kit_latch_t *latch, size_t count)
{
    int err = pthread_mutex_init(&latch->lock, NULL);
    if (err != 0)
        return err;
    err = kit_cond_init(&latch->reached_zero);
    if (err != 0) {
        pthread_mutex_destroy(&latch->lock);
        return err;
    }
    latch->count = count;
    latch->inside = 0;
    return 0;
}

void kit_latch_destroy(kit_latch_t *latch)
{
    pthread_mutex_lock(&latch->lock);
    while (latch->inside > 0) /* a released waiter still leaving: the latch is its memory too */
        pthread_cond_wait(&latch->reached_zero, &latch->lock);
    pthread_mutex_unlock(&latch->lock);
    pthread_cond_destroy(&latch->reached_zero);
    pthread_mutex_destroy(&latch->lock);
}

void kit_latch_count_down(kit_latch_t *latch)
{
    pthread_mutex_lock(&latch->lock);
    if (latch->count > 0 && --latch->count == 0)
        pthread_cond_broadcast(&latch->reached_zero);
    pthread_mutex_unlock(&latch->lock);
}

int kit_latch_wait(kit_latch_t *latch, long timeout_ms)
{
    struct timespec deadline;
    int err = kit_deadline_after(timeout_ms, &deadline);
    if (err != 0)
        return err;
    pthread_mutex_lock(&latch->lock);
    latch->inside++;
    while (latch->count > 0 && err == 0)
        err = pthread_cond_timedwait(&latch->reached_zero, &latch->lock, &deadline);
    if (--latch->inside == 0)
        pthread_cond_broadcast(&latch->reached_zero); /* a destroy may be waiting for us to leave */
    err = latch->count == 0 ? 0 : ETIMEDOUT;
    pthread_mutex_unlock(&latch->lock);
    return err;
}
