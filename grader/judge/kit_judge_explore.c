/**
 * @file kit_judge_explore.c
 * @brief Schedules seen from the judge: a graded test on one schedule of
 *        the subject's, and explorations, whose search runs in the subject
 *        and whose body runs here, once for each schedule: asked for one at
 *        a time, or replayed from the schedules' transcripts when the
 *        subject's copy of the test ran it (kit_judge_replay.c).
 *
 * The judge decides an exploration from what it saw: a check of the body's
 * that failed here fails it, whatever the subject says after; and the
 * judge counts the bodies it ran itself. Which schedules those were, and
 * whether a search was complete, is the subject's word.
 */
#define _GNU_SOURCE
#include "kit_judge.h"

#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_errno.h"
#include "kit_sched.h"
#include "kit_test.h"

bool kit_sched_active(void)
{
    return kit_judge_on_schedule();
}

/* A judged test's failure is told as it comes: its schedule is the
 * subject's, which does not run it again for its report. */
void (*kit_sched_on_failure)(void);
void kit_sched_failure_begins(void)
{
    if (judge_replaying)
        judge_replay_check_fails();
}

/* A graded test the subject ran on its schedule from its copy and wrote
 * down: this copy runs once, every answer taken from the transcript, its
 * checks deciding; then the schedule's end. */
static bool replaying_written; /* the test's main thread alone sets it: before and after its threads */

bool kit_check_words_printed(void)
{
    return replaying_written; /* (the subject's copy printed them, at the same check) */
}

static const kit_wire_t *run_written(void (*fn)(void **state), void **state, const kit_wire_t *first)
{
    judge_replay_begin(first);
    judge_set_thread(0, true);
    kit_judge_wait(WIRE_GO);
    replaying_written = true;
    fn(state);
    replaying_written = false;
    const kit_wire_t *end = judge_replay_finish();
    judge_set_thread(0, false);
    judge_replay_end();
    if (end->kind == WIRE_RERUN) {
        char reason[512];
        snprintf(reason, sizeof reason, "%.*s", (int)(end->nbytes < 511 ? end->nbytes : 511), (const char *)end->blob);
        kit_test_run_again(reason, end->nargs > 0 && end->arg[0] != 0);
    }
    return end;
}

/* A graded test on the subject's one schedule: the subject starts it, this
 * thread runs it as the schedule's first thread, and the subject's verdict
 * on the schedule (a deadlock it saw ends it sooner) comes last. */
bool kit_sched_run_test(const char *test, void (*fn)(void **state), void **state, uint64_t seed, char *reason,
                        size_t size)
{
    judge_start_subject(test, true, seed);
    const kit_wire_t *result = kit_judge_wait_either(WIRE_GO, WIRE_TRANSCRIPT_BATCH);
    if (result->kind == WIRE_TRANSCRIPT_BATCH) {
        result = run_written(fn, state, result);
    } else {
        judge_set_thread(0, true);
        fn(state);
        judge_set_thread(0, false);
        kit_judge_post(kit_judge_begin(WIRE_END, 0));
        result = kit_judge_wait(WIRE_RESULT);
    }
    if (result->nargs < 1)
        kit_judge_violation("a schedule's end without its verdict");
    snprintf(reason, size, "%.*s", (int)(result->nbytes < size ? result->nbytes : size - 1),
             (const char *)result->blob);
    return result->arg[0] != 0;
}

/* ---- explorations ------------------------------------------------------------------------- */

static jmp_buf body_exit;
static kit_wire_t ended;          /* the result that ended a body early */
static bool check_failed;         /* a check of the body failed, here */
static char check_message[1024];  /* ... its words */

void judge_explore_ended(const kit_wire_t *result)
{
    memcpy(&ended, result, sizeof ended);
    longjmp(body_exit, 1);
}

/* The i-th text of a result's blob (message, token, schedule). */
static void blob_text(const kit_wire_t *m, int index, char *out, size_t size)
{
    size_t at = 0;
    for (int i = 0; i < index && at < m->nbytes; i++)
        at += strnlen((const char *)m->blob + at, m->nbytes - at) + 1;
    size_t n = at < m->nbytes ? strnlen((const char *)m->blob + at, m->nbytes - at) : 0;
    snprintf(out, size, "%.*s", (int)(n < size ? n : size - 1), at < m->nbytes ? (const char *)m->blob + at : "");
}

static char failed_schedule[128];

