/**
 * @file kit_serve.c
 * @brief The subject: the submission's code, the explorer and the wrappers,
 *        serving the judge's requests - each thread of the test has a
 *        stand-in here that makes its calls - and answering nothing else.
 *
 * DESIGN: the judge starts this program as `NAME.subject --serve` with its
 * channels at KIT_WIRE_FD.. and no other descriptor of its own. The main
 * thread serves channel 0: the test's start, off or on one schedule (then
 * the schedule's first thread is the main thread's stand-in), and the
 * explorations: a hand-written body runs here from this program's copy of
 * the test, each schedule written down for the judge (kit_transcript.c);
 * another's stand-in asks the judge to run the body once per schedule. A stand-in blocked on its channel is outside the schedule
 * (kit_sched_outside): the test's thread in the judge runs meanwhile, as
 * the schedule's running thread. Before the first request the system-call
 * filter is installed (kit_seccomp.c). Nothing here decides a verdict: the
 * subject has no token, and what it says is checked by the judge.
 */
#define _GNU_SOURCE
#include "kit_serve.h"

#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "kit_sched.h"
#include "kit_test.h"
#include "kit_thread.h"
#include "kit_time.h"
#include "kit_transcript.h"

int __real_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
int __real_pthread_join(pthread_t thread, void **result);
int __real_pthread_detach(pthread_t thread);

char kit_serve_unset;

/* One message buffer per channel: the stand-in of a channel is its only user.
 * A call that calls a function of the test's back serves the calls that
 * function makes while its own reply is half made: those replies, and the
 * callback's message, go in the next depth's buffer (nested[channel][depth - 1]). */
enum { NESTED = 3 };
static kit_wire_t requests[KIT_WIRE_CHANNELS], replies[KIT_WIRE_CHANNELS];
static kit_wire_t nested[KIT_WIRE_CHANNELS][NESTED];
static pthread_t standins[KIT_WIRE_CHANNELS];
static _Thread_local int serving = -1; /* the channel this thread is the stand-in of */
static _Thread_local int depth;        /* callbacks of the test's under way on it */

static kit_wire_t *reply_buffer(int channel)
{
    return depth == 0 ? &replies[channel] : &nested[channel][depth - 1];
}

static _Noreturn void judge_gone(void)
{
    _exit(0); /* the judge ended the test (or died): nothing to answer any more */
}

static void post(int channel, kit_wire_t *m)
{
    if (kit_sched_active()) { /* the virtual time, which stands still until the judge's thread sends again */
        struct timespec mono, real;
        clock_gettime(CLOCK_MONOTONIC, &mono);
        clock_gettime(CLOCK_REALTIME, &real);
        m->clock[0] = (uint64_t)mono.tv_sec * 1000000000ULL + (uint64_t)mono.tv_nsec;
        m->clock[1] = (uint64_t)real.tv_sec * 1000000000ULL + (uint64_t)real.tv_nsec;
        m->flags |= WIRE_CLOCKED;
    }
    if (kit_wire_send(KIT_WIRE_FD + channel, m) != 0)
        judge_gone();
}

static void post_kind(int channel, uint32_t kind)
{
    kit_wire_t *m = &replies[channel];
    kit_wire_begin(m, kind, 0);
    post(channel, m);
}

/* The next request on @p channel; on a schedule, the wait is outside it. */
static kit_wire_t *next_request(int channel)
{
    bool scheduled = kit_sched_active();
    if (scheduled)
        kit_sched_outside(true);
    int err = kit_wire_recv(KIT_WIRE_FD + channel, &requests[channel]);
    if (scheduled)
        kit_sched_outside(false);
    if (err != 0)
        judge_gone();
    if ((requests[channel].flags & WIRE_TOUCHED) && scheduled)
        kit_sched_touch_history();
    return &requests[channel];
}

