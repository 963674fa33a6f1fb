/**
 * @file kit_misuse.c
 * @brief Misused pthread calls on real threads, told at the student's line
 *        (kit_misuse.h).
 *
 * Two small tables, each under a lock of its own: the threads the test
 * process made (joinable, detached, being joined, joined), and the
 * condition variables threads sleep on now (with which mutex, how many
 * sleep, how many a signal or broadcast let go). A mutex's owner is the
 * C library's own record: glibc keeps it in every mutex it locks, and
 * checks it only for the error-checking and recursive kinds.
 */
#define _GNU_SOURCE
#include "kit_misuse.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kit_sched.h"
#include "kit_test.h"
#include "kit_thread.h"

int __real_pthread_join(pthread_t thread, void **ret);
int __real_pthread_detach(pthread_t thread);
int __real_pthread_mutex_lock(pthread_mutex_t *mutex);
int __real_pthread_mutex_unlock(pthread_mutex_t *mutex);

/* The tables' locks: under ThreadSanitizer, invisible to it - a lock both a
 * worker's signal and another thread's wake-up take would order what the
 * two threads did around them, and hide the code's own data races. */
#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#if defined(UNDER_TSAN)
void __tsan_ignore_thread_begin(void); /* its accesses */
void __tsan_ignore_thread_end(void);
void AnnotateIgnoreSyncBegin(const char *file, int line); /* its locks */
void AnnotateIgnoreSyncEnd(const char *file, int line);
#endif

static void table_lock(pthread_mutex_t *lock)
{
#if defined(UNDER_TSAN)
    __tsan_ignore_thread_begin();
    AnnotateIgnoreSyncBegin(__FILE__, __LINE__);
#endif
    __real_pthread_mutex_lock(lock);
}

static void table_unlock(pthread_mutex_t *lock)
{
    __real_pthread_mutex_unlock(lock);
#if defined(UNDER_TSAN)
    AnnotateIgnoreSyncEnd(__FILE__, __LINE__);
    __tsan_ignore_thread_end();
#endif
}

/* The test stops: @p what was wrong (a format with one %s: the place), and how to fix it. */
static _Noreturn void stop(void *where, const char *what)
{
    char place[1][160];
    void *pcs[1] = { where };
    kit_describe_places(pcs, 1, place);
    char message[1024];
    snprintf(message, sizeof message, what, place[0]);
    kit_stop_test(message, NULL, 0);
}

/* ---- Threads ----------------------------------------------------------------------------
 * A pthread_t comes back once its thread is joined (or, detached, has
 * ended): pthread_create sets its record anew. A table that is full stops
 * taking new threads; those go unchecked. */
enum thread_state { JOINABLE = 1, DETACHED, JOINING, JOINED };

#define THREAD_SLOTS 8192
static struct thread_record {
    pthread_t id;
    enum thread_state state; /* 0: an empty slot */
} threads[THREAD_SLOTS];
static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER; /* guards threads[] */

/* The record of @p id, or where it would go (NULL: not there, and no room). Its lock is the caller's. */
static struct thread_record *thread_slot(pthread_t id, bool add)
{
    size_t start = (size_t)(((uint64_t)id >> 4) * 0x9E3779B97F4A7C15ULL >> 51) & (THREAD_SLOTS - 1);
    for (size_t i = 0; i < THREAD_SLOTS; i++) {
        struct thread_record *r = &threads[(start + i) & (THREAD_SLOTS - 1)];
        if (r->state != 0 && pthread_equal(r->id, id))
            return r;
        if (r->state == 0)
            return add ? r : NULL;
    }
    return NULL;
}

void kit_misuse_thread_made(pthread_t thread, const pthread_attr_t *attr)
{
    int detach_state = PTHREAD_CREATE_JOINABLE;
    if (attr != NULL)
        pthread_attr_getdetachstate(attr, &detach_state);
    table_lock(&threads_lock);
    struct thread_record *r = thread_slot(thread, true);
    if (r != NULL)
        *r = (struct thread_record){ thread, detach_state == PTHREAD_CREATE_DETACHED ? DETACHED : JOINABLE };
    table_unlock(&threads_lock);
}

/* Why the thread cannot be joined or detached (NULL: it can), moving it to @p next if it can. */
static const char *take_thread(pthread_t thread, enum thread_state next)
{
    const char *why = NULL;
    table_lock(&threads_lock);
    struct thread_record *r = thread_slot(thread, false);
    if (r != NULL && r->state == DETACHED)
        why = "detached";
    else if (r != NULL && (r->state == JOINING || r->state == JOINED))
        why = "joined";
    else if (r != NULL)
        r->state = next;
    table_unlock(&threads_lock);
    return why;
}

