/**
 * @file kit_judge_hooks.c
 * @brief The harness's hooks in the judge: each asks the subject, which
 *        alone can know (its allocations, its wake-ups, its races), and
 *        the harness's own services that need no subject at all.
 *
 * What a hook answers is the subject's word. The checks that rest on one -
 * a leak, an injected fault, a futile wake-up, the race-free line - are the
 * self-reported ones docs/grading.md lists; every other check is decided
 * from the values the judge received and the order it saw them in.
 */
#define _GNU_SOURCE
#include "kit_judge.h"

#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kit_sched.h"
#include "kit_test.h"

/* Ask the subject hook @p hook with up to two words and a text; its answer's
 * first word (or @p otherwise once the subject is gone), and its text in
 * @p out when asked for. */
static uint64_t ask(enum kit_hook hook, uint64_t a, uint64_t b, const char *text, char *out, size_t size,
                    uint64_t otherwise)
{
    if (kit_judge_subject_gone())
        return otherwise;
    kit_wire_t *m = kit_judge_begin(WIRE_HOOK, hook);
    kit_judge_word(m, a);
    kit_judge_word(m, b);
    if (text)
        kit_judge_bytes(m, text, strlen(text) + 1, "a hook's text");
    kit_judge_post(m);
    const kit_wire_t *reply = kit_judge_wait(WIRE_REPLY);
    if (reply->nargs != 1)
        kit_judge_violation("a hook's reply of %u words, not 1", reply->nargs);
    if (out && size > 0) {
        size_t n = reply->nbytes < size - 1 ? reply->nbytes : size - 1;
        memcpy(out, reply->blob, n);
        out[n] = '\0';
        out[strcspn(out, "\x1b")] = '\0'; /* text for a log: no terminal escapes */
    } else if (reply->nbytes != 0) {
        kit_judge_violation("a hook's reply with %u bytes where none were due", reply->nbytes);
    }
    return reply->arg[0];
}

/* ---- allocations, faults and wake-ups: the subject's word ----------------------------- */

/* Ask a hook whose answer a check rests on: the test's verdict is then in
 * part the subject's word, and its line says so (kit_verdict_rests_on). */
static uint64_t take_word(enum kit_hook hook, unsigned word)
{
    kit_verdict_rests_on(word);
    return ask(hook, 0, 0, NULL, NULL, 0, 0);
}

void kit_fail_allocation(long nth) { ask(HOOK_FAIL_ALLOCATION, (uint64_t)nth, 0, NULL, NULL, 0, 0); }
long kit_live_allocations(void) { return (long)take_word(HOOK_LIVE_ALLOCATIONS, KIT_WORD_LEAKS); }
long kit_allocation_calls(void) { return (long)take_word(HOOK_ALLOCATION_CALLS, KIT_WORD_ALLOCATIONS); }
void kit_fail_thread_create(long nth) { ask(HOOK_FAIL_THREAD_CREATE, (uint64_t)nth, 0, NULL, NULL, 0, 0); }
void kit_spurious_wakeups(bool on) { ask(HOOK_SPURIOUS_WAKEUPS, on, 0, NULL, NULL, 0, 0); }
void kit_wakeups_every(long ms) { ask(HOOK_WAKEUPS_EVERY, (uint64_t)ms, 0, NULL, NULL, 0, 0); }
long kit_spurious_count(void) { return (long)take_word(HOOK_SPURIOUS_COUNT, KIT_WORD_WAKEUPS); }
long kit_threads_named(const char *prefix)
{
    kit_verdict_rests_on(KIT_WORD_THREADS);
    return (long)ask(HOOK_THREADS_NAMED, 0, 0, prefix != NULL ? prefix : "", NULL, 0, 0);
}
int kit_waiting_threads(void) { return (int)ask(HOOK_WAITING_THREADS, 0, 0, NULL, NULL, 0, 0); }
void kit_lock_delays(long max_us, uint64_t seed) { ask(HOOK_LOCK_DELAYS, (uint64_t)max_us, seed, NULL, NULL, 0, 0); }
void kit_chaos(uint64_t seed) { ask(HOOK_CHAOS, seed, 0, NULL, NULL, 0, 0); }
long kit_sched_wakeups(void) { return (long)take_word(HOOK_SCHED_WAKEUPS, KIT_WORD_FUTILE); }
long kit_sched_futile_wakeups(void) { return (long)take_word(HOOK_FUTILE_WAKEUPS, KIT_WORD_FUTILE); }
bool kit_sched_woken_spuriously(void) { return take_word(HOOK_WOKEN_SPURIOUSLY, KIT_WORD_WAKEUPS) != 0; }
unsigned long kit_sched_schedule(void) { return (unsigned long)ask(HOOK_SCHEDULE, 0, 0, NULL, NULL, 0, 0); }
void kit_sched_touch_history(void)
{
    if (kit_judge_on_schedule())
        judge_touch(); /* sent with the next message: nothing else runs until then */
    else
        ask(HOOK_TOUCH_HISTORY, 0, 0, NULL, NULL, 0, 0);
}
void kit_explore_await_quiet(void) { ask(HOOK_AWAIT_QUIET, 0, 0, NULL, NULL, 0, 0); }
void kit_explore_await_sleepers(int count) { ask(HOOK_AWAIT_SLEEPERS, (uint64_t)count, 0, NULL, NULL, 0, 0); }
void kit_crash_context(const char *text) { ask(HOOK_CRASH_CONTEXT, text != NULL, 0, text, NULL, 0, 0); }
static char scenario_words[64];

