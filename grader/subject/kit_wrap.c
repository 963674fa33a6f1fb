/**
 * @file kit_wrap.c
 * @brief Instrumented condition waits for test binaries (linked with -Wl,--wrap).
 *
 * The linker sends every call to pthread_cond_wait / pthread_cond_timedwait in
 * the test binary - the code under test included - here first. We count the
 * threads inside a wait, which lets a test script an interleaving exactly
 * ("both consumers are asleep now"), and on request we return early without
 * any signal: a spurious wake-up, which POSIX allows at any time and which
 * correct code survives by re-checking its condition in a while loop.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__GLIBC__)
#include <malloc.h> /* malloc_usable_size */
#endif

#include "kit_errno.h"
#include "kit_gate.h"
#include "kit_misuse.h"
#include "kit_sched.h"
#include "kit_test.h"
#include "kit_time.h"

int __real_pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex);
void *__real_malloc(size_t size);
void __real_free(void *block);
int __real_pthread_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex,
                                  const struct timespec *deadline);
int __wrap_pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex);
int __wrap_pthread_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex,
                                  const struct timespec *deadline);
int __real_pthread_cond_clockwait(pthread_cond_t *cond, pthread_mutex_t *mutex, clockid_t clock,
                                  const struct timespec *deadline);
int __wrap_pthread_cond_clockwait(pthread_cond_t *cond, pthread_mutex_t *mutex, clockid_t clock,
                                  const struct timespec *deadline);

static void perturb(void); /* chaos, below */
static int checked_at(const char *call, int err, void *where); /* results, below */
#define checked(call, err) checked_at((call), (err), __builtin_return_address(0))

static atomic_int waiting;
static atomic_bool spurious_on;
static atomic_long wake_every_ms; /* 0 = off */
static atomic_long spurious_total;
static _Thread_local unsigned long waits_on_this_thread;

/* ---- The harness's own waits ------------------------------------------------
 * Gates and latches (lib/program/kit_gate.c) are the tests' scaffolding, not
 * the code under study: while a thread is inside one of their waiting calls
 * (wrapped too, see TEST_WRAPS in the Makefile), its waits are not counted,
 * never woken spuriously and never perturbed. */
static _Thread_local int harness_waiting;

void __real_kit_gate_wait(kit_gate_t *gate);
int __real_kit_gate_await_arrivals(kit_gate_t *gate, size_t count, long timeout_ms);
void __real_kit_gate_destroy(kit_gate_t *gate);
int __real_kit_latch_wait(kit_latch_t *latch, long timeout_ms);
void __real_kit_latch_destroy(kit_latch_t *latch);
void __wrap_kit_gate_wait(kit_gate_t *gate);
int __wrap_kit_gate_await_arrivals(kit_gate_t *gate, size_t count, long timeout_ms);
void __wrap_kit_gate_destroy(kit_gate_t *gate);
int __wrap_kit_latch_wait(kit_latch_t *latch, long timeout_ms);
void __wrap_kit_latch_destroy(kit_latch_t *latch);
void kit_harness_waits(int delta);

void __wrap_kit_gate_wait(kit_gate_t *gate)
{
    harness_waiting++;
    __real_kit_gate_wait(gate);
    harness_waiting--;
}

int __wrap_kit_gate_await_arrivals(kit_gate_t *gate, size_t count, long timeout_ms)
{
    harness_waiting++;
    int err = __real_kit_gate_await_arrivals(gate, count, timeout_ms);
    harness_waiting--;
    return err;
}

void __wrap_kit_gate_destroy(kit_gate_t *gate)
{
    harness_waiting++;
    __real_kit_gate_destroy(gate);
    harness_waiting--;
}

int __wrap_kit_latch_wait(kit_latch_t *latch, long timeout_ms)
{
    harness_waiting++;
    int err = __real_kit_latch_wait(latch, timeout_ms);
    harness_waiting--;
    return err;
}

void __wrap_kit_latch_destroy(kit_latch_t *latch)
{
    harness_waiting++;
    __real_kit_latch_destroy(latch);
    harness_waiting--;
}

/* The same for a written-down test's copy of the gates, which links its
 * own kit_gate.c where --wrap cannot reach (kit_transcript_gate.c). */
void kit_harness_waits(int delta)
{
    harness_waiting += delta;
}

int kit_waiting_threads(void)
{
    return atomic_load(&waiting);
}

void kit_spurious_wakeups(bool on)
{
    atomic_store(&spurious_on, on);
}

long kit_spurious_count(void)
{
    return atomic_load(&spurious_total);
}

void kit_wakeups_every(long ms)
{
    atomic_store(&wake_every_ms, ms > 0 ? ms : 0);
}

void kit_await_waiting_threads_at(int count, const char *what, const char *file, int line)
{
    if (kit_sched_active()) { /* on a schedule: the model knows who sleeps, and time is virtual */
        if (kit_sched_await_sleepers(count, KIT_HANG_MS, __builtin_return_address(0)) == 0)
            return;
        kit_dump_stacks("fewer threads asleep than expected");
        kit_fail_at(file, line, "%s: expected %d threads asleep in a condition wait, saw %d", what, count,
                    atomic_load(&waiting));
    }
    int64_t start = kit_now_ns();
    while (atomic_load(&waiting) < count) {
        if (kit_elapsed_ms(start) > KIT_HANG_MS) {
            kit_dump_stacks("fewer threads asleep than expected");
            kit_fail_at(file, line, "%s: expected %d threads asleep in a condition wait, saw %d", what, count,
                        atomic_load(&waiting));
        }
        kit_sleep_ms(1);
    }
}

