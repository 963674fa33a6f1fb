/**
 * @file rwl.c
 * @brief Chapter 08 solution: one mutex, two condition variables, writers first.
 *
 * DESIGN: the mutex guards three numbers - readers inside, writers waiting,
 * a writer inside or not - and the table of reading threads. Readers wait
 * on `readers_may_go` while a writer holds the lock *or waits for it*: that
 * one condition is the writer preference. Writers wait on `writer_may_go`
 * until nobody holds the lock. Whoever leaves the lock wakes whoever can
 * now go, and only them: the last reader out signals one writer; a writer
 * signals the next writer if one waits, and otherwise broadcasts to every
 * reader, since they may all read at once.
 *
 * A writer counts itself as waiting before its first wait and uncounts
 * itself when it leaves the loop, holding the mutex both times: between the
 * two, no new reader gets in. A timed writer that gives up may have been the
 * only reason readers were waiting, so it lets them in on its way out.
 *
 * The table of reading threads answers "does this thread hold the read
 * lock?" - for EDEADLK on an upgrade, EPERM on a stray unlock, and a second
 * read lock that must not wait behind a writer. It lives in the lock,
 * guarded by the same mutex, and grows by doubling.
 */
#define _POSIX_C_SOURCE 200809L
#include "rwl.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "kit_log.h"
#include "kit_time.h"
#include "kit_trace.h"

enum { FIRST_CAPACITY = 4 }; /* reading threads the table holds before it first grows */

/* A thread that holds the read lock, and how many times it took it. */
struct reader {
    pthread_t thread;
    size_t holds; /* >= 1; the thread leaves the table when it drops to 0 */
};

struct rwl {
    pthread_mutex_t lock;
    pthread_cond_t readers_may_go; /* broadcast when no writer holds the lock or waits for it */
    pthread_cond_t writer_may_go;  /* signalled when nobody holds the lock and a writer waits */
    /* Guarded by lock: */
    size_t active_readers;         /* threads holding the read lock: readers[0 .. active_readers) */
    size_t waiting_writers;        /* threads inside a write lock's wait loop */
    bool writer_active;            /* `writer` holds the write lock */
    pthread_t writer;
    struct reader *readers;        /* `capacity` entries */
    size_t capacity;
};

int rwl_create(rwl_t **out)
{
    if (out == NULL)
        return EINVAL;
    *out = NULL;
    int err = ENOMEM;
    rwl_t *l = calloc(1, sizeof *l);
    if (l == NULL)
        return ENOMEM;
    l->capacity = FIRST_CAPACITY;
    l->readers = calloc(l->capacity, sizeof *l->readers);
    if (l->readers == NULL)
        goto free_l;
    if ((err = pthread_mutex_init(&l->lock, NULL)) != 0)
        goto free_readers;
    /* CLOCK_MONOTONIC: the timed locks' deadlines are monotonic. */
    if ((err = kit_cond_init(&l->readers_may_go)) != 0)
        goto destroy_lock;
    if ((err = kit_cond_init(&l->writer_may_go)) != 0)
        goto destroy_readers_may_go;
    *out = l;
    return 0;

    /* Undo in reverse order: each label undoes the step before the one that failed. */
destroy_readers_may_go:
    pthread_cond_destroy(&l->readers_may_go);
destroy_lock:
    pthread_mutex_destroy(&l->lock);
free_readers:
    free(l->readers);
free_l:
    free(l);
    return err;
}

/* ---- Who holds the lock (called with lock held) ---------------------------- */

static bool holds_write_locked(const rwl_t *l, pthread_t self)
{
    return l->writer_active && pthread_equal(l->writer, self);
}

static struct reader *find_reader_locked(rwl_t *l, pthread_t self)
{
    for (size_t i = 0; i < l->active_readers; i++)
        if (pthread_equal(l->readers[i].thread, self))
            return &l->readers[i];
    return NULL;
}

/* Records @p self as a reader holding the lock once; 0 or ENOMEM (nothing changed). */
static int add_reader_locked(rwl_t *l, pthread_t self)
{
    if (l->active_readers == l->capacity) {
        if (l->capacity > SIZE_MAX / 2 / sizeof *l->readers)
            return ENOMEM;
        struct reader *bigger = realloc(l->readers, 2 * l->capacity * sizeof *l->readers);
        if (bigger == NULL)
            return ENOMEM;
        l->readers = bigger;
        l->capacity *= 2;
    }
    l->readers[l->active_readers++] = (struct reader){ .thread = self, .holds = 1 };
    return 0;
}

static void remove_reader_locked(rwl_t *l, struct reader *r)
{
    *r = l->readers[--l->active_readers]; /* the last entry fills the gap */
}

/* ---- Who may go ------------------------------------------------------------ */

/* PAGE: writers-first. A new reader waits while a writer holds the lock and
 * also while one waits for it: the readers inside leave, the writer goes,
 * and only then the readers that came after it. */
static bool readers_may_enter_locked(const rwl_t *l)
{
    return !l->writer_active && l->waiting_writers == 0;
}

static bool writer_may_enter_locked(const rwl_t *l)
{
    return !l->writer_active && l->active_readers == 0;
}

