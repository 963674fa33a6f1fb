/**
 * @file kit_sched.c
 * @brief The controlled scheduler: the model of mutexes, condition variables
 *        and threads, the switch point, virtual time, and the calls the
 *        link-time wrappers hand over to it.
 *
 * DESIGN: every managed thread is a real pthread with a semaphore of its
 * own. The thread holding the run token runs; at each pthread call it
 * records what it is about to do (lock M1, wait on C2, join a thread) and
 * calls switch_point(), which lists the threads that can go on, asks the
 * strategy to choose one, applies the chosen thread's pending operation in
 * the model (it now owns M1, it left C2's wait set) and posts that thread's
 * semaphore; the caller then sleeps on its own. No thread ever blocks in a
 * real mutex or condition variable: the real objects are never touched.
 */
#define _GNU_SOURCE
#include "kit_sched_internal.h"

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kit_test.h"

struct sched_world sched;

/* The thread this is, when the scheduler runs it. */
static _Thread_local struct sched_thread *me;
/* Set by a kit helper around its pthread calls: its caller's address, so
 * that steps name the test's line rather than the helper's. */
static _Thread_local void *outer_where;

void sched_set_outer_where(void *where)
{
    outer_where = where;
}

int __real_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
int __real_pthread_join(pthread_t thread, void **ret);
int __real_pthread_detach(pthread_t thread);
int __real_pthread_mutex_trylock(pthread_mutex_t *mutex);
int __real_pthread_mutex_destroy(pthread_mutex_t *mutex);
int __real_pthread_cond_destroy(pthread_cond_t *cond);
int __real_sched_yield(void);
int __real_nanosleep(const struct timespec *request, struct timespec *left);
int __real_clock_gettime(clockid_t clock, struct timespec *now);
void *__real_calloc(size_t count, size_t size);
void __real_free(void *block);

static void stop_here(void) __attribute__((noreturn));

bool kit_sched_active(void)
{
    return me != NULL;
}

/* ---- Virtual time ----------------------------------------------------------
 * Both clocks start at a fixed point, the same in every schedule, and move
 * together. They are decades apart, as on a real machine, so a deadline
 * says which clock it was computed on. */
#define NS_PER_S 1000000000LL
#define MONOTONIC_BASE (1000LL * NS_PER_S)
#define REALTIME_BASE (1800000000LL * NS_PER_S)

static int64_t virtual_of(const struct timespec *when)
{
    int64_t ns = (int64_t)when->tv_sec * NS_PER_S + when->tv_nsec;
    return ns - (when->tv_sec > 1000000000 ? REALTIME_BASE : MONOTONIC_BASE);
}

/* With timeouts_race, a deadline up to this far ahead may expire at any
 * switch point; a longer wait (a "forever" of LONG_MAX ms) does not. */
#define RACE_HORIZON_NS (10LL * NS_PER_S)

/* A deadline may expire now; with timeouts_race, time may also pass now. */
static bool expired(const struct sched_thread *t)
{
    if (t->deadline < 0)
        return false;
    return t->deadline <= sched.now || (sched.options.timeouts_race && t->deadline - sched.now <= RACE_HORIZON_NS);
}

/* ---- The model's objects ---------------------------------------------------- */

static int object_of(const void *addr, char kind)
{
    for (int i = 0; i < sched.nobjects; i++)
        if (sched.objects[i].addr == addr && sched.objects[i].kind == kind)
            return i;
    if (sched.nobjects == SCHED_MAX_OBJECTS) {
        sched_fail("more than %d mutexes and condition variables in one schedule", SCHED_MAX_OBJECTS);
        stop_here();
    }
    int serial = ++sched.serials[kind == 'M' ? 0 : 1];
    sched.objects[sched.nobjects] = (struct sched_object){ addr, kind, serial, -1 };
    return sched.nobjects++;
}

/* Destroyed objects leave the table: their memory may hold another one next. */
static void forget_object(int obj)
{
    sched.objects[obj].addr = NULL;
}

static void record_step(struct sched_thread *t, enum sched_op op, int obj, int other)
{
    snprintf(t->name, sizeof t->name, "%s", kit_thread_name());
    if (sched.nsteps >= sched.options.max_steps)
        return;
    sched.steps[sched.nsteps++] = (struct sched_step){ t->id, op, t->how, obj, other, t->where, sched.now };
}

/* ---- Choosing who goes next ----------------------------------------------------- */

static bool mutex_free(int obj)
{
    return sched.objects[obj].owner < 0;
}