/* Every other wait on a thread wakes up spuriously while injection is on:
 * the first wait of a `while` loop returns at once, the retry really waits.
 * (On a schedule too: the unlock, yield and lock below are switch points,
 * named after the caller's line.) */
static bool take_spurious_turn(pthread_mutex_t *mutex, void *where)
{
    if (!atomic_load(&spurious_on) || (waits_on_this_thread++ % 2) != 0)
        return false;
    atomic_fetch_add(&spurious_total, 1);
    /* Give up the mutex for a moment, as a real wake-up would, so other
     * threads can run (and, say, steal the item we were waiting for). */
    kit_sched_name_steps(where);
    pthread_mutex_unlock(mutex);
    sched_yield();
    pthread_mutex_lock(mutex);
    kit_sched_name_steps(NULL);
    return true;
}

/* A timed wait's clock: the condition variable's own (pthread_cond_timedwait),
 * or the one pthread_cond_clockwait names. */
#define OWN_CLOCK ((clockid_t)-1)

/* The wait itself: the kernel's, or on a scheduled thread the scheduler's. */
static int wait_on(pthread_cond_t *cond, pthread_mutex_t *mutex, const struct timespec *deadline, clockid_t clock,
                   void *where)
{
    if (kit_sched_active()) {
        if (clock != OWN_CLOCK && clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME)
            return EINVAL; /* as glibc says of a clock it cannot wait on */
        return kit_sched_cond_wait(cond, mutex, deadline, clock, harness_waiting > 0, where);
    }
    kit_sched_outsider(!deadline ? "pthread_cond_wait" : clock == OWN_CLOCK ? "pthread_cond_timedwait"
                                                                            : "pthread_cond_clockwait");
    if (harness_waiting) /* (the code under test's waits were checked by enter_wait) */
        kit_misuse_wait_begin(cond, mutex, where);
    int err;
    if (deadline && clock != OWN_CLOCK)
        err = __real_pthread_cond_clockwait(cond, mutex, clock, deadline);
    else if (deadline)
        err = __real_pthread_cond_timedwait(cond, mutex, deadline);
    else
        err = __real_pthread_cond_wait(cond, mutex);
    kit_misuse_wait_end(cond, err);
    return err;
}

/* A wait of the code under test begins: on real threads checked first
 * (kit_misuse.c), then counted as waiting - so that what a test does once
 * it sees the thread waiting, the checks see too. */
static void enter_wait(pthread_cond_t *cond, pthread_mutex_t *mutex, void *where)
{
    if (!kit_sched_active())
        kit_misuse_wait_begin(cond, mutex, where);
    atomic_fetch_add(&waiting, 1);
}

int __wrap_pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex)
{
    void *where = kit_sched_active() ? kit_sched_site_or(__builtin_return_address(0)) : __builtin_return_address(0);
    if (harness_waiting)
        return checked_at("pthread_cond_wait", wait_on(cond, mutex, NULL, OWN_CLOCK, where), where);
    if (take_spurious_turn(mutex, where))
        return 0;
    enter_wait(cond, mutex, where);
    int err = wait_on(cond, mutex, NULL, OWN_CLOCK, where);
    atomic_fetch_sub(&waiting, 1);
    perturb();
    return checked_at("pthread_cond_wait", err, where);
}

/* The clock a deadline was computed on: the one pthread_cond_clockwait
 * names, or for pthread_cond_timedwait the condition variable's. The wrapper
 * cannot ask the condition variable, but the two clocks are decades apart:
 * CLOCK_REALTIME counts from 1970, CLOCK_MONOTONIC (the kit's) from boot. */
static clockid_t clock_of(const struct timespec *deadline, clockid_t clock)
{
    if (clock != OWN_CLOCK)
        return clock;
    return deadline->tv_sec > 1000000000 ? CLOCK_REALTIME : CLOCK_MONOTONIC;
}

/* With kit_wakeups_every(ms) on, a timed wait that would sleep longer than ms
 * wakes up after ms and returns 0 - as if a signal had come for a condition
 * that another thread then made false again (a stolen wake-up). Code that
 * recomputes "now + timeout" after each wake-up then never times out. */
static int wait_with_early_wakeup(pthread_cond_t *cond, pthread_mutex_t *mutex, const struct timespec *deadline,
                                  clockid_t clock, long every_ms, void *where)
{
    struct timespec early;
    if (clock_gettime(clock_of(deadline, clock), &early) != 0) /* a clock the wait itself will refuse */
        return wait_on(cond, mutex, deadline, clock, where);
    early.tv_sec += every_ms / 1000;
    early.tv_nsec += (every_ms % 1000) * 1000000L;
    if (early.tv_nsec >= 1000000000L) {
        early.tv_nsec -= 1000000000L;
        early.tv_sec++;
    }
    bool earlier = early.tv_sec < deadline->tv_sec ||
                   (early.tv_sec == deadline->tv_sec && early.tv_nsec < deadline->tv_nsec);
    int err = wait_on(cond, mutex, earlier ? &early : deadline, clock, where);
    if (err == ETIMEDOUT && earlier) {
        atomic_fetch_add(&spurious_total, 1);
        kit_sched_woke_early();
        return 0;
    }
    return err;
}

