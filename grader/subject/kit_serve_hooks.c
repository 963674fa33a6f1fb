/**
 * @file kit_serve_hooks.c
 * @brief The subject's answers to the harness's hooks, and the test's own
 *        pthread calls made on a schedule, on stand-in objects of the subject's.
 */
#define _GNU_SOURCE
#include "kit_serve.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kit_sched.h"
#include "kit_test.h"
#include "kit_thread.h"
#include "kit_time.h"

int kit_serve_start_standin(int channel);
int kit_serve_join_standin(int channel, bool detach);

static bool reply_word(kit_wire_t *r, uint64_t word)
{
    return kit_wire_word(r, word);
}

static bool reply_text(kit_wire_t *r, uint64_t word, const char *text)
{
    return kit_wire_word(r, word) && kit_wire_bytes(r, text, strlen(text));
}

/* The blob's texts: the first, and the one after it. */
static const char *first_text(const kit_wire_t *q)
{
    return q->nbytes > 0 && memchr(q->blob, '\0', q->nbytes) ? (const char *)q->blob : "";
}

static const char *second_text(const kit_wire_t *q)
{
    const char *first = first_text(q);
    size_t at = strlen(first) + 1;
    return at < q->nbytes && memchr(q->blob + at, '\0', q->nbytes - at) ? (const char *)q->blob + at : "";
}

/* kit_await_waiting_threads(), answered: 0, or 1 and how many were seen. */
static bool await_waiting(int count, kit_wire_t *r)
{
    char seen[32];
    if (kit_sched_active()) {
        int err = kit_sched_await_sleepers(count, KIT_HANG_MS, __builtin_return_address(0));
        snprintf(seen, sizeof seen, "%d", kit_waiting_threads());
        return err == 0 ? reply_word(r, 0) : reply_text(r, 1, seen);
    }
    int64_t start = kit_now_ns();
    while (kit_waiting_threads() < count && kit_elapsed_ms(start) <= KIT_HANG_MS)
        kit_sleep_ms(1); /* a test-side poll, as the harness's own */
    snprintf(seen, sizeof seen, "%d", kit_waiting_threads());
    return kit_waiting_threads() >= count ? reply_word(r, 0) : reply_text(r, 1, seen);
}

/* The stack of the judge's thread whose check failed, for this stand-in to
 * show: its first word counts the frames, each an offset in the judge's
 * program, after the hook's two texts (fewer where the bytes end). */
static void stand_in_for_judge(const kit_wire_t *q)
{
    void *frames[KIT_SCHED_STAND_IN_FRAMES];
    size_t at = strlen(first_text(q)) + 1, n = 0;
    at += at < q->nbytes ? strlen(second_text(q)) + 1 : 0;
    for (uint64_t offset; n < q->arg[0] && n < KIT_SCHED_STAND_IN_FRAMES && at + sizeof offset <= q->nbytes;
         at += sizeof offset) {
        memcpy(&offset, q->blob + at, sizeof offset);
        frames[n] = kit_sched_foreign_place(offset);
        n += frames[n] != NULL;
    }
    kit_sched_stand_in_frames(frames, (int)n);
}

static bool text_hooks(const kit_wire_t *q, kit_wire_t *r)
{
    char text[1024] = "";
    switch (q->op) {
    case HOOK_LEAK_PLACES:
        kit_leak_places((long)q->arg[0], text, sizeof text);
        return reply_text(r, 0, text);
    case HOOK_CLOCK_NOTE: {
        bool noted = kit_sched_active() && kit_sched_clock_note(text, sizeof text);
        return reply_text(r, noted, noted ? text : "");
    }
    case HOOK_REPLAY_SCENARIO:
        kit_sched_replay_scenario(q->arg[0] ? first_text(q) : NULL);
        return reply_word(r, 0);
    case HOOK_CRASH_CONTEXT:
        kit_crash_context(q->arg[0] ? first_text(q) : NULL);
        return reply_word(r, 0);
    case HOOK_DUMP_STACKS:
        if (kit_sched_active()) {
            stand_in_for_judge(q);
            kit_sched_dump_stacks(first_text(q), second_text(q));
        }
        return reply_word(r, 0);
    case HOOK_EXPLORE_FAIL:
        kit_explore_fail(first_text(q), (int)q->arg[0], "%s", second_text(q));
        return reply_word(r, 0);
    case HOOK_AWAIT_WAITING:
        return await_waiting((int)q->arg[0], r);
    case HOOK_THREADS_NAMED:
        return reply_word(r, (uint64_t)kit_threads_named(first_text(q)));
    }
    return false;
}

