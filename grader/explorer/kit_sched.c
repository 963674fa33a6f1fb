/**
 * @file kit_sched.c
 * @brief The controlled scheduler: the model of mutexes, condition variables
 *        and threads, the switch point, virtual time, and the calls the
 *        link-time wrappers hand over to it.
 *
 * DESIGN: every managed thread is a user-level context on one OS thread,
 * the runner (kit_sched_context.c). The running one, at each pthread call,
 * records what it is about to do (lock M1, wait on C2, join a thread) and
 * calls switch_point(), which lists the threads that can go on, asks the
 * strategy to choose one, applies the chosen thread's pending operation in
 * the model (it now owns M1, it left C2's wait set) and switches to that
 * thread's context; the caller goes on when a later switch point chooses it.
 * No thread ever blocks in a real mutex or condition variable: the real
 * objects are never touched. When no thread can go on, or the schedule
 * fails, the last one switches back to the runner's own context.
 */
#define _GNU_SOURCE
#include "kit_sched_internal.h"

#include <errno.h>
#include <execinfo.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "kit_misuse.h"
#include "kit_test.h"

struct sched_world sched;
atomic_long sched_progress;
atomic_bool sched_abandoned;
atomic_bool sched_outside;

/* The thread this is, when the scheduler runs it. Thread-local storage is
 * a context's own (kit_sched_context.c): on the runner, this is the running
 * context's thread; on any other OS thread, NULL. The code here calls it me. */
_Thread_local struct sched_thread *sched_running;
#define me sched_running
/* Set by a kit helper around its pthread calls: its caller's address, so
 * that steps name the test's line rather than the helper's. */
static _Thread_local void *outer_where;

void kit_sched_name_steps(void *where)
{
    outer_where = where;
}

int __real_pthread_join(pthread_t thread, void **ret);
int __real_pthread_detach(pthread_t thread);
int __real_pthread_mutex_trylock(pthread_mutex_t *mutex);
int __real_pthread_mutex_destroy(pthread_mutex_t *mutex);
int __real_pthread_cond_destroy(pthread_cond_t *cond);
int __real_sched_yield(void);
int __real_nanosleep(const struct timespec *request, struct timespec *left);
int __real_clock_gettime(clockid_t clock, struct timespec *now);
int __real_sem_getvalue(sem_t *sem, int *value);
void *__real_malloc(size_t size);
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
    return ns - (when->tv_sec > 1000000000 ? REALTIME_BASE + sched.wall_offset : MONOTONIC_BASE);
}

/* A deadline computed on the other clock than the one the wait runs on: a
 * wall-clock value where the monotonic clock reads a few minutes since boot
 * (the wait would last decades), or the other way round (it would end at once). */
static bool on_the_other_clock(const struct timespec *deadline, bool wall)
{
    const time_t decade = 10 * 365 * 24 * 3600L;
    if (wall)
        return deadline->tv_sec < decade;
    return deadline->tv_sec > (REALTIME_BASE / NS_PER_S) - decade &&
           deadline->tv_sec < (REALTIME_BASE / NS_PER_S) + decade;
}