/* pthread_cond_timedwait and pthread_cond_clockwait: waiting counted,
 * spurious and early wake-ups injected, the same for both. */
static int timed_wait(const char *call, pthread_cond_t *cond, pthread_mutex_t *mutex, const struct timespec *deadline,
                      clockid_t clock, void *where)
{
    if (harness_waiting)
        return checked_at(call, wait_on(cond, mutex, deadline, clock, where), where);
    if (take_spurious_turn(mutex, where))
        return 0;
    long every_ms = atomic_load(&wake_every_ms);
    enter_wait(cond, mutex, where);
    int err = every_ms > 0 ? wait_with_early_wakeup(cond, mutex, deadline, clock, every_ms, where)
                           : wait_on(cond, mutex, deadline, clock, where);
    atomic_fetch_sub(&waiting, 1);
    perturb();
    return checked_at(call, err, where);
}

int __wrap_pthread_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex,
                                  const struct timespec *deadline)
{
    void *where = kit_sched_active() ? kit_sched_site_or(__builtin_return_address(0)) : __builtin_return_address(0);
    return timed_wait("pthread_cond_timedwait", cond, mutex, deadline, OWN_CLOCK, where);
}

int __wrap_pthread_cond_clockwait(pthread_cond_t *cond, pthread_mutex_t *mutex, clockid_t clock,
                                  const struct timespec *deadline)
{
    return timed_wait("pthread_cond_clockwait", cond, mutex, deadline, clock, __builtin_return_address(0));
}

/* ---- Delays, chaos, and failing thread creation ---------------------------------
 * A race window between two critical sections is often a few hundred
 * nanoseconds wide: a thread leaves one, and before it enters the next,
 * another thread must slip in. Two switches stretch such windows:
 * - kit_lock_delays(max_us): every pthread_mutex_lock first pauses 0..max_us.
 * - chaos (KIT_CHAOS=seed in the environment, `make grade CHAOS=seed`):
 *   around every lock, unlock, wait, signal, broadcast and thread creation,
 *   sometimes yield and sometimes sleep a little. Each thread draws from its
 *   own generator, seeded from the seed and the order in which threads were
 *   created, so the same seed gives the same perturbation schedule. It needs
 *   no cooperation from the code under test - a student's code included. */

int __real_pthread_mutex_lock(pthread_mutex_t *mutex);
int __wrap_pthread_mutex_lock(pthread_mutex_t *mutex);
int __real_pthread_mutex_unlock(pthread_mutex_t *mutex);
int __wrap_pthread_mutex_unlock(pthread_mutex_t *mutex);
int __real_pthread_cond_signal(pthread_cond_t *cond);
int __wrap_pthread_cond_signal(pthread_cond_t *cond);
int __real_pthread_cond_broadcast(pthread_cond_t *cond);
int __wrap_pthread_cond_broadcast(pthread_cond_t *cond);
int __real_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
int __wrap_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
/* The place kit_sched_call_site() gave the next start, else @p where (kit_sched.c). */
void *sched_site_or(void *where);

static atomic_long lock_delay_us;     /* 0 = off */
static atomic_ulong perturb_seed;
static atomic_bool chaos_on;
static atomic_uint threads_created;   /* numbers threads in creation order */
static atomic_long create_fail_at;    /* 0 = never; else fail that creation call and every later one */
static atomic_long create_calls;
static _Thread_local kit_rng_t perturb_rng;
static _Thread_local bool perturb_rng_ready;
static _Thread_local unsigned thread_serial; /* 0 for threads not made by pthread_create here */

static kit_rng_t *my_rng(void)
{
    if (!perturb_rng_ready) {
        kit_rng_seed(&perturb_rng, atomic_load(&perturb_seed), thread_serial);
        perturb_rng_ready = true;
    }
    return &perturb_rng;
}

void kit_lock_delays(long max_us, uint64_t seed)
{
    /* KIT_NO_LOCK_DELAYS=1 turns the tests' targeted delays off, to measure
     * what plain runs - or chaos alone - do against a race. */
    if (getenv("KIT_NO_LOCK_DELAYS") != NULL)
        max_us = 0;
    atomic_store(&perturb_seed, (unsigned long)seed);
    atomic_store(&lock_delay_us, max_us > 0 ? max_us : 0);
}

void kit_chaos(uint64_t seed)
{
    atomic_store(&perturb_seed, (unsigned long)seed);
    atomic_store(&chaos_on, seed != 0);
}

bool kit_chaos_from_env(void)
{
    const char *text = getenv("KIT_CHAOS");
    uint64_t seed = text ? strtoull(text, NULL, 10) : 0;
    kit_chaos(seed);
    return seed != 0;
}

