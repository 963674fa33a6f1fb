/**
 * @file rwl.c
 * @brief Chapter 08, another design: one condition variable for everyone,
 *        and each thread's holds kept in thread-local storage.
 *
 * DESIGN: a monitor, as in chapter 01 - one mutex, one condition variable
 * `changed` for everyone, and every waiter re-checks its own condition.
 * Writers first: a reader waits while a writer holds the lock or waits for
 * it. A change that can let someone in signals `changed` while no reader
 * sleeps (only writers sleep then, and one of them can go: a writer is
 * woken alone), and broadcasts once readers sleep too (a signal might reach
 * a reader that cannot go, and the writer that can would sleep on). What the calling thread holds is
 * not recorded in the lock but in a small thread-local table (lock, read
 * holds, writing), so the lock keeps only counts; a thread that would hold
 * more than HELD_MAX locks at once gets ENOMEM.
 */
#define _POSIX_C_SOURCE 200809L
#include "rwl.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "kit_time.h"

enum { HELD_MAX = 8 };

struct rwl {
    pthread_mutex_t lock;
    pthread_cond_t changed;  /* broadcast whenever someone may now go */
    /* Guarded by lock: */
    size_t readers;          /* threads holding the read lock */
    size_t waiting_writers;
    size_t sleeping_readers; /* readers inside pthread_cond_*wait */
    bool writing;
};

/* What this thread holds: one entry per lock it holds in either mode. */
struct held {
    rwl_t *lock;
    size_t read_holds;
    bool writing;
};
static _Thread_local struct held mine[HELD_MAX];

static struct held *held_of(rwl_t *l)
{
    for (int i = 0; i < HELD_MAX; i++)
        if (mine[i].lock == l)
            return &mine[i];
    return NULL;
}

static struct held *new_held(rwl_t *l)
{
    struct held *h = held_of(NULL);
    if (h != NULL)
        *h = (struct held){ .lock = l };
    return h;
}

static void drop_if_empty(struct held *h)
{
    if (h->read_holds == 0 && !h->writing)
        h->lock = NULL;
}

int rwl_create(rwl_t **out)
{
    if (out == NULL)
        return EINVAL;
    *out = NULL;
    rwl_t *l = calloc(1, sizeof *l);
    if (l == NULL)
        return ENOMEM;
    int err = pthread_mutex_init(&l->lock, NULL);
    if (err != 0)
        goto free_l;
    if ((err = kit_cond_init(&l->changed)) != 0)
        goto destroy_lock;
    *out = l;
    return 0;

destroy_lock:
    pthread_mutex_destroy(&l->lock);
free_l:
    free(l);
    return err;
}

/* Waits on `changed` until may_go(l) holds or the deadline passes, counted
 * in *sleepers while asleep (NULL: not counted); 0 or ETIMEDOUT. */
static int wait_for(rwl_t *l, bool (*may_go)(const rwl_t *l), const struct timespec *deadline, size_t *sleepers)
{
    int err = 0;
    while (!may_go(l) && err != ETIMEDOUT) {
        if (sleepers)
            ++*sleepers;
        if (deadline)
            err = pthread_cond_timedwait(&l->changed, &l->lock, deadline);
        else
            pthread_cond_wait(&l->changed, &l->lock);
        if (sleepers)
            --*sleepers;
    }
    return may_go(l) ? 0 : ETIMEDOUT;
}

/* Called with lock held, after a change that can let someone in: with only
 * writers asleep one of them can go, so one is woken; with readers asleep
 * too, everyone is, and each looks again. */
static void wake(rwl_t *l)
{
    if (l->sleeping_readers == 0)
        pthread_cond_signal(&l->changed);
    else
        pthread_cond_broadcast(&l->changed);
}

static bool reader_may_go(const rwl_t *l)
{
    return !l->writing && l->waiting_writers == 0;
}

static bool writer_may_go(const rwl_t *l)
{
    return !l->writing && l->readers == 0;
}

static int read_lock(rwl_t *l, const struct timespec *deadline)
{
    struct held *h = held_of(l);
    if (h != NULL && h->writing)
        return EDEADLK;
    if (h != NULL) { /* reads already: never behind a writer */
        h->read_holds++;
        return 0;
    }
    if ((h = new_held(l)) == NULL)
        return ENOMEM;
    pthread_mutex_lock(&l->lock);
    int err = wait_for(l, reader_may_go, deadline, &l->sleeping_readers);
    if (err == 0)
        l->readers++;
    pthread_mutex_unlock(&l->lock);
    if (err == 0)
        h->read_holds = 1;
    drop_if_empty(h);
    return err;
}

int rwl_read_lock(rwl_t *l)
{
    return l == NULL ? EINVAL : read_lock(l, NULL);
}

int rwl_read_lock_timed(rwl_t *l, long timeout_ms)
{
    struct timespec deadline;
    if (l == NULL || kit_deadline_after(timeout_ms, &deadline) != 0)
        return EINVAL;
    return read_lock(l, &deadline);
}

int rwl_read_unlock(rwl_t *l)
{
    if (l == NULL)
        return EINVAL;
    struct held *h = held_of(l);
    if (h == NULL || h->read_holds == 0)
        return EPERM;
    if (--h->read_holds > 0)
        return 0;
    drop_if_empty(h);
    pthread_mutex_lock(&l->lock);
    l->readers--;
    if (l->readers == 0)
        wake(l);
    pthread_mutex_unlock(&l->lock);
    return 0;
}

static int write_lock(rwl_t *l, const struct timespec *deadline)
{
    if (held_of(l) != NULL)
        return EDEADLK; /* reading (an upgrade) or writing already */
    struct held *h = new_held(l);
    if (h == NULL)
        return ENOMEM;
    pthread_mutex_lock(&l->lock);
    l->waiting_writers++;
    int err = wait_for(l, writer_may_go, deadline, NULL);
    l->waiting_writers--;
    if (err == 0)
        l->writing = true;
    else if (l->sleeping_readers > 0)
        pthread_cond_broadcast(&l->changed); /* the readers it held back may go */
    pthread_mutex_unlock(&l->lock);
    h->writing = err == 0;
    drop_if_empty(h);
    return err;
}

int rwl_write_lock(rwl_t *l)
{
    return l == NULL ? EINVAL : write_lock(l, NULL);
}

int rwl_write_lock_timed(rwl_t *l, long timeout_ms)
{
    struct timespec deadline;
    if (l == NULL || kit_deadline_after(timeout_ms, &deadline) != 0)
        return EINVAL;
    return write_lock(l, &deadline);
}

int rwl_write_unlock(rwl_t *l)
{
    if (l == NULL)
        return EINVAL;
    struct held *h = held_of(l);
    if (h == NULL || !h->writing)
        return EPERM;
    h->writing = false;
    drop_if_empty(h);
    pthread_mutex_lock(&l->lock);
    l->writing = false;
    wake(l);
    pthread_mutex_unlock(&l->lock);
    return 0;
}

void rwl_destroy(rwl_t *l)
{
    if (l == NULL)
        return;
    pthread_cond_destroy(&l->changed);
    pthread_mutex_destroy(&l->lock);
    free(l);
}