/* This stand-in's last call of the chapter's API, for the judge's words on
 * a failed check: the test's line that made it (the judge's, at @p offset),
 * the function and the last place it read or wrote memory, described here. */
static bool last_call(uint64_t offset, kit_wire_t *r)
{
    kit_code_call_t call;
    void *site = kit_sched_active() ? kit_sched_foreign_place(offset) : NULL;
    if (site == NULL || !kit_last_call(&call) || call.touched == NULL)
        return reply_word(r, 0);
    void *pcs[3] = { site, call.function, call.touched };
    char places[3][160];
    kit_describe_places(pcs, 3, places);
    bool ok = kit_wire_word(r, 1);
    for (int i = 0; i < 3 && ok; i++)
        ok = kit_wire_bytes(r, places[i], strlen(places[i]) + 1);
    return ok;
}

bool kit_serve_hook(int channel, const kit_wire_t *q, kit_wire_t *r)
{
    (void)channel;
    if (q->nargs != 2)
        return false;
    uint64_t a = q->arg[0], b = q->arg[1];
    switch (q->op) {
    case HOOK_FAIL_ALLOCATION: kit_fail_allocation((long)a); return reply_word(r, 0);
    case HOOK_LIVE_ALLOCATIONS: return reply_word(r, (uint64_t)kit_live_allocations());
    case HOOK_ALLOCATION_CALLS: return reply_word(r, (uint64_t)kit_allocation_calls());
    case HOOK_FAIL_THREAD_CREATE: kit_fail_thread_create((long)a); return reply_word(r, 0);
    case HOOK_SPURIOUS_WAKEUPS: kit_spurious_wakeups(a != 0); return reply_word(r, 0);
    case HOOK_WAKEUPS_EVERY: kit_wakeups_every((long)a); return reply_word(r, 0);
    case HOOK_SPURIOUS_COUNT: return reply_word(r, (uint64_t)kit_spurious_count());
    case HOOK_WAITING_THREADS: return reply_word(r, (uint64_t)kit_waiting_threads());
    case HOOK_LOCK_DELAYS: kit_lock_delays((long)a, b); return reply_word(r, 0);
    case HOOK_CHAOS: kit_chaos(a); return reply_word(r, 0);
    case HOOK_SCHED_WAKEUPS: return reply_word(r, (uint64_t)kit_sched_wakeups());
    case HOOK_FUTILE_WAKEUPS: return reply_word(r, (uint64_t)kit_sched_futile_wakeups());
    case HOOK_WOKEN_SPURIOUSLY: return reply_word(r, kit_sched_woken_spuriously());
    case HOOK_PRINT_WAKEUPS: kit_sched_print_wakeups(); return reply_word(r, 0);
    case HOOK_SAW_RACE: return reply_word(r, kit_sched_saw_race());
    case HOOK_PRINT_RACE: kit_sched_print_race(); return reply_word(r, 0);
    case HOOK_AWAIT_SLEEPERS: kit_explore_await_sleepers((int)a); return reply_word(r, 0);
    case HOOK_AWAIT_QUIET: kit_explore_await_quiet(); return reply_word(r, 0);
    case HOOK_TOUCH_HISTORY: kit_sched_touch_history(); return reply_word(r, 0);
    case HOOK_SCHEDULE: return reply_word(r, kit_sched_schedule());
    case HOOK_LAST_CALL: return last_call(a, r);
    }
    return text_hooks(q, r);
}

/* ---- the test's mutexes and conditions, on a schedule ------------------------------------
 * Each object of the test's (its address in the judge is only a name here)
 * has a stand-in mutex and condition of the subject's. Only the schedule's
 * threads use them, one at a time: no lock guards the table. */

enum { SHADOWS = 512 };
static struct shadow {
    uint64_t name; /* 0: free */
    pthread_mutex_t mutex;
    pthread_cond_t cond;
} shadows[SHADOWS];

void kit_serve_forget_all(void)
{
    for (int i = 0; i < SHADOWS; i++)
        shadows[i] = (struct shadow){ 0, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER };
}

static struct shadow *shadow_of(uint64_t name)
{
    struct shadow *free_one = NULL;
    for (int i = 0; i < SHADOWS; i++) {
        if (shadows[i].name == name)
            return &shadows[i];
        if (shadows[i].name == 0 && free_one == NULL)
            free_one = &shadows[i];
    }
    if (free_one == NULL)
        return NULL;
    *free_one = (struct shadow){ name, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER };
    return free_one;
}