/* A text a request carries: its blob's @p index-th NUL-ended string, or "". */
static const char *text_of(const kit_wire_t *m, int index)
{
    static const char empty[] = "";
    size_t at = 0;
    for (int i = 0; i <= index; i++) {
        size_t n = at < m->nbytes ? strnlen((const char *)m->blob + at, m->nbytes - at) : 0;
        if (at >= m->nbytes || at + n >= m->nbytes)
            return empty;
        if (i == index)
            return (const char *)m->blob + at;
        at += n + 1;
    }
    return empty;
}

static bool serve_call(const kit_wire_t *q, kit_wire_t *r)
{
    if (q->op >= (uint32_t)kit_serve_nops || q->nargs != kit_serve_ops[q->op].words)
        return false;
    kit_sched_api_site(NULL); /* the test's line that made this call is in the judge: no place here names it */
    return kit_serve_ops[q->op].serve(q, r);
}

bool kit_serve_hook(int channel, const kit_wire_t *q, kit_wire_t *r);
bool kit_serve_sync(int channel, const kit_wire_t *q, kit_wire_t *r);
static void serve_explore(const kit_wire_t *q);
bool kit_serve_scenario(const kit_wire_t *q, kit_wire_t *reply);

/* Serve @p channel until a message of @p until (or the judge's end). */
static void serve(int channel, uint32_t until)
{
    serving = channel;
    for (;;) {
        const kit_wire_t *q = next_request(channel);
        if (q->kind == until)
            return;
        kit_wire_t *r = reply_buffer(channel);
        kit_wire_begin(r, WIRE_REPLY, q->op);
        bool ok = false;
        if (q->kind == WIRE_CALL)
            ok = serve_call(q, r);
        else if (q->kind == WIRE_HOOK)
            ok = kit_serve_hook(channel, q, r);
        else if (q->kind == WIRE_SYNC)
            ok = kit_serve_sync(channel, q, r);
        else if (q->kind == WIRE_HISTORY_SCENARIO && channel == 0 && !kit_sched_active())
            ok = kit_serve_scenario(q, r); /* its reply: the scenario's result */
        else if (q->kind == WIRE_EXPLORE && channel == 0 && !kit_sched_active()) {
            serve_explore(q);
            continue;
        }
        if (!ok) {
            fprintf(stderr, "[ subject  ] a request the server does not know (kind %u, op %u)\n", q->kind, q->op);
            _exit(3);
        }
        post(channel, r);
    }
}

/* ---- functions of the test's, called back (the generated stand-ins' side) ---------------- */

/* The mirror channels (kit_wire.h) the code under test's own threads hold:
 * each thread takes one on its first callback and gives it back as it ends. */
static atomic_bool mirror_taken[KIT_WIRE_CHANNELS];

/* A thread of the code under test's own calls a function of the test's for
 * the first time: it takes a mirror channel and tells the judge, which starts
 * the thread that mirrors it; false if every one is taken. */
static bool take_mirror(void)
{
    for (int c = KIT_WIRE_MIRROR_FIRST; c < KIT_WIRE_CONTROL; c++) {
        if (atomic_exchange(&mirror_taken[c], true))
            continue;
        char name[16] = "";
        pthread_getname_np(pthread_self(), name, sizeof name);
        kit_wire_t *m = &nested[c][0]; /* (free: no callback is under way on it) */
        kit_wire_begin(m, WIRE_MIRROR, 0);
        kit_wire_word(m, (uint64_t)c);
        kit_wire_word(m, kit_sched_active());
        kit_wire_bytes(m, name, strnlen(name, sizeof name - 1));
        if (kit_wire_send(KIT_WIRE_FD + KIT_WIRE_CONTROL, m) != 0)
            judge_gone();
        serving = c;
        return true;
    }
    return false;
}

void kit_serve_thread_ended(void)
{
    if (kit_transcript_mirror_ended())
        return;
    int channel = serving;
    if (channel < KIT_WIRE_MIRROR_FIRST || channel >= KIT_WIRE_CONTROL)
        return;
    post_kind(channel, WIRE_EXIT); /* its mirror leaves */
    serving = -1;
    atomic_store(&mirror_taken[channel], false);
}

