/**
 * @file kit_transcript.c
 * @brief An exploration whose body runs in the subject: the test's own copy,
 *        its calls going straight to the code under test, each schedule
 *        written down as the messages the judge's threads and their
 *        stand-ins would have exchanged, and sent to the judge in batches.
 *
 * DESIGN: a judged test program's subject links a copy of the test's source
 * (its main renamed, `kit_explore` made kit_transcript_explore_run here), in
 * which the chapter's calls are the judge's own proxies, generated, made
 * with the recording engine below instead of a channel, and the test's
 * pthread calls are recorded as the judge's wrappers would send them
 * (kit_transcript_sync.c). The explorer runs exactly as in one process: the
 * same schedules for the same seed, the same replay tokens. The judge
 * replays its own copy of the body against each transcript
 * (grader/judge/kit_judge_replay.c): its checks decide, as before. Nothing
 * here decides a verdict.
 */
#define _GNU_SOURCE
#include "kit_transcript.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kit_judge.h"
#include "kit_sched.h"
#include "kit_serve.h"
#include "kit_test.h"

/* The kit's own buffers, not the code under test's: not counted, never failed on purpose. */
void *__real_malloc(size_t size);
void __real_free(void *p);

/* ---- the test's copy ------------------------------------------------------------------ */

static const struct CMUnitTest *copy_tests; /* the copy's table, once registered */
static size_t copy_count;

/* The copy's KIT_TEST_MAIN calls this instead of running its tests. */
int kit_test_main(int argc, char **argv, const struct CMUnitTest *tests, size_t count, const char *file)
{
    (void)argc, (void)argv, (void)file;
    copy_tests = tests;
    copy_count = count;
    return 0;
}

/* The copy's main, renamed (none in a test program without explorations). */
int kit_transcript_copy_main(int argc, char **argv) __attribute__((weak));

void kit_transcript_register(void)
{
    if (kit_transcript_copy_main != NULL)
        kit_transcript_copy_main(0, NULL);
}

/* ---- the batch and its entries ----------------------------------------------------------
 * Only the schedule's threads write entries, one at a time (the explorer
 * runs one thread at a time): no lock guards them. */

/* This program is a judged test's (grader/harness/kit_test.c, kit_test_judged). */
const bool kit_judged_program = true;
bool kit_transcript_on;     /* a body on a schedule is being written down */
static kit_wire_t batch;    /* entries not yet sent */
static kit_wire_namer_t namer;

static void send_batch(void)
{
    if (batch.nbytes > 0 && kit_wire_send(KIT_WIRE_FD, &batch) != 0)
        _exit(0); /* the judge ended the test: nothing to tell it any more */
    kit_wire_begin(&batch, WIRE_TRANSCRIPT_BATCH, 0);
}

/* ---- a schedule's entries, held until its end ---------------------------------------------
 * An exploration's schedules often meet the judge's side in the same order
 * with the same answers, however differently they ran inside the code under
 * test. A schedule whose entries are, byte for byte, those of one sent whole
 * before is sent as one entry that says so (WIRE_TRANSCRIPT_REPEAT): the
 * judge counts it without running its copy of the body again, which would
 * make the same requests, take the same answers and decide the same. */

static void put_entry(int channel, bool answer, const kit_wire_t *m);
static bool staging;          /* the schedule's entries wait in staged, not in the batch */
static unsigned char *staged; /* its entries, encoded as in a batch, one after another */
static size_t staged_size, staged_room;
static uint32_t *entry_sizes; /* each staged entry's bytes */
static size_t entries, entries_room;
static uint64_t *sums;        /* the sums of the schedules sent whole (0: a free slot) */
static size_t sums_room, sums_count;

static void *grown(void *old, size_t used, size_t room)
{
    void *bigger = __real_malloc(room);
    if (bigger == NULL) {
        fprintf(stderr, "[  ERROR   ] --- the code under test's process is out of memory for a transcript\n");
        _exit(3);
    }
    if (used > 0)
        memcpy(bigger, old, used);
    __real_free(old);
    return bigger;
}

