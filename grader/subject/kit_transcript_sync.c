/**
 * @file kit_transcript_sync.c
 * @brief The pthread calls of the subject's copy of a test, made on the
 *        schedule as in one process and, while a body is written down,
 *        recorded as the judge's wrappers (grader/judge/kit_judge_sync.c)
 *        would send them and its stand-ins answer: the same kinds, words
 *        and channels, so that the judge's copy of the body meets them.
 *
 * The copy calls these by the names of pthread's functions (the subject's
 * build defines them so, kit_transcript.mk); the calls themselves go to the
 * subject's wrappers, and so to the explorer.
 */
#define _GNU_SOURCE
#include "kit_transcript.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "kit_judge.h"
#include "kit_sched.h"
#include "kit_test.h"
#include "kit_thread.h"

/* The kit's own memory, not the code under test's: not counted, never failed on purpose. */
void *__real_malloc(size_t size);
void __real_free(void *p);

/* ---- channels: as the judge hands them out ---------------------------------------------
 * The judge gives a new thread of the test the lowest channel free, and
 * frees it once the thread is joined. Only the schedule's threads use the
 * table, one at a time (the explorer runs one thread at a time): no lock. */

static _Thread_local int my_channel = -1;
static struct {
    bool taken;
    pthread_t thread;
} channels[KIT_WIRE_CHANNELS];

int kit_transcript_channel(void)
{
    return kit_transcript_on ? my_channel : -1;
}

void kit_transcript_begin_body(void)
{
    for (int c = 0; c < KIT_WIRE_CHANNELS; c++)
        channels[c].taken = false;
    channels[0].taken = true;
    my_channel = 0;
    kit_transcript_on = true;
}

static int take_channel(void)
{
    for (int c = 1; c < KIT_WIRE_MIRROR_FIRST; c++)
        if (!channels[c].taken) {
            channels[c].taken = true;
            return c;
        }
    return -1;
}

static int channel_of(pthread_t thread)
{
    for (int c = 1; c < KIT_WIRE_CHANNELS; c++)
        if (channels[c].taken && pthread_equal(channels[c].thread, thread))
            return c;
    return -1;
}

/* A thread of the code under test's own calls a function of the test's
 * back, the first time on this schedule: it takes a mirror channel, as the
 * live subject does (kit_serve.c), and its first entry there says so - the
 * judge starts the thread that mirrors it when it meets that entry. -1 if
 * every mirror channel is taken. */
int kit_transcript_take_mirror(void)
{
    for (int c = KIT_WIRE_MIRROR_FIRST; c < KIT_WIRE_CONTROL; c++) {
        if (channels[c].taken)
            continue;
        channels[c].taken = true;
        my_channel = c;
        char name[16] = "";
        pthread_getname_np(pthread_self(), name, sizeof name);
        kit_wire_t *m = kit_judge_begin(WIRE_MIRROR, 0);
        kit_wire_word(m, (uint64_t)c);
        kit_wire_word(m, 1);
        kit_wire_bytes(m, name, strnlen(name, sizeof name - 1));
        kit_transcript_put(c, true, m);
        return c;
    }
    return -1;
}

bool kit_transcript_mirror_ended(void)
{
    if (!kit_transcript_on || my_channel < KIT_WIRE_MIRROR_FIRST || my_channel >= KIT_WIRE_CONTROL)
        return false;
    kit_transcript_put(my_channel, true, kit_judge_begin(WIRE_EXIT, 0)); /* its mirror leaves */
    channels[my_channel].taken = false;
    my_channel = -1;
    kit_transcript_thread_done();
    return true;
}

/* ---- requests and answers ---------------------------------------------------------------- */

/* The request the judge's wrapper sends: five words, no place (a transcript's steps are placed here). */
static void request(int channel, enum kit_sync op, uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e)
{
    kit_wire_t *m = kit_judge_begin(WIRE_SYNC, op);
    uint64_t words[] = { a, b, c, d, e };
    for (int i = 0; i < 5; i++)
        kit_wire_word(m, words[i]);
    kit_transcript_put(channel, false, m);
}

/* The stand-in's answer: the code, and two words of time. */
static void answer(int channel, uint64_t code, uint64_t sec, uint64_t nsec)
{
    kit_wire_t *m = kit_judge_begin(WIRE_REPLY, 0);
    kit_wire_word(m, code);
    kit_wire_word(m, sec);
    kit_wire_word(m, nsec);
    kit_transcript_put(channel, true, m);
}

