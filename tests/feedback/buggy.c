/**
 * @file buggy.c
 * @brief The mistakes of buggy.h, written the way a student would write them.
 */
#define _GNU_SOURCE /* pthread_cond_clockwait */
#include "buggy.h"
#include "kit_map.h"
#include "kit_time.h"

#include <errno.h>
#include <pthread.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

struct counter {
    pthread_mutex_t lock;
    pthread_cond_t changed; /* broadcast when ready is set - which nothing does */
    /* Guarded by lock: */
    long value;
    bool ready;
    bool helper_joined;
    long takers; bool shut; /* counted while they wait to take; shut: they give up (counter_shut) */
    long stored;            /* stores done (counter_store_counted_first) */
    long offered;           /* offers made and not yet taken (counter_offer_refusable) */
    long arriving;          /* offers on their way in (counter_offer_arriving) */
    bool busy; long queued; /* one thread at a time through counter_pass_through; those waiting their turn */
};

counter_t *counter_create(void)
{
    counter_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->changed, NULL);
    return c;
}

void counter_destroy(counter_t *c)
{
    pthread_cond_destroy(&c->changed);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

long counter_read(counter_t *c)
{
    return c->value; /* BUG: c may be NULL */
}

void counter_add_unlocked(counter_t *c, long n)
{
    c->value += n; /* BUG: not under c->lock */
}

void counter_wait_ready(counter_t *c)
{
    pthread_mutex_lock(&c->lock);
    while (!c->ready) /* BUG: nothing ever sets ready and broadcasts */
        pthread_cond_wait(&c->changed, &c->lock);
    pthread_mutex_unlock(&c->lock);
}

void counter_increment_forgetting_unlock(counter_t *c)
{
    pthread_mutex_lock(&c->lock);
    c->value++; /* BUG: returns with the lock held */
}

int counter_wait_ms(counter_t *c, long ms)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_nsec += ms * 1000000L; /* BUG: not carried into tv_sec */
    pthread_mutex_lock(&c->lock);
    int err = 0;
    while (!c->ready && err == 0)
        err = pthread_cond_timedwait(&c->changed, &c->lock, &deadline);
    pthread_mutex_unlock(&c->lock);
    return err;
}

struct handover {
    counter_t *c;
    int go[2], done[2]; /* pipes: a read blocks in the kernel, where no schedule can follow it */
};

static void *add_when_told(void *raw)
{
    struct handover *h = raw;
    char byte;
    if (read(h->go[0], &byte, 1) != 1)
        return NULL;
    pthread_mutex_lock(&h->c->lock);
    h->c->value++;
    pthread_mutex_unlock(&h->c->lock);
    if (write(h->done[1], "x", 1) != 1)
        return NULL;
    return NULL;
}

long counter_add_on_a_helper(counter_t *c)
{
    struct handover h = { .c = c };
    if (pipe(h.go) != 0)
        return -1;
    if (pipe(h.done) != 0) {
        close(h.go[0]);
        close(h.go[1]);
        return -1;
    }
    pthread_t helper;
    long value = -1;
    char byte;
    if (pthread_create(&helper, NULL, add_when_told, &h) == 0) {
        /* not switch points: on a schedule, whoever reads first stalls it */
        if (write(h.go[1], "x", 1) == 1 && read(h.done[0], &byte, 1) == 1)
            value = counter_read(c);
        pthread_join(helper, NULL);
    }
    close(h.go[0]);
    close(h.go[1]);
    close(h.done[0]);
    close(h.done[1]);
    return value;
}

void counter_add(counter_t *c, long n)
{
    pthread_mutex_lock(&c->lock);
    c->value += n;
    pthread_mutex_unlock(&c->lock);
}

long counter_share(counter_t *c, long total)
{
    pthread_mutex_lock(&c->lock);
    long each = total / c->value; /* BUG: the value may still be 0 */
    pthread_mutex_unlock(&c->lock);
    return each;
}

void counter_set_ready_quietly(counter_t *c)
{
    pthread_mutex_lock(&c->lock);
    c->ready = true; /* BUG: nobody is woken to see it */
    pthread_mutex_unlock(&c->lock);
}