/* Chaos: mostly nothing, sometimes a yield, now and then a short sleep.
 * (Not on a schedule: there the scheduler makes every choice.) */
static void perturb(void)
{
    if (!atomic_load_explicit(&chaos_on, memory_order_relaxed) || harness_waiting || kit_sched_active())
        return;
    uint64_t roll = kit_rng_below(my_rng(), 100);
    if (roll < 15)
        sched_yield();
    else if (roll < 20)
        kit_sleep_us((long)kit_rng_below(my_rng(), 200));
}

int __wrap_pthread_mutex_lock(pthread_mutex_t *mutex)
{
    if (kit_sched_active())
        return checked("pthread_mutex_lock",
                       kit_sched_mutex_lock(mutex, kit_sched_site_or(__builtin_return_address(0))));
    kit_sched_outsider("pthread_mutex_lock");
    long max_us = atomic_load_explicit(&lock_delay_us, memory_order_relaxed);
    if (max_us > 0 && !harness_waiting)
        kit_sleep_us((long)kit_rng_below(my_rng(), (uint64_t)max_us + 1));
    perturb();
    return checked("pthread_mutex_lock", __real_pthread_mutex_lock(mutex));
}

int __wrap_pthread_mutex_unlock(pthread_mutex_t *mutex)
{
    if (kit_sched_active())
        return checked("pthread_mutex_unlock",
                       kit_sched_mutex_unlock(mutex, kit_sched_site_or(__builtin_return_address(0))));
    kit_sched_outsider("pthread_mutex_unlock");
    kit_misuse_unlock(mutex, __builtin_return_address(0));
    int err = __real_pthread_mutex_unlock(mutex);
    perturb();
    return checked("pthread_mutex_unlock", err);
}

int __wrap_pthread_cond_signal(pthread_cond_t *cond)
{
    if (kit_sched_active())
        return kit_sched_cond_signal(cond, false, kit_sched_site_or(__builtin_return_address(0)));
    kit_sched_outsider("pthread_cond_signal");
    kit_misuse_wake(cond, false);
    perturb();
    return checked("pthread_cond_signal", __real_pthread_cond_signal(cond));
}

int __wrap_pthread_cond_broadcast(pthread_cond_t *cond)
{
    if (kit_sched_active())
        return kit_sched_cond_signal(cond, true, kit_sched_site_or(__builtin_return_address(0)));
    kit_sched_outsider("pthread_cond_broadcast");
    kit_misuse_wake(cond, true);
    perturb();
    return checked("pthread_cond_broadcast", __real_pthread_cond_broadcast(cond));
}

/* ---- Results -----------------------------------------------------------------
 * Lock, unlock, wait, signal and broadcast on a live, initialised object
 * fail only on misuse - so the teaching code does not check them, and the
 * harness does: any result but 0 (or a timed wait's ETIMEDOUT) ends the test
 * in words, with the stack that shows the student's line. */
static const char *misuse(int err)
{
    switch (err) {
    case EPERM: return "the calling thread does not hold the mutex (unlocked twice, or by a thread that never locked it?)";
    case EDEADLK: return "the calling thread already holds this mutex: it would wait for itself forever";
    case EINVAL: return "the mutex or condition variable is not initialised, already destroyed, or waited on with two different mutexes";
    case EBUSY: return "the object is in use";
    case EAGAIN: return "a recursive mutex was locked too many times";
    case EOWNERDEAD: return "the thread that held the mutex ended without unlocking it";
    case ENOTRECOVERABLE: return "the mutex is not recoverable: a thread ended while holding it";
    default: return "a misuse of the object";
    }
}

static int checked_at(const char *call, int err, void *where)
{
    if (err == 0)
        return 0;
    bool timed = strcmp(call, "pthread_cond_timedwait") == 0 || strcmp(call, "pthread_cond_clockwait") == 0;
    if (err == ETIMEDOUT && timed)
        return err;
    char message[768], place[1][160];
    void *pcs[1] = { where };
    kit_describe_places(pcs, 1, place);
    bool deadline = err == EINVAL && timed;
    snprintf(message, sizeof message, "%s at %s returned %s: %s", call, place[0], kit_errno_name(err),
             deadline ? "the deadline is not a valid time (tv_nsec must stay below 1000000000), or the condition "
                        "variable or mutex is not initialised"
                      : misuse(err));
    kit_stop_test(message, NULL, 0);
}

void kit_fail_thread_create(long nth)
{
    atomic_store(&create_fail_at, nth > 0 ? atomic_load(&create_calls) + nth : 0);
}

struct numbered_start {
    void *(*fn)(void *);
    void *arg;
    unsigned serial;
};

/* Threads started and not yet ended (pthread_exit included). */
static atomic_int threads_alive;

int kit_threads_alive(void)
{
    return atomic_load(&threads_alive);
}

/* The names threads were given (pthread_setname_np, as kit_thread_start
 * names them), kept while each runs: a test counts a component's workers
 * by name (kit_threads_named) without reading /proc, which a judged test's
 * subject may not open, and where a sanitizer's own threads show too. */
enum { NAMED_THREADS = 256 };
static struct named_thread {
    pthread_t thread;
    char name[16]; /* "" : a free entry */
} named_threads[NAMED_THREADS];
static pthread_mutex_t named_lock = PTHREAD_MUTEX_INITIALIZER; /* guards named_threads */