#define TOO_MANY_THREADS                                                                                    \
    "more than 127 threads of the code under test's own, alive at once, have called the test's functions (a "  \
    "pool's tasks): more than the judge mirrors. A pool of at most core_threads workers never starts that many " \
    "- does a task get a thread of its own?"

static _Noreturn void cannot_call_back(const char *why)
{
    fprintf(stderr, "[  ERROR   ] --- %s\n", why);
    fflush(stderr);
    _exit(1);
}

kit_wire_t *kit_serve_callback_begin(uint32_t type, uint64_t id)
{
    if (serving < 0 && kit_transcript_channel() < 0 && kit_transcript_on && kit_transcript_take_mirror() < 0)
        cannot_call_back(TOO_MANY_THREADS);
    if (serving < 0 && kit_transcript_channel() >= 0)
        return kit_transcript_callback_begin(type, id); /* a thread of the test's copy, or a mirrored one, written down */
    if (serving < 0 && !take_mirror())
        cannot_call_back(TOO_MANY_THREADS);
    if (depth >= NESTED) {
        fprintf(stderr, "[  ERROR   ] --- the code under test called the test's functions back %d deep (each from "
                        "the one before): more than the judge serves\n", depth + 1);
        fflush(stderr);
        _exit(1);
    }
    kit_wire_t *m = &nested[serving][depth];
    kit_wire_begin(m, WIRE_CALLBACK, type);
    kit_wire_word(m, id);
    return m;
}

uint64_t kit_serve_callback(kit_wire_t *m, uint64_t *more, uint32_t nmore)
{
    if (serving < 0)
        return kit_transcript_callback(m, more, nmore);
    int channel = serving;
    post(channel, m);
    depth++;
    serve(channel, WIRE_CALLBACK_DONE); /* the calls the test's function makes, meanwhile */
    depth--;
    serving = channel;
    if (requests[channel].nargs != 1 + nmore || nmore > KIT_WIRE_CALLBACK_MORE)
        _exit(3);
    for (uint32_t i = 0; i < nmore; i++)
        more[i] = requests[channel].arg[1 + i];
    return requests[channel].arg[0];
}

/* The structs a call in progress on this thread was handed (the generated
 * code's copies), and the word the judge named each by. */
enum { REFS = 8 };
static _Thread_local const void *ref_copy[REFS];
static _Thread_local uint64_t ref_judge[REFS];
static _Thread_local int nrefs;

void kit_serve_ref_push(const void *copy, uint64_t judge)
{
    if (nrefs < REFS) {
        ref_copy[nrefs] = copy;
        ref_judge[nrefs] = judge;
    }
    nrefs++;
}

void kit_serve_ref_pop(void)
{
    if (nrefs > 0)
        nrefs--;
}

void kit_serve_ref_out(kit_wire_t *m, const void *ref)
{
    uint64_t state = ref == NULL ? 0 : 2, judge = 0;
    for (int i = 0; ref != NULL && i < nrefs && i < REFS; i++)
        if (ref_copy[i] == ref) {
            state = 1;
            judge = ref_judge[i];
        }
    kit_wire_word(m, state);
    kit_wire_word(m, judge);
}

/* ---- the test's threads ------------------------------------------------------------------- */

static void *standin_main(void *raw)
{
    int channel = (int)(intptr_t)raw;
    post_kind(channel, WIRE_GO);
    serve(channel, WIRE_EXIT);
    return NULL;
}

int kit_serve_start_standin(int channel)
{
    if (channel <= 0 || channel >= KIT_WIRE_CHANNELS)
        return EINVAL;
    char name[16];
    snprintf(name, sizeof name, "test-%d", channel);
    if (kit_sched_active())
        return kit_sched_start_thread(&standins[channel], name, standin_main, (void *)(intptr_t)channel);
    return __real_pthread_create(&standins[channel], NULL, standin_main, (void *)(intptr_t)channel);
}

