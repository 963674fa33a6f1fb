/**
 * @file kit_judge_sync.c
 * @brief The test's threads and their pthread calls in the judge, and the
 *        test's schedules: the one a graded test runs on, and the ones an
 *        exploration searches.
 *
 * Every thread of the test has a stand-in in the subject, started by
 * pthread_create here and ended by its join. Off a schedule both run on real
 * threads, and the test's mutexes, conditions, clocks and sleeps are the
 * judge's own. On a schedule they are the subject's: each such call goes
 * to the thread's stand-in, which makes it on an object of its own under
 * the scheduler, while this thread waits for the answer - so exactly one
 * thread of the test or of the subject runs at a time, in the order of the
 * subject's schedule. The judge still takes its own mutex after the
 * subject's: a subject that let two threads in at once would only stall the
 * test, never run two critical sections of it together.
 */
#define _GNU_SOURCE
#include "kit_judge.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kit_sched.h"
#include "kit_test.h"

int __real_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
int __real_pthread_join(pthread_t thread, void **result);
int __real_pthread_detach(pthread_t thread);
int __real_pthread_mutex_lock(pthread_mutex_t *mutex);
int __real_pthread_mutex_trylock(pthread_mutex_t *mutex);
int __real_pthread_mutex_unlock(pthread_mutex_t *mutex);
int __real_pthread_mutex_destroy(pthread_mutex_t *mutex);
int __real_pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex);
int __real_pthread_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex, const struct timespec *at);
int __real_pthread_cond_clockwait(pthread_cond_t *cond, pthread_mutex_t *mutex, clockid_t clock,
                                  const struct timespec *at);
int __real_pthread_cond_signal(pthread_cond_t *cond);
int __real_pthread_cond_broadcast(pthread_cond_t *cond);
int __real_pthread_cond_init(pthread_cond_t *cond, const pthread_condattr_t *attr);
int __real_pthread_cond_destroy(pthread_cond_t *cond);
int __real_sched_yield(void);
int __real_nanosleep(const struct timespec *request, struct timespec *left);
int __real_clock_nanosleep(clockid_t clock, int flags, const struct timespec *request, struct timespec *left);
int __real_usleep(useconds_t us);
int __real_clock_gettime(clockid_t clock, struct timespec *now);

/* ---- one call of the test's own to the subject -------------------------------------- */

static pthread_once_t base_once = PTHREAD_ONCE_INIT;
static uintptr_t base; /* where this program is loaded; written once (base_once) */

static void find_base(void)
{
    Dl_info info;
    if (dladdr(&base, &info) != 0) /* (this program's own variable: the judge links no library of its own) */
        base = (uintptr_t)info.dli_fbase;
}

/* The place of this program a call of the test's came from, as an offset in
 * its file: the subject's reports name it as the test's line (0: unknown). */
uint64_t judge_offset_of(const void *site)
{
    pthread_once(&base_once, find_base);
    return site != NULL && base != 0 && (uintptr_t)site > base ? (uint64_t)((uintptr_t)site - base) : 0;
}

/* One pthread call of the test's, made by its stand-in, and its answer; @p
 * site is where the test made it. */
static uint64_t sync_call_at(const void *site, enum kit_sync op, uint64_t a, uint64_t b, uint64_t c, uint64_t d,
                             uint64_t e)
{
    kit_wire_t *m = kit_judge_begin(WIRE_SYNC, op);
    uint64_t words[] = { a, b, c, d, e };
    for (int i = 0; i < 5; i++)
        kit_judge_word(m, words[i]);
    uint64_t offset = judge_offset_of(site);
    if (offset != 0 && !judge_replaying) /* (a transcript's steps are placed in the subject's copy) */
        kit_judge_bytes(m, &offset, sizeof offset, "a call's place");
    return kit_judge_call(m, 3, 0)->arg[0];
}
/* In a wrapper of a pthread call: the place is the wrapper's caller. */
#define sync_call(op, a, b, c, d, e) sync_call_at(__builtin_return_address(0), (op), (a), (b), (c), (d), (e))

static uint64_t address(const void *object)
{
    return (uint64_t)(uintptr_t)object;
}

/* An answer that must be one of pthread's: 0, or one of @p allowed. */
static int checked(uint64_t code, int allowed)
{
    if (code != 0 && code != (uint64_t)allowed)
        kit_judge_violation("a pthread call answered %llu", (unsigned long long)code);
    return (int)code;
}

/* ---- threads ----------------------------------------------------------------------------- */