/* The entry of thread, or a free one (NULL: the table is full). Under named_lock. */
static struct named_thread *named_entry(pthread_t thread)
{
    struct named_thread *free_entry = NULL;
    for (int i = 0; i < NAMED_THREADS; i++) {
        if (named_threads[i].name[0] && pthread_equal(named_threads[i].thread, thread))
            return &named_threads[i];
        if (!named_threads[i].name[0] && free_entry == NULL)
            free_entry = &named_threads[i];
    }
    return free_entry;
}

void kit_thread_named(pthread_t thread, const char *name); /* (the explorer's wrapper calls it: kit_sched_internal.h) */
void kit_thread_named(pthread_t thread, const char *name)
{
    __real_pthread_mutex_lock(&named_lock);
    struct named_thread *entry = named_entry(thread);
    if (entry != NULL) {
        entry->thread = thread;
        snprintf(entry->name, sizeof entry->name, "%s", name != NULL ? name : "");
    }
    __real_pthread_mutex_unlock(&named_lock);
}

long kit_threads_named(const char *prefix)
{
    long count = 0;
    size_t length = prefix != NULL ? strlen(prefix) : 0;
    __real_pthread_mutex_lock(&named_lock);
    for (int i = 0; i < NAMED_THREADS; i++)
        count += named_threads[i].name[0] && strncmp(named_threads[i].name, prefix ? prefix : "", length) == 0;
    __real_pthread_mutex_unlock(&named_lock);
    return count;
}

/* In a judged test's subject (kit_serve.c): a thread that called the
 * test's functions back tells the judge's thread that mirrors it to leave.
 * Not there in a test of one process. */
void kit_serve_thread_ended(void) __attribute__((weak));

static void thread_ended(void *unused)
{
    (void)unused;
    if (kit_serve_thread_ended != NULL)
        kit_serve_thread_ended();
    kit_thread_named(pthread_self(), ""); /* (its entry, free again) */
    atomic_fetch_sub(&threads_alive, 1);
}

static void *numbered_body(void *raw)
{
    struct numbered_start start = *(struct numbered_start *)raw;
    __real_free(raw);
    thread_serial = start.serial;
    void *result;
    pthread_cleanup_push(thread_ended, NULL);
    result = start.fn(start.arg);
    pthread_cleanup_pop(1);
    return result;
}

int __wrap_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    bool scheduled = kit_sched_active();
    if (!scheduled)
        kit_sched_outsider("pthread_create");
    long call = atomic_fetch_add(&create_calls, 1) + 1;
    long fail_at = atomic_load(&create_fail_at);
    if (fail_at != 0 && call >= fail_at)
        return EAGAIN; /* as when the system is out of threads - and stays so: a retry fails too */
    struct numbered_start *start = __real_malloc(sizeof *start);
    if (start == NULL)
        return EAGAIN;
    *start = (struct numbered_start){ fn, arg, atomic_fetch_add(&threads_created, 1) + 1 };
    atomic_fetch_add(&threads_alive, 1);
    int err = scheduled ? kit_sched_create(thread, attr, numbered_body, start, sched_site_or(__builtin_return_address(0)))
                        : __real_pthread_create(thread, attr, numbered_body, start);
    if (err != 0) {
        atomic_fetch_sub(&threads_alive, 1);
        __real_free(start);
    } else if (!scheduled) {
        kit_misuse_thread_made(*thread, attr);
    }
    perturb();
    return err;
}

/* ---- Counted allocations --------------------------------------------------
 * malloc, calloc, realloc and free are wrapped the same way, so a test can
 * check that destroy gives back everything create took (live count before
 * == live count after), and can make the Nth allocation fail. Only calls
 * made from the test binary's own objects are counted - allocations inside
 * libc or cmocka are not. libc's other allocators that the code under test
 * may call directly (strdup, strndup, aligned_alloc, posix_memalign) are
 * wrapped too: their blocks come back through the wrapped free, and a pool
 * that copies its name with strdup must not read as -1 blocks not freed. */

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void *__real_malloc(size_t size);
void *__real_calloc(size_t count, size_t size);
void *__real_realloc(void *old, size_t size);
void __real_free(void *block);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t count, size_t size);
void *__wrap_realloc(void *old, size_t size);
void __wrap_free(void *block);

static atomic_long live_blocks;
static atomic_long allocation_calls;
static atomic_long fail_at_call; /* 0 = never fail */

long kit_live_allocations(void)
{
    return atomic_load(&live_blocks);
}

long kit_allocation_calls(void)
{
    return atomic_load(&allocation_calls);
}

void kit_fail_allocation(long nth)
{
    atomic_store(&fail_at_call, nth > 0 ? atomic_load(&allocation_calls) + nth : 0);
}

static void settle_quarantine(void); /* below */

/* Every allocation call begins here: counted, on a schedule the quarantine
 * of an earlier one emptied, and failed if it is the one to fail. */
static bool this_call_fails(void)
{
    settle_quarantine();
    long call = atomic_fetch_add(&allocation_calls, 1) + 1;
    long target = atomic_load(&fail_at_call);
    return target != 0 && call == target;
}