void counter_wait_value(counter_t *c, long value)
{
    pthread_mutex_lock(&c->lock);
    while (c->value < value)
        pthread_cond_wait(&c->changed, &c->lock);
    pthread_mutex_unlock(&c->lock);
}

void counter_add_signalling_one(counter_t *c, long n)
{
    pthread_mutex_lock(&c->lock);
    c->value += n;
    pthread_cond_signal(&c->changed); /* BUG: every waiter may now go on */
    pthread_mutex_unlock(&c->lock);
}

int counter_wait_ready_for(counter_t *c, long ms)
{
    pthread_mutex_lock(&c->lock);
    int err = 0;
    while (!c->ready && err == 0) {
        struct timespec deadline; /* BUG: a new deadline after every wake-up */
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += ms / 1000;
        deadline.tv_nsec += (ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_nsec -= 1000000000L;
            deadline.tv_sec++;
        }
        err = pthread_cond_timedwait(&c->changed, &c->lock, &deadline);
    }
    pthread_mutex_unlock(&c->lock);
    return err;
}

int counter_wait_ready_within(counter_t *c, long ms)
{
    struct timespec deadline; /* one deadline, on the clock that never jumps */
    kit_deadline_after(ms, &deadline);
    pthread_mutex_lock(&c->lock);
    int err = 0;
    while (!c->ready && err == 0) /* while: a wake-up may be spurious */
        err = pthread_cond_clockwait(&c->changed, &c->lock, CLOCK_MONOTONIC, &deadline);
    pthread_mutex_unlock(&c->lock);
    return c->ready ? 0 : err;
}

long counter_add_and_read(counter_t *c, long n)
{
    pthread_mutex_lock(&c->lock);
    long value = c->value; /* BUG: read before the add */
    c->value += n;
    pthread_mutex_unlock(&c->lock);
    return value;
}

void counter_destroy_when_ready(counter_t *c)
{
    counter_wait_ready(c); /* BUG: nothing ever makes it ready */
    counter_destroy(c);
}

int counter_reset(counter_t *c)
{
    (void)c;
    return ENOSYS;
}

static void *add_one(void *raw)
{
    counter_add_signalling_one(raw, 1);
    return NULL;
}

void counter_add_on_a_thread_left_behind(counter_t *c)
{
    pthread_t helper;
    if (pthread_create(&helper, NULL, add_one, c) == 0) /* BUG: never joined, nor detached */
        return;
    counter_add(c, 1);
}

/* (GCC sees this one at compile time; the ones the grader is there for
 * cross a thread or a file. Silenced, to be run.) */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif
void counter_close(counter_t *c)
{
    free(c);
    pthread_cond_destroy(&c->changed); /* BUG: after the free */
    pthread_mutex_destroy(&c->lock);
}
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic pop
#endif

void counter_add_on_a_helper_joined_twice(counter_t *c)
{
    pthread_t helper;
    if (pthread_create(&helper, NULL, add_one, c) != 0) {
        counter_add(c, 1);
        return;
    }
    pthread_join(helper, NULL);
    pthread_join(helper, NULL); /* BUG: joined already; the error it returns is ignored */
}

void counter_put_one(counter_t *c)
{
    pthread_mutex_lock(&c->lock);
    c->value++;
    pthread_cond_signal(&c->changed); /* one taker can go on */
    pthread_mutex_unlock(&c->lock);
}

void counter_take_one(counter_t *c)
{
    pthread_mutex_lock(&c->lock);
    while (c->value == 0) /* while: a wake-up may be spurious */
        pthread_cond_wait(&c->changed, &c->lock);
    c->value--;
    pthread_mutex_unlock(&c->lock);
}

int counter_take_one_within(counter_t *c, long ms)
{
    struct timespec deadline;
    kit_deadline_after(ms, &deadline);
    pthread_mutex_lock(&c->lock);
    while (c->value == 0) { /* while: a wake-up may be spurious, or another taker was first */
        int err = pthread_cond_clockwait(&c->changed, &c->lock, CLOCK_MONOTONIC, &deadline);
        if (err == ETIMEDOUT) { /* BUG: the signal may have come with the time-out: look at the value again */
            pthread_mutex_unlock(&c->lock);
            return ETIMEDOUT;
        }
    }
    c->value--;
    pthread_mutex_unlock(&c->lock);
    return 0;
}