/* A test thread and its channel. On a schedule the thread is one of the
 * judge's own workers, one a channel, kept parked between the test's
 * threads: a schedule starts and joins its threads by the thousand, and a
 * parked worker takes the next at the cost of a wake-up, not of a thread. */
struct slot {
    pthread_t thread;
    bool live, ended, detached; /* guarded by slots_lock */
    bool pooled;                /* a worker's: joined by its end, not by pthread_join */
    bool has_worker;            /* a worker parks on this channel */
    bool job_ready;             /* ... and has a job to run */
    struct start {
        void *(*fn)(void *);
        void *arg;
        int channel;
        bool on_schedule;
    } job;
    void *result;
    pthread_cond_t changed; /* broadcast when a job is given or a thread ends */
};
static struct slot slots[KIT_WIRE_CHANNELS];
/* Guards every slot's state, alive and the conditions' clocks: a thread
 * starting, ending and being joined are three threads' doing. */
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static int alive; /* threads of the test not yet ended; guarded by slots_lock */

/* The thread is over for the judge: its channel goes back once it is both
 * ended and joined (or detached). */
static void slot_done(int channel, bool ended, bool let_go, void *result)
{
    __real_pthread_mutex_lock(&slots_lock);
    struct slot *slot = &slots[channel];
    slot->ended |= ended;
    slot->detached |= let_go;
    if (ended) {
        alive--;
        slot->result = result;
        __real_pthread_cond_broadcast(&slot->changed); /* a join may wait for this end */
    }
    bool free_it = slot->ended && slot->detached;
    if (free_it)
        slot->live = false;
    __real_pthread_mutex_unlock(&slots_lock);
    if (free_it)
        judge_release_channel(channel);
}

/* One test thread's life on its channel: its stand-in says go, it runs, it says it ended. */
static void *run_job(struct start job)
{
    judge_set_thread(job.channel, job.on_schedule);
    kit_judge_wait(WIRE_GO); /* its stand-in runs: so may it */
    void *result = job.fn(job.arg);
    kit_wire_t *m = kit_judge_begin(WIRE_EXIT, 0);
    kit_judge_post(m);
    return result;
}

static void *thread_main(void *raw)
{
    struct start job = *(struct start *)raw;
    free(raw);
    void *result = run_job(job);
    judge_thread_done();
    slot_done(job.channel, true, false, result);
    return result;
}

/* A worker parked on one channel: it runs each job given there, for ever. */
static void *worker_main(void *raw)
{
    struct slot *slot = raw;
    for (;;) {
        __real_pthread_mutex_lock(&slots_lock);
        while (!slot->job_ready) /* while: a broadcast for an end, not for a job */
            __real_pthread_cond_wait(&slot->changed, &slots_lock);
        slot->job_ready = false;
        struct start job = slot->job;
        __real_pthread_mutex_unlock(&slots_lock);
        slot_done(job.channel, true, false, run_job(job));
    }
    return NULL;
}

/* A job on a replayed schedule, run as its channel's context: as a worker runs it. */
static void context_job(void *raw)
{
    struct slot *slot = raw;
    struct start job = slot->job;
    slot_done(job.channel, true, false, run_job(job));
}

/* Start @p job as its channel's context (kit_judge_contexts.c): its thread
 * is named by its slot, which no real thread's name can be. */
static int start_context(pthread_t *thread, struct start job)
{
    struct slot *slot = &slots[job.channel];
    __real_pthread_mutex_lock(&slots_lock);
    slot->live = true;
    slot->ended = slot->detached = false;
    slot->pooled = true;
    slot->job = job;
    slot->thread = (pthread_t)(uintptr_t)slot;
    *thread = slot->thread;
    alive++;
    __real_pthread_mutex_unlock(&slots_lock);
    if (judge_context_start(job.channel, context_job, slot))
        return 0;
    slot_done(job.channel, true, true, NULL);
    return EAGAIN;
}

/* Start @p job on its channel: a parked worker on a schedule (a context on
 * a replayed one), else a thread of its own. */
