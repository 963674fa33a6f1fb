/**
 * @file test_rwl_explore.c
 * @brief Chapter 08 under the schedule explorer: a few readers and writers,
 *        and every interleaving the strategies reach - with fixed seeds, so
 *        the same lock gets the same verdict every run.
 *
 * What each body checks is what rwl.h promises under *any* interleaving: a
 * writer is alone in the lock, a waiting writer holds back new readers, an
 * upgrade is refused, and nobody is left asleep while the lock would let
 * them in (the explorer reports that at once, naming where each thread
 * waits: a lost wake-up).
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_test.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_errno.h"
#include "kit_scenario.h"
#include "kit_sched.h"
#include "kit_thread.h"
#include "kit_time.h"
#include "rwl.h"

/* One thread's part: what it is, what its calls returned. */
struct part {
    rwl_t *l;
    long timeout_ms;  /* for the timed parts */
    int lock_err;     /* the lock call's result */
    int unlock_err;   /* the unlock's, when the lock was granted */
    int upgrade_err;  /* upgrade: write lock asked while reading */
    int write_err;    /* upgrade: write lock asked after the read unlock */
};

/* Who is inside, counted by the threads themselves. */
static atomic_int readers_inside, writers_inside;

/* Starts @p fn on a thread named @p name; @p timeout_ms > 0 makes its lock call a timed one. */
static void start(pthread_t *thread, const char *name, void *(*fn)(void *), struct part *p, rwl_t *l,
                  long timeout_ms)
{
    memset(p, 0, sizeof *p);
    p->l = l;
    p->timeout_ms = timeout_ms;
    p->lock_err = p->unlock_err = p->upgrade_err = p->write_err = -1;
    explore_ok(kit_thread_start(thread, name, fn, p));
}

static void *read_once(void *raw)
{
    struct part *p = raw;
    p->lock_err = p->timeout_ms > 0 ? rwl_read_lock_timed(p->l, p->timeout_ms) : rwl_read_lock(p->l);
    if (p->lock_err == 0)
        p->unlock_err = rwl_read_unlock(p->l);
    return NULL;
}

static void *write_once(void *raw)
{
    struct part *p = raw;
    p->lock_err = p->timeout_ms > 0 ? rwl_write_lock_timed(p->l, p->timeout_ms) : rwl_write_lock(p->l);
    if (p->lock_err == 0)
        p->unlock_err = rwl_write_unlock(p->l);
    return NULL;
}

/* A reader that stays inside across a switch point, checking that no writer is in. */
static void *read_and_check(void *raw)
{
    struct part *p = raw;
    p->lock_err = rwl_read_lock(p->l);
    if (p->lock_err != 0)
        return NULL;
    atomic_fetch_add(&readers_inside, 1);
    kit_explore_check(atomic_load(&writers_inside) == 0, "a reader got in while a writer held the lock");
    sched_yield(); /* others may run while it reads */
    kit_explore_check(atomic_load(&writers_inside) == 0, "a writer got in while a reader held the lock");
    atomic_fetch_sub(&readers_inside, 1);
    p->unlock_err = rwl_read_unlock(p->l);
    return NULL;
}

/* A writer that stays inside across a switch point, checking that it is alone. */
static void *write_and_check(void *raw)
{
    struct part *p = raw;
    p->lock_err = rwl_write_lock(p->l);
    if (p->lock_err != 0)
        return NULL;
    atomic_fetch_add(&writers_inside, 1);
    kit_explore_check(atomic_load(&readers_inside) == 0, "a writer got in while %d reader(s) held the lock",
                      atomic_load(&readers_inside));
    kit_explore_check(atomic_load(&writers_inside) == 1, "two writers held the lock together");
    sched_yield();
    kit_explore_check(atomic_load(&readers_inside) == 0, "a reader got in while a writer held the lock");
    atomic_fetch_sub(&writers_inside, 1);
    p->unlock_err = rwl_write_unlock(p->l);
    return NULL;
}

static void check_granted(const struct part *p, const char *who)
{
    kit_explore_check(p->lock_err == 0, "%s's lock returned %s", who, kit_errno_name(p->lock_err));
    kit_explore_check(p->unlock_err == 0, "%s's unlock returned %s", who, kit_errno_name(p->unlock_err));
}

/* ---- A writer is alone --------------------------------------------------------------------- */