static int waiting_threads(void)
{
    int n = 0;
    for (int i = 0; i < sched.nthreads; i++)
        if (sched.threads[i]->state == WAITING)
            n++;
    return n;
}

/* The ways thread t can go on now: none, one, or (waiting) two. */
static int ways_to_go(const struct sched_thread *t, enum sched_how *how)
{
    switch (t->state) {
    case RUNNABLE:
        how[0] = GO;
        return 1;
    case LOCKING:
        how[0] = GO;
        return mutex_free(t->obj) ? 1 : 0;
    case JOINING:
        how[0] = GO;
        return sched.threads[t->target]->state == DONE ? 1 : 0;
    case SLEEPING:
        how[0] = TIMEOUT;
        return expired(t) ? 1 : 0;
    case AWAITING:
        how[0] = GO;
        return waiting_threads() >= t->target ? 1 : 0;
    case WAITING: {
        int n = 0;
        if (!mutex_free(t->obj2))
            return 0;
        if (t->woken)
            how[n++] = GO;
        if (!t->woken && expired(t))
            how[n++] = TIMEOUT;
        if (!t->woken && sched.spurious_left > 0)
            how[n++] = SPURIOUS;
        return n;
    }
    case DONE:
        return 0;
    }
    return 0;
}

/* The alternatives, the running thread's first: choice 0 lets it go on. */
static int list_alternatives(struct sched_thread **alt, enum sched_how *how)
{
    int n = 0;
    struct sched_thread *running = sched.threads[sched.current];
    int k = ways_to_go(running, &how[n]);
    for (int j = 0; j < k; j++)
        alt[n++] = running;
    for (int i = 0; i < sched.nthreads; i++) {
        if (i == sched.current)
            continue;
        k = ways_to_go(sched.threads[i], &how[n]);
        for (int j = 0; j < k; j++)
            alt[n++] = sched.threads[i];
    }
    return n;
}

/* Let thread t go on as `how`: apply the operation it was blocked in. */
static void let_go(struct sched_thread *t, enum sched_how how)
{
    t->how = how;
    t->result = 0;
    if (how == TIMEOUT && t->deadline > sched.now)
        sched.now = t->deadline; /* time passed while the others were slow */
    if (t->state == LOCKING)
        sched.objects[t->obj].owner = t->id;
    if (t->state == WAITING) {
        sched.objects[t->obj2].owner = t->id;
        if (how == TIMEOUT)
            t->result = ETIMEDOUT;
        if (how == SPURIOUS)
            sched.spurious_left--;
    }
    t->state = RUNNABLE;
    sched.current = t->id;
}

/* No thread can go on: jump to the earliest deadline still ahead. */
static bool advance_time(void)
{
    int64_t earliest = -1;
    for (int i = 0; i < sched.nthreads; i++) {
        const struct sched_thread *t = sched.threads[i];
        bool timed = (t->state == SLEEPING || (t->state == WAITING && !t->woken)) && t->deadline > sched.now;
        if (timed && (earliest < 0 || t->deadline < earliest))
            earliest = t->deadline;
    }
    if (earliest < 0)
        return false;
    sched.now = earliest;
    return true;
}

static bool all_done(void)
{
    for (int i = 0; i < sched.nthreads; i++)
        if (sched.threads[i]->state != DONE)
            return false;
    return true;
}

/* Choose the next thread and apply its operation; NULL when the schedule ended. */
static struct sched_thread *choose_next(void)
{
    struct sched_thread *alt[SCHED_MAX_ALTS];
    enum sched_how how[SCHED_MAX_ALTS];
    sched.points++;
    if (sched.points > sched.options.max_steps) {
        sched_fail("more than %ld switch points: a livelock, or a loop that never waits", sched.options.max_steps);
        return NULL;
    }
    for (;;) {
        int n = list_alternatives(alt, how);
        if (n > 0) {
            bool preemptive = sched.threads[sched.current]->state == RUNNABLE;
            int i = n == 1 ? 0 : sched_decide(n, preemptive, (const struct sched_thread *const *)alt, how);
            if (i < 0)
                return NULL;
            let_go(alt[i], how[i]);
            return alt[i];
        }
        if (all_done())
            return NULL;
        if (!advance_time()) {
            sched.deadlocked = true;
            sched_fail("deadlock or lost wake-up: no thread can go on, and none waits with a deadline");
            return NULL;
        }
    }
}

static void park_forever(void) __attribute__((noreturn));
static void park_forever(void)
{
    for (;;)
        sem_wait(&me->go);
}