static bool freed_on_this_schedule(void); /* the quarantine, below */

/* New memory has no history: whatever was done to it before it was freed
 * and handed out again is no data race with what is done to it now. (Only
 * memory freed on the schedule under way has a history in it.) */
static void *fresh(void *block)
{
#if defined(__GLIBC__)
    if (block && kit_sched_active() && freed_on_this_schedule())
        kit_sched_forget_memory(block, malloc_usable_size(block));
#endif
    return block;
}

/* ---- Where each live block was allocated ------------------------------------------
 * A leak names the lines that allocated what was never freed, as valgrind
 * and LeakSanitizer do: each live block's caller and allocation number, in
 * a table by address (a block beyond its size is counted, not named). */
#define BLOCK_SLOTS 65536

struct block_record {
    uintptr_t addr;  /* 0: empty */
    void *caller;    /* the return address of the allocating call */
    long number;     /* allocation_calls when it was made */
};

int __real_pthread_mutex_lock(pthread_mutex_t *mutex);
int __real_pthread_mutex_unlock(pthread_mutex_t *mutex);
static struct block_record blocks[BLOCK_SLOTS];
static pthread_mutex_t blocks_lock = PTHREAD_MUTEX_INITIALIZER; /* guards blocks[] */

/* A table of blocks by address: open addressing, linear probing. Its lock
 * is the caller's. */
struct block_table {
    struct block_record *slots;
    size_t size;
};

/* Blocks next to each other in neighbouring slots (the allocator hands out
 * neighbours: their slots share cache lines; no two blocks start within 32
 * bytes), regions far apart scattered. The size is a power of two. */
static size_t slot_of(const struct block_table *table, uintptr_t addr)
{
    return (size_t)((addr >> 5) ^ (addr >> 24) * 0x9E3779B1u) & (table->size - 1);
}

static size_t next_slot(const struct block_table *table, size_t at)
{
    return (at + 1) & (table->size - 1);
}

static void table_add(struct block_table *table, struct block_record record)
{
    size_t at = slot_of(table, record.addr);
    for (size_t i = 0; i < table->size; i++, at = next_slot(table, at)) {
        if (table->slots[at].addr == 0) {
            table->slots[at] = record;
            return;
        }
    }
}

/* The slot that holds addr, or the empty slot where its probe ends. */
static size_t table_find(const struct block_table *table, uintptr_t addr)
{
    size_t at = slot_of(table, addr);
    while (table->slots[at].addr != 0 && table->slots[at].addr != addr)
        at = next_slot(table, at);
    return at;
}

/* Whether slot `hole` lies on the probe path from `home` to `at`. */
static bool on_path(size_t home, size_t hole, size_t at)
{
    return home <= at ? home <= hole && hole < at : home <= hole || hole < at;
}

/* Linear probing's deletion (Knuth's algorithm R): entries after the hole
 * that probed past it move back into it, so no lookup ever needs a marker. */
static bool table_remove(struct block_table *table, uintptr_t addr)
{
    size_t hole = table_find(table, addr);
    if (table->slots[hole].addr != addr)
        return false;
    table->slots[hole].addr = 0;
    for (size_t at = next_slot(table, hole); table->slots[at].addr != 0; at = next_slot(table, at)) {
        if (!on_path(slot_of(table, table->slots[at].addr), hole, at))
            continue;
        table->slots[hole] = table->slots[at];
        table->slots[at].addr = 0;
        hole = at;
    }
    return true;
}

static struct block_table live_table = { blocks, BLOCK_SLOTS };

static void remember_block(void *block, void *caller)
{
    __real_pthread_mutex_lock(&blocks_lock);
    table_add(&live_table, (struct block_record){ (uintptr_t)block, caller, atomic_load(&allocation_calls) });
    __real_pthread_mutex_unlock(&blocks_lock);
}

/* False if the table did not hold it. */
static bool forget_block(void *block)
{
    __real_pthread_mutex_lock(&blocks_lock);
    bool held = table_remove(&live_table, (uintptr_t)block);
    __real_pthread_mutex_unlock(&blocks_lock);
    return held;
}

/* The callers of the `count` live blocks allocated last, newest first. */
static int newest_callers(void **callers, int count)
{
    int n = 0;
    long taken_below = LONG_MAX;
    __real_pthread_mutex_lock(&blocks_lock);
    while (n < count) {
        long best = -1;
        size_t best_at = 0;
        for (size_t at = 0; at < BLOCK_SLOTS; at++)
            if (blocks[at].addr != 0 && blocks[at].number < taken_below && blocks[at].number > best) {
                best = blocks[at].number;
                best_at = at;
            }
        if (best < 0)
            break;
        callers[n++] = blocks[best_at].caller;
        taken_below = best;
    }
    __real_pthread_mutex_unlock(&blocks_lock);
    return n;
}

void kit_fail_on_leak(long before, const char *file, int line)
{
    long leaked = kit_live_allocations() - before;
    if (leaked == 0)
        return;
    if (leaked < 0) {
        print_error("%ld more block(s) were freed than allocated since the test began: a block freed twice, or one "
                    "the code did not allocate\n", -leaked);
        _fail(file, line);
    }
    char places[800];
    kit_leak_places(leaked, places, sizeof places);
    print_error("%ld block(s) allocated during the test were never freed%s\n", leaked, places);
    _fail(file, line);
}

