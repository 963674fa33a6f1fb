/**
 * @file rwl_scenarios.c
 * @brief Chapter 08's generated scenarios (kit_scenario.h): the lock's sequential
 *        model, the calls a scenario draws, and how each is printed.
 *
 * Apart from the test that runs them, so that both sides of a judged test
 * link the same spec: the judge draws and checks with it (its model and its
 * printing), the subject makes its calls on the object under test.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <stdlib.h>

#include "kit_sched.h"
#include "kit_time.h"
#include "kit_errno.h"
#include "kit_scenario.h"
#include "rwl.h"

/* ---- Generated scenarios (kit_scenario.h) ------------------------------------------------
 * The lock's sequential model: each thread's read holds, and who writes. A
 * call takes effect if the model allows what it returned; each thread gives
 * back what it took before it ends (kit_op_t.undone_by), so a call still
 * asleep when nothing else can move waits only for what the test's thread
 * holds - or it missed its wake-up. A writer asleep holds new readers back
 * (kit_op_t.asleep). Timeouts race the unlocks that should end them. */

enum { READ, READ_TIMED, WRITE, WRITE_TIMED, READ_UNLOCK, WRITE_UNLOCK, PROBE };
enum { READERS = 1, WRITERS, UNLOCKS }; /* the groups of the shapes */
enum { THREADS = 5 };                   /* the test's thread and four more */

struct lock_model {
    unsigned char reads[THREADS]; /* each thread's read holds */
    unsigned char writer;         /* 1 + the thread that writes; 0: nobody */
    unsigned char asleep_writers; /* writers still asleep at the end */
};

/* The lock, and what the test's own thread holds of it. */
struct lock_scene {
    rwl_t *l;
    pthread_t test_thread;     /* the scenario's own thread, which release unlocks for */
    int test_reads;            /* ... its read holds */
    bool test_writes;
};

static void free_lock(long param, void *state)
{
    (void)param;
    memset(state, 0, sizeof(struct lock_model));
}

static void *make_lock(long param, void *state)
{
    free_lock(param, state);
    struct lock_scene *s = calloc(1, sizeof *s);
    kit_explore_check(s != NULL, "out of memory");
    s->test_thread = pthread_self();
    errno = rwl_create(&s->l);
    if (errno != 0) {
        free(s);
        return NULL;
    }
    return s;
}

/* What the test's own thread took before the threads started, given back:
 * the sleepers it held back may then go. */
static void release_lock(void *raw)
{
    struct lock_scene *s = raw;
    for (; s->test_reads > 0; s->test_reads--)
        explore_ok(rwl_read_unlock(s->l));
    if (s->test_writes)
        explore_ok(rwl_write_unlock(s->l));
    s->test_writes = false;
}

static void destroy_lock(void *raw)
{
    struct lock_scene *s = raw;
    rwl_destroy(s->l);
    free(s);
}

static bool on_test_thread(const struct lock_scene *s)
{
    return pthread_equal(pthread_self(), s->test_thread);
}

static int lock_call(struct lock_scene *s, int op, long timeout_ms)
{
    bool write = op == WRITE || op == WRITE_TIMED;
    int err = op == READ ? rwl_read_lock(s->l)
            : op == READ_TIMED ? rwl_read_lock_timed(s->l, timeout_ms)
            : op == WRITE ? rwl_write_lock(s->l) : rwl_write_lock_timed(s->l, timeout_ms);
    if (err == 0 && on_test_thread(s)) {
        s->test_reads += !write;
        s->test_writes |= write;
    }
    return err;
}

static int unlock_call(struct lock_scene *s, int op)
{
    int err = op == READ_UNLOCK ? rwl_read_unlock(s->l) : rwl_write_unlock(s->l);
    if (err == 0 && on_test_thread(s)) {
        if (op == READ_UNLOCK)
            s->test_reads--;
        else
            s->test_writes = false;
    }
    return err;
}

/* Once nothing else can move: rwl_write_lock_timed(l, 0) on the test's
 * thread, given back at once if taken - is the lock free, as the model says? */