static void bare(int channel, bool is_answer, uint32_t kind)
{
    kit_transcript_put(channel, is_answer, kit_judge_begin(kind, 0));
}

static uint64_t address(const void *object)
{
    return (uint64_t)(uintptr_t)object;
}

/* One call on an object of the test's: its request, the call, its answer.
 * A call the schedule places (@p placed) is placed at the copy's line. */
#define RECORDED(op, a, b, placed, call)                                \
    do {                                                                \
        int channel_ = kit_transcript_channel();                        \
        if (channel_ < 0)                                               \
            return call;                                                \
        request(channel_, (op), address(a), address(b), 0, 0, 0);      \
        if (placed)                                                     \
            kit_sched_call_site(__builtin_return_address(0));           \
        int err_ = call;                                                \
        answer(channel_, (uint64_t)err_, 0, 0);                         \
        return err_;                                                    \
    } while (0)

/* ---- threads ------------------------------------------------------------------------------- */

struct start {
    void *(*fn)(void *);
    void *arg;
    int channel;
    char name[KIT_THREAD_NAME_MAX]; /* "": a thread pthread_create starts; else one the library starts and names */
};

/* The name a thread the library starts gives itself, which the judge's copy
 * sends, cut to the kernel's 15 characters. */
static void record_name(const struct start *job)
{
    char kernel_name[16];
    size_t n = strnlen(job->name, sizeof kernel_name - 1);
    memcpy(kernel_name, job->name, n);
    kernel_name[n] = '\0';
    kit_wire_t *m = kit_judge_begin(WIRE_SYNC, SYNC_NAME);
    for (int i = 0; i < 5; i++)
        kit_wire_word(m, 0);
    kit_wire_bytes(m, kernel_name, n + 1);
    kit_transcript_put(job->channel, false, m);
    answer(job->channel, 0, 0, 0);
}

/* A thread of the test's: its stand-in says go, it runs, it says it ended. */
static void *started(void *raw)
{
    struct start job = *(struct start *)raw;
    __real_free(raw);
    my_channel = job.channel;
    bare(job.channel, true, WIRE_GO);
    if (job.name[0] != '\0')
        record_name(&job);
    void *result = job.fn(job.arg);
    if (kit_transcript_on)
        bare(job.channel, false, WIRE_EXIT);
    my_channel = -1;
    kit_transcript_thread_done();
    return result;
}

/* Start a thread of the test's on the next channel, as the judge's wrapper
 * does: by pthread_create, or (@p name not NULL) by the library. */
static int start_recorded(int me, pthread_t *thread, const pthread_attr_t *attr, const char *name,
                          void *(*fn)(void *), void *arg)
{
    int channel = take_channel();
    struct start *job = channel > 0 ? __real_malloc(sizeof *job) : NULL;
    if (job == NULL) {
        if (channel > 0)
            channels[channel].taken = false;
        return EAGAIN; /* (the judge's answer too: no channel, or no memory) */
    }
    *job = (struct start){ fn, arg, channel, "" };
    if (name != NULL)
        snprintf(job->name, sizeof job->name, "%s", name);
    request(me, SYNC_CREATE, (uint64_t)channel, 0, 0, 0, 0);
    int err = name != NULL ? kit_thread_start(thread, name, started, job) : pthread_create(thread, attr, started, job);
    if (err != 0) {
        __real_free(job);
        channels[channel].taken = false;
    } else {
        channels[channel].thread = *thread;
    }
    answer(me, (uint64_t)err, 0, 0);
    return err;
}

int kit_transcript_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    int me = kit_transcript_channel();
    if (me < 0)
        return pthread_create(thread, attr, fn, arg);
    kit_sched_call_site(__builtin_return_address(0)); /* the step's place: the test's line */
    return start_recorded(me, thread, attr, NULL, fn, arg);
}

int kit_transcript_pthread_join(pthread_t thread, void **result)
{
    int me = kit_transcript_channel();
    int channel = me >= 0 ? channel_of(thread) : -1;
    if (channel < 0)
        return pthread_join(thread, result);
    request(me, SYNC_JOIN, (uint64_t)channel, 0, 0, 0, 0);
    kit_sched_call_site(__builtin_return_address(0));
    int err = pthread_join(thread, result);
    answer(me, (uint64_t)err, 0, 0);
    channels[channel].taken = false;
    return err;
}

/* ---- mutexes and conditions ------------------------------------------------------------------ */