/* Two readers and two writers, each in once, staying inside across a switch. */
static void readers_and_writers(void *ctx)
{
    (void)ctx;
    rwl_t *l = NULL;
    pthread_t readers[2], writers[2];
    struct part read[2], write[2];
    atomic_store(&readers_inside, 0);
    atomic_store(&writers_inside, 0);
    explore_ok(rwl_create(&l));
    start(&readers[0], "reader-0", read_and_check, &read[0], l, 0);
    start(&writers[0], "writer-0", write_and_check, &write[0], l, 0);
    start(&readers[1], "reader-1", read_and_check, &read[1], l, 0);
    start(&writers[1], "writer-1", write_and_check, &write[1], l, 0);
    for (int i = 0; i < 2; i++) {
        explore_ok(pthread_join(readers[i], NULL));
        explore_ok(pthread_join(writers[i], NULL));
        check_granted(&read[i], "a reader");
        check_granted(&write[i], "a writer");
    }
    rwl_destroy(l);
}

static void test_rwl_explore_readers_and_writers_exclude_each_other(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:2 pct:1:3 random:1", .schedules = 750, .spurious = 1 };
    kit_explore(&options, readers_and_writers, NULL);
}

/* ---- Writers first --------------------------------------------------------------------------- */

/* The body reads; a writer comes and waits; then a reader comes with a
 * 50 ms timed lock. The body lets go of its read lock only after that
 * reader has returned, so the writer waits throughout: writers first
 * means the reader waits too, and times out. */
static void waiting_writer_against_a_new_reader(void *ctx)
{
    (void)ctx;
    rwl_t *l = NULL;
    pthread_t writer, reader;
    struct part write, read;
    explore_ok(rwl_create(&l));
    explore_ok(rwl_read_lock(l));
    start(&writer, "writer", write_once, &write, l, 0);
    kit_explore_await_sleepers(1);
    start(&reader, "reader", read_once, &read, l, 50);
    explore_ok(pthread_join(reader, NULL));
    explore_ok(rwl_read_unlock(l));
    explore_ok(pthread_join(writer, NULL));
    check_granted(&write, "the writer");
    kit_explore_check(read.lock_err != 0,
                      "a new reader got the read lock while a writer waited: once a writer waits, new readers "
                      "wait behind it (writers first)");
    explore_err(read.lock_err, ETIMEDOUT);
    rwl_destroy(l);
}

static void test_rwl_explore_waiting_writer_holds_back_new_readers(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:2 random:2", .schedules = 750, .spurious = 1 };
    kit_explore(&options, waiting_writer_against_a_new_reader, NULL);
}

/* ---- Wake-ups ------------------------------------------------------------------------------------ */

/* The body writes; two readers come and sleep; the body unlocks: both must get in. */
static void write_unlock_against_sleeping_readers(void *ctx)
{
    (void)ctx;
    rwl_t *l = NULL;
    pthread_t readers[2];
    struct part read[2];
    explore_ok(rwl_create(&l));
    explore_ok(rwl_write_lock(l));
    start(&readers[0], "reader-0", read_once, &read[0], l, 0);
    start(&readers[1], "reader-1", read_once, &read[1], l, 0);
    kit_explore_await_sleepers(2);
    explore_ok(rwl_write_unlock(l));
    for (int i = 0; i < 2; i++) {
        explore_ok(pthread_join(readers[i], NULL));
        check_granted(&read[i], "a reader");
    }
    rwl_destroy(l);
}

static void test_rwl_explore_write_unlock_wakes_every_reader(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:2 random:3", .schedules = 750, .spurious = 1 };
    kit_explore(&options, write_unlock_against_sleeping_readers, NULL);
}

/* Two readers, each inside across a switch point, and a writer, in any
 * order: whenever the writer waits for readers, the last one out must let
 * it in, and the readers that came after it get in when it leaves. */
static void last_reader_out_against_a_waiting_writer(void *ctx)
{
    (void)ctx;
    rwl_t *l = NULL;
    pthread_t writer, readers[2];
    struct part write, read[2];
    atomic_store(&readers_inside, 0);
    atomic_store(&writers_inside, 0);
    explore_ok(rwl_create(&l));
    start(&readers[0], "reader-0", read_and_check, &read[0], l, 0);
    start(&writer, "writer", write_and_check, &write, l, 0);
    start(&readers[1], "reader-1", read_and_check, &read[1], l, 0);
    explore_ok(pthread_join(writer, NULL));
    check_granted(&write, "the writer");
    for (int i = 0; i < 2; i++) {
        explore_ok(pthread_join(readers[i], NULL));
        check_granted(&read[i], "a reader");
    }
    rwl_destroy(l);
}