/* One entry, encoded alone in @p one, added to the staged ones. */
static void stage(const kit_wire_t *one)
{
    if (staged_size + one->nbytes > staged_room) {
        size_t room = 2 * staged_room + KIT_WIRE_BLOB;
        staged = grown(staged, staged_size, room);
        staged_room = room;
    }
    if (entries == entries_room) {
        size_t room = 2 * entries_room + 1024;
        entry_sizes = grown(entry_sizes, entries * sizeof *entry_sizes, room * sizeof *entry_sizes);
        entries_room = room;
    }
    memcpy(staged + staged_size, one->blob, one->nbytes);
    staged_size += one->nbytes;
    entry_sizes[entries++] = one->nbytes;
}

/* The staged entries, into the batch (sent whenever it fills). */
static void unstage(void)
{
    size_t at = 0;
    for (size_t i = 0; i < entries; i++) {
        if (entry_sizes[i] > KIT_WIRE_BLOB - batch.nbytes)
            send_batch();
        kit_wire_bytes(&batch, staged + at, entry_sizes[i]);
        at += entry_sizes[i];
    }
    staged_size = entries = 0;
}

/* Whether a schedule whose staged entries have the sum @p sum was sent
 * whole before; if not, it is remembered now. */
static bool sent_before(uint64_t sum)
{
    if (2 * (sums_count + 1) > sums_room) { /* kept at most half full: every probe ends at a free slot */
        uint64_t *old = sums;
        size_t old_room = sums_room;
        sums_room = old_room ? 2 * old_room : 4096;
        sums = grown(NULL, 0, sums_room * sizeof *sums);
        memset(sums, 0, sums_room * sizeof *sums);
        sums_count = 0;
        for (size_t i = 0; i < old_room; i++)
            if (old[i] != 0)
                sent_before(old[i]);
        __real_free(old);
    }
    size_t i = (size_t)sum & (sums_room - 1);
    for (; sums[i] != 0; i = (i + 1) & (sums_room - 1))
        if (sums[i] == sum)
            return true;
    sums[i] = sum;
    sums_count++;
    return false;
}

/* A schedule's end: its entries, or the one entry that says they repeat a schedule sent whole before. */
static void schedule_done(void)
{
    uint64_t sum = 14695981039346656037ULL; /* FNV-1a, eight bytes at a time */
    size_t i = 0;
    for (; i + 8 <= staged_size; i += 8) {
        uint64_t word;
        memcpy(&word, staged + i, sizeof word);
        sum = (sum ^ word) * 1099511628211ULL;
        sum ^= sum >> 29; /* (the high bits of each word reach the low ones) */
    }
    for (; i < staged_size; i++)
        sum = (sum ^ staged[i]) * 1099511628211ULL;
    if (!sent_before(sum != 0 ? sum : 1)) {
        unstage();
        return;
    }
    staged_size = entries = 0;
    staging = false;
    kit_transcript_put(0, true, kit_judge_begin(WIRE_TRANSCRIPT_REPEAT, 0));
}

/* A failed schedule the explorer does not report (a replay whose token
 * does not fit this program; kit_sched_drop_schedule): its entries, still
 * staged, are dropped - the judge never sees it, and counts the schedules
 * after it as the subject does. */
static bool drop_schedule(unsigned long schedule)
{
    (void)schedule; /* (the entries staged are the schedule under way's) */
    if (!staging)
        return false;
    staged_size = entries = 0;
    return true;
}

void kit_transcript_flush(void)
{
    if (!kit_transcript_on)
        return;
    unstage();
    send_batch();
}

/* The chapter's words that carry items, and its functions of the test's
 * (its generated recorders, linked with the copy of a test): none without. */
extern const kit_wire_items_t kit_wire_chapter_items __attribute__((weak));
extern const kit_judge_callback_type_t kit_judge_callback_types[] __attribute__((weak));
extern const int kit_judge_ncallback_types __attribute__((weak));
/* (the judge's bookkeeping of structs in calls in progress, linked with a copy of the test) */
void judge_refs_forget(void) __attribute__((weak));

void kit_transcript_put(int channel, bool answer, kit_wire_t *m)
{
    uint32_t names = answer && m->kind != WIRE_CALLBACK ? 0 : kit_wire_names(m, &kit_wire_chapter_items);
    kit_transcript_put_named(channel, answer, m, names);
}

/* The entry, with the words @p names of @p m written as names; @p m itself
 * keeps its words (the copy goes on with its own pointers). */
void kit_transcript_put_named(int channel, bool answer, kit_wire_t *m, uint32_t names)
{
    uint64_t words[KIT_WIRE_ARGS];
    memcpy(words, m->arg, sizeof words);
    kit_wire_rename(&namer, m, names);
    put_entry(channel, answer, m);
    memcpy(m->arg, words, sizeof words);
}