static int probe(struct lock_scene *s)
{
    int err = rwl_write_lock_timed(s->l, 0);
    if (err == 0)
        explore_ok(rwl_write_unlock(s->l));
    return err;
}

static int run_lock_call(void *raw, int op, long timeout_ms)
{
    struct lock_scene *s = raw;
    if (op == PROBE)
        return probe(s);
    if (op == READ_UNLOCK || op == WRITE_UNLOCK)
        return unlock_call(s, op);
    return lock_call(s, op, timeout_ms);
}

#define RUN_AS(name, op)                                                                                   \
    static int name(void *s, long id, long timeout_ms, long *out)                                          \
    {                                                                                                      \
        (void)id;                                                                                          \
        *out = 0;                                                                                          \
        return run_lock_call(s, op, timeout_ms);                                                           \
    }
RUN_AS(run_read, READ)
RUN_AS(run_read_timed, READ_TIMED)
RUN_AS(run_write, WRITE)
RUN_AS(run_write_timed, WRITE_TIMED)
RUN_AS(run_read_unlock, READ_UNLOCK)
RUN_AS(run_write_unlock, WRITE_UNLOCK)
RUN_AS(run_probe, PROBE)

/* ---- The model ---- */

static bool holds_any(const struct lock_model *m, int thread)
{
    return m->reads[thread] > 0 || m->writer == thread + 1;
}

/* Whether a thread other than @p thread holds the lock, in either mode. */
static bool others_hold(const struct lock_model *m, int thread)
{
    for (int t = 0; t < THREADS; t++)
        if (t != thread && holds_any(m, t))
            return true;
    return false;
}

/* A writer of another thread was inside its write lock call at the timed
 * call's deadline, waiting or about to write: from the history's record of
 * when each call began and ended (kit_scenario_calls). */
static bool writer_at_deadline(const kit_call_t *call)
{
    int count = 0;
    const kit_call_t *calls = kit_scenario_calls(&count);
    int64_t deadline = call->started_ns + call->timeout_ms * 1000000LL;
    for (int i = 0; i < count; i++) {
        const kit_call_t *c = &calls[i];
        bool write = c->op == WRITE || c->op == WRITE_TIMED;
        if (write && c->invoked >= 0 && c->thread != call->thread && c->started_ns <= deadline &&
            (c->responded < 0 || c->ended_ns >= deadline))
            return true;
    }
    return false;
}

static bool read_takes_effect(void *state, const kit_call_t *call)
{
    struct lock_model *m = state;
    int t = call->thread;
    if (m->writer == t + 1)
        return call->ret == EDEADLK;
    if (m->reads[t] > 0 || (call->ret == 0 && m->writer == 0)) {
        m->reads[t]++; /* again at once, writer waiting or not; or a free lock */
        return call->ret == 0;
    }
    return call->ret == ETIMEDOUT && call->op == READ_TIMED && (m->writer != 0 || writer_at_deadline(call));
}

static bool write_takes_effect(void *state, const kit_call_t *call)
{
    struct lock_model *m = state;
    int t = call->thread;
    if (holds_any(m, t))
        return call->ret == EDEADLK;
    if (!others_hold(m, t) && call->ret == 0) {
        m->writer = (unsigned char)(t + 1);
        return true;
    }
    return call->ret == ETIMEDOUT && call->op == WRITE_TIMED && others_hold(m, t);
}

static bool read_unlock_takes_effect(void *state, const kit_call_t *call)
{
    struct lock_model *m = state;
    if (m->reads[call->thread] == 0)
        return call->ret == EPERM;
    m->reads[call->thread]--;
    return call->ret == 0;
}

static bool write_unlock_takes_effect(void *state, const kit_call_t *call)
{
    struct lock_model *m = state;
    if (m->writer != call->thread + 1)
        return call->ret == EPERM;
    m->writer = 0;
    return call->ret == 0;
}

static bool probe_takes_effect(void *state, const kit_call_t *call)
{
    const struct lock_model *m = state;
    if (holds_any(m, call->thread))
        return call->ret == EDEADLK;
    return call->ret == (others_hold(m, call->thread) ? ETIMEDOUT : 0);
}