/* The schedule failed on this thread: tell the controller, and never run again.
 * (The thread's memory stays: the failed schedule's threads are left parked.) */
static void stop_here(void)
{
    sem_post(&sched.done);
    park_forever();
}

/* Fail the schedule for a misuse of a pthread object, on the running thread. */
static void misuse(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void misuse(const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(sched.message, sizeof sched.message, fmt, args);
    va_end(args);
    sched.failed = true;
    stop_here();
}

/* The switch point: the caller has set its state; returns when it runs again.
 * Once it has posted another thread's semaphore, the caller reads nothing of
 * the model: that thread now owns it (and the controller may free `self`). */
static void switch_point(void)
{
    struct sched_thread *self = me;
    bool ending = self->state == DONE;
    struct sched_thread *next = choose_next();
    if (next == NULL) {
        ending = ending && !sched.failed;
        sem_post(&sched.done);
        if (!ending)
            park_forever();
        return;
    }
    if (next == self)
        return;
    sem_post(&next->go);
    if (ending)
        return;
    while (sem_wait(&self->go) != 0)
        ; /* EINTR */
}

void sched_fail(const char *fmt, ...)
{
    if (sched.failed)
        return;
    va_list args;
    va_start(args, fmt);
    vsnprintf(sched.message, sizeof sched.message, fmt, args);
    va_end(args);
    sched.failed = true;
}

void kit_explore_fail(const char *file, int line, const char *fmt, ...)
{
    char text[1536];
    va_list args;
    va_start(args, fmt);
    vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    if (me == NULL)
        fail_msg("%s:%d: %s (kit_explore_fail outside an explored body)", file, line, text);
    const char *slash = strrchr(file, '/');
    sched_fail("%s:%d: %s", slash ? slash + 1 : file, line, text);
    sched.failer = me->id;
    me->where = NULL; /* the message says where */
    stop_here();
}

/* ---- Operations: what the wrappers hand over ------------------------------------ */

static void at(struct sched_thread *t, enum sched_state state, enum sched_op op, int obj, void *where)
{
    t->state = state;
    t->op = op;
    t->obj = obj;
    t->where = outer_where ? outer_where : where;
}

int kit_sched_mutex_lock(pthread_mutex_t *mutex, void *where)
{
    int obj = object_of(mutex, 'M');
    at(me, LOCKING, OP_LOCK, obj, where);
    if (sched.objects[obj].owner == me->id) {
        sched.deadlocked = true;
        misuse("%s locks M%d, which it already holds: it waits for itself", kit_thread_name(),
               sched.objects[obj].serial);
    }
    switch_point();
    record_step(me, OP_LOCK, obj, -1);
    return 0;
}

static int mutex_trylock(pthread_mutex_t *mutex, void *where)
{
    int obj = object_of(mutex, 'M');
    at(me, RUNNABLE, OP_TRYLOCK, obj, where);
    switch_point();
    int err = mutex_free(obj) ? 0 : EBUSY;
    if (err == 0)
        sched.objects[obj].owner = me->id;
    record_step(me, OP_TRYLOCK, obj, err);
    return err;
}

int kit_sched_mutex_unlock(pthread_mutex_t *mutex, void *where)
{
    int obj = object_of(mutex, 'M');
    at(me, RUNNABLE, OP_UNLOCK, obj, where);
    if (sched.objects[obj].owner != me->id) {
        misuse("%s unlocks M%d, which it does not hold", kit_thread_name(),
                         sched.objects[obj].serial);
    }
    sched.objects[obj].owner = -1;
    me->how = GO;
    record_step(me, OP_UNLOCK, obj, -1);
    switch_point();
    return 0;
}

int kit_sched_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex, const struct timespec *deadline,
                        void *where)
{
    int obj = object_of(cond, 'C');
    int lock = object_of(mutex, 'M');
    if (sched.objects[lock].owner != me->id)
        misuse("%s waits on C%d without holding M%d", kit_thread_name(),
                         sched.objects[obj].serial, sched.objects[lock].serial);
    at(me, WAITING, OP_WAIT, obj, where);
    me->obj2 = lock;
    me->deadline = deadline ? virtual_of(deadline) : -1;
    me->woken = false;
    me->wait_seq = ++sched.wait_seq;
    me->how = GO;
    sched.objects[lock].owner = -1; /* the wait gives the mutex up */
    record_step(me, OP_WAIT, obj, lock);
    switch_point();
    me->deadline = -1;
    record_step(me, OP_WAKE, obj, lock);
    return me->result;
}