int kit_transcript_pthread_mutex_lock(pthread_mutex_t *mutex)
{
    RECORDED(SYNC_MUTEX_LOCK, mutex, NULL, true, pthread_mutex_lock(mutex));
}

int kit_transcript_pthread_mutex_trylock(pthread_mutex_t *mutex)
{
    RECORDED(SYNC_MUTEX_TRYLOCK, mutex, NULL, false, pthread_mutex_trylock(mutex));
}

int kit_transcript_pthread_mutex_unlock(pthread_mutex_t *mutex)
{
    RECORDED(SYNC_MUTEX_UNLOCK, mutex, NULL, true, pthread_mutex_unlock(mutex));
}

int kit_transcript_pthread_mutex_destroy(pthread_mutex_t *mutex)
{
    RECORDED(SYNC_FORGET, mutex, NULL, false, pthread_mutex_destroy(mutex));
}

int kit_transcript_pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex)
{
    RECORDED(SYNC_COND_WAIT, cond, mutex, true, pthread_cond_wait(cond, mutex));
}

/* The clock each condition of the copy's times its waits by (its
 * attribute's), as the judge's wrapper keeps it: a timed wait's request
 * names it. Only the schedule's threads use the table, one at a time. */
enum { CLOCKED = 256 };
static struct {
    const void *cond;
    clockid_t clock;
} clocked[CLOCKED];

int kit_transcript_pthread_cond_init(pthread_cond_t *cond, const pthread_condattr_t *attr)
{
    clockid_t clock = CLOCK_REALTIME;
    if (attr)
        pthread_condattr_getclock(attr, &clock);
    int free_at = -1;
    for (int i = 0; i < CLOCKED; i++) {
        if (clocked[i].cond == cond)
            clocked[i].cond = NULL;
        if (clocked[i].cond == NULL && free_at < 0)
            free_at = i;
    }
    if (free_at >= 0 && clock != CLOCK_REALTIME)
        clocked[free_at].cond = cond, clocked[free_at].clock = clock;
    return pthread_cond_init(cond, attr);
}

static clockid_t clock_of(const pthread_cond_t *cond)
{
    for (int i = 0; i < CLOCKED; i++)
        if (clocked[i].cond == cond)
            return clocked[i].clock;
    return CLOCK_REALTIME;
}

int kit_transcript_pthread_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex, const struct timespec *at)
{
    int channel = kit_transcript_channel();
    if (channel < 0)
        return pthread_cond_timedwait(cond, mutex, at);
    request(channel, SYNC_COND_WAIT, address(cond), address(mutex), 1, (uint64_t)clock_of(cond),
            (uint64_t)at->tv_sec * 1000000000ULL + (uint64_t)at->tv_nsec);
    kit_sched_call_site(__builtin_return_address(0));
    int err = pthread_cond_timedwait(cond, mutex, at);
    answer(channel, (uint64_t)err, 0, 0);
    return err;
}

int kit_transcript_pthread_cond_signal(pthread_cond_t *cond)
{
    RECORDED(SYNC_COND_SIGNAL, cond, NULL, true, pthread_cond_signal(cond));
}

int kit_transcript_pthread_cond_broadcast(pthread_cond_t *cond)
{
    RECORDED(SYNC_COND_BROADCAST, cond, NULL, true, pthread_cond_broadcast(cond));
}

int kit_transcript_pthread_cond_destroy(pthread_cond_t *cond)
{
    RECORDED(SYNC_FORGET, cond, NULL, false, pthread_cond_destroy(cond));
}

/* ---- time ------------------------------------------------------------------------------------ */

int kit_transcript_sched_yield(void)
{
    int channel = kit_transcript_channel();
    if (channel < 0)
        return sched_yield();
    request(channel, SYNC_YIELD, 0, 0, 0, 0, 0);
    kit_sched_call_site(__builtin_return_address(0));
    int err = sched_yield();
    answer(channel, (uint64_t)err, 0, 0);
    return err;
}

int kit_transcript_clock_gettime(clockid_t clock, struct timespec *now)
{
    int channel = kit_transcript_channel();
    int err = clock_gettime(clock, now);
    if (channel < 0)
        return err;
    kit_wire_t *m = kit_judge_begin(WIRE_SYNC, SYNC_CLOCK);
    kit_wire_word(m, (uint64_t)clock);
    kit_transcript_put(channel, false, m);
    answer(channel, 0, (uint64_t)now->tv_sec, (uint64_t)now->tv_nsec);
    return err;
}