static int start_job(pthread_t *thread, const pthread_attr_t *attr, struct start job)
{
    if (job.on_schedule && judge_in_context())
        return start_context(thread, job);
    struct slot *slot = &slots[job.channel];
    __real_pthread_mutex_lock(&slots_lock);
    int err = 0;
    if (job.on_schedule && !slot->has_worker && (err = __real_pthread_create(&slot->thread, NULL, worker_main, slot)) == 0)
        slot->has_worker = true;
    slot->live = true;
    slot->ended = slot->detached = false;
    slot->pooled = job.on_schedule;
    if (job.on_schedule && err == 0) {
        slot->job = job;
        slot->job_ready = true;
        *thread = slot->thread;
        __real_pthread_cond_broadcast(&slot->changed);
    }
    alive += err == 0;
    __real_pthread_mutex_unlock(&slots_lock);
    if (job.on_schedule || err != 0)
        return err;
    struct start *copy = malloc(sizeof *copy);
    if (copy == NULL || (err = __real_pthread_create(thread, attr, thread_main, copy ? (*copy = job, copy) : NULL)) != 0) {
        free(copy);
        slot_done(job.channel, true, true, NULL);
        return err ? err : EAGAIN;
    }
    slot->thread = *thread;
    return 0;
}

int __wrap_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
int __wrap_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    kit_judge_begin(WIRE_SYNC, 0); /* the subject runs before any thread is made */
    int channel = judge_take_channel();
    if (channel < 0)
        return EAGAIN;
    int err = start_job(thread, attr, (struct start){ fn, arg, channel, kit_judge_on_schedule() });
    if (err != 0)
        return err;
    if (sync_call(SYNC_CREATE, (uint64_t)channel, 0, 0, 0, 0) != 0)
        kit_fail_at(__FILE__, __LINE__, "the code under test's process could not start a thread for the test");
    return 0;
}

static int channel_of(pthread_t thread)
{
    int found = -1;
    __real_pthread_mutex_lock(&slots_lock);
    for (int c = 1; c < KIT_WIRE_CHANNELS && found < 0; c++)
        if (slots[c].live && pthread_equal(slots[c].thread, thread))
            found = c;
    __real_pthread_mutex_unlock(&slots_lock);
    return found;
}

/* A worker's job ended: its result, once it has (the subject's join came first). */
static void *pooled_result(int channel)
{
    struct slot *slot = &slots[channel];
    __real_pthread_mutex_lock(&slots_lock);
    while (!slot->ended) { /* while: a broadcast for a job, not for this end */
        if (!judge_in_context()) {
            __real_pthread_cond_wait(&slot->changed, &slots_lock);
            continue;
        }
        __real_pthread_mutex_unlock(&slots_lock);
        judge_context_yield(channel); /* it ran up to its end's message: it ends now */
        __real_pthread_mutex_lock(&slots_lock);
    }
    void *result = slot->result;
    __real_pthread_mutex_unlock(&slots_lock);
    return result;
}

int __wrap_pthread_join(pthread_t thread, void **result);
int __wrap_pthread_join(pthread_t thread, void **result)
{
    int channel = channel_of(thread);
    if (channel > 0)
        checked(sync_call(SYNC_JOIN, (uint64_t)channel, 0, 0, 0, 0), ESRCH);
    int err = 0;
    if (channel > 0 && slots[channel].pooled) {
        void *value = pooled_result(channel);
        if (result)
            *result = value;
    } else {
        err = __real_pthread_join(thread, result);
    }
    if (channel > 0)
        slot_done(channel, false, true, NULL);
    return err;
}

int __wrap_pthread_detach(pthread_t thread);
int __wrap_pthread_detach(pthread_t thread)
{
    int channel = channel_of(thread);
    if (channel > 0)
        sync_call(SYNC_DETACH, (uint64_t)channel, 0, 0, 0, 0);
    int err = channel > 0 && slots[channel].pooled ? 0 : __real_pthread_detach(thread);
    if (channel > 0)
        slot_done(channel, false, true, NULL);
    return err;
}

int kit_threads_alive(void)
{
    __real_pthread_mutex_lock(&slots_lock);
    int n = alive;
    __real_pthread_mutex_unlock(&slots_lock);
    return n;
}

/* ---- mutexes and conditions ------------------------------------------------------------ */

/* The judge's own mutex, once the subject granted the test's. On contexts
 * its holder would be this OS thread: it must be free, or the subject let
 * two threads in at once. */
static void take_own(pthread_mutex_t *mutex)
{
    if (!judge_in_context())
        __real_pthread_mutex_lock(mutex);
    else if (__real_pthread_mutex_trylock(mutex) != 0)
        kit_judge_violation("a mutex of the test granted to one of its threads while another held it");
}