static bool take_result(const kit_wire_t *m, long bodies, kit_explore_result_t *result)
{
    kit_explore_result_t r = { 0 };
    if (m->nargs < 6)
        kit_judge_violation("an exploration's end without its counts");
    bool passed = m->arg[0] != 0;
    r.failed = !passed;
    r.gave_up = m->arg[1] != 0;
    r.deadlocked = m->arg[2] != 0;
    r.schedules = (long)m->arg[3];
    r.complete = m->arg[4] != 0;
    r.interleavings = (long)m->arg[5];
    blob_text(m, 0, r.message, sizeof r.message);
    blob_text(m, 1, r.token, sizeof r.token);
    blob_text(m, 2, failed_schedule, sizeof failed_schedule);
    if (check_failed && !r.failed) { /* the judge saw a check fail: no word of the subject's undoes it */
        r.failed = true;
        snprintf(r.message, sizeof r.message, "%s", check_message);
    }
    if (passed && bodies == 0) { /* every search runs its body once at least, on a schedule or on real threads */
        r.failed = true;
        snprintf(r.message, sizeof r.message, "the exploration passed, says the code under test's process, and ran "
                                              "its body not once");
        fprintf(stderr, "[ integrity ] %s\n", r.message);
    } else if (passed && !r.gave_up && bodies != r.schedules) {
        r.failed = true;
        snprintf(r.message, sizeof r.message, "the exploration ran %ld bodies, and its search claims %ld schedules",
                 bodies, r.schedules);
        fprintf(stderr, "[ integrity ] %s\n", r.message);
    }
    if (result)
        *result = r;
    return !r.failed;
}

/* Set by kit_explore_run(): the body is one the test wrote (not a generated scenario's). */
static bool hand_written;

/* Which of the test's hand-written explorations this is (0 for its first):
 * the subject's copy runs the test's function and explores that one. */
static uint64_t explored_before(const char *test)
{
    static char last[256];
    static uint64_t count;
    count = hand_written && strncmp(last, test, sizeof last - 1) == 0 ? count + 1 : 0;
    snprintf(last, sizeof last, "%s", hand_written ? test : "");
    return count;
}

static void ask_to_explore(const char *test, const kit_explore_t *options)
{
    uint64_t ordinal = explored_before(test);
    kit_wire_t *m = kit_judge_begin(WIRE_EXPLORE, 0);
    kit_judge_word(m, (uint64_t)options->schedules);
    kit_judge_word(m, (uint64_t)options->spurious);
    kit_judge_word(m, options->timeouts_race);
    kit_judge_word(m, (uint64_t)options->max_steps);
    kit_judge_word(m, options->quiet);
    kit_judge_word(m, options->strategy != NULL);
    kit_judge_word(m, hand_written); /* the subject may run it from its copy of the test */
    kit_judge_word(m, ordinal);
    kit_judge_bytes(m, test, strlen(test) + 1, "the test's name");
    if (options->strategy)
        kit_judge_bytes(m, options->strategy, strlen(options->strategy) + 1, "the strategy");
    kit_judge_post(m);
}

/* The search's end: the judge's result from what it saw and what the subject said. */
static bool search_over(const kit_wire_t *end, long bodies, kit_explore_result_t *result)
{
    judge_in_body = false;
    judge_set_thread(0, false);
    judge_replay_end();
    return take_result(end, bodies, result);
}

/* The next schedule's start (its body to run, or, written down, a repeat
 * of one run before), or the search's end. */
static const kit_wire_t *next_schedule(void)
{
    if (judge_replaying)
        return kit_judge_wait_any(WIRE_BODY, WIRE_RESULT, WIRE_TRANSCRIPT_REPEAT);
    return kit_judge_wait_either(WIRE_BODY, WIRE_RESULT);
}

static void run_body(void (*body)(void *ctx), void *ctx)
{
    judge_in_body = true;
    body(ctx);
    judge_in_body = false;
    kit_judge_post(kit_judge_begin(WIRE_BODY_DONE, 0));
}

/* The subject asks for the body once a schedule (WIRE_BODY), or sends the
 * schedules' transcripts (its own copy of the body ran): then this copy of
 * it runs once a schedule written down, its answers taken from there - but
 * for a schedule whose transcript repeats one run before, counted without
 * running it again (the same answers in the same order: the same checks). */
bool kit_explore_search(const char *test, const kit_explore_t *options, void (*body)(void *ctx), void *ctx,
                        kit_explore_result_t *result)
{
    ask_to_explore(test, options);
    check_failed = false;
    long bodies = 0, ran = 0;
    judge_set_thread(0, true); /* between bodies too: the schedules order what the bodies did */
    const kit_wire_t *m = kit_judge_wait_any(WIRE_BODY, WIRE_RESULT, WIRE_TRANSCRIPT_BATCH);
    if (m->kind == WIRE_TRANSCRIPT_BATCH) {
        judge_replay_begin(m);
        m = next_schedule();
    }
    for (;;) {
        if (m->kind == WIRE_RESULT)
            return search_over(m, bodies, result);
        bodies++;
        if (m->kind == WIRE_TRANSCRIPT_REPEAT && ran == 0)
            kit_judge_violation("a transcript that repeats a schedule before any was written down");
        if (m->kind == WIRE_BODY) {
            ran++;
            if (setjmp(body_exit) != 0) /* the schedule ended under the body: the search is over */
                return search_over(&ended, bodies, result);
            run_body(body, ctx);
        }
        m = next_schedule();
    }
}