static void test_rwl_explore_last_reader_out_lets_the_writer_in(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:2 random:4", .schedules = 750, .spurious = 1 };
    kit_explore(&options, last_reader_out_against_a_waiting_writer, NULL);
}

/* The body reads; a writer waits with a 100 ms timeout; two readers wait
 * behind it. The writer gives up: both readers must then get in, although
 * the body still reads - on virtual time, the time-out comes at once. */
static void timed_writer_gives_up_against_waiting_readers(void *ctx)
{
    (void)ctx;
    rwl_t *l = NULL;
    pthread_t writer, readers[2];
    struct part write, read[2];
    explore_ok(rwl_create(&l));
    explore_ok(rwl_read_lock(l));
    start(&writer, "writer", write_once, &write, l, 100);
    kit_explore_await_sleepers(1);
    start(&readers[0], "reader-0", read_once, &read[0], l, 0);
    start(&readers[1], "reader-1", read_once, &read[1], l, 0);
    explore_ok(pthread_join(writer, NULL));
    explore_err(write.lock_err, ETIMEDOUT);
    for (int i = 0; i < 2; i++) {
        explore_ok(pthread_join(readers[i], NULL));
        check_granted(&read[i], "a reader");
    }
    explore_ok(rwl_read_unlock(l));
    rwl_destroy(l);
}

static void test_rwl_explore_writer_giving_up_lets_readers_in(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:2 random:5", .schedules = 750, .spurious = 1 };
    kit_explore(&options, timed_writer_gives_up_against_waiting_readers, NULL);
}

/* ---- A writer is woken alone --------------------------------------------------------------
 * rwl.h: an unlock wakes only threads that can now go in, and one writer at
 * a time - as chapter 02's queue wakes only the side that can proceed. The
 * scheduler counts the futile wake-ups: a thread woken that finds the lock
 * taken and waits again at once. Three writers asleep, and one unlock that
 * lets one of them in: the other two must sleep on, unwoken, and so on down
 * the line, each writer's unlock waking the next. */

#define WRITERS_ASLEEP 3

static void check_writers_woken_alone(long before, const char *change)
{
    long futile = kit_sched_futile_wakeups() - before;
    kit_explore_check(futile == 0,
                      "%s and the writers' own unlocks woke sleeping writers %ld time%s for nothing - each found "
                      "the lock taken and slept again: with only writers asleep, an unlock wakes one writer, the "
                      "one that can go in (rwl.h: a writer is woken alone)",
                      change, futile, futile == 1 ? "" : "s");
}

/* The body holds the lock (@p write: for writing), three writers sleep, and the body lets go. */
static void writers_asleep_behind(bool write)
{
    rwl_t *l = NULL;
    pthread_t writers[WRITERS_ASLEEP];
    struct part parts[WRITERS_ASLEEP];
    explore_ok(rwl_create(&l));
    explore_ok(write ? rwl_write_lock(l) : rwl_read_lock(l));
    for (int i = 0; i < WRITERS_ASLEEP; i++) {
        char name[16];
        snprintf(name, sizeof name, "writer-%d", i);
        start(&writers[i], name, write_once, &parts[i], l, 0);
    }
    kit_explore_await_sleepers(WRITERS_ASLEEP);
    long before = kit_sched_futile_wakeups();
    explore_ok(write ? rwl_write_unlock(l) : rwl_read_unlock(l));
    for (int i = 0; i < WRITERS_ASLEEP; i++) {
        explore_ok(pthread_join(writers[i], NULL));
        check_granted(&parts[i], "a writer");
    }
    check_writers_woken_alone(before, write ? "the writer's unlock" : "the last reader's unlock");
    rwl_destroy(l);
}

static void last_reader_out_before_sleeping_writers(void *ctx)
{
    (void)ctx;
    writers_asleep_behind(false);
}

static void test_rwl_explore_last_reader_out_wakes_one_writer(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dpor:2", .schedules = 200 };
    kit_explore(&options, last_reader_out_before_sleeping_writers, NULL);
}