/* A reader waits while a writer writes or waits; never for a lock it reads already, nor one it writes (EDEADLK). */
static bool read_waits(const void *state, const kit_call_t *call)
{
    const struct lock_model *m = state;
    return !holds_any(m, call->thread) && (m->writer != 0 || m->asleep_writers > 0);
}

/* A writer waits while anyone else holds the lock; never for one it holds itself (EDEADLK). */
static bool write_waits(const void *state, const kit_call_t *call)
{
    const struct lock_model *m = state;
    return !holds_any(m, call->thread) && others_hold(m, call->thread);
}

static bool never_waits(const void *state, const kit_call_t *call)
{
    (void)state;
    (void)call;
    return false;
}

static void writer_asleep(void *state, const kit_call_t *call)
{
    (void)call;
    ((struct lock_model *)state)->asleep_writers++;
}

/* ---- Printing ---- */

static void print_create(long param, char *text, size_t size)
{
    (void)param;
    snprintf(text, size, "rwl_t *l; rwl_create(&l)");
}

static void print_call(const kit_call_t *call, const char *name, char *text, size_t size)
{
    if (call->op == READ_TIMED || call->op == WRITE_TIMED)
        snprintf(text, size, "%s(l, %ld)", name, call->timeout_ms);
    else if (call->op == PROBE)
        snprintf(text, size, "rwl_write_lock_timed(l, 0), then rwl_write_unlock(l) if taken");
    else
        snprintf(text, size, "%s(l)", name);
}

static void print_out(const kit_call_t *call, char *text, size_t size)
{
    snprintf(text, size, "-> %s", call->ret == 0 ? "0" : kit_errno_name(call->ret));
}

static void print_state(const void *state, char *text, size_t size)
{
    const struct lock_model *m = state;
    if (m->writer != 0) {
        snprintf(text, size, "%s holds the write lock", m->writer == 1 ? "the test's thread" : "a thread");
        return;
    }
    int at = 0, readers = 0;
    for (int t = 0; t < THREADS; t++)
        readers += m->reads[t] > 0;
    if (readers == 0)
        at = snprintf(text, size, "the lock is free");
    else
        at = snprintf(text, size, "%d thread%s read%s", readers, readers == 1 ? "" : "s", readers == 1 ? "s" : "");
    if (m->asleep_writers > 0 && at < (int)size)
        snprintf(text + at, size - (size_t)at, ", and %d writer%s asleep", m->asleep_writers,
                 m->asleep_writers == 1 ? " is" : "s are");
}

/* A lock call of a thread that holds the lock already never waits: a read
 * goes in at once (a writer waiting waits for this very thread), a write is
 * refused. A call of such a thread still asleep began a wait it never
 * should have: the words for the check's message. */
static bool holder_never_waits(const void *state, const kit_call_t *call, char *text, size_t size)
{
    const struct lock_model *m = state;
    bool locks = call->op == READ || call->op == READ_TIMED || call->op == WRITE || call->op == WRITE_TIMED;
    if (!locks || !holds_any(m, call->thread))
        return false;
    char self = (char)('A' + call->thread - 1);
    if (m->writer == call->thread + 1)
        snprintf(text, size, "%c holds the write lock: the header refuses its lock call at once with EDEADLK (it "
                 "would wait for itself)", self);
    else if (call->op == READ || call->op == READ_TIMED)
        snprintf(text, size, "%c reads already (it holds %d read lock%s), and the header lets a thread that reads "
                 "already in at once, even while a writer waits: that writer waits for %c's own read locks to "
                 "end, so neither can move", self, m->reads[call->thread], m->reads[call->thread] == 1 ? "" : "s",
                 self);
    else
        snprintf(text, size, "%c reads: the header refuses its write lock at once with EDEADLK (it would wait "
                 "for its own read lock to end)", self);
    return true;
}

#define READ_RULE                                                                                          \
    "rwl_read_lock: 0 once no writer holds or waits (at once for a thread that reads already); EDEADLK for " \
    "a thread that writes; timed: ETIMEDOUT only if a writer still held or waited at the deadline"