void kit_sched_replay_scenario(const char *number)
{
    snprintf(scenario_words, sizeof scenario_words, "%s", number ? number : "");
    ask(HOOK_REPLAY_SCENARIO, number != NULL, 0, number, NULL, 0, 0);
}

/* Once the subject is gone, its race is what its exit status said (a test
 * that stopped in it printed its race there); else none is claimed (the
 * race-free line asks for half the chapter's judged points too). */
bool kit_sched_saw_race(void) { return ask(HOOK_SAW_RACE, 0, 0, NULL, NULL, 0, kit_judge_subject_raced()) != 0; }
void kit_sched_print_race(void) { ask(HOOK_PRINT_RACE, 0, 0, NULL, NULL, 0, 0); }
void kit_sched_print_wakeups(void) { ask(HOOK_PRINT_WAKEUPS, 0, 0, NULL, NULL, 0, 0); }

bool kit_chaos_from_env(void)
{
    return getenv("KIT_CHAOS") != NULL && atoll(getenv("KIT_CHAOS")) != 0;
}

void kit_leak_places(long leaked, char *out, size_t size)
{
    ask(HOOK_LEAK_PLACES, (uint64_t)leaked, 0, NULL, out, size, 0);
}

void kit_fail_on_leak(long before, const char *file, int line)
{
    long leaked = kit_live_allocations() - before;
    if (leaked == 0)
        return;
    if (leaked < 0)
        kit_fail_at(file, line, "%ld more block(s) were freed than allocated since the test began: a block freed "
                    "twice, or one the code did not allocate", -leaked);
    char places[800];
    kit_leak_places(leaked, places, sizeof places);
    kit_fail_at(file, line, "%ld block(s) allocated during the test were never freed%s", leaked, places);
}

void kit_await_waiting_threads_at(int count, const char *what, const char *file, int line)
{
    char seen[32] = "";
    if (ask(HOOK_AWAIT_WAITING, (uint64_t)count, 0, NULL, seen, sizeof seen, 1) == 0)
        return;
    kit_dump_stacks("fewer threads asleep than expected");
    kit_fail_at(file, line, "%s: expected %d threads asleep in a condition wait, saw %s", what, count, seen);
}

bool kit_sched_clock_note(char *out, size_t size)
{
    if (judge_replaying)
        return false; /* (a transcript's test: the subject's copy says it, at the same check) */
    return ask(HOOK_CLOCK_NOTE, 0, 0, NULL, out, size, 0) != 0;
}

/* ---- what the harness needs of no subject --------------------------------------------- */

/* The last call of the chapter's API this thread made: the test's line
 * that made it, and, once asked, the subject's words for its three places
 * (the test's line, the function, the last place it read or wrote memory). */
static _Thread_local const void *last_site;
static _Thread_local char last_places[3][160];

void kit_judge_note_site(const void *site)
{
    last_site = site;
}

/* The call ran in the subject: it names the places, the judge's line among
 * them (the subject's reports name the judge's lines); the call stands here
 * as the three places 1, 2, 3, which kit_describe_places gives their words. */
bool kit_last_call(kit_code_call_t *call)
{
    uint64_t offset = judge_offset_of(last_site);
    if (judge_replaying || offset == 0 || kit_judge_subject_gone())
        return false; /* (a transcript's test: the subject's copy says it, at the same check) */
    kit_wire_t *m = kit_judge_begin(WIRE_HOOK, HOOK_LAST_CALL);
    kit_judge_word(m, offset);
    kit_judge_word(m, 0);
    kit_judge_post(m);
    const kit_wire_t *reply = kit_judge_wait(WIRE_REPLY);
    if (reply->nargs != 1 || reply->nbytes > sizeof last_places)
        kit_judge_violation("a hook's reply of %u words and %u bytes", reply->nargs, reply->nbytes);
    size_t at = 0;
    for (int i = 0; i < 3; i++) { /* (its words as text for a log: bounded, no terminal escapes) */
        size_t n = at < reply->nbytes ? strnlen((const char *)reply->blob + at, reply->nbytes - at) : 0;
        snprintf(last_places[i], sizeof last_places[i], "%.*s", (int)(n < 159 ? n : 159), (const char *)reply->blob + at);
        last_places[i][strcspn(last_places[i], "\x1b")] = '\0';
        at += n + 1;
    }
    *call = (kit_code_call_t){ (void *)1, (void *)2, (void *)3 };
    return reply->arg[0] != 0;
}

