/**
 * @file kit_sched_lockorder.c
 * @brief Lock-order inversions on a schedule: a thread locks mutex B while it
 *        holds A, and a thread (the same code on another thread, often) locks
 *        A while it holds B. Two threads doing that at the same moment each
 *        hold what the other waits for: a deadlock, whether or not this
 *        schedule made them meet. As ThreadSanitizer's deadlock detector
 *        does, it is reported with the four places, beside the data races:
 *        it costs a graded test its race-free line, and fails it in make test.
 *
 * Only blocking locks count (a trylock that fails cannot deadlock), only the
 * code under test's threads, and only cycles of two mutexes - the common
 * case; a longer cycle still deadlocks on the schedule that closes it.
 */
#define _GNU_SOURCE
#include "kit_sched_internal.h"

#include <stdio.h>

/* A thread held mutex `first` (locked at first_at) when it locked `then` at then_at. */
struct order {
    int first, then;
    void *first_at, *then_at;
    int thread;
};

enum { ORDERS = 128 };

static struct order orders[ORDERS]; /* this schedule's, each pair once */
static int norders;
static bool inverted;                /* in this process: reported once */
static struct sched_lock_inversion found;

void sched_lock_order_begin(void)
{
    norders = 0;
}

static void note_inversion(const struct order *earlier, const struct order *now)
{
    if (inverted)
        return;
    inverted = true;
    const struct order *pair[2] = { earlier, now };
    for (int i = 0; i < 2; i++) {
        found.serial[i][0] = sched.objects[pair[i]->first].serial;
        found.serial[i][1] = sched.objects[pair[i]->then].serial;
        found.first_at[i] = pair[i]->first_at;
        found.then_at[i] = pair[i]->then_at;
        snprintf(found.thread[i], sizeof found.thread[i], "%s", sched.threads[pair[i]->thread]->name);
    }
    snprintf(found.test, sizeof found.test, "%s", sched.test);
}

static void note_order(const struct order *now)
{
    for (int i = 0; i < norders; i++) {
        if (orders[i].first == now->first && orders[i].then == now->then)
            return;
        if (orders[i].first == now->then && orders[i].then == now->first)
            note_inversion(&orders[i], now);
    }
    if (norders < ORDERS)
        orders[norders++] = *now;
}

void sched_lock_order(int thread, int obj, void *where)
{
    if (sched.threads[thread]->harness || sched.threads[thread]->holding < 2)
        return; /* (it holds only the mutex it has just locked) */
    for (int held = 0; held < sched.nobjects; held++) {
        const struct sched_object *o = &sched.objects[held];
        if (held != obj && o->kind == 'M' && o->owner == thread)
            note_order(&(struct order){ held, obj, o->locked_at, where, thread });
    }
}

bool sched_lock_inverted(struct sched_lock_inversion *out)
{
    if (inverted && out)
        *out = found;
    return inverted;
}

bool kit_sched_take_lock_inversion(void)
{
    bool seen = inverted;
    inverted = false;
    return seen;
}