/* A failing schedule run again for its report's lines (the explorer's
 * report run): the judge has its transcript already, from its first run. */
static bool rerun;

static void put_entry(int channel, bool answer, const kit_wire_t *m)
{
    if (rerun)
        return; /* (written down once, as it first ran) */
    if (staging) {
        static kit_wire_t one; /* (the schedule's threads write entries one at a time) */
        kit_wire_begin(&one, 0, 0);
        if (!kit_wire_entry_put(&one, (uint32_t)channel, answer, m)) {
            fprintf(stderr, "[  ERROR   ] --- a message of %u bytes does not fit a transcript's batch\n", m->nbytes);
            _exit(3);
        }
        stage(&one);
        return;
    }
    if (kit_wire_entry_put(&batch, (uint32_t)channel, answer, m))
        return;
    send_batch();
    if (!kit_wire_entry_put(&batch, (uint32_t)channel, answer, m)) {
        fprintf(stderr, "[  ERROR   ] --- a message of %u bytes does not fit a transcript's batch\n", m->nbytes);
        _exit(3);
    }
}

/* ---- the recording engine the copy's proxies call (kit_judge.h's names) ------------------ */

/* This thread's buffers, made on first use: its requests, and its answers
 * by depth - a call that calls a function of the test's back waits for its
 * own answer while that function's calls are answered (depth 1 and on). */
enum { DEPTHS = 4 };
static _Thread_local kit_wire_t *my_request, *my_answer[DEPTHS];
static _Thread_local int depth; /* functions of the test's under way on this thread */

/* The buffers of the threads that ended, kept for the next: a schedule
 * starts and ends its threads by the thousand, and a buffer as big as a
 * message, freed and made again each time, costs the heap's top pages each
 * time. Guarded by spare_lock (a thread's end may be on real threads). */
enum { SPARES = 2 * KIT_WIRE_CHANNELS };
static kit_wire_t *spares[SPARES];
static int spare_count;
static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;
int __real_pthread_mutex_lock(pthread_mutex_t *mutex);
int __real_pthread_mutex_unlock(pthread_mutex_t *mutex);

static kit_wire_t *made(kit_wire_t **m)
{
    if (*m != NULL)
        return *m;
    __real_pthread_mutex_lock(&spare_lock);
    if (spare_count > 0)
        *m = spares[--spare_count];
    __real_pthread_mutex_unlock(&spare_lock);
    if (*m == NULL && (*m = __real_malloc(sizeof **m)) == NULL) {
        fprintf(stderr, "[  ERROR   ] --- the code under test's process is out of memory for a transcript\n");
        _exit(3);
    }
    return *m;
}

static void keep_spare(kit_wire_t **m)
{
    __real_pthread_mutex_lock(&spare_lock);
    if (*m != NULL && spare_count < SPARES) {
        spares[spare_count++] = *m;
        *m = NULL;
    }
    __real_pthread_mutex_unlock(&spare_lock);
    __real_free(*m);
    *m = NULL;
}

void kit_transcript_thread_done(void)
{
    keep_spare(&my_request);
    for (int d = 0; d < DEPTHS; d++)
        keep_spare(&my_answer[d]);
}

kit_wire_t *kit_judge_begin(uint32_t kind, uint32_t op)
{
    kit_wire_t *m = made(&my_request);
    kit_wire_begin(m, kind, op);
    return m;
}

void kit_judge_word(kit_wire_t *m, uint64_t word)
{
    if (!kit_wire_word(m, word))
        kit_judge_violation("a call of too many arguments");
}

void kit_judge_bytes(kit_wire_t *m, const void *bytes, size_t size, const char *what)
{
    if (!kit_wire_bytes(m, bytes, size))
        kit_judge_violation("%s: %zu bytes, more than one message carries", what, size);
}

/* The call made here, on the code under test; on a schedule being written
 * down, its request and its answer are the transcript's next entries. */