/* Called with lock held. 0 once this thread may read, or ETIMEDOUT. */
static int wait_to_read_locked(rwl_t *l, const struct timespec *deadline)
{
    int err = 0;
    /* while, not if: wake-ups can be spurious, and a writer may come between
     * the broadcast and our turn with the mutex. The deadline is the same on
     * every turn, so being woken for nothing costs no extra time. */
    while (!readers_may_enter_locked(l) && err != ETIMEDOUT) {
        kit_log("rwl", "reader waits: a writer %s", l->writer_active ? "holds the lock" : "is waiting");
        kit_trace_begin("rwl", "waiting to read");
        if (deadline)
            err = pthread_cond_timedwait(&l->readers_may_go, &l->lock, deadline);
        else
            pthread_cond_wait(&l->readers_may_go, &l->lock);
        kit_trace_end("rwl");
    }
    return readers_may_enter_locked(l) ? 0 : ETIMEDOUT; /* the way may have opened with the time-out */
}

/* Called with lock held. 0 once this thread may write, or ETIMEDOUT. */
static int wait_to_write_locked(rwl_t *l, const struct timespec *deadline)
{
    int err = 0;
    l->waiting_writers++; /* from now on, new readers wait behind us */
    /* while, not if: spurious wake-ups, and another writer may take the lock first. */
    while (!writer_may_enter_locked(l) && err != ETIMEDOUT) {
        kit_log("rwl", "writer waits: %s", l->writer_active ? "a writer holds the lock" : "readers inside");
        kit_trace_begin("rwl", "waiting to write");
        if (deadline)
            err = pthread_cond_timedwait(&l->writer_may_go, &l->lock, deadline);
        else
            pthread_cond_wait(&l->writer_may_go, &l->lock);
        kit_trace_end("rwl");
    }
    l->waiting_writers--;
    if (writer_may_enter_locked(l))
        return 0; /* also when the signal came with the time-out: POSIX lets a timed waiter consume it */
    /* PAGE: writer-gives-up. Readers may be waiting only because we waited:
     * if no other writer waits or holds the lock, they may go now. */
    if (l->waiting_writers == 0 && !l->writer_active)
        pthread_cond_broadcast(&l->readers_may_go);
    return ETIMEDOUT;
}

/* ---- Reading ----------------------------------------------------------------- */

static int read_lock(rwl_t *l, const struct timespec *deadline)
{
    pthread_t self = pthread_self();
    int err = 0;
    pthread_mutex_lock(&l->lock);
    struct reader *again = find_reader_locked(l, self);
    if (holds_write_locked(l, self))
        err = EDEADLK; /* it would wait for itself to leave */
    else if (again != NULL)
        again->holds++; /* PAGE: reader-again. Never behind a writer, which waits for this very thread. */
    else if ((err = wait_to_read_locked(l, deadline)) == 0)
        err = add_reader_locked(l, self);
    pthread_mutex_unlock(&l->lock);
    return err;
}

int rwl_read_lock(rwl_t *l)
{
    if (l == NULL)
        return EINVAL;
    return read_lock(l, NULL);
}

int rwl_read_lock_timed(rwl_t *l, long timeout_ms)
{
    struct timespec deadline; /* one deadline, computed once */
    if (l == NULL || kit_deadline_after(timeout_ms, &deadline) != 0)
        return EINVAL;
    return read_lock(l, &deadline);
}

int rwl_read_unlock(rwl_t *l)
{
    if (l == NULL)
        return EINVAL;
    pthread_mutex_lock(&l->lock);
    struct reader *r = find_reader_locked(l, pthread_self());
    if (r == NULL) {
        pthread_mutex_unlock(&l->lock);
        return EPERM;
    }
    if (--r->holds == 0) {
        remove_reader_locked(l, r);
        /* PAGE: last-reader-out. Only the last reader's leaving lets a writer
         * in, and one writer is all that can go: signal, not broadcast. */
        if (l->active_readers == 0 && l->waiting_writers > 0)
            pthread_cond_signal(&l->writer_may_go);
    }
    pthread_mutex_unlock(&l->lock);
    return 0;
}

/* ---- Writing ----------------------------------------------------------------- */

static int write_lock(rwl_t *l, const struct timespec *deadline)
{
    pthread_t self = pthread_self();
    int err;
    pthread_mutex_lock(&l->lock);
    /* PAGE: upgrade-deadlock. A reader that waited for the write lock would
     * wait for its own read lock to go: for ever. Say so instead. */
    if (holds_write_locked(l, self) || find_reader_locked(l, self) != NULL)
        err = EDEADLK;
    else
        err = wait_to_write_locked(l, deadline);
    if (err == 0) {
        l->writer_active = true;
        l->writer = self;
    }
    pthread_mutex_unlock(&l->lock);
    return err;
}

int rwl_write_lock(rwl_t *l)
{
    if (l == NULL)
        return EINVAL;
    return write_lock(l, NULL);
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
    pthread_mutex_lock(&l->lock);
    if (!holds_write_locked(l, pthread_self())) {
        pthread_mutex_unlock(&l->lock);
        return EPERM;
    }
    l->writer_active = false;
    if (l->waiting_writers > 0)
        pthread_cond_signal(&l->writer_may_go); /* writers first, and one writer at a time */
    else
        pthread_cond_broadcast(&l->readers_may_go); /* PAGE: wake-every-reader. They may all read at once. */
    pthread_mutex_unlock(&l->lock);
    return 0;
}

void rwl_destroy(rwl_t *l)
{
    if (l == NULL)
        return;
    pthread_cond_destroy(&l->writer_may_go);
    pthread_cond_destroy(&l->readers_may_go);
    pthread_mutex_destroy(&l->lock);
    free(l->readers);
    free(l);
}