/* Threads waiting on obj that no signal chose yet, in arrival order. */
static int unwoken_waiters(int obj, struct sched_thread **out)
{
    int n = 0;
    for (int i = 0; i < sched.nthreads; i++) {
        struct sched_thread *t = sched.threads[i];
        if (t->state == WAITING && t->obj == obj && !t->woken) {
            int j = n++;
            while (j > 0 && out[j - 1]->wait_seq > t->wait_seq) {
                out[j] = out[j - 1];
                j--;
            }
            out[j] = t;
        }
    }
    return n;
}

int kit_sched_cond_signal(pthread_cond_t *cond, bool all, void *where)
{
    int obj = object_of(cond, 'C');
    at(me, RUNNABLE, all ? OP_BROADCAST : OP_SIGNAL, obj, where);
    switch_point();
    struct sched_thread *waiters[SCHED_MAX_THREADS];
    int n = unwoken_waiters(obj, waiters);
    int first = 0;
    if (!all && n > 1)
        first = sched_decide(n, false, (const struct sched_thread *const *)waiters, NULL); /* which waiter */
    if (first < 0)
        stop_here();
    int last = all ? n : (n > 0 ? first + 1 : 0);
    for (int i = first; i < last; i++)
        waiters[i]->woken = true;
    me->how = GO;
    record_step(me, all ? OP_BROADCAST : OP_SIGNAL, obj, n > 0 && !all ? waiters[first]->id : -1);
    return 0;
}

/* ---- Threads ----------------------------------------------------------------------- */

static void *managed_start(void *raw)
{
    struct sched_thread *t = raw;
    me = t;
    while (sem_wait(&t->go) != 0)
        ;
    char name[KIT_THREAD_NAME_MAX];
    if (t->id == 0)
        snprintf(name, sizeof name, "test");
    else
        snprintf(name, sizeof name, "thread-%d", t->id); /* the same in every schedule */
    kit_thread_set_name(name);
    record_step(t, OP_START, -1, -1);
    t->ret = t->fn(t->arg);
    at(t, DONE, OP_EXIT, -1, NULL);
    record_step(t, OP_EXIT, -1, -1);
    switch_point();
    me = NULL;
    return NULL;
}

struct sched_thread *sched_new_thread(void *(*fn)(void *), void *arg, const pthread_attr_t *attr)
{
    if (sched.nthreads == SCHED_MAX_THREADS)
        return NULL;
    int detach_state = PTHREAD_CREATE_JOINABLE;
    if (attr != NULL)
        pthread_attr_getdetachstate(attr, &detach_state);
    struct sched_thread *t = __real_calloc(1, sizeof *t);
    if (t == NULL)
        return NULL;
    t->id = sched.nthreads;
    t->fn = fn;
    t->arg = arg;
    t->deadline = -1;
    t->detached = detach_state == PTHREAD_CREATE_DETACHED;
    t->state = RUNNABLE;
    t->op = OP_START;
    t->priority = kit_rng_next(&sched.rng) | (1ULL << 62); /* above every PCT change point */
    sem_init(&t->go, 0, 0);
    if (__real_pthread_create(&t->real, attr, managed_start, t) != 0) {
        sem_destroy(&t->go);
        __real_free(t);
        return NULL;
    }
    sched.threads[sched.nthreads++] = t;
    return t;
}

int kit_sched_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg, void *where)
{
    at(me, RUNNABLE, OP_CREATE, -1, where);
    struct sched_thread *t = sched_new_thread(fn, arg, attr);
    if (t == NULL && sched.nthreads == SCHED_MAX_THREADS)
        misuse("more than %d threads in one schedule: the explorer's scenarios are small", SCHED_MAX_THREADS);
    if (t == NULL)
        return EAGAIN;
    *thread = t->real;
    me->how = GO;
    record_step(me, OP_CREATE, -1, t->id);
    switch_point();
    return 0;
}

/* The live thread with this id: a joined thread's id may be given to a newer one. */
static struct sched_thread *managed(pthread_t thread)
{
    for (int i = sched.nthreads - 1; i >= 0; i--)
        if (!sched.threads[i]->real_joined && pthread_equal(sched.threads[i]->real, thread))
            return sched.threads[i];
    return NULL;
}