void counter_join_helper(counter_t *c, pthread_t helper)
{
    pthread_mutex_lock(&c->lock);
    c->helper_joined = true; /* BUG: decided without looking whether it was decided already */
    pthread_mutex_unlock(&c->lock);
    pthread_join(helper, NULL);
}

struct meter {
    pthread_mutex_t lock;
    meter_reading_t now; /* guarded by lock */
};

meter_t *meter_create(void)
{
    meter_t *m = calloc(1, sizeof *m);
    if (m != NULL)
        pthread_mutex_init(&m->lock, NULL);
    return m;
}

void meter_add(meter_t *m, long n)
{
    pthread_mutex_lock(&m->lock);
    m->now.value += n;
    m->now.adds += 2; /* BUG: one add, counted twice */
    pthread_mutex_unlock(&m->lock);
}

void meter_read(meter_t *m, meter_reading_t *out)
{
    pthread_mutex_lock(&m->lock);
    *out = m->now;
    pthread_mutex_unlock(&m->lock);
}

void meter_destroy(meter_t *m)
{
    pthread_mutex_destroy(&m->lock);
    free(m);
}

void counter_put_one_quietly(counter_t *c)
{
    pthread_mutex_lock(&c->lock);
    c->value++; /* BUG: no taker is woken: only a time-out ends a timed take's wait */
    pthread_mutex_unlock(&c->lock);
}

/* Called with c->lock held. */
static void add_locked(counter_t *c, long n)
{
    c->value += n;
}

void counter_add_through_a_helper(counter_t *c, long n)
{
    add_locked(c, n); /* BUG: the helper expects c->lock held, and it is not taken */
}

void counter_add_quietly_through_a_helper(counter_t *c, long n)
{
    pthread_mutex_lock(&c->lock);
    add_locked(c, n); /* BUG: nobody is woken to see it */
    pthread_mutex_unlock(&c->lock);
}

static __attribute__((noinline)) void add_in_a_called_helper(counter_t *c, long n)
{
    c->value += n;
}

void counter_add_quietly_through_a_called_helper(counter_t *c, long n)
{
    pthread_mutex_lock(&c->lock);
    add_in_a_called_helper(c, n); /* BUG: nobody is woken to see it */
    pthread_mutex_unlock(&c->lock);
}

void counter_take_one_uncounting_twice(counter_t *c)
{
    pthread_mutex_lock(&c->lock);
    c->takers++;
    while (c->value == 0) /* while: a wake-up may be spurious */
        pthread_cond_wait(&c->changed, &c->lock);
    c->takers--;
    c->value--;
    if (c->value == 0)
        c->takers--; /* BUG: the taker was un-counted already */
    pthread_mutex_unlock(&c->lock);
}

void counter_add_waking_once_ready(counter_t *c, long n)
{
    pthread_mutex_lock(&c->lock);
    c->value += n;
    if (c->ready) /* BUG: a waiter for a value is not woken before ready is set */
        pthread_cond_broadcast(&c->changed);
    pthread_mutex_unlock(&c->lock);
}

int counter_take_one_counted_within(counter_t *c, long ms)
{
    struct timespec deadline; /* one deadline, on the clock that never jumps */
    kit_deadline_after(ms, &deadline);
    pthread_mutex_lock(&c->lock);
    c->takers++;
    int err = 0;
    while (c->value == 0 && err == 0) /* while: a wake-up may be spurious */
        err = pthread_cond_clockwait(&c->changed, &c->lock, CLOCK_MONOTONIC, &deadline);
    if (err != ETIMEDOUT) /* BUG: a taker that timed out stays counted */
        c->takers--;
    if (c->value > 0) {
        c->value--;
        err = 0;
    }
    pthread_mutex_unlock(&c->lock);
    return err;
}