int kit_transcript_nanosleep(const struct timespec *request_, struct timespec *left)
{
    int channel = kit_transcript_channel();
    if (channel < 0)
        return nanosleep(request_, left);
    request(channel, SYNC_SLEEP, (uint64_t)CLOCK_MONOTONIC, 0, (uint64_t)request_->tv_sec,
            (uint64_t)request_->tv_nsec, 0);
    kit_sched_call_site(__builtin_return_address(0));
    int err = clock_nanosleep(CLOCK_MONOTONIC, 0, request_, NULL);
    answer(channel, (uint64_t)err, 0, 0);
    return 0;
}

int kit_transcript_usleep(useconds_t us)
{
    struct timespec wanted = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };
    return kit_transcript_nanosleep(&wanted, NULL);
}

/* The kit's sleeps (lib/runtime/kit_time.c), as the judge's copy makes them: one nanosleep. */
void kit_transcript_kit_sleep_ms(long ms)
{
    struct timespec wanted = { (time_t)(ms / 1000), (ms % 1000) * 1000000L };
    kit_sched_name_steps(__builtin_return_address(0)); /* (its steps are the test's line's) */
    if (ms > 0)
        kit_transcript_nanosleep(&wanted, NULL);
    kit_sched_name_steps(NULL);
}

void kit_transcript_kit_sleep_us(long us)
{
    struct timespec wanted = { (time_t)(us / 1000000), (us % 1000000) * 1000L };
    kit_sched_name_steps(__builtin_return_address(0));
    if (us > 0)
        kit_transcript_nanosleep(&wanted, NULL);
    kit_sched_name_steps(NULL);
}

int64_t kit_transcript_kit_now_ns(void)
{
    struct timespec now;
    kit_transcript_clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
}

/* ---- threads the kit's library starts, named ------------------------------------------------ */

int kit_transcript_kit_thread_start(pthread_t *thread, const char *name, void *(*fn)(void *), void *arg)
{
    int me = kit_transcript_channel();
    if (me < 0 || thread == NULL || fn == NULL)
        return kit_thread_start(thread, name, fn, arg);
    if (name == NULL || name[0] == '\0')
        return EINVAL; /* (the copy's threads are named: an unnamed one's name is numbered in each process apart) */
    return start_recorded(me, thread, NULL, name, fn, arg);
}

/* "<role>-<index>", as kit_thread_start_numbered names it (snprintf cuts
 * the same way), started and recorded as any named thread of the copy. */
int kit_transcript_kit_thread_start_numbered(pthread_t *thread, const char *role, size_t index, void *(*fn)(void *),
                                             void *arg)
{
    if (role == NULL)
        return EINVAL;
    char name[KIT_THREAD_NAME_MAX];
    snprintf(name, sizeof name, "%s-%zu", role, index);
    return kit_transcript_kit_thread_start(thread, name, fn, arg);
}

/* ---- the harness's hooks a body calls: the subject's word, as the judge would have asked ----- */

static uint64_t hook(enum kit_hook op, uint64_t a, uint64_t b, uint64_t (*call)(uint64_t a, uint64_t b))
{
    int channel = kit_transcript_channel();
    if (channel < 0)
        return call(a, b);
    kit_wire_t *m = kit_judge_begin(WIRE_HOOK, op);
    kit_wire_word(m, a);
    kit_wire_word(m, b);
    kit_transcript_put(channel, false, m);
    uint64_t value = call(a, b);
    m = kit_judge_begin(WIRE_REPLY, op);
    kit_wire_word(m, value);
    kit_transcript_put(channel, true, m);
    return value;
}

static _Thread_local void *hook_site; /* where the copy called the hook being recorded */

static uint64_t await_sleepers(uint64_t count, uint64_t b)
{
    (void)b;
    kit_sched_await_sleepers((int)count, -1, hook_site); /* the step's place: the test's line */
    return 0;
}

static uint64_t await_quiet(uint64_t a, uint64_t b)
{
    (void)a;
    (void)b;
    kit_explore_await_quiet();
    return 0;
}

static uint64_t futile_wakeups(uint64_t a, uint64_t b)
{
    (void)a;
    (void)b;
    return (uint64_t)kit_sched_futile_wakeups();
}

static uint64_t sched_wakeups(uint64_t a, uint64_t b)
{
    (void)a;
    (void)b;
    return (uint64_t)kit_sched_wakeups();
}

static uint64_t waiting_threads(uint64_t a, uint64_t b)
{
    (void)a;
    (void)b;
    return (uint64_t)kit_waiting_threads();
}