const kit_wire_t *kit_judge_call(kit_wire_t *m, uint32_t words, uint32_t bytes)
{
    int channel = kit_transcript_channel();
    uint32_t op = m->op;
    if (channel >= 0)
        kit_transcript_put(channel, false, m);
    kit_wire_t *r = made(&my_answer[depth]);
    kit_wire_begin(r, WIRE_REPLY, op);
    if (m->kind != WIRE_CALL || op >= (uint32_t)kit_serve_nops || m->nargs != kit_serve_ops[op].words ||
        !kit_serve_ops[op].serve(m, r) || r->nargs != words || r->nbytes != bytes)
        kit_judge_violation("a call the table of the chapter's calls cannot make (op %u)", op);
    const kit_wire_items_t *items = &kit_wire_chapter_items;
    if (channel >= 0)
        kit_transcript_put_named(channel, true, r, items != NULL && op < (uint32_t)items->nops ? items->reply[op] : 0);
    return r;
}

/* ---- a function of the test's, called back by the code under test ---------------------------
 * On a schedule written down, the stand-in the code under test calls (the
 * generated serve table's) is answered here: its call is the transcript's
 * next answer, as the judge would have read it; the copy's own function runs
 * on this thread, its calls written down as any; its return is the request
 * the judge's thread would have sent. The judge runs its own function there
 * and meets each of them: a copy's function that did otherwise is caught. */

kit_wire_t *kit_transcript_callback_begin(uint32_t type, uint64_t id)
{
    if (depth >= DEPTHS - 1) {
        fprintf(stderr, "[  ERROR   ] --- the code under test called the test's functions back %d deep (each from "
                        "the one before): more than the judge serves\n", depth + 1);
        fflush(stderr);
        _exit(1);
    }
    kit_wire_t *m = made(&my_answer[depth + 1]);
    kit_wire_begin(m, WIRE_CALLBACK, type);
    kit_wire_word(m, id);
    return m;
}

uint64_t kit_transcript_callback(kit_wire_t *m, uint64_t *more, uint32_t nmore)
{
    int channel = kit_transcript_channel();
    uint64_t arg[KIT_WIRE_ARGS];
    unsigned char blob[256];
    uint32_t nargs = m->nargs, type = m->op, nbytes = m->nbytes < sizeof blob ? m->nbytes : sizeof blob;
    memcpy(arg, m->arg, sizeof arg);
    memcpy(blob, m->blob, nbytes);
    kit_transcript_put(channel, true, m);
    if (&kit_judge_ncallback_types == NULL || type >= (uint32_t)kit_judge_ncallback_types)
        kit_judge_violation("a function of the test's of a type the chapter's table does not have (%u)", type);
    if (nmore != kit_judge_callback_types[type].nmore || nmore > KIT_WIRE_CALLBACK_MORE)
        kit_judge_violation("a function of the test's answered with %u words where its table says %u", nmore,
                            kit_judge_callback_types[type].nmore);
    depth++;
    uint64_t ret = kit_judge_callback_types[type].run(arg, nargs, blob, nbytes, more);
    depth--;
    kit_wire_t *done = kit_judge_begin(WIRE_CALLBACK_DONE, type);
    kit_wire_word(done, ret);
    for (uint32_t i = 0; i < nmore; i++)
        kit_wire_word(done, more[i]);
    kit_transcript_put(channel, false, done);
    return ret;
}

/* (the judge's, for the line a failed check names: the copy's calls are placed by the explorer itself) */
void kit_judge_note_site(const void *site)
{
    (void)site;
}

/* (the judge's, for its bookkeeping of structs in calls in progress: the copy's threads' channels) */
int judge_channel(void)
{
    return kit_transcript_channel();
}

/* (the judge's, for its engine: the copy's functions are run above, not from a message) */
void kit_judge_post(kit_wire_t *m)
{
    int channel = kit_transcript_channel();
    if (channel >= 0)
        kit_transcript_put(channel, false, m);
}

uint64_t kit_judge_handle_out(const void *handle)
{
    return (uint64_t)(uintptr_t)handle;
}

void *kit_judge_handle_in(uint64_t value)
{
    return (void *)(uintptr_t)value;
}

void kit_judge_defined(const void *bytes, size_t size)
{
    (void)bytes, (void)size;
}

/* The pointers the copy handed the code under test (open addressing, 0 a
 * free place): an item given back or handed to a function of the test's
 * that is none of them fails the copy's test where it fails the judge's
 * (kit_judge_item_in), the same check on the same answer. Guarded by
 * handed_lock (the copy's threads run one at a time, but are real threads). */