void kit_leak_places(long leaked, char *out, size_t size)
{
    enum { NAMED = 4 };
    void *callers[NAMED];
    int n = newest_callers(callers, leaked < NAMED ? (int)leaked : NAMED);
    char places[NAMED][160];
    kit_describe_places(callers, n, places);
    int at = snprintf(out, size, "%s", n > 0 ? " - allocated at" : "");
    for (int i = 0; i < n && at < (int)size; i++)
        at += snprintf(out + at, size - (size_t)at, "%s %s", i ? "," : "", places[i]);
}

/* A block handed to the code under test: one more to give back. */
static void *counted_by(void *block, void *caller)
{
    if (block) {
        atomic_fetch_add(&live_blocks, 1);
        remember_block(block, caller);
    }
    return fresh(block);
}
#define counted(block) counted_by((block), __builtin_return_address(0))

/* ---- Guard bytes on a schedule ---------------------------------------------------------
 * A write a few bytes past a block's end lands in what the allocator keeps
 * there, or in its spare room: nothing may show, and what does depends on
 * the heap. On a schedule each block gets KIT_SCHED_GUARD_BYTES more, which
 * the scheduler watches (kit_sched_guard): an access there fails the
 * schedule at once, naming the line and the allocation. */
static size_t with_guard(size_t size)
{
    return kit_sched_active() && size <= SIZE_MAX - KIT_SCHED_GUARD_BYTES ? size + KIT_SCHED_GUARD_BYTES : size;
}

static void *guarded(void *block, size_t size, void *caller)
{
    if (block && kit_sched_active())
        kit_sched_guard(block, size, caller);
    return block;
}

void *__wrap_malloc(size_t size)
{
    if (this_call_fails())
        return NULL;
    return guarded(counted(__real_malloc(with_guard(size))), size, __builtin_return_address(0));
}

void *__wrap_calloc(size_t count, size_t size)
{
    if (this_call_fails())
        return NULL;
    if (count != 0 && size > SIZE_MAX / count)
        return counted(__real_calloc(count, size)); /* (too large: as the C library says it) */
    return guarded(counted(__real_calloc(1, with_guard(count * size))), count * size, __builtin_return_address(0));
}

#if defined(__GLIBC__)
static void *moved(void *old, size_t size, void *caller); /* below */
#endif

void *__wrap_realloc(void *old, size_t size)
{
    if (this_call_fails())
        return NULL;
#if defined(__GLIBC__)
    if (old != NULL && size > 0 && kit_sched_active())
        return moved(old, size, __builtin_return_address(0));
#endif
    void *block = __real_realloc(old, size);
    if (block && old == NULL)
        return counted(block);
    if (block && block != old) { /* moved: the old address is free, the block lives on here */
        forget_block(old);
        remember_block(block, __builtin_return_address(0));
    }
    return block != old ? fresh(block) : block;
}

/* ---- Freed memory on a schedule ----------------------------------------------------
 * Code that uses memory after freeing it reads whatever the allocator put
 * there since, and that depends on what other threads did in real time: a
 * racy submission's score would too. On a schedule a freed block is filled
 * with 0xdd and kept out of use for the next QUARANTINE frees, so that a use
 * after free reads and writes the same bytes in every grading. A schedule
 * starts with the quarantine empty - what an earlier one freed goes back to
 * the allocator before this one allocates or frees - so that it meets the
 * same heap whichever schedules ran before it, and replayed alone too; and
 * the heap it uses is the one the schedule before it used, still in the
 * caches. */
enum { QUARANTINE = 4096 };
static void *quarantine[QUARANTINE];
static size_t quarantined; /* frees kept on this schedule; the oldest is at quarantined % QUARANTINE */
static unsigned long quarantine_schedule; /* the schedule they were made on (kit_sched_schedule) */
static pthread_mutex_t quarantine_lock = PTHREAD_MUTEX_INITIALIZER; /* guards the three above */

/* (Only the runner of a schedule keeps frees here: it alone looks.) */
static void settle_quarantine(void)
{
    if (!kit_sched_active() || quarantine_schedule == kit_sched_schedule())
        return;
    __real_pthread_mutex_lock(&quarantine_lock);
    for (size_t i = 0; i < QUARANTINE && i < quarantined; i++) {
        __real_free(quarantine[i]);
        quarantine[i] = NULL;
    }
    quarantined = 0;
    quarantine_schedule = kit_sched_schedule();
    __real_pthread_mutex_unlock(&quarantine_lock);
}

/* Whether a block freed on the schedule under way may have come back: not
 * before QUARANTINE more frees on it. */
static bool freed_on_this_schedule(void)
{
    return quarantined >= QUARANTINE;
}

/* Whether a block is held back already: freed a second time. Only a block
 * the table of live blocks does not know can be (it left the table at its
 * first free), so this look through the quarantine is rare. */