int kit_misuse_join(pthread_t thread, void **ret, void *where)
{
    if (pthread_equal(thread, pthread_self()))
        stop(where, "pthread_join at %s joins the calling thread itself: a thread cannot wait for its own end "
                    "(EDEADLK). Join a thread from another one");
    const char *why = take_thread(thread, JOINING);
    if (why != NULL && why[0] == 'd')
        stop(where, "pthread_join at %s joins a detached thread: a detached thread cleans up after itself and can "
                    "never be joined (EINVAL, or worse: its pthread_t may be another thread's by now). Either "
                    "detach a thread or join it, not both");
    if (why != NULL)
        stop(where, "pthread_join at %s joins a thread that was joined already (or is being joined by another "
                    "thread): a thread is joined once, by one thread - after that its pthread_t means nothing "
                    "(ESRCH, or another thread's). Decide which thread joins each worker (under a lock, or by "
                    "design), and join it there only");
    int err = __real_pthread_join(thread, ret);
    table_lock(&threads_lock);
    struct thread_record *r = thread_slot(thread, false);
    if (r != NULL && r->state == JOINING)
        r->state = err == 0 ? JOINED : JOINABLE;
    table_unlock(&threads_lock);
    return err;
}

int kit_misuse_detach(pthread_t thread, void *where)
{
    const char *why = take_thread(thread, DETACHED);
    if (why != NULL && why[0] == 'd')
        stop(where, "pthread_detach at %s detaches a thread that is detached already (EINVAL): detach each thread "
                    "once - or create it detached and never call pthread_detach");
    if (why != NULL)
        stop(where, "pthread_detach at %s detaches a thread that was joined (or is being joined): after a join "
                    "its pthread_t means nothing. Either detach a thread or join it, not both");
    return __real_pthread_detach(thread);
}

/* ---- Mutexes --------------------------------------------------------------------------- */

/* Forks of this process so far, as its child counts them: a thread's id
 * is its own again in a child (the one thread a fork copies gets a new one). */
static atomic_uint forks;

static void forked(void)
{
    atomic_fetch_add_explicit(&forks, 1, memory_order_relaxed);
}

static void count_forks(void)
{
    pthread_atfork(NULL, NULL, forked);
}

/* The kernel's id of the calling thread: what glibc records as a mutex's owner. */
static pid_t my_tid(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    static _Thread_local pid_t tid;
    static _Thread_local unsigned tid_forks;
    pthread_once(&once, count_forks);
    unsigned now = atomic_load_explicit(&forks, memory_order_relaxed);
    if (tid == 0 || tid_forks != now) {
        tid = (pid_t)syscall(SYS_gettid);
        tid_forks = now;
    }
    return tid;
}

/* Whether the calling thread holds the mutex; true when the C library does
 * not say (not glibc, or a kind whose owner it keeps elsewhere). */
static bool held_by_me(const pthread_mutex_t *mutex)
{
#if defined(__GLIBC__)
    int kind = __atomic_load_n(&mutex->__data.__kind, __ATOMIC_RELAXED);
    if ((kind & ~3) != 0) /* robust, shared, priority, elided: the owner is kept another way */
        return true;
    return __atomic_load_n(&mutex->__data.__owner, __ATOMIC_RELAXED) == my_tid();
#else
    (void)mutex;
    return true;
#endif
}

void kit_misuse_unlock(pthread_mutex_t *mutex, void *where)
{
    if (!held_by_me(mutex))
        stop(where, "pthread_mutex_unlock at %s unlocks a mutex the calling thread does not hold (or memory "
                    "that is no mutex any more: freed already?): unlocking "
                    "another thread's mutex (or a free one) is undefined - its critical section is opened to "
                    "everyone. Unlock only a mutex this thread locked, exactly once per lock, on every path (look "
                    "for a second unlock after an early return or a wait loop)");
}

void kit_misuse_mutex_destroy(pthread_mutex_t *mutex, void *where)
{
#if defined(__GLIBC__)
    int kind = __atomic_load_n(&mutex->__data.__kind, __ATOMIC_RELAXED);
    if ((kind & ~3) == 0 && __atomic_load_n(&mutex->__data.__lock, __ATOMIC_RELAXED) != 0)
        stop(where, "pthread_mutex_destroy at %s destroys a mutex that is locked (EBUSY) - or memory that is no "
                    "mutex any more (freed already?): destroying a locked mutex is undefined. Unlock it first - and "
                    "destroy it only once no thread can lock it any more (after joining the threads that use it), "
                    "before freeing the memory that holds it");
#else
    (void)mutex;
    (void)where;
#endif
}