static int shadow_wait(const kit_wire_t *q, void *where)
{
    struct shadow *cond = shadow_of(q->arg[0]), *mutex = shadow_of(q->arg[1]);
    if (cond == NULL || mutex == NULL)
        return ENOMEM;
    struct timespec at = { (time_t)(q->arg[4] / 1000000000ULL), (long)(q->arg[4] % 1000000000ULL) };
    return kit_sched_cond_wait(&cond->cond, &mutex->mutex, q->arg[2] ? &at : NULL,
                               q->arg[2] ? (clockid_t)q->arg[3] : (clockid_t)-1, true, where);
}

/* Where the test made the call @p q stands for: the judge's place (its
 * offset in the judge's program, which the explorer's reports name), else
 * @p here. */
static void *site_of(const kit_wire_t *q, void *here)
{
    uint64_t offset;
    if (q->op == SYNC_NAME || q->nbytes != sizeof offset || !kit_sched_active())
        return here;
    memcpy(&offset, q->blob, sizeof offset);
    void *site = kit_sched_foreign_place(offset);
    return site ? site : here;
}

static int shadow_call(const kit_wire_t *q, uint64_t *sec, uint64_t *nsec)
{
    void *where = site_of(q, __builtin_return_address(0));
    struct shadow *s = q->op >= SYNC_MUTEX_LOCK && q->op <= SYNC_FORGET ? shadow_of(q->arg[0]) : NULL;
    struct timespec t = { (time_t)q->arg[2], (long)q->arg[3] };
    switch (q->op) {
    case SYNC_MUTEX_LOCK: return s ? kit_sched_mutex_lock(&s->mutex, where) : ENOMEM;
    case SYNC_MUTEX_TRYLOCK: return s ? pthread_mutex_trylock(&s->mutex) : ENOMEM;
    case SYNC_MUTEX_UNLOCK: return s ? kit_sched_mutex_unlock(&s->mutex, where) : ENOMEM;
    case SYNC_COND_WAIT: return shadow_wait(q, where);
    case SYNC_COND_SIGNAL: return s ? kit_sched_cond_signal(&s->cond, false, where) : ENOMEM;
    case SYNC_COND_BROADCAST: return s ? kit_sched_cond_signal(&s->cond, true, where) : ENOMEM;
    case SYNC_FORGET: if (s) s->name = 0; return 0;
    case SYNC_YIELD: return sched_yield();
    case SYNC_SLEEP: return clock_nanosleep((clockid_t)q->arg[0], (int)q->arg[1], &t, NULL);
    case SYNC_CLOCK:
        clock_gettime((clockid_t)q->arg[0], &t);
        *sec = (uint64_t)t.tv_sec;
        *nsec = (uint64_t)t.tv_nsec;
        return 0;
    }
    return EINVAL;
}

bool kit_serve_sync(int channel, const kit_wire_t *q, kit_wire_t *r)
{
    (void)channel;
    if (q->nargs != 5 && !(q->op == SYNC_CLOCK && q->nargs == 1))
        return false;
    uint64_t sec = 0, nsec = 0;
    int err;
    if (q->op == SYNC_CREATE || q->op == SYNC_JOIN || q->op == SYNC_DETACH)
        kit_sched_call_site(site_of(q, NULL)); /* the step's place: the test's line */
    if (q->op == SYNC_CREATE)
        err = kit_serve_start_standin((int)q->arg[0]);
    else if (q->op == SYNC_NAME) { /* the name the explorer's steps and stacks give the stand-in */
        char name[KIT_THREAD_NAME_MAX];
        snprintf(name, sizeof name, "%.*s", KIT_THREAD_NAME_MAX - 1, first_text(q));
        kit_thread_set_name(name);
        err = 0;
    }
    else if (q->op == SYNC_JOIN || q->op == SYNC_DETACH)
        err = kit_serve_join_standin((int)q->arg[0], q->op == SYNC_DETACH);
    else if (!kit_sched_active() && q->op != SYNC_CLOCK)
        return false; /* the judge sends these only on a schedule */
    else
        err = shadow_call(q, &sec, &nsec);
    return kit_wire_word(r, (uint64_t)err) && kit_wire_word(r, sec) && kit_wire_word(r, nsec);
}