int counter_take_one_counted_unless_shut(counter_t *c)
{
    pthread_mutex_lock(&c->lock);
    c->takers++;
    while (c->value == 0 && !c->shut) /* while: a wake-up may be spurious */
        pthread_cond_wait(&c->changed, &c->lock);
    if (c->shut) {
        pthread_mutex_unlock(&c->lock);
        return ECANCELED; /* BUG: returns still counted as a taker */
    }
    c->takers--;
    c->value--;
    pthread_mutex_unlock(&c->lock);
    return 0;
}

int counter_take_one_unless_shut(counter_t *c)
{
    pthread_mutex_lock(&c->lock);
    bool shut = c->shut; /* BUG: a copy from before the wait decides after it */
    while (c->value == 0 && !c->shut) /* while: a wake-up may be spurious */
        pthread_cond_wait(&c->changed, &c->lock);
    int err = 0;
    if (shut)
        err = ECANCELED;
    else
        c->value--;
    pthread_mutex_unlock(&c->lock);
    return err;
}

void counter_store_counted_first(counter_t *c)
{
    pthread_mutex_lock(&c->lock);
    c->stored++; /* BUG: counted before the wait for room, which may last */
    while (c->value >= 1) /* while: a wake-up may be spurious */
        pthread_cond_wait(&c->changed, &c->lock);
    c->value++;
    pthread_cond_broadcast(&c->changed);
    pthread_mutex_unlock(&c->lock);
}

/* One of the counter's counts, read under its lock (correct). */
static long read_locked(counter_t *c, const long *count)
{
    pthread_mutex_lock(&c->lock);
    long value = *count;
    pthread_mutex_unlock(&c->lock);
    return value;
}

long counter_stored(counter_t *c)
{
    return read_locked(c, &c->stored);
}

void counter_shut(counter_t *c)
{
    pthread_mutex_lock(&c->lock);
    c->shut = true;
    pthread_cond_broadcast(&c->changed); /* every taker gives up */
    pthread_mutex_unlock(&c->lock);
}

long counter_takers(counter_t *c)
{
    return read_locked(c, &c->takers);
}

int counter_offer_refusable(counter_t *c)
{
    pthread_mutex_lock(&c->lock);
    c->offered++;
    int err = 0;
    if (c->value >= 1)
        err = EAGAIN; /* BUG: the refused offer stays counted (no c->offered-- on this way out) */
    else
        c->value++;
    pthread_mutex_unlock(&c->lock);
    return err;
}

long counter_take_offered(counter_t *c)
{
    pthread_mutex_lock(&c->lock);
    long taken = c->value;
    c->value = 0;
    c->offered -= taken; /* what was taken is no longer on offer */
    pthread_mutex_unlock(&c->lock);
    return taken;
}

long counter_offered(counter_t *c)
{
    return read_locked(c, &c->offered);
}

void counter_pass_through(counter_t *c)
{
    pthread_mutex_lock(&c->lock);
    c->queued++;
    while (c->busy) /* while: a wake-up may be spurious */
        pthread_cond_wait(&c->changed, &c->lock);
    c->queued--;
    c->busy = true;
    pthread_mutex_unlock(&c->lock);
    counter_leave(c);
}

void counter_enter(counter_t *c)
{
    pthread_mutex_lock(&c->lock);
    c->busy = true;
    pthread_mutex_unlock(&c->lock);
}

void counter_leave(counter_t *c)
{
    pthread_mutex_lock(&c->lock);
    c->busy = false;
    if (c->queued > 1) /* BUG: > 0 - the last one waiting its turn is never woken */
        pthread_cond_signal(&c->changed); /* one at a time: the one woken passes the turn on when it leaves */
    pthread_mutex_unlock(&c->lock);
}

/* Stores an arriving offer unless the counter holds one already. */
static __attribute__((noinline)) int store_arriving_locked(counter_t *c)
{
    int err = c->value >= 1 ? EAGAIN : 0;
    if (err == 0) {
        c->value++;
        c->arriving--; /* BUG: only a stored offer stops arriving; a refused one stays counted */
    }
    pthread_cond_broadcast(&c->changed);
    return err;
}