static uint64_t *handed;
static size_t handed_room, handed_count;
static pthread_mutex_t handed_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t handed_place(const uint64_t *table, size_t room, uint64_t value)
{
    size_t i = (size_t)(value * 0x9e3779b97f4a7c15ULL) & (room - 1);
    while (table[i] != 0 && table[i] != value)
        i = (i + 1) & (room - 1);
    return i;
}

void kit_judge_pointer_out(const void *pointer)
{
    uint64_t value = (uint64_t)(uintptr_t)pointer;
    if (value == 0)
        return;
    __real_pthread_mutex_lock(&handed_lock);
    if (2 * (handed_count + 1) > handed_room) { /* kept at most half full: every probe ends at a free place */
        size_t room = handed_room ? 2 * handed_room : 1024;
        uint64_t *table = grown(NULL, 0, room * sizeof *table);
        memset(table, 0, room * sizeof *table);
        for (size_t i = 0; i < handed_room; i++)
            if (handed[i] != 0)
                table[handed_place(table, room, handed[i])] = handed[i];
        __real_free(handed);
        handed = table;
        handed_room = room;
    }
    size_t i = handed_place(handed, handed_room, value);
    handed_count += handed[i] == 0;
    handed[i] = value;
    __real_pthread_mutex_unlock(&handed_lock);
}

bool judge_pointer_sent(uint64_t value)
{
    __real_pthread_mutex_lock(&handed_lock);
    bool known = handed_room > 0 && handed[handed_place(handed, handed_room, value)] == value;
    __real_pthread_mutex_unlock(&handed_lock);
    return known;
}

void *kit_judge_pointer_in(const void *pointer)
{
    return (void *)(uintptr_t)pointer; /* (the subject's copy holds what the code under test gave back) */
}

bool judge_value_made_up(uint64_t word)
{
    (void)word;
    return false; /* (the subject's copy holds the code under test's own values) */
}

/* What the copy met here, the judge's copy meets too: what is written down
 * so far goes first (a function of the test's by an id never handed out is
 * the judge's to flag), then the subject ends. */
void kit_judge_violation(const char *format, ...)
{
    kit_transcript_flush();
    va_list args;
    va_start(args, format);
    fprintf(stderr, "[  ERROR   ] --- the test's copy in the code under test's process: ");
    vfprintf(stderr, format, args);
    fprintf(stderr, "\n");
    va_end(args);
    _exit(3);
}

/* ---- an exploration of the copy's --------------------------------------------------------- */

static jmp_buf copy_done;             /* back to the server once the exploration asked for ended */
static const char *asked_test;        /* the test the judge asked to explore */
static int asked_ordinal, ordinal;    /* ... its exploration of that number (0: its first); the copy's count */
static kit_explore_t asked_options;   /* ... with the judge's options */
static bool explored;

struct job {
    void (*body)(void *ctx);
    void *ctx;
};

/* One schedule of the body, written down from its start (the judge's WIRE_BODY) to its end. */
static void written_body(void *raw)
{
    struct job *job = raw;
    unstage(); /* (a schedule left before its end: sent as it is) */
    rerun = kit_sched_running_again();
    staging = true;
    kit_transcript_begin_body();
    kit_wire_namer_reset(&namer);
    if (judge_refs_forget != NULL)
        judge_refs_forget();
    kit_wire_t *m = kit_judge_begin(WIRE_BODY, 0);
    kit_transcript_put(0, true, m);
    job->body(job->ctx);
    kit_transcript_put(0, false, kit_judge_begin(WIRE_BODY_DONE, 0));
    if (!rerun)
        schedule_done();
    staging = false;
    kit_transcript_on = false;
    kit_transcript_thread_done(); /* (each schedule's body runs on a thread of its own) */
}

void kit_transcript_explore_run(const char *test, const char *file, int line, const kit_explore_t *options,
                                void (*body)(void *ctx), void *ctx)
{
    (void)file, (void)line, (void)options;
    if (asked_test == NULL || strcmp(test, asked_test) != 0 || ordinal++ != asked_ordinal)
        return; /* (an exploration the judge did not ask for now) */
    struct job job = { body, ctx };
    static kit_explore_result_t result;
    kit_wire_begin(&batch, WIRE_TRANSCRIPT_BATCH, 0);
    if (sums != NULL)
        memset(sums, 0, sums_room * sizeof *sums); /* a repeat is of this exploration's schedules only */
    sums_count = 0;
    kit_sched_drop_schedule = drop_schedule;
    kit_sched_report_runs_again(true); /* the body runs here: its failing schedule can run again, unwritten */
    bool passed = kit_explore_search(test, &asked_options, written_body, &job, &result);
    kit_sched_report_runs_again(false);
    kit_sched_drop_schedule = NULL;
    kit_transcript_on = false;
    rerun = false;
    staging = false;
    unstage();
    send_batch();
    kit_serve_result(passed, &result);
    explored = true;
    longjmp(copy_done, 1);
}