static void write_unlock_before_sleeping_writers(void *ctx)
{
    (void)ctx;
    writers_asleep_behind(true);
}

static void test_rwl_explore_write_unlock_wakes_one_writer(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dpor:2", .schedules = 200 };
    kit_explore(&options, write_unlock_before_sleeping_writers, NULL);
}

/* ---- The upgrade deadlock ------------------------------------------------------------------------ */

static void *read_then_upgrade(void *raw)
{
    struct part *p = raw;
    p->lock_err = rwl_read_lock(p->l);
    if (p->lock_err != 0)
        return NULL;
    p->upgrade_err = rwl_write_lock(p->l);
    if (p->upgrade_err == 0)
        (void)rwl_write_unlock(p->l);
    p->unlock_err = rwl_read_unlock(p->l);
    p->write_err = rwl_write_lock(p->l);
    if (p->write_err == 0)
        (void)rwl_write_unlock(p->l);
    return NULL;
}

/* Two readers each ask for the write lock while reading: each would wait
 * for the other's read lock, and its own. Both are refused at once, and
 * both get the write lock once they have let go of their read lock. */
static void two_readers_upgrade(void *ctx)
{
    (void)ctx;
    rwl_t *l = NULL;
    pthread_t threads[2];
    struct part parts[2];
    explore_ok(rwl_create(&l));
    start(&threads[0], "reader-0", read_then_upgrade, &parts[0], l, 0);
    start(&threads[1], "reader-1", read_then_upgrade, &parts[1], l, 0);
    for (int i = 0; i < 2; i++) {
        explore_ok(pthread_join(threads[i], NULL));
        explore_ok(parts[i].lock_err);
        kit_explore_check(parts[i].upgrade_err == EDEADLK, "a reader asking for the write lock got %s, not EDEADLK",
                          kit_errno_name(parts[i].upgrade_err));
        explore_ok(parts[i].unlock_err);
        explore_ok(parts[i].write_err);
    }
    rwl_destroy(l);
}

static void test_rwl_explore_upgrade_is_refused_not_hung(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:2 random:6", .schedules = 750 };
    kit_explore(&options, two_readers_upgrade, NULL);
}


/* ---- Generated scenarios (kit_scenario.h) ------------------------------------------------
 * The lock's sequential model: each thread's read holds, and who writes. A
 * call takes effect if the model allows what it returned; each thread gives
 * back what it took before it ends (kit_op_t.undone_by), so a call still
 * asleep when nothing else can move waits only for what the test's thread
 * holds - or it missed its wake-up. A writer asleep holds new readers back
 * (kit_op_t.asleep). Timeouts race the unlocks that should end them. */

enum { READ, READ_TIMED, WRITE, WRITE_TIMED, READ_UNLOCK, WRITE_UNLOCK, PROBE };
enum { READERS = 1, WRITERS, UNLOCKS }; /* the groups of the shapes */
enum { THREADS = 5, CALL_IDS = 40 };    /* the test's thread and four more; ids of the calls */

struct lock_model {
    unsigned char reads[THREADS]; /* each thread's read holds */
    unsigned char writer;         /* 1 + the thread that writes; 0: nobody */
    unsigned char asleep_writers; /* writers still asleep at the end */
};

/* The lock, and what the scenario saw its writers do: when each write lock
 * call began and ended, for a timed reader's ETIMEDOUT (a writer that
 * waited at its deadline holds it back, and the model cannot see waiting). */
struct lock_scene {
    rwl_t *l;
    pthread_t test_thread;     /* the scenario's own thread, which release unlocks for */
    int test_reads;            /* ... its read holds */
    bool test_writes;
    struct {
        bool write;            /* a write lock call */
        pthread_t by;
        int64_t began, ended;  /* ended -1: still inside */
    } calls[CALL_IDS];         /* the lock calls made, by id */
};

static struct lock_scene *scene; /* the one under way: scenarios run one at a time */

static void *make_lock(long param, void *state)
{
    (void)param;
    memset(state, 0, sizeof(struct lock_model));
    struct lock_scene *s = calloc(1, sizeof *s);
    kit_explore_check(s != NULL, "out of memory");
    s->test_thread = pthread_self();
    errno = rwl_create(&s->l);
    if (errno != 0) {
        free(s);
        return NULL;
    }
    scene = s;
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
    scene = NULL;
    free(s);
}