#define WRITE_RULE                                                                                         \
    "rwl_write_lock: 0 once nobody else holds the lock; EDEADLK for a thread that holds it; timed: "        \
    "ETIMEDOUT only if some thread still held it at the deadline - and the writer that gives up lets in "  \
    "whoever it held back"

static const kit_op_t lock_ops[] = {
    [READ] = { .name = "rwl_read_lock", .weight = 3, .group = READERS, .undone_by = KIT_OP(READ_UNLOCK),
               .run = run_read, .take_effect = read_takes_effect, .waits = read_waits, .rule = READ_RULE },
    [READ_TIMED] = { .name = "rwl_read_lock_timed", .weight = 2, .group = READERS, .timed = true,
                     .undone_by = KIT_OP(READ_UNLOCK), .run = run_read_timed, .take_effect = read_takes_effect,
                     .waits = read_waits, .rule = READ_RULE },
    [WRITE] = { .name = "rwl_write_lock", .weight = 3, .group = WRITERS, .undone_by = KIT_OP(WRITE_UNLOCK),
                .run = run_write, .take_effect = write_takes_effect, .waits = write_waits,
                .asleep = writer_asleep, .rule = WRITE_RULE },
    [WRITE_TIMED] = { .name = "rwl_write_lock_timed", .weight = 2, .group = WRITERS, .timed = true,
                      .undone_by = KIT_OP(WRITE_UNLOCK), .run = run_write_timed, .take_effect = write_takes_effect,
                      .waits = write_waits, .asleep = writer_asleep, .rule = WRITE_RULE },
    [READ_UNLOCK] = { .name = "rwl_read_unlock", .weight = 1, .group = UNLOCKS, .run = run_read_unlock,
                      .take_effect = read_unlock_takes_effect, .waits = never_waits,
                      .rule = "rwl_read_unlock: 0, one read hold of the calling thread given back (the last "
                              "reader out lets a writer in); EPERM for a thread that does not read" },
    [WRITE_UNLOCK] = { .name = "rwl_write_unlock", .weight = 1, .group = UNLOCKS, .run = run_write_unlock,
                       .take_effect = write_unlock_takes_effect, .waits = never_waits,
                       .rule = "rwl_write_unlock: 0, and the next writer, or every waiting reader, goes; EPERM "
                               "for a thread that does not write" },
    [PROBE] = { .name = "rwl_write_lock_timed", .weight = 0, .post = true, .run = run_probe,
                .take_effect = probe_takes_effect, .waits = never_waits,
                .rule = "once every thread has given back what it took, the lock is free: a write lock that does "
                        "not wait gets it (rwl_write_lock_timed with 0)" },
};

/* Writers asleep behind readers, and a reader that leaves (the last reader
 * out wakes one writer: a timed one may give up as the wake-up reaches it);
 * readers asleep behind a writer; writers asleep behind a writer; writers
 * asleep, and anything. */
static const kit_shape_t lock_shapes[] = {
    { .sleepers = WRITERS, .mover = READERS },
    { .sleepers = READERS, .mover = WRITERS },
    { .sleepers = WRITERS, .mover = WRITERS },
    { .sleepers = WRITERS, .mover = 0 },
};

const kit_spec_t lock_spec = {
    .object = "l",
    .state_size = sizeof(struct lock_model),
    .create = make_lock,
    .model = free_lock,
    .release = release_lock,
    .released_ret = 0, /* a lock call asleep behind what the test's thread held gets the lock */
    .destroy = destroy_lock,
    .print_create = print_create,
    .print_call = print_call,
    .print_out = print_out,
    .print_state = print_state,
    .never_waits = holder_never_waits,
    .ops = lock_ops,
    .nops = (int)(sizeof lock_ops / sizeof lock_ops[0]),
    .shapes = lock_shapes,
    .nshapes = (int)(sizeof lock_shapes / sizeof lock_shapes[0]),
};

/* The specs of the chapter's scenarios, by which a judged test's subject finds the one its judge names. */
const kit_spec_t *const kit_scenario_specs[] = { &lock_spec, NULL };