enum { REAL_THREAD_RUNS = 20 };

void kit_explore_run(const char *test, const char *file, int line, const kit_explore_t *options,
                     void (*body)(void *ctx), void *ctx)
{
    static kit_explore_result_t result;
    hand_written = true;
    bool passed = kit_explore_search(test, options, body, ctx, &result);
    hand_written = false;
    if (passed)
        return;
    if (result.gave_up) {
        fprintf(stderr, "[ explore  ] %s cannot be explored: %s\n[ explore  ] it runs %d times on real threads "
                "instead\n", test, result.message, REAL_THREAD_RUNS);
        for (int run = 0; run < REAL_THREAD_RUNS; run++)
            body(ctx);
        return;
    }
    char make_args[1200];
    sched_make_args(make_args, sizeof make_args);
    kit_note_stacks_dumped(); /* the subject's report told where every thread was */
    if (strcmp(result.token, ".") == 0 || result.token[0] == '\0')
        print_error("%s\n    in %s, before any thread had a choice\n", result.message, failed_schedule);
    else
        print_error("%s\n    in %s; its steps are printed with the test's output (under make grade: in its log);"
                    " replay it with\n    make explore %s TEST=%s REPLAY=%s\n",
                    result.message, failed_schedule, make_args, test, result.token);
    _fail(file, line);
}

/* A check of the body failed: the judge keeps it, and the subject ends the
 * schedule (its report names the steps). This thread waits for nothing more. */
void kit_explore_fail(const char *file, int line, const char *fmt, ...)
{
    char text[900];
    va_list args;
    va_start(args, fmt);
    vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    const char *slash = strrchr(file, '/');
    snprintf(check_message, sizeof check_message, "%s:%d: %s", slash ? slash + 1 : file, line, text);
    check_failed = true;
    if (!kit_judge_on_schedule())
        kit_fail_at(file, line, "%s", text);
    if (judge_replaying)
        for (;;) /* the subject's copy failed the same check: its transcript ends here, and channel 0 jumps out */
            kit_judge_wait(WIRE_REPLY);
    kit_wire_t *m = kit_judge_begin(WIRE_HOOK, HOOK_EXPLORE_FAIL);
    kit_judge_word(m, (uint64_t)line);
    kit_judge_word(m, 0);
    kit_judge_bytes(m, slash ? slash + 1 : file, strlen(slash ? slash + 1 : file) + 1, "a file name");
    kit_judge_bytes(m, text, strlen(text) + 1, "a failed check's words");
    kit_judge_post(m);
    for (;;)
        kit_judge_wait(WIRE_REPLY); /* never comes: the schedule is over (channel 0 jumps out) */
}

void kit_explore_code(int got, int want, const char *expr, const char *file, int line)
{
    if (got == want)
        return;
    if (got == ENOSYS)
        kit_explore_fail(file, line, "%s returned ENOSYS: not implemented yet", expr);
    kit_explore_fail(file, line, "%s returned %s (%d), expected %s (%d)", expr, kit_errno_name(got), got,
                     kit_errno_name(want), want);
}

/* ---- tallies: the test's own count, on the schedule's mutex and condition -------------- */

void kit_tally_init(kit_tally_t *tally)
{
    tally->count = 0;
    explore_ok(pthread_mutex_init(&tally->lock, NULL));
    explore_ok(pthread_cond_init(&tally->changed, NULL));
}

void kit_tally_add(kit_tally_t *tally)
{
    pthread_mutex_lock(&tally->lock);
    tally->count++;
    pthread_cond_broadcast(&tally->changed); /* waiters may want different counts */
    pthread_mutex_unlock(&tally->lock);
}

void kit_tally_await(kit_tally_t *tally, int count)
{
    pthread_mutex_lock(&tally->lock);
    while (tally->count < count) /* while: a broadcast for a smaller count, or a spurious wake-up */
        pthread_cond_wait(&tally->changed, &tally->lock);
    pthread_mutex_unlock(&tally->lock);
}

int kit_tally_count(kit_tally_t *tally)
{
    pthread_mutex_lock(&tally->lock);
    int count = tally->count;
    pthread_mutex_unlock(&tally->lock);
    return count;
}

void kit_tally_destroy(kit_tally_t *tally)
{
    pthread_cond_destroy(&tally->changed);
    pthread_mutex_destroy(&tally->lock);
}