int kit_serve_join_standin(int channel, bool detach)
{
    if (channel <= 0 || channel >= KIT_WIRE_CHANNELS)
        return EINVAL;
    if (kit_sched_active())
        return detach ? pthread_detach(standins[channel]) : pthread_join(standins[channel], NULL);
    return detach ? __real_pthread_detach(standins[channel]) : __real_pthread_join(standins[channel], NULL);
}

/* ---- the test, off or on its schedule ---------------------------------------------------- */

static void main_standin(void **state)
{
    (void)state;
    kit_serve_forget_all();
    post_kind(0, WIRE_GO);
    serve(0, WIRE_END);
}

/* The test on its one schedule: written down from this program's copy of
 * it, if the chapter has it so (kit_transcript.c); else served, call by call. */
static void run_scheduled(const char *test, uint64_t seed)
{
    char reason[512] = "";
    bool passed = false;
    if (!kit_transcript_graded(test, seed, reason, sizeof reason, &passed))
        passed = kit_sched_run_test(test, main_standin, NULL, seed, reason, sizeof reason);
    kit_wire_t *m = &replies[0];
    kit_wire_begin(m, passed ? WIRE_RESULT : WIRE_RERUN, 0);
    kit_wire_word(m, passed ? 1 : kit_sched_saw_race());
    kit_wire_bytes(m, reason, strlen(reason) + 1);
    post(0, m);
}

/* ---- explorations -------------------------------------------------------------------------- */

static void body_standin(void *ctx)
{
    (void)ctx;
    kit_serve_forget_all();
    post_kind(0, WIRE_BODY);
    serve(0, WIRE_BODY_DONE);
}

const char *kit_sched_failed_schedule(void);

void kit_serve_result(bool passed, const kit_explore_result_t *result)
{
    kit_wire_t *m = &replies[0];
    kit_wire_begin(m, WIRE_RESULT, 0);
    uint64_t words[] = { passed, result->gave_up, result->deadlocked, (uint64_t)result->schedules, result->complete,
                         (uint64_t)result->interleavings };
    for (int i = 0; i < 6; i++)
        kit_wire_word(m, words[i]);
    kit_wire_bytes(m, result->message, strlen(result->message) + 1);
    kit_wire_bytes(m, result->token, strlen(result->token) + 1);
    kit_wire_bytes(m, kit_sched_failed_schedule(), strlen(kit_sched_failed_schedule()) + 1);
    post(0, m);
}

/* An exploration: the body runs here, written down for the judge, if this
 * program holds a copy of the test (kit_transcript.c); else in the judge,
 * which this side asks to run it once a schedule. */
static void serve_explore(const kit_wire_t *q)
{
    static char test[256], strategy[256];
    if (q->nargs != 8)
        _exit(3);
    snprintf(test, sizeof test, "%.255s", text_of(q, 0));
    snprintf(strategy, sizeof strategy, "%.255s", text_of(q, 1));
    kit_explore_t options = { .strategy = q->arg[5] ? strategy : NULL, .schedules = (long)q->arg[0],
                              .spurious = (int)q->arg[1], .timeouts_race = q->arg[2] != 0,
                              .max_steps = (long)q->arg[3], .quiet = q->arg[4] != 0 };
    if (q->arg[6] && kit_transcript_explore(test, (int)q->arg[7], &options))
        return;
    static kit_explore_result_t result;
    bool passed = kit_explore_search(test, &options, body_standin, NULL, &result);
    kit_serve_result(passed, &result);
}

/* ---- the program ---------------------------------------------------------------------------- */

int kit_symbolizer_start(void);
FILE *kit_symbolizer_popen(const char *command);
int kit_symbolizer_pclose(FILE *stream);
FILE *kit_symbolizer_fopen(const char *path);
FILE *kit_symbolizer_folder(const char *path);
bool kit_symbolizer_stacks(void);