/* ---- Condition variables ----------------------------------------------------------------
 * The condition variables threads sleep on now: with which mutex, how many
 * sleep, and how many of them a signal or broadcast let go (those may still
 * be on their way out, relocking the mutex: a destroy then is allowed).
 * A record leaves when its last sleeper does. */
#define COND_SLOTS 1024
static struct cond_record {
    const pthread_cond_t *cond; /* NULL: an empty slot */
    const pthread_mutex_t *mutex;
    int sleepers;
    int released;
} conds[COND_SLOTS];
static atomic_int conds_used;                                  /* records in conds[] */
static pthread_mutex_t conds_lock = PTHREAD_MUTEX_INITIALIZER; /* guards conds[] and conds_used */

static size_t cond_home(const pthread_cond_t *cond)
{
    return (size_t)(((uintptr_t)cond >> 4) * 0x9E3779B1u) & (COND_SLOTS - 1);
}

/* The record of @p cond, or the empty slot where its probe ends. Its lock is the caller's. */
static struct cond_record *cond_slot(const pthread_cond_t *cond)
{
    size_t at = cond_home(cond);
    while (conds[at].cond != NULL && conds[at].cond != cond)
        at = (at + 1) & (COND_SLOTS - 1);
    return &conds[at];
}

/* Linear probing's deletion (Knuth's algorithm R): the records after the
 * hole that probed past it move back into it. Its lock is the caller's. */
static void cond_remove(struct cond_record *r)
{
    size_t hole = (size_t)(r - conds);
    conds[hole].cond = NULL;
    conds_used--;
    for (size_t at = (hole + 1) & (COND_SLOTS - 1); conds[at].cond != NULL; at = (at + 1) & (COND_SLOTS - 1)) {
        size_t home = cond_home(conds[at].cond);
        bool on_path = home <= at ? home <= hole && hole < at : home <= hole || hole < at;
        if (!on_path)
            continue;
        conds[hole] = conds[at];
        conds[at].cond = NULL;
        hole = at;
    }
}

void kit_misuse_wait_begin(pthread_cond_t *cond, pthread_mutex_t *mutex, void *where)
{
    if (!held_by_me(mutex))
        stop(where, "pthread_cond_wait at %s waits with a mutex the calling thread does not hold: a wait must be "
                    "called with its mutex locked by the caller - it unlocks it while it sleeps and locks it again "
                    "before it returns. Lock the mutex before the loop that checks the condition and waits");
    bool other_mutex = false;
    table_lock(&conds_lock);
    struct cond_record *r = cond_slot(cond);
    if (r->cond != NULL && r->mutex != mutex)
        other_mutex = true;
    else if (r->cond != NULL)
        r->sleepers++;
    else if (conds_used < COND_SLOTS / 2) { /* (a table fuller than that goes unchecked) */
        *r = (struct cond_record){ cond, mutex, 1, 0 };
        conds_used++;
    }
    table_unlock(&conds_lock);
    if (other_mutex)
        stop(where, "pthread_cond_wait at %s waits on a condition variable with one mutex while another thread "
                    "waits on it with a different one: a condition variable is used with one mutex at a time - "
                    "the one that guards its condition. Wait on each condition variable with the same mutex "
                    "everywhere");
}

void kit_misuse_wait_end(pthread_cond_t *cond, int err)
{
    table_lock(&conds_lock);
    struct cond_record *r = cond_slot(cond);
    if (r->cond != NULL) {
        r->sleepers--;
        if (err == 0 && r->released > 0)
            r->released--;
        if (r->sleepers <= 0)
            cond_remove(r);
    }
    table_unlock(&conds_lock);
}

void kit_misuse_wake(pthread_cond_t *cond, bool all)
{
    if (atomic_load_explicit(&conds_used, memory_order_relaxed) == 0)
        return; /* nobody sleeps: nothing to let go (a sleeper that comes later is not woken by this) */
    table_lock(&conds_lock);
    struct cond_record *r = cond_slot(cond);
    if (r->cond != NULL)
        r->released = all || r->released >= r->sleepers ? r->sleepers : r->released + 1;
    table_unlock(&conds_lock);
}

void kit_misuse_cond_destroy(pthread_cond_t *cond, void *where)
{
    table_lock(&conds_lock);
    struct cond_record *r = cond_slot(cond);
    bool sleepers = r->cond != NULL && r->sleepers > r->released;
    table_unlock(&conds_lock);
    if (sleepers)
        stop(where, "pthread_cond_destroy at %s destroys a condition variable a thread still sleeps on, with no "
                    "signal or broadcast to wake it: destroying it is undefined - the sleeper may never wake, or "
                    "wake inside freed memory. Wake every sleeper first (a close that broadcasts) and wait until "
                    "each has left the wait, or join them, then destroy");
}