static bool held_back(const void *block)
{
    bool held = false;
    __real_pthread_mutex_lock(&quarantine_lock);
    for (size_t i = 0; i < QUARANTINE && !held; i++)
        held = quarantine[i] == block;
    __real_pthread_mutex_unlock(&quarantine_lock);
    return held;
}

/* `known`: the block was in the table of live blocks; `caller`: who frees it.
 * On a schedule the free is an access the scheduler sees (kit_sched_freed). */
static void release(void *block, bool known, void *caller)
{
#if defined(__GLIBC__)
    if (block && kit_sched_active()) {
        settle_quarantine();
        kit_sched_freed(block, malloc_usable_size(block), caller); /* (a double free ends the schedule here) */
        if (!known && held_back(block)) { /* as the C library says it, and ends the process */
            fprintf(stderr, "free(): a block freed twice\n");
            abort();
        }
        memset(block, 0xdd, malloc_usable_size(block));
        __real_pthread_mutex_lock(&quarantine_lock);
        void *oldest = quarantine[quarantined % QUARANTINE];
        quarantine[quarantined++ % QUARANTINE] = block;
        __real_pthread_mutex_unlock(&quarantine_lock);
        __real_free(oldest);
        return;
    }
#endif
    (void)known;
    (void)caller;
    __real_free(block);
}

void __wrap_free(void *block)
{
    bool known = false;
    if (block) {
        atomic_fetch_sub(&live_blocks, 1);
        known = forget_block(block);
    }
    release(block, known, __builtin_return_address(0));
}

/* realloc on a schedule: always a new block, the old one freed as free()
 * frees it (quarantined, and an access the scheduler sees) - so that a
 * pointer kept to the old block is a use after free in every grading. */
#if defined(__GLIBC__)
static void *moved(void *old, size_t size, void *caller)
{
    void *block = __real_malloc(with_guard(size));
    if (block == NULL)
        return NULL;
    size_t had = malloc_usable_size(old);
    memcpy(block, old, had < size ? had : size);
    bool known = forget_block(old);
    remember_block(block, caller);
    release(old, known, caller);
    return guarded(fresh(block), size, caller);
}
#endif

char *__real_strdup(const char *text);
char *__real_strndup(const char *text, size_t most);
void *__real_aligned_alloc(size_t alignment, size_t size);
int __real_posix_memalign(void **out, size_t alignment, size_t size);
char *__wrap_strdup(const char *text);
char *__wrap_strndup(const char *text, size_t most);
void *__wrap_aligned_alloc(size_t alignment, size_t size);
int __wrap_posix_memalign(void **out, size_t alignment, size_t size);

char *__wrap_strdup(const char *text)
{
    if (this_call_fails())
        return NULL;
    return counted(__real_strdup(text));
}

char *__wrap_strndup(const char *text, size_t most)
{
    if (this_call_fails())
        return NULL;
    return counted(__real_strndup(text, most));
}

void *__wrap_aligned_alloc(size_t alignment, size_t size)
{
    if (this_call_fails())
        return NULL;
    return counted(__real_aligned_alloc(alignment, size));
}

int __wrap_posix_memalign(void **out, size_t alignment, size_t size)
{
    if (this_call_fails())
        return ENOMEM;
    int err = __real_posix_memalign(out, alignment, size);
    if (err == 0)
        counted_by(*out, __builtin_return_address(0));
    return err;
}

/* asprintf's block comes from the C library's own malloc, which no wrapper
 * sees: counted here, as strdup's is, so that freeing it does not cancel a
 * block that leaked (the count would drop for a block it never held). The
 * fortified forms are what the calls compile to under _FORTIFY_SOURCE. */
int __real_vasprintf(char **out, const char *format, va_list args);
int __real___vasprintf_chk(char **out, int flag, const char *format, va_list args);
int __wrap_vasprintf(char **out, const char *format, va_list args);
int __wrap___vasprintf_chk(char **out, int flag, const char *format, va_list args);
int __wrap_asprintf(char **out, const char *format, ...);
int __wrap___asprintf_chk(char **out, int flag, const char *format, ...);

/* The text printf would make, in a counted block (-1 and *out NULL if none). */
static int counted_text(char **out, int made, void *caller)
{
    if (made < 0) {
        *out = NULL;
        return -1;
    }
    *out = counted_by(*out, caller);
    return made;
}

int __wrap_vasprintf(char **out, const char *format, va_list args)
{
    if (this_call_fails())
        return counted_text(out, -1, NULL);
    return counted_text(out, __real_vasprintf(out, format, args), __builtin_return_address(0));
}

int __wrap___vasprintf_chk(char **out, int flag, const char *format, va_list args)
{
    if (this_call_fails())
        return counted_text(out, -1, NULL);
    return counted_text(out, __real___vasprintf_chk(out, flag, format, args), __builtin_return_address(0));
}

int __wrap_asprintf(char **out, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    int made = this_call_fails() ? -1 : __real_vasprintf(out, format, args);
    va_end(args);
    return counted_text(out, made, __builtin_return_address(0));
}

int __wrap___asprintf_chk(char **out, int flag, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    int made = this_call_fails() ? -1 : __real___vasprintf_chk(out, flag, format, args);
    va_end(args);
    return counted_text(out, made, __builtin_return_address(0));
}