/* The copy's test function, until its exploration is done: kit_transcript_explore_run jumps back here. */
static void run_copy(void (*test_func)(void **state))
{
    if (setjmp(copy_done) == 0) {
        void *state = NULL;
        test_func(&state);
    }
}

bool kit_transcript_explore(const char *test, int number, const kit_explore_t *options)
{
    const struct CMUnitTest *found = NULL;
    for (size_t i = 0; i < copy_count && found == NULL; i++)
        if (strcmp(copy_tests[i].name, test) == 0)
            found = &copy_tests[i];
    if (found == NULL)
        return false; /* no copy of it here: the judge runs the body, asking once a schedule */
    asked_test = test;
    asked_ordinal = number;
    ordinal = 0;
    asked_options = *options;
    explored = false;
    run_copy(found->test_func);
    asked_test = NULL;
    if (!explored) {
        kit_explore_result_t none = { .failed = true };
        snprintf(none.message, sizeof none.message, "the test's copy explored nothing");
        kit_serve_result(false, &none);
    }
    return true;
}

/* ---- a graded test of the copy's, on its one schedule ------------------------------------- */

/* The copy's tests written down on their schedule (kit_transcript_written.h), if any. */
extern const char kit_transcript_written[] __attribute__((weak));

static bool listed(const char *test)
{
    if (kit_transcript_written == NULL)
        return false;
    size_t n = strlen(test);
    for (const char *at = kit_transcript_written; (at = strstr(at, test)) != NULL; at += n)
        if ((at == kit_transcript_written || at[-1] == ' ') && (at[n] == ' ' || at[n] == '\0'))
            return true;
    return false;
}

static const struct CMUnitTest *graded; /* the copy's test being written down */

/* The schedule's first thread: the judge's main thread's part, written down from its go to the test's end. */
static void written_test(void **state)
{
    (void)state;
    kit_serve_forget_all();
    kit_transcript_begin_body();
    kit_wire_namer_reset(&namer);
    if (judge_refs_forget != NULL)
        judge_refs_forget();
    kit_transcript_put(0, true, kit_judge_begin(WIRE_GO, 0));
    void *copy_state = NULL;
    graded->test_func(&copy_state);
    kit_transcript_on = false;
}

bool kit_transcript_graded(const char *test, uint64_t seed, char *reason, size_t size, bool *passed)
{
    graded = NULL;
    for (size_t i = 0; i < copy_count && graded == NULL && listed(test); i++)
        if (strcmp(copy_tests[i].name, test) == 0)
            graded = &copy_tests[i];
    if (graded == NULL)
        return false; /* not written down: the judge runs it, asking once a call */
    kit_wire_begin(&batch, WIRE_TRANSCRIPT_BATCH, 0);
    *passed = kit_sched_run_test(test, written_test, NULL, seed, reason, size);
    kit_transcript_on = false;
    send_batch();
    return true;
}

/* The copy's failed check: what was written down goes first, for the
 * judge's copy to meet the same check; then the harness's report. */
void kit_transcript_copy_fail(const char *file, int line) __attribute__((weak));
void kit_transcript_fail(const char *file, int line);
void kit_transcript_fail(const char *file, int line)
{
    kit_transcript_flush();
    if (kit_transcript_copy_fail != NULL)
        kit_transcript_copy_fail(file, line);
    _exit(1);
}

/* The copy's harness ends the process (a failed check with threads still
 * running): as the subject's own stop does (kit_serve.c), a race the test
 * met is said by the status, for the judge to know it once the subject is gone. */
_Noreturn void kit_transcript_exit(int status);
_Noreturn void kit_transcript_exit(int status)
{
    if (status == 1 && kit_sched_saw_race())
        status = KIT_WIRE_EXIT_RACED;
    _exit(status);
}

void kit_transcript_real_fail(const char *file, int line);
void kit_transcript_real_fail(const char *file, int line)
{
    (void)file, (void)line;
    _exit(1);
}