static bool on_test_thread(const struct lock_scene *s)
{
    return pthread_equal(pthread_self(), s->test_thread);
}

static int lock_call(struct lock_scene *s, int op, long id, long timeout_ms)
{
    bool write = op == WRITE || op == WRITE_TIMED;
    if (id > 0 && id < CALL_IDS) {
        s->calls[id].write = write;
        s->calls[id].by = pthread_self();
        s->calls[id].began = kit_now_ns();
        s->calls[id].ended = -1;
    }
    int err = op == READ ? rwl_read_lock(s->l)
            : op == READ_TIMED ? rwl_read_lock_timed(s->l, timeout_ms)
            : op == WRITE ? rwl_write_lock(s->l) : rwl_write_lock_timed(s->l, timeout_ms);
    if (id > 0 && id < CALL_IDS)
        s->calls[id].ended = kit_now_ns();
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

static int run_lock_call(void *raw, int op, long id, long timeout_ms)
{
    struct lock_scene *s = raw;
    if (op == PROBE)
        return probe(s);
    if (op == READ_UNLOCK || op == WRITE_UNLOCK)
        return unlock_call(s, op);
    return lock_call(s, op, id, timeout_ms);
}

#define RUN_AS(name, op)                                                                                   \
    static int name(void *s, long id, long timeout_ms, long *out)                                          \
    {                                                                                                      \
        *out = 0;                                                                                          \
        return run_lock_call(s, op, id, timeout_ms);                                                       \
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
 * call's deadline, waiting or about to write. */
static bool writer_at_deadline(const kit_call_t *call)
{
    const struct lock_scene *s = scene;
    if (s == NULL || call->arg <= 0 || call->arg >= CALL_IDS)
        return false;
    int64_t deadline = call->started_ns + call->timeout_ms * 1000000LL;
    for (int id = 1; id < CALL_IDS; id++)
        if (s->calls[id].write && !pthread_equal(s->calls[id].by, s->calls[call->arg].by) &&
            s->calls[id].began <= deadline && (s->calls[id].ended < 0 || s->calls[id].ended >= deadline))
            return true;
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

static const kit_spec_t lock_spec = {
    .object = "l",
    .state_size = sizeof(struct lock_model),
    .create = make_lock,
    .release = release_lock,
    .released_ret = 0, /* a lock call asleep behind what the test's thread held gets the lock */
    .destroy = destroy_lock,
    .print_create = print_create,
    .print_call = print_call,
    .print_out = print_out,
    .print_state = print_state,
    .ops = lock_ops,
    .nops = (int)(sizeof lock_ops / sizeof lock_ops[0]),
    .shapes = lock_shapes,
    .nshapes = (int)(sizeof lock_shapes / sizeof lock_shapes[0]),
};

/* Scenarios nobody wrote: read and write locks, timed or not, nested where
 * the header allows it, unlocks by threads that hold nothing, on two to four
 * threads, each thread giving back what it took; every interleaving of each
 * searched up to equivalence, with timeouts that may run out as an unlock's
 * wake-up reaches them. Some order of the calls must explain each history,
 * and a lock call still asleep at the end must be one the lock keeps out. */
static void test_rwl_explore_generated_scenarios(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dpor:2", .schedules = 150, .spurious = 1, .timeouts_race = true };
    kit_scenarios(&lock_spec, 100, &options);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_rwl_explore_readers_and_writers_exclude_each_other),
    cmocka_unit_test(test_rwl_explore_waiting_writer_holds_back_new_readers),
    cmocka_unit_test(test_rwl_explore_write_unlock_wakes_every_reader),
    cmocka_unit_test(test_rwl_explore_last_reader_out_lets_the_writer_in),
    cmocka_unit_test(test_rwl_explore_writer_giving_up_lets_readers_in),
    cmocka_unit_test(test_rwl_explore_last_reader_out_wakes_one_writer),
    cmocka_unit_test(test_rwl_explore_write_unlock_wakes_one_writer),
    cmocka_unit_test(test_rwl_explore_upgrade_is_refused_not_hung),
    cmocka_unit_test(test_rwl_explore_generated_scenarios),
};

KIT_TEST_MAIN(tests)