int __wrap_pthread_join(pthread_t thread, void **ret);
int __wrap_pthread_join(pthread_t thread, void **ret)
{
    struct sched_thread *t = me ? managed(thread) : NULL;
    if (t == NULL)
        return __real_pthread_join(thread, ret);
    at(me, JOINING, OP_JOIN, -1, __builtin_return_address(0));
    me->target = t->id;
    switch_point();
    record_step(me, OP_JOIN, -1, t->id);
    __real_pthread_join(t->real, NULL); /* it has ended in the model; the real thread is leaving */
    t->real_joined = true;
    if (ret)
        *ret = t->ret;
    return 0;
}

int __wrap_pthread_detach(pthread_t thread);
int __wrap_pthread_detach(pthread_t thread)
{
    struct sched_thread *t = me ? managed(thread) : NULL;
    if (t != NULL)
        t->detached = true;
    return __real_pthread_detach(thread);
}

/* ---- The calls only this file wraps ------------------------------------------------ */

int __wrap_pthread_mutex_trylock(pthread_mutex_t *mutex);
int __wrap_pthread_mutex_trylock(pthread_mutex_t *mutex)
{
    if (me == NULL)
        return __real_pthread_mutex_trylock(mutex);
    return mutex_trylock(mutex, __builtin_return_address(0));
}

/* Destroying a mutex someone holds, or a condition someone waits on, is undefined. */
int __wrap_pthread_mutex_destroy(pthread_mutex_t *mutex);
int __wrap_pthread_mutex_destroy(pthread_mutex_t *mutex)
{
    if (me != NULL) {
        int obj = object_of(mutex, 'M');
        if (!mutex_free(obj))
            misuse("%s destroys M%d while a thread holds it", kit_thread_name(),
                             sched.objects[obj].serial);
        /* A thread that wants the mutex (to lock it, or back after a wake-up)
         * would lock freed memory next. */
        for (int i = 0; i < sched.nthreads; i++) {
            const struct sched_thread *t = sched.threads[i];
            if ((t->state == LOCKING && t->obj == obj) || (t->state == WAITING && t->obj2 == obj))
                misuse("%s destroys M%d while %s still wants it", kit_thread_name(),
                       sched.objects[obj].serial, t->name);
        }
        forget_object(obj);
    }
    return __real_pthread_mutex_destroy(mutex);
}

int __wrap_pthread_cond_destroy(pthread_cond_t *cond);
int __wrap_pthread_cond_destroy(pthread_cond_t *cond)
{
    if (me != NULL) {
        int obj = object_of(cond, 'C');
        for (int i = 0; i < sched.nthreads; i++)
            if (sched.threads[i]->state == WAITING && sched.threads[i]->obj == obj)
                misuse("%s destroys C%d while %s still waits on it", kit_thread_name(),
                                 sched.objects[obj].serial, sched.threads[i]->name);
        forget_object(obj);
    }
    return __real_pthread_cond_destroy(cond);
}

int __wrap_sched_yield(void);
int __wrap_sched_yield(void)
{
    if (me == NULL)
        return __real_sched_yield();
    at(me, RUNNABLE, OP_YIELD, -1, __builtin_return_address(0));
    switch_point();
    record_step(me, OP_YIELD, -1, -1);
    return 0;
}

void kit_explore_await_sleepers(int count)
{
    if (me == NULL)
        fail_msg("kit_explore_await_sleepers outside an explored body");
    at(me, AWAITING, OP_AWAIT, -1, __builtin_return_address(0));
    me->target = count;
    switch_point();
    record_step(me, OP_AWAIT, -1, count);
}

int __wrap_nanosleep(const struct timespec *request, struct timespec *left);
int __wrap_nanosleep(const struct timespec *request, struct timespec *left)
{
    if (me == NULL)
        return __real_nanosleep(request, left);
    at(me, SLEEPING, OP_SLEEP, -1, __builtin_return_address(0));
    me->deadline = sched.now + (int64_t)request->tv_sec * NS_PER_S + request->tv_nsec;
    switch_point();
    me->deadline = -1;
    record_step(me, OP_SLEEP, -1, -1);
    return 0;
}

int __wrap_clock_gettime(clockid_t clock, struct timespec *now);
int __wrap_clock_gettime(clockid_t clock, struct timespec *now)
{
    if (me == NULL || (clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME))
        return __real_clock_gettime(clock, now);
    int64_t ns = sched.now + (clock == CLOCK_REALTIME ? REALTIME_BASE : MONOTONIC_BASE);
    now->tv_sec = (time_t)(ns / NS_PER_S);
    now->tv_nsec = (long)(ns % NS_PER_S);
    return 0;
}