int __wrap_pthread_mutex_lock(pthread_mutex_t *mutex);
int __wrap_pthread_mutex_lock(pthread_mutex_t *mutex)
{
    if (!kit_judge_on_schedule())
        return __real_pthread_mutex_lock(mutex);
    checked(sync_call(SYNC_MUTEX_LOCK, address(mutex), 0, 0, 0, 0), 0);
    take_own(mutex);
    return 0;
}

int __wrap_pthread_mutex_trylock(pthread_mutex_t *mutex);
int __wrap_pthread_mutex_trylock(pthread_mutex_t *mutex)
{
    if (!kit_judge_on_schedule())
        return __real_pthread_mutex_trylock(mutex);
    if (checked(sync_call(SYNC_MUTEX_TRYLOCK, address(mutex), 0, 0, 0, 0), EBUSY) != 0)
        return EBUSY;
    take_own(mutex);
    return 0;
}

int __wrap_pthread_mutex_unlock(pthread_mutex_t *mutex);
int __wrap_pthread_mutex_unlock(pthread_mutex_t *mutex)
{
    int err = __real_pthread_mutex_unlock(mutex);
    if (kit_judge_on_schedule())
        checked(sync_call(SYNC_MUTEX_UNLOCK, address(mutex), 0, 0, 0, 0), 0);
    return err;
}

int __wrap_pthread_mutex_destroy(pthread_mutex_t *mutex);
int __wrap_pthread_mutex_destroy(pthread_mutex_t *mutex)
{
    if (kit_judge_on_schedule())
        sync_call(SYNC_FORGET, address(mutex), 0, 0, 0, 0);
    return __real_pthread_mutex_destroy(mutex);
}

/* The clock each condition of the test times its waits by (its attribute's). */
enum { CLOCKED = 256 };
static struct {
    const void *cond;
    clockid_t clock;
} clocked[CLOCKED]; /* guarded by slots_lock */

int __wrap_pthread_cond_init(pthread_cond_t *cond, const pthread_condattr_t *attr);
int __wrap_pthread_cond_init(pthread_cond_t *cond, const pthread_condattr_t *attr)
{
    clockid_t clock = CLOCK_REALTIME;
    if (attr)
        pthread_condattr_getclock(attr, &clock);
    __real_pthread_mutex_lock(&slots_lock);
    int free_at = -1;
    for (int i = 0; i < CLOCKED; i++) {
        if (clocked[i].cond == cond)
            clocked[i].cond = NULL;
        if (clocked[i].cond == NULL && free_at < 0)
            free_at = i;
    }
    if (free_at >= 0 && clock != CLOCK_REALTIME)
        clocked[free_at].cond = cond, clocked[free_at].clock = clock;
    __real_pthread_mutex_unlock(&slots_lock);
    return __real_pthread_cond_init(cond, attr);
}

static clockid_t clock_of(const pthread_cond_t *cond)
{
    clockid_t clock = CLOCK_REALTIME;
    __real_pthread_mutex_lock(&slots_lock);
    for (int i = 0; i < CLOCKED; i++)
        if (clocked[i].cond == cond)
            clock = clocked[i].clock;
    __real_pthread_mutex_unlock(&slots_lock);
    return clock;
}

/* On a schedule: the subject's condition; the judge's mutex is let go
 * around it and taken again after, as a wait does. */
static int scheduled_wait(pthread_cond_t *cond, pthread_mutex_t *mutex, clockid_t clock, const struct timespec *at,
                          const void *site)
{
    __real_pthread_mutex_unlock(mutex);
    uint64_t code = sync_call_at(site, SYNC_COND_WAIT, address(cond), address(mutex), at != NULL, at ? (uint64_t)clock : 0,
                              at ? (uint64_t)at->tv_sec * 1000000000ULL + (uint64_t)at->tv_nsec : 0);
    take_own(mutex);
    return checked(code, ETIMEDOUT);
}

int __wrap_pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex);
int __wrap_pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex)
{
    if (kit_judge_on_schedule())
        return scheduled_wait(cond, mutex, CLOCK_REALTIME, NULL, __builtin_return_address(0));
    return __real_pthread_cond_wait(cond, mutex);
}

int __wrap_pthread_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex, const struct timespec *at);
int __wrap_pthread_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex, const struct timespec *at)
{
    if (kit_judge_on_schedule())
        return scheduled_wait(cond, mutex, clock_of(cond), at, __builtin_return_address(0));
    return __real_pthread_cond_timedwait(cond, mutex, at);
}

int __wrap_pthread_cond_clockwait(pthread_cond_t *cond, pthread_mutex_t *mutex, clockid_t clock,
                                  const struct timespec *at);