static void misuse(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* A timed wait's deadline as virtual time, on the clock the wait runs on.
 * `what` names the wait ("waiting on C%d"), with `serial` its object's. */
static int64_t deadline_on(const struct timespec *deadline, clockid_t clock, const char *what_format, int serial)
{
    bool wall = clock == CLOCK_REALTIME;
    if (on_the_other_clock(deadline, wall)) {
        char what[64];
        snprintf(what, sizeof what, what_format, serial);
        misuse("%s %s has a deadline computed on %s, but it times out on %s: on that clock the deadline is decades "
               "%s, and the wait would %s - compute it from clock_gettime(%s, ...)", kit_thread_name(), what,
               wall ? "CLOCK_MONOTONIC" : "CLOCK_REALTIME", wall ? "CLOCK_REALTIME" : "CLOCK_MONOTONIC",
               wall ? "behind" : "ahead", wall ? "end at once" : "never time out",
               wall ? "CLOCK_REALTIME" : "CLOCK_MONOTONIC");
    }
    int64_t ns = (int64_t)deadline->tv_sec * NS_PER_S + deadline->tv_nsec;
    int64_t at = ns - (wall ? REALTIME_BASE + sched.wall_offset : MONOTONIC_BASE);
    return at > 0 ? at : 0; /* (a deadline before the schedule began has passed: -1 would be "none") */
}

/* The clock a condition variable times out on (pthread_condattr_setclock):
 * glibc keeps it in a bit of __wrefs; elsewhere, the default. */
static clockid_t condition_clock(const pthread_cond_t *cond)
{
#if defined(__GLIBC__)
    return (cond->__data.__wrefs & 2) ? CLOCK_MONOTONIC : CLOCK_REALTIME;
#else
    (void)cond;
    return CLOCK_REALTIME;
#endif
}

static void record_step(struct sched_thread *t, enum sched_op op, int obj, int other);

/* The first wait of a schedule on the wall clock: the clock steps forward
 * an hour, as NTP may step it, so that wait's deadline has passed at once.
 * Code that trusts that ETIMEDOUT returns early; code that measures its
 * timeout on CLOCK_MONOTONIC, as the kit's does, waits on - and a wait on
 * CLOCK_MONOTONIC no step moves. */
static void step_the_wall_clock(struct sched_thread *t)
{
    static const int64_t hour = 3600 * NS_PER_S;
    if (sched.wall_offset != 0)
        return;
    sched.wall_offset = hour;
    record_step(t, OP_CLOCK, -1, -1);
}

/* With timeouts_race, a deadline up to this far ahead may expire at any
 * switch point; a longer wait (a "forever" of LONG_MAX ms) does not. */
#define RACE_HORIZON_NS (10LL * NS_PER_S)

/* A deadline further ahead than this (11.6 days) is a wait for ever in
 * effect - a LONG_MAX timeout: time never jumps to it, and a schedule whose
 * threads all wait like that is a deadlock, reported at once. */
#define FOREVER_NS (1000000LL * NS_PER_S)

static bool has_deadline(const struct sched_thread *t)
{
    return t->deadline >= 0 && t->deadline - sched.now <= FOREVER_NS;
}

/* A deadline may expire now; with timeouts_race, time may also pass now. */
static bool expired(const struct sched_thread *t)
{
    if (!has_deadline(t))
        return false;
    return t->deadline <= sched.now || (sched.options.timeouts_race && t->deadline - sched.now <= RACE_HORIZON_NS);
}

/* ---- The model's objects ----------------------------------------------------
 * Found by address through an open-addressing index; a slot is never reused
 * within a schedule, so a step's object keeps its name (M3) to the end. */

/* The objects of one struct in neighbouring slots (they share cache lines),
 * objects far apart scattered. */
static unsigned index_start(const void *addr, char kind)
{
    uintptr_t at = (uintptr_t)addr;
    return (unsigned)((at >> 3) ^ (at >> 20) * 0x9E3779B1u ^ (unsigned char)kind) & (SCHED_INDEX_SIZE - 1);
}

/* Give up on the model (a scheduled test) or fail the schedule (an explored one). */
static void beyond_the_model(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static int indexed_object(const void *addr, char kind);

/* The objects looked up last, by address: a lock and its unlock, a wait
 * and its signal, find theirs here without a walk of the index. An entry
 * is checked against the object it names, which a destroy or a new
 * schedule may have given another address. */
#define RECENT 64
static struct recent_object {
    const void *addr;
    int obj;
} recent[RECENT];

static struct recent_object *recent_of(const void *addr)
{
    return &recent[((uintptr_t)addr >> 3) & (RECENT - 1)];
}

/* (Out of line: an object looked up for the first time in a while.) */
static __attribute__((noinline)) int looked_up(struct recent_object *seen, const void *addr, char kind)
{
    int obj = indexed_object(addr, kind);
    *seen = (struct recent_object){ addr, obj };
    return obj;
}

/* (Inline: every pthread call of the code under test looks its object up.) */
static inline __attribute__((always_inline)) int object_of(const void *addr, char kind)
{
    struct recent_object *seen = recent_of(addr);
    if (seen->addr == addr && seen->obj < sched.nobjects && sched.objects[seen->obj].addr == addr &&
        sched.objects[seen->obj].kind == kind)
        return seen->obj;
    return looked_up(seen, addr, kind);
}

static int indexed_object(const void *addr, char kind)
{
    unsigned at = index_start(addr, kind);
    int free_slot = -1;
    for (;; at = (at + 1) & (SCHED_INDEX_SIZE - 1)) {
        int entry = sched.index[at];
        if (entry == 0)
            break;
        if (entry < 0) {
            if (free_slot < 0)
                free_slot = (int)at; /* a removed object's: reusable, but keep looking */
            continue;
        }
        const struct sched_object *o = &sched.objects[entry - 1];
        if (o->addr == addr && o->kind == kind)
            return entry - 1;
    }
    if (sched.nobjects == SCHED_MAX_OBJECTS)
        beyond_the_model("more than %d mutexes and condition variables in one schedule", SCHED_MAX_OBJECTS);
    if (free_slot < 0)
        free_slot = (int)at;
    int serial = ++sched.serials[kind == 'M' ? 0 : kind == 'C' ? 1 : 2];
    int count = 0;
    if (kind == 'S') /* a semaphore first used here: its value so far is the real one's */
        __real_sem_getvalue((sem_t *)addr, &count);
    sched.objects[sched.nobjects] = (struct sched_object){ addr, kind, serial, -1, free_slot, 0, count, NULL };
    sched.index[free_slot] = sched.nobjects + 1;
    sched_memory_forget_object(sched.nobjects); /* a new object has no history */
    return sched.nobjects++;
}

/* Destroyed objects leave the index: their memory may hold another one next. */
static void forget_object(int obj)
{
    sched.index[sched.objects[obj].slot] = -1;
    sched.objects[obj].addr = NULL;
}

void sched_forget_objects(void)
{
    for (int i = 0; i < sched.nobjects; i++)
        sched.index[sched.objects[i].slot] = 0;
    sched.nobjects = 0;
}

/* What a step touches, for the partial-order reduction: two steps on
 * different objects give the same result in either order; a step whose
 * reach the model does not see (a thread made or ended, time, memory)
 * touches everything. */
static void touch_step(enum sched_op op, enum sched_how how, int obj, int other)
{
    if (how == TIMEOUT || how == SPURIOUS) {
        sched_touch_everything();
        return;
    }
    switch (op) {
    case OP_LOCK: case OP_TRYLOCK: case OP_UNLOCK: case OP_SIGNAL: case OP_BROADCAST:
    case OP_SEM_WAIT: case OP_SEM_POST: case OP_SEM_TRY:
        sched_touch(obj);
        return;
    case OP_WAIT: case OP_WAKE:
        sched_touch(obj);
        sched_touch(other);
        return;
    case OP_START: case OP_YIELD:
        return;
    default:
        sched_touch_everything();
    }
}

/* A thread that wakes from a condition and waits on it again before any
 * other step found nothing to do: a futile wake-up (the harness's own
 * gates not counted). */
static void count_wakeups(struct sched_thread *t, enum sched_op op, int obj)
{
    if (op == OP_WAIT && t->woke_from == obj && !t->harness) {
        sched.futile_wakeups++;
        sched.futile.thread = t->id;
        sched.futile.cond = obj;
        sched.futile.by = t->woken_by;
        sched.futile.broadcast = t->woken_at < 0;
        sched.futile.slept = t->where;
    }
    t->woke_from = -1;
    if (op == OP_WAKE && !t->harness && t->how == GO) {
        sched.wakeups++;
        t->woke_from = obj;
    }
}

static void record_step(struct sched_thread *t, enum sched_op op, int obj, int other)
{
    touch_step(op, t->how, obj, other);
    count_wakeups(t, op, obj);
    if (t->renamed) { /* (the name is NUL-terminated within it) */
        memcpy(t->name, kit_thread_name(), sizeof t->name);
        t->renamed = false;
    }
    if (sched.nsteps >= sched.options.max_steps)
        return;
    sched.steps[sched.nsteps++] = (struct sched_step){ t->id, op, t->how, obj, other, t->where, sched.now };
}

/* ---- Choosing who goes next ----------------------------------------------------- */

static bool mutex_free(int obj)
{
    return sched.objects[obj].owner < 0;
}

static void take_mutex(int obj, int thread)
{
    if (sched.threads[thread]->holding == 0)
        sched_changes_section(thread);
    if (sched_notes.paths) /* (a report's run: kit_sched_split.c) */
        sched_split_taken(thread, obj, sched.threads[thread]->where, sched.threads[thread]->holding == 0);
    sched.threads[thread]->holding++;
    sched.objects[obj].owner = thread;
    sched.objects[obj].times_held = 1;
    sched.objects[obj].locked_at = sched.threads[thread]->where;
    sched_memory_acquire(thread, obj); /* what the last unlock saw, the new owner sees */
}

/* The thread of the i-th live slot. */
static struct sched_thread *live(int i)
{
    return sched.threads[sched.live[i]];
}

/* Threads asleep in a condition wait of the code under test (the tests'
 * gates and latches are scaffolding, not counted). */
static int waiting_threads(void)
{
    int n = 0;
    for (int i = 0; i < sched.nlive; i++)
        if (live(i)->state == WAITING && !live(i)->harness)
            n++;
    return n;
}

/* A waiter on a condition variable, once its mutex is free: signalled, it
 * goes on; at its deadline it times out - even when a signal chose it, as
 * POSIX allows (the timeout raced the signal and consumed it: the caller
 * sees ETIMEDOUT while what it waited for is there); and it may wake for
 * nothing (spuriously). */
static int ways_to_wake(const struct sched_thread *t, enum sched_how *how)
{
    int n = 0;
    if (!mutex_free(t->obj2))
        return 0;
    if (t->woken)
        how[n++] = GO;
    if (expired(t))
        how[n++] = TIMEOUT;
    if (!t->woken && sched.spurious_left > 0)
        how[n++] = SPURIOUS;
    return n;
}

/* One way on when `can` holds; else, at its deadline, a time-out. */
static int go_or_time_out(const struct sched_thread *t, bool can, enum sched_how *how)
{
    how[0] = can ? GO : TIMEOUT;
    return can || expired(t) ? 1 : 0;
}

static int ways_to_go(const struct sched_thread *t, enum sched_how *how);

/* Whether every thread but t is stuck for good: none can go on now, and
 * none waits with a deadline that time could reach. */
static bool others_quiet(const struct sched_thread *t)
{
    enum sched_how how[3];
    for (int i = 0; i < sched.nlive; i++) {
        const struct sched_thread *other = live(i);
        if (other == t)
            continue;
        if (ways_to_go(other, how) > 0)
            return false;
        bool timed = other->state != JOINING && other->state != QUIETING && !(other->state == WAITING && other->woken);
        if (timed && has_deadline(other))
            return false;
    }
    return true;
}

/* The ways thread t can go on now: none, one, or (waiting) up to three. */
static int ways_to_go(const struct sched_thread *t, enum sched_how *how)
{
    if (t->state == RUNNABLE) { /* the most common, by far: no jump through the table below */
        how[0] = GO;
        return 1;
    }
    switch (t->state) {
    case RUNNABLE:
        how[0] = GO;
        return 1;
    case LOCKING: /* (pthread_mutex_timedlock times out at its deadline) */
        return go_or_time_out(t, mutex_free(t->obj), how);
    case JOINING:
        how[0] = GO;
        return sched.threads[t->target]->state == DONE ? 1 : 0;
    case SLEEPING:
        return go_or_time_out(t, false, how);
    case AWAITING:
        return go_or_time_out(t, waiting_threads() >= t->target, how);
    case SEMAPHORE:
        return go_or_time_out(t, sched.objects[t->obj].count > 0, how);
    case QUIETING:
        how[0] = GO;
        return others_quiet(t) ? 1 : 0;
    case WAITING:
        return ways_to_wake(t, how);
    case DONE:
        return 0;
    }
    return 0;
}

/* ways_to_go(), with the common cases without its call: a runnable thread; a
 * lock with no deadline, which goes on once its mutex is free; a waiter on a
 * condition variable that nothing can wake now (no signal chose it, it has
 * no deadline, and no spurious wake-up is left), or another waiter. */
static inline int ways_now(const struct sched_thread *t, enum sched_how *how)
{
    how[0] = GO;
    if (t->state == RUNNABLE)
        return 1;
    if (t->state == LOCKING && t->deadline < 0)
        return mutex_free(t->obj) ? 1 : 0;
    if (t->state == WAITING && !t->woken && t->deadline < 0 && sched.spurious_left <= 0)
        return 0;
    if (t->state == WAITING)
        return ways_to_wake(t, how);
    return ways_to_go(t, how);
}

/* The alternatives, the running thread's first: choice 0 lets it go on. */
static int list_alternatives(struct sched_thread **alt, enum sched_how *how)
{
    int n = 0;
    struct sched_thread *running = sched.threads[sched.current];
    int k = ways_now(running, &how[n]);
    for (int j = 0; j < k; j++)
        alt[n++] = running;
    for (int i = 0; i < sched.nlive; i++) {
        if (sched.live[i] == sched.current)
            continue;
        struct sched_thread *t = live(i);
        k = ways_now(t, &how[n]);
        for (int j = 0; j < k; j++)
            alt[n++] = t;
    }
    return n;
}

/* Whether a thread other than @p but took mutex @p obj after step @p since
 * (true when @p since is -1, or the steps are no longer all kept: no telling). */
static bool taken_since(int obj, long since, int but)
{
    if (since < 0 || sched.nsteps >= sched.options.max_steps)
        return true;
    for (long i = since; i < sched.nsteps; i++) {
        const struct sched_step *step = &sched.steps[i];
        bool takes = step->op == OP_LOCK || step->op == OP_TRYLOCK || step->op == OP_WAKE;
        if (takes && step->thread != but && (step->op == OP_WAKE ? step->other : step->obj) == obj)
            return true;
    }
    return false;
}

/* Let thread t go on as `how`: apply the operation it was blocked in. */
static void let_go(struct sched_thread *t, enum sched_how how)
{
    t->how = how;
    t->result = 0;
    if (how == TIMEOUT && t->deadline > sched.now)
        sched.now = t->deadline; /* time passed while the others were slow */
    if (t->state == LOCKING && how == GO) {
        take_mutex(t->obj, t->id);
        sched_lock_order(t->id, t->obj, t->where);
    }
    if (t->state == LOCKING && how == TIMEOUT)
        t->result = ETIMEDOUT;
    if (t->state == WAITING) {
        take_mutex(t->obj2, t->id);
        sched_lock_order(t->id, t->obj2, t->where);
        if (how == TIMEOUT)
            t->result = ETIMEDOUT;
        if (how == TIMEOUT && t->woken && !t->harness && !taken_since(t->obj2, t->woken_at, t->id))
            sched_changes_took_wakeup(t->id, t->obj, t->obj2, t->where); /* the wake-up is its to use or pass on */
        else if (how == TIMEOUT && !t->harness)
            sched_changes_timed_out(t->id, t->obj, t->obj2, t->where); /* where the time-out path leads */
        if (!t->harness)
            sched_changes_woke(t->id, t->obj2, t->where); /* the way out of the wait, in a report */
        if (how == SPURIOUS && !t->harness && sched_notes.paths)
            sched_recheck_woke(t->id, t->obj, t->where); /* does it look again at what it waits for? (a report's run) */
        if (how == SPURIOUS)
            sched.spurious_left--;
        t->left_wait = how;
    }
    if (t->state == AWAITING && how == TIMEOUT)
        t->result = ETIMEDOUT;
    if (t->state == SEMAPHORE && how == GO) {
        sched.objects[t->obj].count--;
        sched_memory_acquire(t->id, t->obj); /* what the post saw, the waiter sees */
    }
    if (t->state == SEMAPHORE && how == TIMEOUT)
        t->result = ETIMEDOUT;
    t->state = RUNNABLE;
    sched.current = t->id;
}

/* A jump this long (virtual) to a sleeper's deadline is no time-out a
 * correct program waits for: it is the tests' "for ever, but end" bound. */
#define STALL_NS (60 * NS_PER_S)

/* Time jumps a long way to `deadline`: the sleepers of the code under test
 * that stalled are told if the test fails (kit_sched_changes.c). */
static void note_stalled_sleepers(int64_t deadline)
{
    if (deadline - sched.now < STALL_NS)
        return;
    for (int i = 0; i < sched.nlive; i++) {
        const struct sched_thread *t = live(i);
        if (t->state == WAITING && !t->woken && !t->harness)
            sched_changes_stalled(t->id);
    }
}

/* No thread can go on: jump to the earliest deadline still ahead. */
static bool advance_time(void)
{
    int64_t earliest = -1;
    for (int i = 0; i < sched.nlive; i++) {
        const struct sched_thread *t = live(i);
        bool timed = t->state == SLEEPING || t->state == AWAITING || t->state == LOCKING ||
                     t->state == SEMAPHORE || (t->state == WAITING && !t->woken);
        timed = timed && has_deadline(t) && t->deadline > sched.now;
        if (timed && (earliest < 0 || t->deadline < earliest))
            earliest = t->deadline;
    }
    if (earliest < 0)
        return false;
    note_stalled_sleepers(earliest);
    sched.now = earliest;
    sched_touch_everything();
    return true;
}

static bool all_done(void)
{
    return sched.nlive == 0;
}

/* A scheduled test's switch points, as a multiple of its max_steps. The
 * solutions' longest test, a stress test, passes about 260000 on its
 * schedule: twenty times as many is no slow design but a loop that does not
 * end (a count gone wrong that a take never stops taking from), and the test
 * fails on its schedule, the same way in every grading - on real threads its
 * score would be only as repeatable as the machine's timing. Past the
 * record's room its choices are drawn from its seed unrecorded (sched_decide),
 * so the same seed still gives the same schedule. */
#define SCHEDULED_TEST_STEPS_FACTOR 20

/* Switch points one schedule may pass before it fails (or, scheduled, gives up). */
static long points_allowed(void)
{
    return sched.scheduled_test ? SCHEDULED_TEST_STEPS_FACTOR * sched.options.max_steps : sched.options.max_steps;
}

/* Choose the next thread and apply its operation; NULL when the schedule ended. */
static struct sched_thread *choose_next(void)
{
    struct sched_thread *alt[SCHED_MAX_ALTS];
    enum sched_how how[SCHED_MAX_ALTS];
    sched.points++;
    /* Only the runner writes it: a plain store, no locked instruction. */
    atomic_store_explicit(&sched_progress, atomic_load_explicit(&sched_progress, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    if (sched.points > points_allowed()) {
        sched_fail("more than %ld switch points%s: a livelock, or a loop that never waits", points_allowed(),
                   sched.scheduled_test ? " on the test's one schedule, and it had not ended" : "");
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
            sched.deadlocked = true; /* the report says who waits on what (sched_explain_deadlock) */
            sched_fail("deadlock or lost wake-up: no thread can go on, and no wait has a deadline that will end it");
            return NULL;
        }
    }
}

/* The controller gave up on this schedule (kit_sched_explore.c): the runner
 * stops here for good, touching nothing more. */
static void park_forever(void) __attribute__((noreturn));
static void park_forever(void)
{
    for (;;)
        pause();
}

/* Who resumed a parked context to read its stack (sched_collect_stacks), or NULL. */
static struct sched_context *stack_asker;

/* Its return addresses, from the switch point's caller on. */
static void take_stack(struct sched_thread *t, void *const *frames, int n)
{
    const int own = 2; /* suspend() and switch_point() */
    t->depth = n > own ? n - own : 0;
    memcpy(t->stack, frames + own, (size_t)t->depth * sizeof *frames);
}

/* Run `next` (NULL: the runner, the schedule over) in self's place, until
 * self's turn comes again. A context resumed only to tell where it stands
 * (a report) takes its stack and gives the runner back to whoever asked. */
static __attribute__((noinline)) void suspend(struct sched_thread *self, struct sched_thread *next, bool ending)
{
    sched_context_switch(&self->context, next ? &next->context : sched_runner_context(), ending);
    while (stack_asker != NULL) {
        void *frames[SCHED_STACK_DEPTH + 2];
        take_stack(self, frames, backtrace(frames, SCHED_STACK_DEPTH + 2));
        sched_context_switch(&self->context, stack_asker, false);
    }
}

void sched_collect_stacks(void)
{
    struct sched_context *here = me ? &me->context : sched_runner_context();
    for (int i = 0; i < sched.nlive; i++) {
        struct sched_thread *t = sched.threads[sched.live[i]];
        if (t == me || !t->started || t->id == sched.failer || t->context.stack == NULL)
            continue; /* the failer's was taken where it failed; a thread not started has none */
        stack_asker = here;
        sched_context_switch(here, &t->context, false);
    }
    stack_asker = NULL;
}

/* The schedule failed on this thread: back to the runner, never to run again.
 * (Its stack stays as it is: the failed schedule's threads are kept.) */
static void stop_here(void)
{
    suspend(me, NULL, false);
    abort(); /* never resumed to run */
}

/* The schedule fails on this thread: its report shows the thread where it
 * stopped, not at its last switch point. */
static void fail_on_this_thread(void)
{
    sched.failer = me->id;
    me->state = RUNNABLE;
    me->depth = backtrace(me->stack, SCHED_STACK_DEPTH);
}

/* Fail the schedule for a misuse of a pthread object, on the running thread. */
static void misuse(const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(sched.message, sizeof sched.message, fmt, args);
    va_end(args);
    if (me)
        fail_on_this_thread();
    sched.failed = true;
    stop_here();
}

void sched_misuse_at(void *where, const char *text)
{
    if (me)
        me->where = where;
    misuse("%s", text);
}

/* The code does what the model does not cover (too many threads, a kind of
 * mutex it does not know): a scheduled test gives up, to run again on real
 * threads; an exploration runs its body on real threads instead. */
static void beyond_the_model(const char *fmt, ...)
{
    if (me == NULL)
        fail_msg("the scheduler gave up outside a schedule");
    va_list args;
    va_start(args, fmt);
    vsnprintf(sched.message, sizeof sched.message, fmt, args);
    va_end(args);
    sched.failed = true;
    sched.gave_up = true;
    stop_here();
}

void sched_give_up(const char *why)
{
    beyond_the_model("%s", why);
}

/* A process forked by a scheduled thread has that thread alone: it runs on
 * its own, outside any schedule. (The runner of a job is never there: a
 * fork from the controller happens between jobs.) */
static void forget_the_schedule(void)
{
    me = NULL;
}

void sched_handle_forks(void)
{
    static bool registered;
    if (!registered)
        registered = pthread_atfork(NULL, NULL, forget_the_schedule) == 0;
}

/* The switch point: the caller has set its state; returns when it runs again
 * (a thread that has ended never does). */
static __attribute__((noinline)) void switch_point(void)
{
    if (atomic_load_explicit(&sched_abandoned, memory_order_relaxed))
        park_forever(); /* the controller gave up on this schedule: touch nothing more */
    struct sched_thread *self = me;
    struct sched_thread *next = choose_next();
    if (next != self)
        suspend(self, next, self->state == DONE);
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
    char text[3584];
    va_list args;
    va_start(args, fmt);
    vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    if (me == NULL) /* the body runs on real threads: kit_explore_run() */
        fail_msg("%s:%d: %s", file, line, text);
    const char *slash = strrchr(file, '/');
    sched_fail("%s:%d: %s", slash ? slash + 1 : file, line, text);
    fail_on_this_thread();
    me->where = NULL; /* the message says where */
    stop_here();
}

/* ---- Operations: what the wrappers hand over ------------------------------------ */

/* What thread t is about to do, and where: its stack, if a report needs
 * it, is read then (sched_collect_stacks). */
static void at(struct sched_thread *t, enum sched_state state, enum sched_op op, int obj, void *where)
{
    t->accesses = 0;
    t->state = state;
    t->op = op;
    t->obj = obj;
    t->where = outer_where ? outer_where : where;
}

/* A check failed, or the harness's hang check gave up, on a scheduled
 * thread: the schedule so far and every thread's stack, into the log (the
 * caller then ends the test process). On an explored thread the schedule
 * fails here instead, and the search reports it with its replay token. */
void kit_sched_dump_stacks(const char *why, const char *message)
{
    const char *text = message && message[0] ? message : why;
    fail_on_this_thread();
    me->where = NULL; /* its last pthread call is not where the check failed: the message says where */
    if (!sched.scheduled_test) {
        sched_fail("%s", text);
        stop_here();
    }
    snprintf(sched.message, sizeof sched.message, "%s", text);
    sched_report(sched.test, sched.strategy_word, -1);
    sched_print_stacks(why);
}

/* A mutex or condition variable in a block freed on this schedule: the kit
 * fills freed memory with 0xdd (kit_wrap.c), so a use after free reads
 * the same bytes, and is told, in every grading - with the free that freed
 * it, when the scheduler saw it. @p doing: "uses", "destroys", at @p where. */
static const char *call_place(void *where);

/* The last destroys of this schedule: a destroy, in freed memory, of an
 * object destroyed before is a second owner tearing down what the first
 * destroyed and freed already - a double free. */
#define DESTROYS_KEPT 64
static struct destroyed {
    const void *addr;
    void *where;
    int thread;
    unsigned long schedule; /* kit_sched_schedule() then */
} destroys[DESTROYS_KEPT];
static unsigned ndestroys;

static void remember_destroy(const void *addr, void *where)
{
    destroys[ndestroys++ % DESTROYS_KEPT] = (struct destroyed){ addr, where, me->id, kit_sched_schedule() };
}

static const struct destroyed *destroyed_before(const void *addr)
{
    for (unsigned i = 0; i < DESTROYS_KEPT && i < ndestroys; i++) {
        const struct destroyed *d = &destroys[(ndestroys - 1 - i) % DESTROYS_KEPT];
        if (d->addr == addr && d->schedule == kit_sched_schedule())
            return d;
    }
    return NULL;
}

/* A destroy of an object destroyed and freed already: both teardowns. */
static void destroyed_twice(const struct destroyed *d, const char *what, void *where, const char *freer)
{
    misuse("DOUBLE FREE: %s destroys a %s at %s that %s destroyed already at %s, and that was freed%s%s: two "
           "owners each decided they were the last, and both tear the object down. Of several owners only the "
           "last may destroy and free it, decided under the lock (read the count you changed before you unlock, "
           "never after)", kit_thread_name(), what, call_place(where),
           d->thread == me->id ? "it itself" : sched.threads[d->thread]->name, call_place(d->where),
           freer[0] ? " by " : "", freer);
}

static void used_after_free(const void *object, const char *what, const char *doing, void *where)
    __attribute__((noinline, cold, noreturn));

/* Inline, and on to used_after_free() only for an object in freed memory. */
static inline void check_not_freed(const void *object, size_t size, const char *what, const char *doing, void *where)
{
    const unsigned char *byte = object;
    if ((uintptr_t)object >> 32 == 0xddddddddu) /* the pointer itself was read from a freed block */
        used_after_free(object, what, doing, where);
    for (size_t i = 0; i < size; i++)
        if (byte[i] != 0xdd)
            return;
    used_after_free(object, what, doing, where);
}

static void used_after_free(const void *object, const char *what, const char *doing, void *where)
{
    if ((uintptr_t)object >> 32 == 0xddddddddu) {
        me->where = where;
        misuse("USE AFTER FREE: %s %s a %s at %s, at an address read from memory that was freed (the kit fills "
               "freed memory with 0xdd bytes, and this address is made of them): a pointer read from a block "
               "after free(), or from an object already destroyed", kit_thread_name(), doing, what,
               call_place(where));
    }
    char freer[1024] = "";
    bool known = kit_sched_who_freed(object, freer, sizeof freer);
    me->where = where;
    const struct destroyed *d = strcmp(doing, "destroys") == 0 ? destroyed_before(object) : NULL;
    if (d != NULL)
        destroyed_twice(d, what, where, freer);
    static char user[1024];
    kit_sched_call_chain(where, user, sizeof user);
    misuse("USE AFTER FREE: %s %s a %s at %s, in memory that was freed%s%s. An object may be destroyed and freed "
           "only once no thread can reach it any more: destroy its mutexes and condition variables before the "
           "free, wait until every caller has left (or join the threads that use it), and of several owners let "
           "only the last destroy and free it, decided under the lock (read the count you changed before you "
           "unlock, never after)", kit_thread_name(), doing, what, user,
           known ? " before it, on this schedule, by " : " (the kit fills freed memory with 0xdd bytes)",
           known ? freer : "");
}

/* "bq.c:310 in bq_destroy": the place of a call of the code under test, for
 * a misuse's words (the last four asked for stay valid: one message names
 * up to four places). */
static const char *call_place(void *where)
{
    static char place[4][1][160];
    static unsigned next;
    void *pcs[1] = { where };
    char (*out)[160] = place[next++ % 4];
    kit_describe_places(pcs, 1, out);
    return out[0];
}

/* The mutex kinds the model knows: the default (and glibc's adaptive one,
 * which behaves the same), error-checking and recursive - not robust, nor
 * shared between processes, nor with a priority protocol. */
static int kind_of(const pthread_mutex_t *mutex, void *where)
{
    check_not_freed(mutex, sizeof *mutex, "mutex", "uses", where);
#if defined(__GLIBC__)
    int kind = mutex->__data.__kind;
    if ((kind & ~3) != 0)
        beyond_the_model("a robust, process-shared or priority mutex, which the scheduler does not model");
    if ((kind & 3) == PTHREAD_MUTEX_RECURSIVE || (kind & 3) == PTHREAD_MUTEX_ERRORCHECK)
        return kind & 3;
#else
    (void)mutex;
#endif
    return PTHREAD_MUTEX_DEFAULT;
}

/* The lock of a mutex its caller already holds: a recursive one counts it,
 * an error-checking one says EDEADLK, the default one waits for itself. */
static int relock(int obj, int kind)
{
    record_step(me, OP_LOCK, obj, -1);
    if (kind == PTHREAD_MUTEX_RECURSIVE) {
        sched.objects[obj].times_held++;
        switch_point();
        return 0;
    }
    if (kind == PTHREAD_MUTEX_ERRORCHECK)
        return EDEADLK;
    sched.deadlocked = true;
    sched.relocked = obj; /* the report names both places (sched_explain_deadlock) */
    me->depth = backtrace(me->stack, SCHED_STACK_DEPTH);
    misuse("%s locks M%d, which it already holds: it waits for itself", kit_thread_name(), sched.objects[obj].serial);
}

/* Lock, or with a deadline (pthread_mutex_timedlock) give up at it. */
static int mutex_lock(pthread_mutex_t *mutex, const struct timespec *deadline, void *where)
{
    int kind = kind_of(mutex, where);
    int obj = object_of(mutex, 'M');
    if (sched.objects[obj].owner == me->id) {
        at(me, RUNNABLE, OP_LOCK, obj, where);
        return relock(obj, kind);
    }
    if (sched_notes.paths)
        sched_split_locking(me->id, where);
    at(me, LOCKING, OP_LOCK, obj, where);
    me->deadline = deadline ? deadline_on(deadline, CLOCK_REALTIME, "locking M%d with pthread_mutex_timedlock",
                                          sched.objects[obj].serial)
                            : -1; /* (POSIX: on the wall clock) */
    switch_point();
    me->deadline = -1;
    record_step(me, OP_LOCK, obj, -1);
    return me->result;
}

int kit_sched_mutex_lock(pthread_mutex_t *mutex, void *where)
{
    return mutex_lock(mutex, NULL, where);
}

static int mutex_trylock(pthread_mutex_t *mutex, void *where)
{
    int kind = kind_of(mutex, where);
    int obj = object_of(mutex, 'M');
    if (sched_notes.paths)
        sched_split_locking(me->id, where);
    at(me, RUNNABLE, OP_TRYLOCK, obj, where);
    switch_point();
    if (kind == PTHREAD_MUTEX_RECURSIVE && sched.objects[obj].owner == me->id) {
        sched.objects[obj].times_held++;
        record_step(me, OP_TRYLOCK, obj, 0);
        return 0;
    }
    int err = mutex_free(obj) ? 0 : EBUSY;
    if (err == 0)
        take_mutex(obj, me->id);
    record_step(me, OP_TRYLOCK, obj, err);
    return err;
}

/* An error-checking or recursive mutex unlocked by a thread that does not
 * hold it says EPERM; the default one's behaviour is undefined: a misuse.
 * A recursive mutex locked n times is free after its n-th unlock. */
int kit_sched_mutex_unlock(pthread_mutex_t *mutex, void *where)
{
    int kind = kind_of(mutex, where);
    int obj = object_of(mutex, 'M');
    at(me, RUNNABLE, OP_UNLOCK, obj, where);
    if (sched.objects[obj].owner != me->id) {
        if (kind != PTHREAD_MUTEX_DEFAULT)
            return EPERM;
        misuse("%s unlocks M%d at %s, which it does not hold (%s): unlocking a mutex the thread does not hold "
               "is undefined - another thread's critical section is opened to everyone. Unlock only a mutex this "
               "thread locked, exactly once per lock, on every path (look for a second unlock after an early "
               "return or a wait loop)", kit_thread_name(), sched.objects[obj].serial, call_place(where),
               sched.objects[obj].owner < 0 ? "nobody holds it" : "another thread holds it");
    }
    if (--sched.objects[obj].times_held > 0) { /* a recursive mutex, still held */
        record_step(me, OP_UNLOCK, obj, -1);
        switch_point();
        return 0;
    }
    sched.objects[obj].owner = -1;
    me->holding--;
    sched_memory_release(me->id, obj);
    sched_changes_let_go(me->id, obj, where, -1);
    if (sched_notes.paths) { /* (a report's run: kit_sched_split.c, kit_sched_recheck.c) */
        sched_split_let_go(me->id, obj, where, me->holding == 0, false);
        sched_recheck_let_go(me->id, where);
    }
    me->how = GO;
    record_step(me, OP_UNLOCK, obj, -1);
    switch_point();
    return 0;
}

/* The checks a wait makes before it sleeps: a held mutex, held once. */
static void check_wait(int obj, int lock, void *where)
{
    if (sched.objects[lock].owner != me->id)
        misuse("%s waits on C%d at %s with M%d, a mutex it does not hold: pthread_cond_wait must be called with its mutex "
               "locked by the caller, which it unlocks while it sleeps and locks again before it returns. Lock "
               "the mutex before the loop that checks the condition and waits", kit_thread_name(),
               sched.objects[obj].serial, call_place(where), sched.objects[lock].serial);
    for (int i = 0; i < sched.nlive; i++)
        if (live(i)->state == WAITING && live(i)->obj == obj && live(i)->obj2 != lock)
            misuse("%s waits on C%d at %s with M%d while %s waits on it with M%d: a condition variable is used "
                   "with one mutex at a time - the one that guards its condition. Wait on each condition "
                   "variable with the same mutex everywhere", kit_thread_name(), sched.objects[obj].serial,
                   call_place(where), sched.objects[lock].serial, live(i)->name,
                   sched.objects[live(i)->obj2].serial);
    if (sched.objects[lock].times_held > 1)
        misuse("%s waits on C%d holding the recursive M%d %d times: the wait would unlock it once, and the "
               "thread that is to signal could never lock it", kit_thread_name(), sched.objects[obj].serial,
               sched.objects[lock].serial, sched.objects[lock].times_held);
}

/* A timed wait's deadline, on its clock (clock -1: the condition variable's own). */
static int64_t wait_deadline(const pthread_cond_t *cond, int obj, const struct timespec *deadline, clockid_t clock)
{
    clockid_t on = clock == (clockid_t)-1 ? condition_clock(cond) : clock;
    if (on == CLOCK_REALTIME)
        step_the_wall_clock(me);
    return deadline_on(deadline, on, "waiting on C%d", sched.objects[obj].serial);
}

int kit_sched_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex, const struct timespec *deadline, clockid_t clock,
                        bool harness, void *where)
{
    if (deadline != NULL && (deadline->tv_nsec < 0 || deadline->tv_nsec >= NS_PER_S))
        return EINVAL; /* as glibc says, before it waits */
    check_not_freed(cond, sizeof *cond, "condition variable", "waits on", where);
    check_not_freed(mutex, sizeof *mutex, "mutex", "uses", where);
    int obj = object_of(cond, 'C');
    int lock = object_of(mutex, 'M');
    check_wait(obj, lock, where);
    if (sched_memory_races_seen() && !harness) { /* lock-free code may slip in between the check and the sleep */
        at(me, RUNNABLE, OP_WAIT, obj, where);
        switch_point();
    }
    at(me, WAITING, OP_WAIT, obj, where);
    me->nwait_callers = sched_memory_call_sites(me->wait_callers, WAIT_CALLERS); /* a sleeper's story names them */
    me->obj2 = lock;
    me->deadline = deadline ? wait_deadline(cond, obj, deadline, clock) : -1;
    me->woken = false;
    me->harness = harness;
    me->wait_seq = ++sched.wait_seq;
    me->how = GO;
    sched.objects[lock].owner = -1; /* the wait gives the mutex up */
    me->holding--;
    sched_memory_release(me->id, lock);
    sched_changes_let_go(me->id, lock, where, obj);
    if (sched_notes.paths) {
        sched_split_let_go(me->id, lock, where, me->holding == 0, true);
        sched_recheck_let_go(me->id, where);
    }
    sched_changes_wait(me->id);
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
    for (int i = 0; i < sched.nlive; i++) {
        struct sched_thread *t = live(i);
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
    check_not_freed(cond, sizeof *cond, "condition variable", all ? "broadcasts" : "signals", where);
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
    for (int i = first; i < last; i++) {
        waiters[i]->woken = true;
        waiters[i]->woken_at = all ? -1 : sched.nsteps; /* a broadcast's wake-up is no one's alone */
        waiters[i]->woken_by = where;
    }
    sched_changes_signalled(me->id, obj);
    me->how = GO;
    record_step(me, all ? OP_BROADCAST : OP_SIGNAL, obj, n > 0 && !all ? waiters[first]->id : -1);
    return 0;
}

/* ---- Threads -----------------------------------------------------------------------
 * A thread of the schedule is a record (kept from one schedule to the next)
 * and a context. Its pthread_t is a value of its own: odd, so that no real
 * thread has it, and never given twice in the process. */

void sched_thread_ends(void)
{
    struct sched_thread *t = me;
    sched_destroy_specific(t); /* its destructors may still lock, signal, or make a thread */
    if (t->id == 0 && !t->returned) { /* the test's own thread: its checks would never run */
        sched_fail("the test's own thread ended inside the code under test: pthread_exit ends the thread that "
                   "calls it, and this one is the test's - return to the caller instead");
        sched.failer = t->id;
    }
    at(t, DONE, OP_EXIT, -1, NULL);
    record_step(t, OP_EXIT, -1, -1);
    int i = 0;
    while (i < sched.nlive && sched.live[i] != t->id)
        i++;
    if (i < sched.nlive) {
        memmove(&sched.live[i], &sched.live[i + 1], (size_t)(sched.nlive - i - 1) * sizeof sched.live[0]);
        sched.nlive--;
    }
    switch_point();
    abort(); /* an ended thread is never chosen */
}

/* The name a thread starts with: "thread-3", the same in every schedule; a
 * scheduled test's body is the test's main thread, as on real threads. */
static const char *first_name(const struct sched_thread *t)
{
    static char name[KIT_THREAD_NAME_MAX];
    if (t->id == 0)
        return sched.scheduled_test ? "main" : "test";
    char digits[12];
    int n = 0;
    for (int id = t->id; id > 0 && n < (int)sizeof digits; id /= 10)
        digits[n++] = (char)('0' + id % 10);
    memcpy(name, "thread-", 7);
    for (int i = 0; i < n; i++)
        name[7 + i] = digits[n - 1 - i];
    name[7 + n] = '\0';
    return name;
}

/* A thread's context, from the switch point that first chose it to its end. */
static void context_main(void *raw) __attribute__((noreturn));
static void context_main(void *raw)
{
    struct sched_thread *t = raw;
    sched_context_started();
    me = t;
    t->started = true;
    kit_thread_set_name(first_name(t));
    record_step(t, OP_START, -1, -1);
    t->ret = t->fn(t->arg);
    t->returned = true;
    sched_thread_ends();
}

/* A thread of the code under test leaves early: its value is what a join
 * returns, and its cleanup handlers run first (kit_sched_thread.c). */
void __real_pthread_exit(void *value) __attribute__((noreturn));
void __wrap_pthread_exit(void *value) __attribute__((noreturn));
void sched_run_cleanup(void) __attribute__((noreturn));
void __wrap_pthread_exit(void *value)
{
    if (me == NULL)
        __real_pthread_exit(value);
    me->ret = value;
    sched_run_cleanup();
}

/* Records of threads no schedule uses now, and of failed schedules' threads. */
static struct sched_thread *spare_records;
static struct sched_thread *graveyard;

static struct sched_thread *new_record(void)
{
    struct sched_thread *t = spare_records;
    if (t != NULL)
        spare_records = t->next;
    else
        t = __real_malloc(sizeof *t);
    if (t != NULL)
        memset(t, 0, sizeof *t);
    return t;
}

void sched_release_threads(void)
{
    for (int i = 0; i < sched.nthreads; i++) {
        sched.threads[i]->next = spare_records;
        spare_records = sched.threads[i];
    }
    sched.nthreads = 0;
}

/* Kept on a list, with their stacks, so that what they point to stays reachable (not a leak). */
void sched_bury_threads(void)
{
    for (int i = 0; i < sched.nthreads; i++) {
        if (sched.threads[i]->state != DONE)
            sched_context_bury(&sched.threads[i]->context);
        sched.threads[i]->next = graveyard;
        graveyard = sched.threads[i];
    }
    sched.nthreads = 0;
}

/* The stack its attributes ask for, when they ask for more than the default. */
static size_t asked_stack_size(const pthread_attr_t *attr)
{
    size_t size = 0, usual = 0;
    pthread_attr_t usual_attr;
    if (attr == NULL || pthread_attr_getstacksize(attr, &size) != 0)
        return 0;
    if (pthread_getattr_default_np(&usual_attr) == 0) {
        pthread_attr_getstacksize(&usual_attr, &usual);
        pthread_attr_destroy(&usual_attr);
    }
    return size == usual ? 0 : size;
}

struct sched_thread *sched_new_thread(void *(*fn)(void *), void *arg, const pthread_attr_t *attr)
{
    static unsigned long serial; /* for the pthread_t values */
    if (sched.nlive == SCHED_MAX_THREADS || sched.nthreads == SCHED_MAX_RECORDS)
        return NULL;
    int detach_state = PTHREAD_CREATE_JOINABLE;
    if (attr != NULL)
        pthread_attr_getdetachstate(attr, &detach_state);
    struct sched_thread *t = new_record();
    if (t == NULL)
        return NULL;
    t->stack_size = asked_stack_size(attr);
    if (!sched_context_make(&t->context, t->stack_size, context_main, t)) {
        t->next = spare_records;
        spare_records = t;
        return NULL;
    }
    sched_context_range(&t->context, &t->stack_low, &t->stack_high);
    t->id = sched.nthreads;
    t->self = (pthread_t)(2 * ++serial + 1);
    t->fn = fn;
    t->arg = arg;
    t->deadline = -1;
    t->woke_from = -1;
    t->detached = detach_state == PTHREAD_CREATE_DETACHED;
    t->joined_by = -1;
    t->state = RUNNABLE;
    t->op = OP_START;
    t->renamed = true; /* its first step takes the name it starts with */
    t->priority = kit_rng_next(&sched.rng) | (1ULL << 62); /* above every PCT change point */
    sched.threads[sched.nthreads++] = t;
    sched.live[sched.nlive++] = t->id;
    sched_memory_thread_created(me ? me->id : -1, t->id);
    sched_changes_thread_begins(t->id);
    return t;
}

int kit_sched_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg, void *where)
{
    at(me, RUNNABLE, OP_CREATE, -1, where);
    struct sched_thread *t = sched_new_thread(fn, arg, attr);
    if (t == NULL && sched.nlive == SCHED_MAX_THREADS)
        beyond_the_model("more than %d threads at once", SCHED_MAX_THREADS);
    if (t == NULL && sched.nthreads == SCHED_MAX_RECORDS)
        beyond_the_model("more than %d threads in one run", SCHED_MAX_RECORDS);
    if (t == NULL)
        return EAGAIN;
    *thread = t->self;
    me->how = GO;
    record_step(me, OP_CREATE, -1, t->id);
    switch_point();
    return 0;
}

struct sched_thread *sched_managed(pthread_t thread)
{
    for (int i = sched.nthreads - 1; i >= 0; i--)
        if (!sched.threads[i]->joined && sched.threads[i]->self == thread)
            return sched.threads[i];
    return NULL;
}

/* A pthread_t of this process's schedules (odd): no real thread's. */
static bool schedule_thread_id(pthread_t thread)
{
    return (thread & 1) != 0;
}

static const char *first_name(const struct sched_thread *t);

/* A thread's name for a message: the one it has, or before it ran the one it will start with. */
static const char *name_of(const struct sched_thread *t)
{
    return t->name[0] ? t->name : first_name(t);
}

/* This schedule's thread with that pthread_t, joined or not; NULL if none. */
static struct sched_thread *thread_of(pthread_t thread)
{
    for (int i = sched.nthreads - 1; i >= 0; i--)
        if (sched.threads[i]->self == thread)
            return sched.threads[i];
    return NULL;
}

/* Whether a second join of t followed the same write of the code under
 * test as the first: the write that decided to join, made twice (a flag
 * set without looking whether it was set, or looked at outside the lock). */
static bool decided_twice(const struct sched_thread *t)
{
    long seq;
    void *now = sched_changes_last_write(me->id, &seq);
    return t->join_decided != NULL && now == t->join_decided && seq != t->join_decided_seq; /* made again */
}

/* A join (or a detach: @p call) of a thread that cannot be joined any more
 * fails the schedule: POSIX leaves it undefined, and code that ignores the
 * ESRCH or EINVAL it may get goes on as if the thread were waited for. */
static void check_joinable(const struct sched_thread *t, const char *call, void *where)
{
    me->where = where;
    if (t == me)
        misuse("%s calls %s on itself at %s: a thread cannot wait for its own end (EDEADLK). Join a thread from "
               "another one, or detach it", kit_thread_name(), call, call_place(where));
    if ((t->joined || t->joined_by >= 0) && decided_twice(t))
        misuse("%s calls %s at %s on %s, which %s %s already at %s: the decision to join was made twice - the "
               "last write before each join was the same, at %s. Make it once: under the lock, look whether it "
               "was made already, and make it only if not (a thread is joined once, by one thread)",
               kit_thread_name(), call, call_place(where), name_of(t), name_of(sched.threads[t->joined_by]),
               t->joined ? "joined" : "is joining", call_place(t->joined_at), call_place(t->join_decided));
    if (t->joined || t->joined_by >= 0)
        misuse("%s calls %s at %s on %s, which %s %s already at %s: a thread is joined once, by one thread - "
               "after that its pthread_t means nothing. Decide under a lock (or by design) which thread joins "
               "each worker, and join it there only", kit_thread_name(), call, call_place(where), name_of(t),
               name_of(sched.threads[t->joined_by]), t->joined ? "joined" : "is joining", call_place(t->joined_at));
    if (t->detached)
        misuse("%s calls %s at %s on %s, which was detached %s%s: a detached thread cleans up after itself and "
               "can never be joined. Either detach a thread or join it, not both", kit_thread_name(), call,
               call_place(where), name_of(t), t->detached_at ? "at " : "when it was created (its attributes)",
               t->detached_at ? call_place(t->detached_at) : "");
}

/* kit_sched_call_site()'s place, until the next operation of the thread
 * that set it takes it. One thread of the schedule runs at a time, and it
 * takes it before its next switch point. */
static void *call_site;

void kit_sched_call_site(void *where)
{
    call_site = where;
}

void *kit_sched_site_or(void *where)
{
    return sched_site_or(where);
}

void *sched_site_or(void *where)
{
    void *site = call_site;
    call_site = NULL;
    return site ? site : where;
}

int __wrap_pthread_join(pthread_t thread, void **ret);
int __wrap_pthread_join(pthread_t thread, void **ret)
{
    void *where = sched_site_or(__builtin_return_address(0));
    struct sched_thread *t = me ? thread_of(thread) : NULL;
    if (t == NULL && me != NULL && schedule_thread_id(thread))
        return ESRCH; /* of an earlier schedule */
    if (t == NULL)
        return kit_misuse_join(thread, ret, where);
    check_joinable(t, "pthread_join", where);
    t->joined_by = me->id;
    t->joined_at = where;
    t->join_decided = sched_changes_last_write(me->id, &t->join_decided_seq);
    at(me, JOINING, OP_JOIN, -1, where);
    me->target = t->id;
    switch_point();
    record_step(me, OP_JOIN, -1, t->id);
    sched_memory_thread_joined(me->id, t->id);
    t->joined = true;
    if (ret)
        *ret = t->ret;
    return 0;
}

int __wrap_pthread_detach(pthread_t thread);
int __wrap_pthread_detach(pthread_t thread)
{
    void *where = sched_site_or(__builtin_return_address(0));
    struct sched_thread *t = me ? thread_of(thread) : NULL;
    if (t != NULL) {
        check_joinable(t, "pthread_detach", where);
        t->detached = true;
        t->detached_at = where;
        return 0;
    }
    if (me != NULL && schedule_thread_id(thread))
        return ESRCH;
    return kit_misuse_detach(thread, where);
}

/* pthread_tryjoin_np: a join that does not wait - the thread has ended in the model, or EBUSY. */
int __real_pthread_tryjoin_np(pthread_t thread, void **ret);
int __wrap_pthread_tryjoin_np(pthread_t thread, void **ret);
int __wrap_pthread_tryjoin_np(pthread_t thread, void **ret)
{
    struct sched_thread *t = me ? sched_managed(thread) : NULL;
    if (t == NULL && me != NULL && schedule_thread_id(thread))
        return ESRCH;
    if (t == NULL)
        return __real_pthread_tryjoin_np(thread, ret);
    check_joinable(t, "pthread_tryjoin_np", __builtin_return_address(0));
    at(me, RUNNABLE, OP_YIELD, -1, __builtin_return_address(0));
    switch_point();
    sched_touch_everything(); /* whether it has ended depends on every other step */
    if (t->state != DONE)
        return EBUSY;
    t->joined_by = me->id;
    t->joined_at = __builtin_return_address(0);
    t->join_decided = sched_changes_last_write(me->id, &t->join_decided_seq);
    record_step(me, OP_JOIN, -1, t->id);
    sched_memory_thread_joined(me->id, t->id);
    t->joined = true;
    if (ret)
        *ret = t->ret;
    return 0;
}

/* ---- Semaphores ------------------------------------------------------------------------
 * A semaphore of the code under test is modelled like a mutex: its value in
 * the model (taken from the real one at its first use in a schedule), a
 * thread that must wait for it blocked in the model, a post a release and a
 * successful wait an acquire for the race detector. The real semaphore is
 * never touched while a schedule runs. */

static int semaphore_of(sem_t *sem)
{
    return object_of(sem, 'S');
}

/* sem_wait, sem_timedwait, sem_clockwait: -1 and errno, as POSIX says. */
static int semaphore_down(sem_t *sem, const struct timespec *deadline, clockid_t clock, void *where)
{
    if (deadline != NULL && (deadline->tv_nsec < 0 || deadline->tv_nsec >= NS_PER_S)) {
        errno = EINVAL;
        return -1;
    }
    int obj = semaphore_of(sem);
    at(me, SEMAPHORE, OP_SEM_WAIT, obj, where);
    if (deadline && clock == CLOCK_REALTIME)
        step_the_wall_clock(me);
    me->deadline = deadline ? deadline_on(deadline, clock, "waiting on semaphore S%d", sched.objects[obj].serial) : -1;
    switch_point();
    me->deadline = -1;
    record_step(me, OP_SEM_WAIT, obj, me->result);
    if (me->result != 0) {
        errno = me->result;
        return -1;
    }
    return 0;
}

int __real_sem_trywait(sem_t *sem);
int __real_sem_clockwait(sem_t *sem, clockid_t clock, const struct timespec *deadline);
int __real_sem_getvalue(sem_t *sem, int *value);
int __wrap_sem_wait(sem_t *sem);
int __wrap_sem_timedwait(sem_t *sem, const struct timespec *deadline);
int __wrap_sem_clockwait(sem_t *sem, clockid_t clock, const struct timespec *deadline);
int __wrap_sem_trywait(sem_t *sem);
int __wrap_sem_post(sem_t *sem);
int __wrap_sem_getvalue(sem_t *sem, int *value);
int __wrap_sem_destroy(sem_t *sem);

int __wrap_sem_wait(sem_t *sem)
{
    if (me == NULL)
        return __real_sem_wait(sem);
    return semaphore_down(sem, NULL, CLOCK_REALTIME, __builtin_return_address(0));
}

int __wrap_sem_timedwait(sem_t *sem, const struct timespec *deadline)
{
    if (me == NULL)
        return __real_sem_timedwait(sem, deadline);
    return semaphore_down(sem, deadline, CLOCK_REALTIME, __builtin_return_address(0)); /* (POSIX: the wall clock) */
}

int __wrap_sem_clockwait(sem_t *sem, clockid_t clock, const struct timespec *deadline)
{
    if (me == NULL)
        return __real_sem_clockwait(sem, clock, deadline);
    if (clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME) {
        errno = EINVAL;
        return -1;
    }
    return semaphore_down(sem, deadline, clock, __builtin_return_address(0));
}

int __wrap_sem_trywait(sem_t *sem)
{
    if (me == NULL)
        return __real_sem_trywait(sem);
    int obj = semaphore_of(sem);
    at(me, RUNNABLE, OP_SEM_TRY, obj, __builtin_return_address(0));
    switch_point();
    bool taken = sched.objects[obj].count > 0;
    if (taken) {
        sched.objects[obj].count--;
        sched_memory_acquire(me->id, obj);
    }
    record_step(me, OP_SEM_TRY, obj, taken ? 0 : EAGAIN);
    if (!taken)
        errno = EAGAIN;
    return taken ? 0 : -1;
}

int __wrap_sem_post(sem_t *sem)
{
    if (me == NULL)
        return __real_sem_post(sem);
    int obj = semaphore_of(sem);
    at(me, RUNNABLE, OP_SEM_POST, obj, __builtin_return_address(0));
    sched.objects[obj].count++;
    sched_memory_release(me->id, obj);
    record_step(me, OP_SEM_POST, obj, -1);
    switch_point();
    return 0;
}

int __wrap_sem_getvalue(sem_t *sem, int *value)
{
    if (me == NULL)
        return __real_sem_getvalue(sem, value);
    *value = sched.objects[semaphore_of(sem)].count;
    return 0;
}

/* Destroying a semaphore a thread waits on is undefined. */
int __wrap_sem_destroy(sem_t *sem)
{
    if (me != NULL) {
        int obj = semaphore_of(sem);
        for (int i = 0; i < sched.nlive; i++)
            if (live(i)->state == SEMAPHORE && live(i)->obj == obj)
                misuse("%s destroys semaphore S%d while %s still waits on it", kit_thread_name(),
                       sched.objects[obj].serial, live(i)->name);
        forget_object(obj);
    }
    return __real_sem_destroy(sem);
}

/* ---- The calls only this file wraps ------------------------------------------------ */

int __wrap_pthread_mutex_trylock(pthread_mutex_t *mutex);
int __wrap_pthread_mutex_trylock(pthread_mutex_t *mutex)
{
    if (me == NULL)
        return __real_pthread_mutex_trylock(mutex);
    return mutex_trylock(mutex, __builtin_return_address(0));
}

int __real_pthread_mutex_timedlock(pthread_mutex_t *mutex, const struct timespec *deadline);
int __wrap_pthread_mutex_timedlock(pthread_mutex_t *mutex, const struct timespec *deadline);
int __wrap_pthread_mutex_timedlock(pthread_mutex_t *mutex, const struct timespec *deadline)
{
    if (me == NULL)
        return __real_pthread_mutex_timedlock(mutex, deadline);
    if (deadline == NULL || deadline->tv_nsec < 0 || deadline->tv_nsec >= NS_PER_S)
        return EINVAL;
    return mutex_lock(mutex, deadline, __builtin_return_address(0));
}

/* Destroying a mutex someone holds, or a condition someone waits on, is
 * undefined: on a schedule the model knows who; on real threads the
 * wrappers of kit_misuse.c check what they can. */
static void check_mutex_destroy(pthread_mutex_t *mutex, void *where)
{
    check_not_freed(mutex, sizeof *mutex, "mutex", "destroys", where);
    int obj = object_of(mutex, 'M');
    me->where = where;
    const struct sched_object *m = &sched.objects[obj];
    if (!mutex_free(obj))
        misuse("%s destroys M%d at %s while %s holds it (locked at %s): destroying a locked mutex is undefined. "
               "Unlock it first - and destroy it only once no thread can lock it any more (after joining the "
               "threads that use it)", kit_thread_name(), m->serial, call_place(where),
               m->owner == me->id ? "it itself" : sched.threads[m->owner]->name, call_place(m->locked_at));
    /* A thread that wants the mutex (to lock it, or back after a wake-up)
     * would lock freed memory next. */
    for (int i = 0; i < sched.nlive; i++) {
        const struct sched_thread *t = live(i);
        if ((t->state == LOCKING && t->obj == obj) || (t->state == WAITING && t->obj2 == obj))
            misuse("%s destroys M%d at %s while %s still wants it (%s at %s): a thread that waits to lock a "
                   "mutex must have it before the mutex is destroyed. Wake every waiter and wait until they have "
                   "left (or join them) before destroying", kit_thread_name(), m->serial, call_place(where),
                   t->name, t->state == LOCKING ? "it waits to lock it" : "it sleeps in a wait that relocks it",
                   call_place(t->where));
    }
    remember_destroy(mutex, where);
    forget_object(obj);
}

int __wrap_pthread_mutex_destroy(pthread_mutex_t *mutex);
int __wrap_pthread_mutex_destroy(pthread_mutex_t *mutex)
{
    if (me != NULL)
        check_mutex_destroy(mutex, __builtin_return_address(0));
    else
        kit_misuse_mutex_destroy(mutex, __builtin_return_address(0));
    return __real_pthread_mutex_destroy(mutex);
}

int __wrap_pthread_cond_destroy(pthread_cond_t *cond);
int __wrap_pthread_cond_destroy(pthread_cond_t *cond)
{
    void *where = __builtin_return_address(0);
    if (me == NULL) {
        kit_misuse_cond_destroy(cond, where);
        return __real_pthread_cond_destroy(cond);
    }
    check_not_freed(cond, sizeof *cond, "condition variable", "destroys", where);
    int obj = object_of(cond, 'C');
    me->where = where;
    for (int i = 0; i < sched.nlive; i++) /* (one a signal chose is on its way out: POSIX allows that) */
        if (live(i)->state == WAITING && live(i)->obj == obj && !live(i)->woken)
            misuse("%s destroys C%d at %s while %s still waits on it (at %s): destroying a condition variable "
                   "a thread sleeps on is undefined - it may never wake, or wake inside freed memory. Wake every "
                   "sleeper first (a close that broadcasts) and wait until each has left the wait, or join "
                   "them, then destroy", kit_thread_name(), sched.objects[obj].serial, call_place(where),
                   live(i)->name, call_place(live(i)->where));
    remember_destroy(cond, where);
    forget_object(obj);
    return __real_pthread_cond_destroy(cond);
}

void sched_endless_loop(void *pc)
{
    me->where = pc;
    me->depth = backtrace(me->stack, SCHED_STACK_DEPTH);
    misuse("%s made %ld loads and stores without a call the scheduler sees (a lock, a wait, a thread's start or "
           "end): it loops, and while it runs no other thread can change what it waits for - a spin-wait, or a loop "
           "whose condition never changes; wait on a condition variable instead", kit_thread_name(),
           SCHED_SPIN_ACCESSES);
}

void sched_memory_point(void *pc, enum sched_op op)
{
    at(me, RUNNABLE, op, -1, pc);
    switch_point();
    record_step(me, op, -1, -1);
}

int __wrap_sched_yield(void);
int __wrap_sched_yield(void)
{
    if (me == NULL)
        return __real_sched_yield();
    at(me, RUNNABLE, OP_YIELD, -1, sched_site_or(__builtin_return_address(0)));
    switch_point();
    record_step(me, OP_YIELD, -1, -1);
    return 0;
}

int kit_sched_await_sleepers(int count, long timeout_ms, void *where)
{
    at(me, AWAITING, OP_AWAIT, -1, where);
    me->target = count;
    me->deadline = timeout_ms < 0 ? -1 : sched.now + timeout_ms * (NS_PER_S / 1000);
    switch_point();
    me->deadline = -1;
    record_step(me, OP_AWAIT, -1, count);
    return me->result;
}

void kit_explore_await_sleepers(int count)
{
    if (me == NULL)
        fail_msg("kit_explore_await_sleepers outside an explored body");
    kit_sched_await_sleepers(count, -1, __builtin_return_address(0));
}

void kit_explore_await_quiet(void)
{
    if (me == NULL)
        fail_msg("kit_explore_await_quiet outside an explored body");
    at(me, QUIETING, OP_AWAIT, -1, __builtin_return_address(0));
    switch_point();
    record_step(me, OP_AWAIT, -1, -1);
}

long kit_sched_futile_wakeups(void)
{
    return me != NULL ? sched.futile_wakeups : 0;
}

long kit_sched_wakeups(void)
{
    return me != NULL ? sched.wakeups : 0;
}

bool kit_sched_woken_spuriously(void)
{
    return me != NULL && me->left_wait == SPURIOUS;
}

int sched_running_thread(void)
{
    return me != NULL ? me->id : -1;
}

void kit_sched_touch_history(void)
{
    if (me != NULL)
        sched_touch(SCHED_HISTORY_OBJECT);
}

static bool virtual_clock(clockid_t clock);

/* Sleep until virtual time @p until. */
static void sleep_until(int64_t until, void *where)
{
    at(me, SLEEPING, OP_SLEEP, -1, where);
    me->deadline = until;
    switch_point();
    me->deadline = -1;
    record_step(me, OP_SLEEP, -1, -1);
}

int __wrap_nanosleep(const struct timespec *request, struct timespec *left);
int __wrap_nanosleep(const struct timespec *request, struct timespec *left)
{
    if (me == NULL)
        return __real_nanosleep(request, left);
    if (request->tv_nsec < 0 || request->tv_nsec >= NS_PER_S || request->tv_sec < 0) {
        errno = EINVAL;
        return -1;
    }
    sleep_until(sched.now + (int64_t)request->tv_sec * NS_PER_S + request->tv_nsec,
                sched_site_or(__builtin_return_address(0)));
    return 0;
}

int __real_clock_nanosleep(clockid_t clock, int flags, const struct timespec *request, struct timespec *left);
int __wrap_clock_nanosleep(clockid_t clock, int flags, const struct timespec *request, struct timespec *left);
int __wrap_clock_nanosleep(clockid_t clock, int flags, const struct timespec *request, struct timespec *left)
{
    if (me == NULL || !virtual_clock(clock))
        return __real_clock_nanosleep(clock, flags, request, left);
    if (request->tv_nsec < 0 || request->tv_nsec >= NS_PER_S)
        return EINVAL;
    int64_t span = (int64_t)request->tv_sec * NS_PER_S + request->tv_nsec;
    int64_t until = (flags & TIMER_ABSTIME) ? virtual_of(request) : sched.now + span;
    sleep_until(until > sched.now ? until : sched.now, sched_site_or(__builtin_return_address(0)));
    return 0;
}

int __real_usleep(useconds_t us);
int __wrap_usleep(useconds_t us);
int __wrap_usleep(useconds_t us)
{
    if (me == NULL)
        return __real_usleep(us);
    sleep_until(sched.now + (int64_t)us * 1000, __builtin_return_address(0));
    return 0;
}

unsigned __real_sleep(unsigned seconds);
unsigned __wrap_sleep(unsigned seconds);
unsigned __wrap_sleep(unsigned seconds)
{
    if (me == NULL)
        return __real_sleep(seconds);
    sleep_until(sched.now + (int64_t)seconds * NS_PER_S, __builtin_return_address(0));
    return 0;
}

/* Every way to read the time of day or the time since boot reads virtual
 * time on a scheduled thread: a deadline computed from any of them means
 * what it says. (A thread's or the process's CPU time stays real.) */
static bool wall_clock(clockid_t clock)
{
    return clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE;
}

static bool virtual_clock(clockid_t clock)
{
    return wall_clock(clock) || clock == CLOCK_MONOTONIC || clock == CLOCK_MONOTONIC_COARSE ||
           clock == CLOCK_MONOTONIC_RAW || clock == CLOCK_BOOTTIME;
}

static void virtual_time(bool wall, struct timespec *now)
{
    int64_t ns = sched.now + (wall ? REALTIME_BASE + sched.wall_offset : MONOTONIC_BASE);
    now->tv_sec = (time_t)(ns / NS_PER_S);
    now->tv_nsec = (long)(ns % NS_PER_S);
}

int __wrap_clock_gettime(clockid_t clock, struct timespec *now);
int __wrap_clock_gettime(clockid_t clock, struct timespec *now)
{
    if (me == NULL || !virtual_clock(clock))
        return __real_clock_gettime(clock, now);
    virtual_time(wall_clock(clock), now);
    return 0;
}

int __real_timespec_get(struct timespec *now, int base);
int __wrap_timespec_get(struct timespec *now, int base);
int __wrap_timespec_get(struct timespec *now, int base)
{
    if (me == NULL || base != TIME_UTC)
        return __real_timespec_get(now, base);
    virtual_time(true, now);
    return base;
}

int __real_gettimeofday(struct timeval *now, void *zone);
int __wrap_gettimeofday(struct timeval *now, void *zone);
int __wrap_gettimeofday(struct timeval *now, void *zone)
{
    if (me == NULL || now == NULL)
        return __real_gettimeofday(now, zone);
    struct timespec t;
    virtual_time(true, &t);
    now->tv_sec = t.tv_sec;
    now->tv_usec = t.tv_nsec / 1000;
    return 0;
}

time_t __real_time(time_t *out);
time_t __wrap_time(time_t *out);
time_t __wrap_time(time_t *out)
{
    if (me == NULL)
        return __real_time(out);
    struct timespec t;
    virtual_time(true, &t);
    if (out != NULL)
        *out = t.tv_sec;
    return t.tv_sec;
}