int counter_offer_arriving(counter_t *c)
{
    pthread_mutex_lock(&c->lock);
    c->arriving++;
    pthread_mutex_unlock(&c->lock);
    pthread_mutex_lock(&c->lock);
    int err = store_arriving_locked(c);
    pthread_mutex_unlock(&c->lock);
    return err;
}

/* Destroys the counter once one of its counts is 0 (correct). */
static void destroy_once_none(counter_t *c, const long *count)
{
    pthread_mutex_lock(&c->lock);
    while (*count > 0) /* while: a wake-up may be spurious */
        pthread_cond_wait(&c->changed, &c->lock);
    pthread_mutex_unlock(&c->lock);
    counter_destroy(c);
}

void counter_destroy_once_none_arriving(counter_t *c)
{
    destroy_once_none(c, &c->arriving);
}

void counter_destroy_once_no_taker_waits(counter_t *c)
{
    destroy_once_none(c, &c->takers);
}

struct roster {
    pthread_mutex_t lock;
    pthread_cond_t changed; /* broadcast when the roster is closed and empty - by the close only */
    /* Guarded by lock: */
    bool closed;
    long removed;
    kit_map_t *names;
};

roster_t *roster_create(void)
{
    roster_t *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    if (kit_map_create(&r->names) != 0) {
        free(r);
        return NULL;
    }
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->changed, NULL);
    return r;
}

void roster_add(roster_t *r, const char *name)
{
    pthread_mutex_lock(&r->lock);
    kit_map_insert(r->names, name, r);
    pthread_mutex_unlock(&r->lock);
}

void roster_close(roster_t *r)
{
    pthread_mutex_lock(&r->lock);
    r->closed = true;
    if (kit_map_count(r->names) == 0)
        pthread_cond_broadcast(&r->changed);
    pthread_mutex_unlock(&r->lock);
}

void roster_remove_quietly(roster_t *r, const char *name)
{
    pthread_mutex_lock(&r->lock);
    r->removed++;
    kit_map_remove(r->names, name, NULL); /* BUG: the last name gone after the close wakes nobody */
    pthread_mutex_unlock(&r->lock);
}

void roster_wait_empty(roster_t *r)
{
    pthread_mutex_lock(&r->lock);
    while (!r->closed || kit_map_count(r->names) > 0) /* while: a wake-up may be spurious */
        pthread_cond_wait(&r->changed, &r->lock);
    pthread_mutex_unlock(&r->lock);
}

size_t roster_size(roster_t *r)
{
    pthread_mutex_lock(&r->lock);
    size_t size = kit_map_count(r->names);
    pthread_mutex_unlock(&r->lock);
    return size;
}

void roster_destroy(roster_t *r)
{
    kit_map_destroy(r->names);
    pthread_cond_destroy(&r->changed);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

struct numbers {
    pthread_mutex_t lock;
    /* Guarded by lock: */
    long count, capacity;
    long *items; /* capacity of them */
};

numbers_t *numbers_create(long capacity)
{
    numbers_t *l = calloc(1, sizeof *l);
    if (l == NULL)
        return NULL;
    l->items = malloc((size_t)capacity * sizeof *l->items);
    if (l->items == NULL) {
        free(l);
        return NULL;
    }
    l->capacity = capacity;
    pthread_mutex_init(&l->lock, NULL);
    return l;
}

void numbers_append(numbers_t *l, long value)
{
    pthread_mutex_lock(&l->lock);
    if (l->count > l->capacity) { /* BUG: a full log is count == capacity */
        pthread_mutex_unlock(&l->lock);
        return;
    }
    l->items[l->count++] = value;
    pthread_mutex_unlock(&l->lock);
}

void numbers_destroy(numbers_t *l)
{
    pthread_mutex_destroy(&l->lock);
    free(l->items);
    free(l);
}

void counter_add_once_below(counter_t *c, long limit)
{
    pthread_mutex_lock(&c->lock);
    bool below = c->value < limit;
    pthread_mutex_unlock(&c->lock); /* BUG: the check and the add it decides are two critical sections */
    if (below) {
        pthread_mutex_lock(&c->lock);
        c->value++;
        pthread_mutex_unlock(&c->lock);
    }
}