int __wrap_pthread_cond_clockwait(pthread_cond_t *cond, pthread_mutex_t *mutex, clockid_t clock,
                                  const struct timespec *at)
{
    if (kit_judge_on_schedule())
        return scheduled_wait(cond, mutex, clock, at, __builtin_return_address(0));
    return __real_pthread_cond_clockwait(cond, mutex, clock, at);
}

int __wrap_pthread_cond_signal(pthread_cond_t *cond);
int __wrap_pthread_cond_signal(pthread_cond_t *cond)
{
    if (kit_judge_on_schedule())
        return checked(sync_call(SYNC_COND_SIGNAL, address(cond), 0, 0, 0, 0), 0);
    return __real_pthread_cond_signal(cond);
}

int __wrap_pthread_cond_broadcast(pthread_cond_t *cond);
int __wrap_pthread_cond_broadcast(pthread_cond_t *cond)
{
    if (kit_judge_on_schedule())
        return checked(sync_call(SYNC_COND_BROADCAST, address(cond), 0, 0, 0, 0), 0);
    return __real_pthread_cond_broadcast(cond);
}

int __wrap_pthread_cond_destroy(pthread_cond_t *cond);
int __wrap_pthread_cond_destroy(pthread_cond_t *cond)
{
    if (kit_judge_on_schedule())
        sync_call(SYNC_FORGET, address(cond), 0, 0, 0, 0);
    return __real_pthread_cond_destroy(cond);
}

/* ---- time: on a schedule, the subject's virtual time ----------------------------------- */

int __wrap_sched_yield(void);
int __wrap_sched_yield(void)
{
    if (kit_judge_on_schedule())
        return (int)sync_call(SYNC_YIELD, 0, 0, 0, 0, 0);
    return __real_sched_yield();
}

int __wrap_clock_nanosleep(clockid_t clock, int flags, const struct timespec *request, struct timespec *left);
int __wrap_clock_nanosleep(clockid_t clock, int flags, const struct timespec *request, struct timespec *left)
{
    if (!kit_judge_on_schedule())
        return __real_clock_nanosleep(clock, flags, request, left);
    sync_call(SYNC_SLEEP, (uint64_t)clock, (uint64_t)flags, (uint64_t)request->tv_sec, (uint64_t)request->tv_nsec, 0);
    return 0;
}

int __wrap_nanosleep(const struct timespec *request, struct timespec *left);
int __wrap_nanosleep(const struct timespec *request, struct timespec *left)
{
    return __wrap_clock_nanosleep(CLOCK_MONOTONIC, 0, request, left);
}

int __wrap_usleep(useconds_t us);
int __wrap_usleep(useconds_t us)
{
    struct timespec request = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };
    return __wrap_clock_nanosleep(CLOCK_MONOTONIC, 0, &request, NULL);
}

int __wrap_clock_gettime(clockid_t clock, struct timespec *now);
int __wrap_clock_gettime(clockid_t clock, struct timespec *now)
{
    if (!kit_judge_on_schedule())
        return __real_clock_gettime(clock, now);
    if (judge_clock(clock, now))
        return 0;
    kit_wire_t *m = kit_judge_begin(WIRE_SYNC, SYNC_CLOCK);
    kit_judge_word(m, (uint64_t)clock);
    const kit_wire_t *reply = kit_judge_call(m, 3, 0);
    if (reply->arg[2] >= 1000000000ULL)
        kit_judge_violation("a clock reading of %llu nanoseconds past the second", (unsigned long long)reply->arg[2]);
    now->tv_sec = (time_t)reply->arg[1];
    now->tv_nsec = (long)reply->arg[2];
    return 0;
}

/* A thread of the test names itself: its stand-in takes the name too, for
 * the schedule's steps and the stacks. */
int __real_pthread_setname_np(pthread_t thread, const char *name);
int __wrap_pthread_setname_np(pthread_t thread, const char *name);
int __wrap_pthread_setname_np(pthread_t thread, const char *name)
{
    if (pthread_equal(thread, pthread_self()) && name != NULL && judge_channel() >= 0 && !kit_judge_subject_gone()) {
        kit_wire_t *m = kit_judge_begin(WIRE_SYNC, SYNC_NAME);
        for (int i = 0; i < 5; i++)
            kit_judge_word(m, 0);
        kit_judge_bytes(m, name, strnlen(name, 15) + 1, "a thread's name");
        kit_judge_call(m, 3, 0);
    }
    return __real_pthread_setname_np(thread, name);
}
