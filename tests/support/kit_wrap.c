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
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "kit_gate.h"
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

static void perturb(void); /* chaos, below */

static atomic_int waiting;
static atomic_bool spurious_on;
static atomic_long wake_every_ms; /* 0 = off */
static atomic_long spurious_total;
static _Thread_local unsigned long waits_on_this_thread;

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

void kit_await_waiting_threads(int count, const char *what)
{
    int64_t start = kit_now_ns();
    while (atomic_load(&waiting) < count) {
        if (kit_elapsed_ms(start) > KIT_HANG_MS)
            fail_msg("%s: expected %d threads asleep in a condition wait, saw %d", what, count,
                     atomic_load(&waiting));
        kit_sleep_ms(1);
    }
}

/* Every other wait on a thread wakes up spuriously while injection is on:
 * the first wait of a `while` loop returns at once, the retry really waits. */
static bool take_spurious_turn(pthread_mutex_t *mutex)
{
    if (!atomic_load(&spurious_on) || (waits_on_this_thread++ % 2) != 0)
        return false;
    atomic_fetch_add(&spurious_total, 1);
    /* Give up the mutex for a moment, as a real wake-up would, so other
     * threads can run (and, say, steal the item we were waiting for). */
    pthread_mutex_unlock(mutex);
    sched_yield();
    pthread_mutex_lock(mutex);
    return true;
}

int __wrap_pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex)
{
    if (kit_sched_active()) return kit_sched_cond_wait(cond, mutex, NULL, __builtin_return_address(0));
    if (kit_harness_waiting)
        return __real_pthread_cond_wait(cond, mutex);
    if (take_spurious_turn(mutex))
        return 0;
    atomic_fetch_add(&waiting, 1);
    int err = __real_pthread_cond_wait(cond, mutex);
    atomic_fetch_sub(&waiting, 1);
    perturb();
    return err;
}

/* The clock a deadline was computed on. The wrapper cannot ask the condition
 * variable, but the two clocks are decades apart: CLOCK_REALTIME counts from
 * 1970, CLOCK_MONOTONIC (the kit's) from boot. */
static clockid_t clock_of(const struct timespec *deadline)
{
    return deadline->tv_sec > 1000000000 ? CLOCK_REALTIME : CLOCK_MONOTONIC;
}

/* With kit_wakeups_every(ms) on, a timed wait that would sleep longer than ms
 * wakes up after ms and returns 0 - as if a signal had come for a condition
 * that another thread then made false again (a stolen wake-up). Code that
 * recomputes "now + timeout" after each wake-up then never times out. */
static int wait_with_early_wakeup(pthread_cond_t *cond, pthread_mutex_t *mutex,
                                  const struct timespec *deadline, long every_ms)
{
    struct timespec early;
    clock_gettime(clock_of(deadline), &early);
    early.tv_sec += every_ms / 1000;
    early.tv_nsec += (every_ms % 1000) * 1000000L;
    if (early.tv_nsec >= 1000000000L) {
        early.tv_nsec -= 1000000000L;
        early.tv_sec++;
    }
    bool earlier = early.tv_sec < deadline->tv_sec ||
                   (early.tv_sec == deadline->tv_sec && early.tv_nsec < deadline->tv_nsec);
    int err = __real_pthread_cond_timedwait(cond, mutex, earlier ? &early : deadline);
    if (err == ETIMEDOUT && earlier) {
        atomic_fetch_add(&spurious_total, 1);
        return 0;
    }
    return err;
}