static void confine_calls(bool filtered)
{
    if (!kit_seccomp_prepare(filtered))
        return;
    if (kit_symbolizer_start() == 0) { /* addr2line, the sources and gdb, from a helper */
        kit_sched_symbolizer = (kit_sched_symbolizer_t){ kit_symbolizer_popen, kit_symbolizer_pclose,
                                                         kit_symbolizer_fopen, kit_symbolizer_folder,
                                                         kit_sched_symbolizer.foreign };
        kit_stacks_helper = kit_symbolizer_stacks;
    }
    int err = kit_seccomp_install(KIT_WIRE_FD - 1, KIT_WIRE_CHANNELS + 1); /* the helper's, and the channels */
    if (err != 0) {
        fprintf(stderr, "[  ERROR   ] --- the code under test's process could not filter its system calls: %s\n",
                strerror(err));
        _exit(4);
    }
}

/* The judge's program - this one's file without ".subject" - where the
 * test's calls come from: the reports name their lines in it. */
static void name_the_judge(void)
{
    static char judge[4096];
    ssize_t n = readlink("/proc/self/exe", judge, sizeof judge - 1);
    if (n <= 0)
        return;
    judge[n] = '\0';
    char *suffix = strstr(judge, ".subject");
    if (suffix != NULL && suffix[strlen(".subject")] == '\0') {
        *suffix = '\0';
        kit_sched_symbolizer.foreign = judge;
    }
}

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "--serve") != 0 && strcmp(argv[1], "--serve-unfiltered") != 0)) {
        fprintf(stderr, "%s is the code under test's side of a test: its test program starts it\n", argv[0]);
        return 2;
    }
    /* The reports name the test program a student runs: the judge, not this one. */
    char *suffix = strstr(program_invocation_name, ".subject");
    if (suffix != NULL && suffix[strlen(".subject")] == '\0')
        *suffix = '\0';
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0); /* the runner's gdb, on a hang */
    kit_thread_set_name("main");
    kit_catch_crashes();
    kit_sched_report_first_runs();
    kit_sched_follow_test_paths();
    kit_wire_t *start = next_request(0);
    if (start->kind != WIRE_START || start->nargs != 2)
        return 3;
    char test[256];
    snprintf(test, sizeof test, "%.255s", text_of(start, 0));
    if (kit_chaos_from_env())
        fprintf(stderr, "[ chaos    ] KIT_CHAOS=%s\n", getenv("KIT_CHAOS"));
    name_the_judge();
    kit_transcript_register();
    confine_calls(strcmp(argv[1], "--serve") == 0);
    if (start->arg[0])
        run_scheduled(test, start->arg[1]);
    serve(0, WIRE_END);
    return 0;
}

/* ---- what the harness's own files need of a test program's main ---------------------------- */

void kit_verdict_end(bool passed)
{
    (void)passed; /* the subject has no token: the judge gives the verdict */
}

/* A test stopped here (a failed schedule, a misuse, a hang check), and the
 * subject ends next: its race, if it met one, is reported now, as one
 * process reports it, and said by the exit status - the judge can no longer ask. */
void kit_verdict_stopped(void)
{
    kit_sched_print_race();
    if (!kit_sched_saw_race())
        return;
    fflush(stdout);
    fflush(stderr);
    _exit(KIT_WIRE_EXIT_RACED);
}

const char *kit_last_error_text(void)
{
    size_t size;
    const char *kept = kit_sched_error_text(&size);
    return kept != NULL ? kept : "";
}

/* A check of the harness's that failed in the subject (a hang check of a
 * wait it serves): the words, then the subject ends, and the judge fails the test. */
void kit_fail_at(const char *file, int line, const char *format, ...)
{
    char message[2048];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    fprintf(stderr, "[  ERROR   ] --- %s\n[   LINE   ] --- %s:%d: error: Failure!\n", message, file, line);
    fflush(stderr);
    _exit(1);
}