void kit_transcript_kit_explore_await_sleepers(int count)
{
    if (kit_transcript_channel() < 0) {
        kit_explore_await_sleepers(count);
        return;
    }
    hook_site = __builtin_return_address(0);
    hook(HOOK_AWAIT_SLEEPERS, (uint64_t)count, 0, await_sleepers);
}

static uint64_t lock_delays(uint64_t max_us, uint64_t seed)
{
    kit_lock_delays((long)max_us, seed);
    return 0;
}

/* (Both words, as the judge's copy sends them: the delays are the subject's.) */
void kit_transcript_kit_lock_delays(long max_us, uint64_t seed)
{
    hook(HOOK_LOCK_DELAYS, (uint64_t)max_us, seed, lock_delays);
}

void kit_transcript_kit_explore_await_quiet(void)
{
    hook(HOOK_AWAIT_QUIET, 0, 0, await_quiet);
}

long kit_transcript_kit_sched_futile_wakeups(void)
{
    return (long)hook(HOOK_FUTILE_WAKEUPS, 0, 0, futile_wakeups);
}

static uint64_t woken_spuriously(uint64_t a, uint64_t b)
{
    (void)a;
    (void)b;
    return kit_sched_woken_spuriously();
}

bool kit_transcript_kit_sched_woken_spuriously(void)
{
    return hook(HOOK_WOKEN_SPURIOUSLY, 0, 0, woken_spuriously) != 0;
}

long kit_transcript_kit_sched_wakeups(void)
{
    return (long)hook(HOOK_SCHED_WAKEUPS, 0, 0, sched_wakeups);
}

int kit_transcript_kit_waiting_threads(void)
{
    return (int)hook(HOOK_WAITING_THREADS, 0, 0, waiting_threads);
}

static uint64_t live_allocations(uint64_t a, uint64_t b)
{
    (void)a;
    (void)b;
    return (uint64_t)kit_live_allocations();
}

long kit_transcript_kit_live_allocations(void)
{
    return (long)hook(HOOK_LIVE_ALLOCATIONS, 0, 0, live_allocations);
}

/* The judge's copy asks how many blocks live, and decides; a leak found
 * here ends the subject with its places, after what was written down. */
void kit_transcript_kit_fail_on_leak(long before, const char *file, int line)
{
    if (kit_transcript_kit_live_allocations() == before)
        return;
    kit_transcript_flush();
    kit_fail_on_leak(before, file, line);
}


/* ---- tallies: the judge's own (grader/judge/kit_judge_explore.c), made of the copy's calls --------
 * A tally the copy counts on is counted with the calls the judge's copy
 * makes for it, each written down as any of the test's: a task that adds to
 * one on a worker is met, step by step, by the judge's task on its mirror. */

void kit_transcript_kit_tally_init(kit_tally_t *tally)
{
    tally->count = 0;
    explore_ok(pthread_mutex_init(&tally->lock, NULL));
    explore_ok(kit_transcript_pthread_cond_init(&tally->changed, NULL));
}

void kit_transcript_kit_tally_add(kit_tally_t *tally)
{
    kit_sched_name_steps(__builtin_return_address(0));
    kit_transcript_pthread_mutex_lock(&tally->lock);
    tally->count++;
    kit_transcript_pthread_cond_broadcast(&tally->changed); /* waiters may want different counts */
    kit_transcript_pthread_mutex_unlock(&tally->lock);
    kit_sched_name_steps(NULL);
}

void kit_transcript_kit_tally_await(kit_tally_t *tally, int count)
{
    kit_sched_name_steps(__builtin_return_address(0));
    kit_transcript_pthread_mutex_lock(&tally->lock);
    while (tally->count < count) /* while: a broadcast for a smaller count, or a spurious wake-up */
        kit_transcript_pthread_cond_wait(&tally->changed, &tally->lock);
    kit_transcript_pthread_mutex_unlock(&tally->lock);
    kit_sched_name_steps(NULL);
}

int kit_transcript_kit_tally_count(kit_tally_t *tally)
{
    kit_sched_name_steps(__builtin_return_address(0));
    kit_transcript_pthread_mutex_lock(&tally->lock);
    int count = tally->count;
    kit_transcript_pthread_mutex_unlock(&tally->lock);
    kit_sched_name_steps(NULL);
    return count;
}

void kit_transcript_kit_tally_destroy(kit_tally_t *tally)
{
    kit_transcript_pthread_cond_destroy(&tally->changed);
    kit_transcript_pthread_mutex_destroy(&tally->lock);
}