int __wrap_pthread_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex,
                                  const struct timespec *deadline)
{
    if (kit_sched_active()) return kit_sched_cond_wait(cond, mutex, deadline, __builtin_return_address(0));
    if (kit_harness_waiting)
        return __real_pthread_cond_timedwait(cond, mutex, deadline);
    if (take_spurious_turn(mutex))
        return 0;
    long every_ms = atomic_load(&wake_every_ms);
    atomic_fetch_add(&waiting, 1);
    int err = every_ms > 0 ? wait_with_early_wakeup(cond, mutex, deadline, every_ms)
                           : __real_pthread_cond_timedwait(cond, mutex, deadline);
    atomic_fetch_sub(&waiting, 1);
    perturb();
    return err;
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

static atomic_long lock_delay_us;     /* 0 = off */
static atomic_ulong perturb_seed;
static atomic_bool chaos_on;
static atomic_uint threads_created;   /* numbers threads in creation order */
static atomic_long create_fail_at;    /* 0 = never; else fail that creation call */
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

/* Chaos: mostly nothing, sometimes a yield, now and then a short sleep. */
static void perturb(void)
{
    if (!atomic_load_explicit(&chaos_on, memory_order_relaxed) || kit_harness_waiting)
        return;
    uint64_t roll = kit_rng_below(my_rng(), 100);
    if (roll < 15)
        sched_yield();
    else if (roll < 20)
        kit_sleep_us((long)kit_rng_below(my_rng(), 200));
}

int __wrap_pthread_mutex_lock(pthread_mutex_t *mutex)
{
    if (kit_sched_active()) return kit_sched_mutex_lock(mutex, __builtin_return_address(0));
    long max_us = atomic_load_explicit(&lock_delay_us, memory_order_relaxed);
    if (max_us > 0 && !kit_harness_waiting)
        kit_sleep_us((long)kit_rng_below(my_rng(), (uint64_t)max_us + 1));
    perturb();
    return __real_pthread_mutex_lock(mutex);
}

int __wrap_pthread_mutex_unlock(pthread_mutex_t *mutex)
{
    if (kit_sched_active()) return kit_sched_mutex_unlock(mutex, __builtin_return_address(0));
    int err = __real_pthread_mutex_unlock(mutex);
    perturb();
    return err;
}

int __wrap_pthread_cond_signal(pthread_cond_t *cond)
{
    if (kit_sched_active()) return kit_sched_cond_signal(cond, false, __builtin_return_address(0));
    perturb();
    return __real_pthread_cond_signal(cond);
}

int __wrap_pthread_cond_broadcast(pthread_cond_t *cond)
{
    if (kit_sched_active()) return kit_sched_cond_signal(cond, true, __builtin_return_address(0));
    perturb();
    return __real_pthread_cond_broadcast(cond);
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

static void *numbered_body(void *raw)
{
    struct numbered_start start = *(struct numbered_start *)raw;
    __real_free(raw);
    thread_serial = start.serial;
    return start.fn(start.arg);
}

int __wrap_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    if (kit_sched_active()) return kit_sched_create(thread, attr, fn, arg, __builtin_return_address(0));
    long call = atomic_fetch_add(&create_calls, 1) + 1;
    if (call == atomic_load(&create_fail_at))
        return EAGAIN; /* as when the system is out of threads */
    struct numbered_start *start = __real_malloc(sizeof *start);
    if (start == NULL)
        return EAGAIN;
    *start = (struct numbered_start){ fn, arg, atomic_fetch_add(&threads_created, 1) + 1 };
    int err = __real_pthread_create(thread, attr, numbered_body, start);
    if (err != 0)
        __real_free(start);
    perturb();
    return err;
}

/* ---- Counted allocations --------------------------------------------------
 * malloc, calloc, realloc and free are wrapped the same way, so a test can
 * check that destroy gives back everything create took (live count before
 * == live count after), and can make the Nth allocation fail. Only calls
 * made from the test binary's own objects are counted - allocations inside
 * libc or cmocka are not. */

#include <stdlib.h>

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

static bool this_call_fails(void)
{
    long call = atomic_fetch_add(&allocation_calls, 1) + 1;
    long target = atomic_load(&fail_at_call);
    return target != 0 && call == target;
}

void *__wrap_malloc(size_t size)
{
    if (this_call_fails())
        return NULL;
    void *block = __real_malloc(size);
    if (block)
        atomic_fetch_add(&live_blocks, 1);
    return block;
}

void *__wrap_calloc(size_t count, size_t size)
{
    if (this_call_fails())
        return NULL;
    void *block = __real_calloc(count, size);
    if (block)
        atomic_fetch_add(&live_blocks, 1);
    return block;
}

void *__wrap_realloc(void *old, size_t size)
{
    if (this_call_fails())
        return NULL;
    void *block = __real_realloc(old, size);
    if (block && old == NULL)
        atomic_fetch_add(&live_blocks, 1);
    return block;
}

void __wrap_free(void *block)
{
    if (block)
        atomic_fetch_sub(&live_blocks, 1);
    __real_free(block);
}