void kit_describe_places(void *const *pcs, int n, char (*out)[160])
{
    for (int i = 0; i < n; i++) {
        uintptr_t which = (uintptr_t)pcs[i];
        snprintf(out[i], 160, "%s", which >= 1 && which <= 3 ? last_places[which - 1] : "a place in the subject");
    }
}

void sched_make_args(char *out, size_t size)
{
    const char *program = program_invocation_name;
    const char *slash = strrchr(program, '/');
    const char *start = slash;
    while (start && start > program && start[-1] != '/')
        start--;
    size_t length = start ? strspn(start, "0123456789") : 0;
    const char *graded = getenv("KIT_MAKE_ARGS");
    snprintf(out, size, "CH=%.*s%s%s%s%s", length > 0 ? (int)length : 2, length > 0 ? start : "NN",
             graded && graded[0] ? " " : "", graded ? graded : "", scenario_words[0] ? " SCENARIO=" : "",
             scenario_words);
}

/* ---- failures, stacks and crashes of the judge ---------------------------------------- */

/* A failed check's words, kept by the thread of the schedule that failed:
 * one a channel (the replay's threads may share one OS thread). */
static char error_text[KIT_WIRE_CHANNELS][1024];
static bool stacks_dumped;

char *kit_sched_error_text(size_t *size)
{
    *size = sizeof error_text[0];
    int channel = judge_channel();
    return kit_judge_on_schedule() && channel >= 0 ? error_text[channel] : NULL;
}

bool kit_stacks_dumped(void) { return stacks_dumped; }
void kit_note_stacks_dumped(void) { stacks_dumped = true; }
bool kit_crash_in_progress(void) { return false; }

/* The stacks that matter are the subject's: its schedule's steps and where
 * each of its threads stands. The judge's own thread is named by the
 * failing line. */
void kit_dump_stacks(const char *why)
{
    stacks_dumped = true;
    if (judge_replaying)
        return; /* a transcript's test: the subject's copy dumped them at the same check */
    /* why, then the failed check's words, as one process hands them over:
     * the schedule's report names from them the line that wrote what the check read. */
    char texts[1400];
    size_t n = (size_t)snprintf(texts, sizeof texts, "%.390s", why) + 1;
    snprintf(texts + n, sizeof texts - n, "%s", kit_last_error_text());
    n += strlen(texts + n) + 1;
    if (kit_judge_subject_gone())
        return;
    /* and this thread's own frames, for the stand-in to show as its stack:
     * the test's functions that led to the check ("called from") */
    void *pcs[KIT_SCHED_STAND_IN_FRAMES];
    uint64_t frames[KIT_SCHED_STAND_IN_FRAMES];
    int depth = backtrace(pcs, KIT_SCHED_STAND_IN_FRAMES), kept = 0;
    for (int i = 0; i < depth; i++)
        if ((frames[kept] = judge_offset_of(pcs[i])) != 0)
            kept++;
    kit_wire_t *m = kit_judge_begin(WIRE_HOOK, HOOK_DUMP_STACKS);
    kit_judge_word(m, (uint64_t)kept);
    kit_judge_word(m, 0);
    kit_judge_bytes(m, texts, n, "a hook's text");
    kit_judge_bytes(m, frames, (size_t)kept * sizeof frames[0], "the judge's frames");
    kit_judge_post(m);
    const kit_wire_t *reply = kit_judge_wait(WIRE_REPLY);
    if (reply->nargs != 1 || reply->nbytes != 0)
        kit_judge_violation("a hook's reply of %u words and %u bytes, not 1 and none", reply->nargs, reply->nbytes);
}

void kit_stop_test(const char *message, const char *file, int line)
{
    fflush(stdout);
    fprintf(stderr, "[  ERROR   ] --- %s\n", message);
    if (!stacks_dumped)
        kit_dump_stacks(message);
    if (file)
        fprintf(stderr, "[   LINE   ] --- %s:%d: error: Failure!\n", file, line);
    fprintf(stderr, "[  FAILED  ] the test stopped here\n");
    kit_verdict_stopped();
    fflush(stderr);
    _exit(1);
}

static void on_crash(int sig)
{
    static const char words[] = "[  CRASH   ] the test's own code crashed in the judge\n";
    if (write(STDERR_FILENO, words, sizeof words - 1) < 0) {
        /* nothing more can be said */
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

void kit_catch_crashes(void)
{
    int signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        signal(signals[i], on_crash);
}
