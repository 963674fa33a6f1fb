/**
 * @file tpool_scenarios.c
 * @brief Chapter 03's generated scenarios (kit_scenario.h): the pool's sequential
 *        model, the tasks and calls a scenario draws, the checks once nothing
 *        else can move, and how each is printed.
 *
 * Apart from the test that runs them, so that both sides of a judged test
 * link the same spec: the judge draws and checks with it (its model and its
 * printing), the subject makes its calls on the pool under test - the
 * scenario's tasks included, which run there, on the pool's workers.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_errno.h"
#include "kit_scenario.h"
#include "kit_sched.h"
#include "kit_time.h"
#include "tpool.h"

#define HOUR_MS (3600L * 1000)

/* ---- Generated scenarios (kit_scenario.h) ------------------------------------------
 * The scenarios' object is a pool and a record of what became of each task
 * submitted to it. Task tN belongs to the call whose id is N: `task` only
 * records that it ran; `failing_task` also calls tpool_task_fail();
 * `spawning_task` also submits a task of its own, sN, with
 * tpool_execute_or_drop() from inside the pool, as the header allows.
 *
 * The sequential model is what a call can see: which tasks the pool took,
 * and whether it is shut down. The tasks run on the workers, between the
 * calls; whether each ran is checked once nothing else can move
 * (pool_at_quiet): every task the pool took ran once or was dropped once,
 * none it refused ran, no worker touched a task after an await saw the pool
 * terminated, and tpool_stats then adds up. */

enum { TASK_IDS = 32, SUB = 16 }; /* tN has the id N of its call (< SUB); sN, the task tN submits, N + SUB */

enum policy { ABORT, CALLER_RUNS, DISCARD, DISCARD_OLDEST, TIMEOUT, BLOCK, POLICIES };
enum kind { PLAIN, FAILING, SPAWNING };
enum { EXECUTE, EXECUTE_FAILING, EXECUTE_SPAWNING, EXECUTE_OR_DROP, SHUTDOWN, SHUTDOWN_NOW, AWAIT, STATS };
enum { EXECUTES = 1, SHUTDOWNS, AWAITS }; /* the groups of the shapes */

static const char *const policy_code[] = {
    [ABORT] = "bq_policy_abort()",
    [CALLER_RUNS] = "bq_policy_caller_runs(NULL)",
    [DISCARD] = "bq_policy_discard(NULL)",
    [DISCARD_OLDEST] = "bq_policy_discard_oldest(NULL)",
    [TIMEOUT] = "bq_policy_timeout(1)",
    [BLOCK] = "bq_policy_block()",
};

struct pool_config {
    int core, capacity;
    long keep_alive_ms;
    enum policy policy;
};

/* What became of one task. Tasks run and are dropped on the pool's threads
 * while the scenario's threads read this record: its fields are atomic, not
 * guarded by a lock of the test's own, which would add switch points to
 * every schedule. */
struct task_record {
    struct pool_scene *scene; /* immutable after create, like id */
    int id;
    atomic_bool with_drop;    /* submitted with tpool_execute_or_drop: a drop of it is seen */
    atomic_bool submitted;    /* its tpool_execute began ... */
    atomic_int ret;           /* ... and returned this (-1 until it returns) */
    atomic_int runs, drops;
    atomic_bool failed;       /* it called tpool_task_fail() */
    atomic_long ran_during, dropped_during; /* what the thread that ran / dropped it was submitting then (0: nothing) */
    atomic_bool on_worker;    /* its last run or drop was on one of the pool's workers ... */
    atomic_long stamp;        /* ... at this tick of the scene's clock */
};

struct pool_scene {
    tpool_t *p;
    struct pool_config config;
    struct task_record tasks[TASK_IDS];
    atomic_long clock;         /* ticks at every run, drop, and await that returned */
    atomic_long terminated_at; /* the tick of the first await that returned 0 (0: none did) */
    atomic_bool shut_down;     /* tpool_shutdown or tpool_shutdown_now was called */
    atomic_bool shutdown_now;  /* tpool_shutdown_now was called: it may drop tasks */
    tpool_stats_t stats;       /* what tpool_stats read once nothing else could move */
    bool have_stats;
    char complaint[512];
};

/* The task this thread is submitting now (or the tpool_shutdown_now it is
 * in): a task run or dropped on this thread meanwhile was that call's doing -
 * caller-runs, a discard, an eviction. */
static _Thread_local long submitting;

static uint32_t bit(long id)
{
    return (uint32_t)1 << id;
}

static void task_name(long id, char *text, size_t size)
{
    snprintf(text, size, "%c%ld", id < SUB ? 't' : 's', id % SUB);
}

/* @p before, then the names of @p tasks. */
static void print_tasks(char *text, size_t size, const char *before, uint32_t tasks)
{
    int at = snprintf(text, size, "%s", before);
    for (int id = 1; id < TASK_IDS && at < (int)size; id++) {
        if (!(tasks & bit(id)))
            continue;
        char name[8];
        task_name(id, name, sizeof name);
        at += snprintf(text + at, size - (size_t)at, " %s", name);
    }
}

static void note(struct task_record *t, bool dropped)
{
    struct pool_scene *s = t->scene;
    t->on_worker = tpool_current() == s->p;
    t->stamp = ++s->clock;
    if (dropped) {
        t->dropped_during = submitting;
        t->drops++;
    } else {
        t->ran_during = submitting;
        t->runs++;
    }
}

static void task(void *raw)
{
    note(raw, false);
}

/* tpool_task_fail() is for the pool's workers: run by caller-runs on a
 * scenario's thread, the task does not call it. */
static void failing_task(void *raw)
{
    struct task_record *t = raw;
    if (tpool_current() == t->scene->p) {
        tpool_task_fail(EIO);
        t->failed = true;
    }
    note(t, false);
}

static void drop(void *raw)
{
    note(raw, true);
}

static void spawning_task(void *raw);

static int submit(struct task_record *t, enum kind kind, bool with_drop)
{
    static void (*const fns[])(void *) = { [PLAIN] = task, [FAILING] = failing_task, [SPAWNING] = spawning_task };
    t->with_drop = with_drop;
    t->submitted = true;
    long outer = submitting; /* a task that caller-runs runs may submit in turn */
    submitting = t->id;
    tpool_t *p = t->scene->p;
    int err = with_drop ? tpool_execute_or_drop(p, fns[kind], drop, t) : tpool_execute(p, fns[kind], t);
    submitting = outer;
    t->ret = err;
    return err;
}

/* Under the block policy it submits nothing: on a full queue it would wait
 * for a worker - perhaps the one it runs on, a deadlock of its own making. */
static void spawning_task(void *raw)
{
    struct task_record *t = raw;
    if (t->scene->config.policy != BLOCK)
        submit(&t->scene->tasks[t->id + SUB], PLAIN, true);
    note(t, false);
}

/* ---- The pool, made and unmade ---- */

static const long keep_alive_choices[] = { 0, 2, HOUR_MS }; /* at once, soon (any moment: timeouts_race), never */

static long draw_config(kit_rng_t *rng)
{
    long core = 1 + (long)kit_rng_below(rng, 2), capacity = 1 + (long)kit_rng_below(rng, 2);
    long keep_alive = (long)kit_rng_below(rng, 3), policy = (long)kit_rng_below(rng, POLICIES);
    return core | capacity << 4 | keep_alive << 8 | policy << 12;
}

static struct pool_config config_of(long param)
{
    return (struct pool_config){ .core = (int)(param & 15), .capacity = (int)(param >> 4 & 15),
                                 .keep_alive_ms = keep_alive_choices[param >> 8 & 15],
                                 .policy = (enum policy)(param >> 12 & 15) };
}

static bq_policy_t policy_of(enum policy policy)
{
    switch (policy) {
    case ABORT: return bq_policy_abort();
    case CALLER_RUNS: return bq_policy_caller_runs(NULL);
    case DISCARD: return bq_policy_discard(NULL);
    case DISCARD_OLDEST: return bq_policy_discard_oldest(NULL);
    case TIMEOUT: return bq_policy_timeout(1);
    default: return bq_policy_block();
    }
}

/* The model: all a call can see of the pool. (Compared byte by byte: the
 * scenarios zero it, padding too, before make_scene sets it.) */
struct pool_model {
    uint32_t accepted; /* tasks whose tpool_execute returned 0 */
    uint32_t spawners; /* ... of them the spawning tasks, each of which may queue its sN */
    uint8_t capacity, policy;
    uint8_t shut_down; /* 0: open; SHUTDOWN or SHUTDOWN_NOW: how it was shut down */
};

/* The model of the pool make_scene(param) makes: also the judge's first state. */
static void model_of(long param, void *state)
{
    struct pool_config c = config_of(param);
    struct pool_model *m = state;
    m->capacity = (uint8_t)c.capacity;
    m->policy = (uint8_t)c.policy;
}

static void *make_scene(long param, void *state)
{
    struct pool_config c = config_of(param);
    model_of(param, state);
    struct pool_scene *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->config = c;
    for (int id = 0; id < TASK_IDS; id++) {
        s->tasks[id].scene = s;
        s->tasks[id].id = id;
        s->tasks[id].ret = -1;
    }
    tpool_config_t config = { .core_threads = (size_t)c.core, .queue_capacity = (size_t)c.capacity,
                              .keep_alive_ms = c.keep_alive_ms, .reject = policy_of(c.policy), .name = "sc" };
    int err = tpool_create(&s->p, &config);
    if (err != 0) {
        free(s);
        errno = err;
        return NULL;
    }
    return s;
}

static void shut_pool_down(void *object)
{
    struct pool_scene *s = object;
    tpool_shutdown(s->p);
}

static void destroy_pool(void *object)
{
    struct pool_scene *s = object;
    tpool_destroy(s->p);
    free(s);
}

/* ---- The calls ---- */

/* The tasks run or dropped by now. */
static uint32_t tasks_done(struct pool_scene *s)
{
    uint32_t done = 0;
    for (int id = 1; id < TASK_IDS; id++)
        if (s->tasks[id].runs + s->tasks[id].drops > 0)
            done |= bit(id);
    return done;
}

/* The tasks this thread dropped while it was in the call @p id. */
static uint32_t dropped_during(struct pool_scene *s, long id)
{
    uint32_t dropped = 0;
    for (int other = 1; other < TASK_IDS; other++)
        if (s->tasks[other].drops > 0 && s->tasks[other].dropped_during == id)
            dropped |= bit(other);
    return dropped;
}

/* An execute's out: the tasks done when it began (bits 0-31), what its
 * policy did on the calling thread (32-33), the task it evicted (40-47). */
enum { RAN_HERE = 1, DROPPED_HERE = 2 };

static uint32_t done_when_begun(const kit_call_t *call)
{
    return (uint32_t)((uint64_t)call->out & 0xffffffffu);
}

static int policy_flags(const kit_call_t *call)
{
    return (int)((uint64_t)call->out >> 32 & 3);
}

static long evicted_by(const kit_call_t *call)
{
    return (long)((uint64_t)call->out >> 40 & 0xff);
}

static int run_execute_as(struct pool_scene *s, long id, enum kind kind, bool with_drop, long *out)
{
    if (id >= SUB)
        kit_explore_fail(__FILE__, __LINE__, "scenario call id %ld: task ids must stay below %d", id, SUB);
    uint32_t done = tasks_done(s);
    int err = submit(&s->tasks[id], kind, with_drop);
    const struct task_record *t = &s->tasks[id];
    uint64_t flags = 0;
    if (t->runs > 0 && t->ran_during == id)
        flags |= RAN_HERE;
    if (t->drops > 0 && t->dropped_during == id)
        flags |= DROPPED_HERE;
    uint32_t evicted = dropped_during(s, id) & ~bit(id);
    uint64_t first_evicted = evicted ? (uint64_t)__builtin_ctz(evicted) : 0;
    *out = (long)((uint64_t)done | flags << 32 | first_evicted << 40);
    return err;
}

#define RUN_EXECUTE(name, kind, with_drop)                                                                  \
    static int name(void *object, long id, long timeout_ms, long *out)                                     \
    {                                                                                                      \
        (void)timeout_ms;                                                                                  \
        return run_execute_as(object, id, kind, with_drop, out);                                           \
    }
RUN_EXECUTE(run_execute, PLAIN, false)
RUN_EXECUTE(run_execute_failing, FAILING, false)
RUN_EXECUTE(run_execute_spawning, SPAWNING, false)
RUN_EXECUTE(run_execute_or_drop, PLAIN, true)

static int run_shutdown(void *object, long id, long timeout_ms, long *out)
{
    (void)id;
    (void)timeout_ms;
    struct pool_scene *s = object;
    s->shut_down = true;
    *out = 0;
    return tpool_shutdown(s->p);
}

/* out: the tasks it dropped on its own thread. */
static int run_shutdown_now(void *object, long id, long timeout_ms, long *out)
{
    (void)timeout_ms;
    struct pool_scene *s = object;
    s->shut_down = true;
    s->shutdown_now = true; /* before the call: a task it drops has a cause */
    long outer = submitting;
    submitting = id;
    int err = tpool_shutdown_now(s->p);
    submitting = outer;
    *out = (long)dropped_during(s, id);
    return err;
}

static int run_await(void *object, long id, long timeout_ms, long *out)
{
    (void)id;
    struct pool_scene *s = object;
    int err = tpool_await_termination(s->p, timeout_ms);
    long now = ++s->clock, never = 0;
    if (err == 0)
        atomic_compare_exchange_strong(&s->terminated_at, &never, now);
    *out = 0;
    return err;
}

/* tpool_stats packed five bits a counter (31: 31 or more), in this order. */
enum { STAT_SUBMITTED, STAT_REJECTED, STAT_COMPLETED, STAT_DROPPED, STAT_FAILED, STAT_RAN_BY_CALLER, STAT_QUEUED,
       STAT_ACTIVE, STAT_THREADS, STAT_LARGEST, STAT_RETIRED, STAT_COUNTERS };

static long packed_stats(const tpool_stats_t *st)
{
    const size_t counters[STAT_COUNTERS] = { st->submitted, st->rejected,      st->completed, st->dropped,
                                             st->failed,    st->ran_by_caller, st->queued,    st->active,
                                             st->threads,   st->largest,       st->retired };
    uint64_t packed = 0;
    for (int i = 0; i < STAT_COUNTERS; i++)
        packed |= (uint64_t)(counters[i] < 31 ? counters[i] : 31) << (5 * i);
    return (long)packed;
}

static int run_stats(void *object, long id, long timeout_ms, long *out)
{
    (void)id;
    (void)timeout_ms;
    struct pool_scene *s = object;
    memset(&s->stats, 0, sizeof s->stats);
    int err = tpool_stats(s->p, &s->stats);
    s->have_stats = err == 0;
    *out = packed_stats(&s->stats);
    return err;
}

/* ---- The model ---- */

static bool never_waits(const void *state, const kit_call_t *call)
{
    (void)state;
    (void)call;
    return false; /* for good: tasks never block, so the workers always empty the queue, making room for an
                     execute that waits for it (the block policy) */
}

/* The tasks that may be queued when @p call begins: taken and not yet run
 * or dropped, and the sN that a spawning task among them may have queued. */
static uint32_t maybe_queued(const struct pool_model *m, const kit_call_t *call)
{
    return (m->accepted | m->spawners << SUB) & ~done_when_begun(call);
}

/* A policy acts only on a full queue: there must be enough tasks that could fill it. */
static bool could_be_full(const struct pool_model *m, const kit_call_t *call)
{
    return __builtin_popcount(maybe_queued(m, call)) >= m->capacity;
}

/* What the policy did with a task the pool took: nothing seen (queued, given
 * to a worker, or dropped without a drop function to tell), or what the
 * configured policy does on a full queue. */
static bool policy_allows(const struct pool_model *m, const kit_call_t *call)
{
    int flags = policy_flags(call);
    long evicted = evicted_by(call);
    if (flags == 0 && evicted == 0)
        return true;
    if (!could_be_full(m, call))
        return false;
    if (flags == RAN_HERE && evicted == 0)
        return m->policy == CALLER_RUNS;
    if (flags == DROPPED_HERE && evicted == 0)
        return m->policy == DISCARD;
    return flags == 0 && m->policy == DISCARD_OLDEST && (maybe_queued(m, call) & bit(evicted));
}

static bool execute_takes_effect(void *state, const kit_call_t *call)
{
    struct pool_model *m = state;
    if (call->ret == ECANCELED)
        return m->shut_down;
    if (m->shut_down)
        return false;
    if (call->ret == EAGAIN)
        return m->policy == ABORT && could_be_full(m, call);
    if (call->ret == ETIMEDOUT)
        return m->policy == TIMEOUT && could_be_full(m, call);
    if (call->ret != 0 || !policy_allows(m, call))
        return false;
    m->accepted |= bit(call->arg);
    if (call->op == EXECUTE_SPAWNING)
        m->spawners |= bit(call->arg);
    return true;
}

static bool shutdown_takes_effect(void *state, const kit_call_t *call)
{
    struct pool_model *m = state;
    if (!m->shut_down)
        m->shut_down = SHUTDOWN;
    return call->ret == 0;
}

/* It drops only tasks that could be queued: taken, and not run. */
static bool shutdown_now_takes_effect(void *state, const kit_call_t *call)
{
    struct pool_model *m = state;
    m->shut_down = SHUTDOWN_NOW;
    return call->ret == 0 && ((uint32_t)call->out & ~(m->accepted | m->spawners << SUB)) == 0;
}

/* Not "once terminated, for ever": an execute that has queued its task but
 * not yet checked that a worker is left to take it (the execute side of the
 * idle-exit race) may find none - the task ran or was dropped meanwhile, and
 * an await found the pool terminated - and start one. That is harmless: the
 * worker finds the queue closed and empty and leaves; but a later await may
 * see it. Only a worker that runs a task after termination is wrong
 * (pool_at_quiet). */
static bool await_takes_effect(void *state, const kit_call_t *call)
{
    const struct pool_model *m = state;
    return (call->ret == 0 && m->shut_down) || call->ret == ETIMEDOUT;
}

/* Its counters are checked against the tasks' record, in pool_at_quiet. */
static bool stats_takes_effect(void *state, const kit_call_t *call)
{
    (void)state;
    return call->ret == 0;
}

/* ---- Once nothing else can move ---- */

static const char *complain(struct pool_scene *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *complain(struct pool_scene *s, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(s->complaint, sizeof s->complaint, fmt, args);
    va_end(args);
    return s->complaint;
}

/* The pool drops a task it took only through a discard policy or tpool_shutdown_now. */
static bool may_drop(struct pool_scene *s)
{
    return s->config.policy == DISCARD || s->config.policy == DISCARD_OLDEST || s->shutdown_now;
}

static const char *submission(const struct task_record *t)
{
    return t->with_drop ? "tpool_execute_or_drop" : "tpool_execute";
}

/* Ran or dropped at most once, and only if the pool took it. */
static const char *once_and_only_if_taken(struct pool_scene *s, const struct task_record *t, const char *name)
{
    int runs = t->runs, drops = t->drops, ret = t->ret;
    if (runs > 1 || drops > 1)
        return complain(s, "%s ran %d times and was dropped %d times: a task the pool takes runs exactly once, "
                        "or is dropped once instead (tpool.h, Ownership)", name, runs, drops);
    if (runs + drops > 1)
        return complain(s, "%s ran and was dropped too (its drop function called): a task the pool takes runs "
                        "exactly once, or is dropped instead (tpool.h, Ownership)", name);
    if (runs + drops > 0 && ret < 0)
        return complain(s, "%s %s, though its %s never returned", name, runs ? "ran" : "was dropped", submission(t));
    if (runs + drops > 0 && ret != 0)
        return complain(s, "%s %s, though its %s returned %s: after an error return the pool never calls the task "
                        "(tpool.h, Ownership)", name, runs ? "ran" : "was dropped", submission(t), kit_errno_name(ret));
    return NULL;
}

/* What became of task @p t: a complaint, or NULL. A task dropped with no
 * drop function to tell is added to @p unseen: tpool_stats must count it. */
static const char *task_fate(struct pool_scene *s, const struct task_record *t, uint32_t *unseen)
{
    char name[8];
    task_name(t->id, name, sizeof name);
    const char *wrong = once_and_only_if_taken(s, t, name);
    if (wrong != NULL)
        return wrong;
    long terminated = s->terminated_at;
    bool touched = t->runs + t->drops > 0;
    if (touched && t->on_worker && terminated > 0 && t->stamp > terminated)
        return complain(s, "%s %s on a worker after tpool_await_termination returned 0: it returns 0 only once "
                        "every worker has exited (tpool.h)", name, t->runs ? "ran" : "was dropped");
    if (t->drops > 0 && !may_drop(s))
        return complain(s, "%s was dropped, but with %s and no tpool_shutdown_now the pool drops no task: only a "
                        "discard policy or tpool_shutdown_now does (tpool.h, Ownership)", name,
                        policy_code[s->config.policy]);
    if (t->ret != 0 || touched)
        return NULL;
    if (t->with_drop || !may_drop(s))
        return complain(s, "%s was taken (its %s returned 0) but never ran%s, and nothing else can move: it waits "
                        "in the queue with no worker left to run it, or it was lost; a task the pool takes runs "
                        "exactly once (tpool.h, Ownership)", name, submission(t),
                        t->with_drop ? ", nor was it dropped" : "");
    *unseen |= bit(t->id);
    return NULL;
}

/* What the scenario saw become of its tasks, as sets of task ids, one a
 * counter of tpool_stats. Each task ran or was dropped at most once by now
 * (task_fate), so each counter must count its set. */
struct task_sets {
    uint32_t submitted, rejected, completed, failed, ran_by_caller, dropped;
};

static struct task_sets sort_tasks(struct pool_scene *s, uint32_t unseen)
{
    struct task_sets sets = { .dropped = unseen };
    for (int id = 1; id < TASK_IDS; id++) {
        const struct task_record *t = &s->tasks[id];
        if (t->submitted)
            sets.submitted |= bit(id);
        if (t->ret > 0)
            sets.rejected |= bit(id);
        if (t->runs > 0)
            sets.completed |= bit(id);
        if (t->runs > 0 && t->failed)
            sets.failed |= bit(id);
        if (t->runs > 0 && t->ran_during == id)
            sets.ran_by_caller |= bit(id);
        if (t->drops > 0)
            sets.dropped |= bit(id);
    }
    return sets;
}

/* Once nothing else can move, nothing waits in the queue, nothing runs and
 * every worker has gone: idle ones retire after keep_alive_ms, and after a
 * shutdown they leave. */
static const char *pool_idle(struct pool_scene *s)
{
    const tpool_stats_t *st = &s->stats;
    if (st->queued > 0)
        return complain(s, "tpool_stats says queued %zu once nothing else can move: those tasks have no worker left "
                        "to run them, yet a task the pool takes runs exactly once (tpool.h, Ownership)", st->queued);
    if (st->active > 0 || st->threads > 0)
        return complain(s, "tpool_stats says active %zu, threads %zu once nothing else can move: every worker should "
                        "have finished its task, and left (tpool.h: an idle worker retires after keep_alive_ms; "
                        "after a shutdown, idle workers leave once the queue is empty)", st->active, st->threads);
    if (st->largest > (size_t)s->config.core)
        return complain(s, "tpool_stats says largest %zu, but core_threads is %d (tpool.h: most workers alive at "
                        "once)", st->largest, s->config.core);
    return NULL;
}

/* Each counter against the tasks the record saw it count; the rows quote
 * tpool.h's words for each. */
static const char *counters_add_up(struct pool_scene *s, uint32_t unseen)
{
    const tpool_stats_t *st = &s->stats;
    struct task_sets want = sort_tasks(s, unseen);
    const struct { const char *name; size_t got; uint32_t want; const char *what; } rows[] = {
        { "submitted", st->submitted, want.submitted, "tpool_execute() calls with valid arguments" },
        { "rejected", st->rejected, want.rejected, "tpool_execute() calls that returned an error" },
        { "completed", st->completed, want.completed, "tasks that ran to the end (on a worker or on the caller)" },
        { "failed", st->failed, want.failed, "completed tasks that called tpool_task_fail()" },
        { "ran_by_caller", st->ran_by_caller, want.ran_by_caller, "completed tasks run by the caller-runs policy" },
        { "dropped", st->dropped, want.dropped, "accepted tasks never run: discarded, or dropped by shutdown_now" },
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        if (rows[i].got == (size_t)__builtin_popcount(rows[i].want))
            continue;
        char tasks[120];
        print_tasks(tasks, sizeof tasks, rows[i].want ? ":" : ": none", rows[i].want);
        return complain(s, "tpool_stats, once nothing else can move, says %s %zu, but the scenario counts %d%s "
                        "(tpool.h: %s counts %s)", rows[i].name, rows[i].got, __builtin_popcount(rows[i].want),
                        tasks, rows[i].name, rows[i].what);
    }
    return NULL;
}

/* A keep-alive of an hour never runs out while the scenario's calls run:
 * virtual time jumps that far only once nothing else can move. Until then
 * no worker retires, so the pool never starts more than core_threads of
 * them; and once it is shut down its workers leave at once - not as
 * retired, which counts only workers whose keep-alive ran out. */
static const char *keep_alive_kept(struct pool_scene *s)
{
    size_t retired = s->stats.retired;
    if (s->config.keep_alive_ms != HOUR_MS)
        return NULL;
    if (s->shut_down && retired > 0)
        return complain(s, "tpool_stats says retired %zu, but the pool was shut down before any worker had been idle "
                        "for its keep-alive of %ld ms: tpool_shutdown wakes idle workers and they leave at once, and "
                        "retired counts only workers that left after keep_alive_ms idle (tpool.h)", retired,
                        s->config.keep_alive_ms);
    if (retired > (size_t)s->config.core)
        return complain(s, "tpool_stats says retired %zu with core_threads %d: no worker is idle for its keep-alive "
                        "of %ld ms before the scenario ends, so none retires before then and the pool never "
                        "starts more than %d", retired, s->config.core, s->config.keep_alive_ms, s->config.core);
    return NULL;
}

/* Every task the pool took has run once or been dropped once, none it
 * refused was called, no worker touched one after termination, the
 * counters add up, and no worker retired before its keep-alive ran out. */
static const char *pool_at_quiet(void *object, const void *state)
{
    (void)state;
    struct pool_scene *s = object;
    uint32_t unseen = 0;
    for (int id = 1; id < TASK_IDS; id++) {
        const char *wrong = task_fate(s, &s->tasks[id], &unseen);
        if (wrong != NULL)
            return wrong;
    }
    if (!s->have_stats)
        return complain(s, "tpool_stats, once nothing else could move, returned an error");
    const char *wrong = pool_idle(s);
    if (wrong == NULL)
        wrong = counters_add_up(s, unseen);
    return wrong != NULL ? wrong : keep_alive_kept(s);
}

/* ---- Printing ---- */

static void print_create(long param, char *text, size_t size)
{
    struct pool_config c = config_of(param);
    snprintf(text, size, "tpool_t *p; tpool_create(&p, &(tpool_config_t){ %d, %d, %ld, %s })", c.core, c.capacity,
             c.keep_alive_ms, policy_code[c.policy]);
}

static void print_call(const kit_call_t *call, const char *name, char *text, size_t size)
{
    switch (call->op) {
    case EXECUTE: snprintf(text, size, "tpool_execute(p, task, t%ld)", call->arg); break;
    case EXECUTE_FAILING: snprintf(text, size, "tpool_execute(p, failing_task, t%ld)", call->arg); break;
    case EXECUTE_SPAWNING: snprintf(text, size, "tpool_execute(p, spawning_task, t%ld)", call->arg); break;
    case EXECUTE_OR_DROP: snprintf(text, size, "tpool_execute_or_drop(p, task, drop, t%ld)", call->arg); break;
    case AWAIT: snprintf(text, size, "tpool_await_termination(p, %ld)", call->timeout_ms); break;
    case STATS: snprintf(text, size, "tpool_stats(p, &stats)"); break;
    default: snprintf(text, size, "%s(p)", name);
    }
}

static void print_execute_out(const kit_call_t *call, char *text, size_t size)
{
    char evicted[8];
    task_name(evicted_by(call), evicted, sizeof evicted);
    if (policy_flags(call) == RAN_HERE)
        snprintf(text, size, "-> 0, t%ld ran here (caller-runs)", call->arg);
    else if (policy_flags(call) == DROPPED_HERE)
        snprintf(text, size, "-> 0, t%ld dropped (discard)", call->arg);
    else if (evicted_by(call) != 0)
        snprintf(text, size, "-> 0, %s dropped to make room", evicted);
    else
        snprintf(text, size, "-> 0");
}

/* The counters that are not 0 (the failure's text is bounded). */
static void print_stats_out(long packed, char *text, size_t size)
{
    static const char *const names[STAT_COUNTERS] = { "submitted", "rejected", "completed", "dropped",
                                                      "failed", "ran_by_caller", "queued", "active",
                                                      "threads", "largest", "retired" };
    int at = snprintf(text, size, "->");
    for (int i = 0; i < STAT_COUNTERS && at < (int)size; i++) {
        long value = (long)((uint64_t)packed >> (5 * i) & 31);
        if (value != 0)
            at += snprintf(text + at, size - (size_t)at, " %s %ld%s,", names[i], value, value == 31 ? "+" : "");
    }
    if (at < (int)size)
        snprintf(text + at, size - (size_t)at, " the rest 0");
}

static void print_out(const kit_call_t *call, char *text, size_t size)
{
    if (call->ret != 0)
        snprintf(text, size, "-> %s", kit_errno_name(call->ret));
    else if (call->op == STATS)
        print_stats_out(call->out, text, size);
    else if (call->op == SHUTDOWN_NOW && call->out != 0)
        print_tasks(text, size, "-> 0, dropped", (uint32_t)call->out);
    else if (call->op <= EXECUTE_OR_DROP)
        print_execute_out(call, text, size);
    else
        snprintf(text, size, "-> 0");
}

static void print_state(const void *state, char *text, size_t size)
{
    const struct pool_model *m = state;
    const char *how = "is open";
    if (m->shut_down == SHUTDOWN_NOW)
        how = "is shut down (tpool_shutdown_now)";
    else if (m->shut_down)
        how = "is shut down";
    char before[80];
    snprintf(before, sizeof before, "the pool (a queue of %d) %s and took%s", m->capacity, how,
             m->accepted == 0 ? " no task" : "");
    print_tasks(text, size, before, m->accepted);
}

/* ---- The spec ---- */

/* Short: the failure message quotes it before the scenario, in a bounded text. */
#define EXECUTE_RULE                                                                                       \
    "tpool_execute: 0 (the task taken) until the pool is shut down, ECANCELED after; the policy acts "      \
    "(EAGAIN, ETIMEDOUT, caller-runs, a drop, a wait) only on a full queue"

static const kit_op_t pool_ops[] = {
    [EXECUTE] = { .name = "tpool_execute", .weight = 4, .group = EXECUTES, .run = run_execute, .take_effect = execute_takes_effect,
                  .waits = never_waits, .rule = EXECUTE_RULE },
    [EXECUTE_FAILING] = { .name = "tpool_execute", .weight = 1, .group = EXECUTES, .run = run_execute_failing,
                          .take_effect = execute_takes_effect, .waits = never_waits, .rule = EXECUTE_RULE },
    [EXECUTE_SPAWNING] = { .name = "tpool_execute", .weight = 2, .group = EXECUTES, .run = run_execute_spawning,
                           .take_effect = execute_takes_effect, .waits = never_waits, .rule = EXECUTE_RULE },
    [EXECUTE_OR_DROP] = { .name = "tpool_execute_or_drop", .weight = 3, .group = EXECUTES, .run = run_execute_or_drop,
                          .take_effect = execute_takes_effect, .waits = never_waits,
                          .rule = EXECUTE_RULE },
    [SHUTDOWN] = { .name = "tpool_shutdown", .weight = 1, .group = SHUTDOWNS, .once = true, .run = run_shutdown,
                   .take_effect = shutdown_takes_effect, .waits = never_waits,
                   .rule = "tpool_shutdown: 0, and the pool takes no more tasks; those queued still run" },
    [SHUTDOWN_NOW] = { .name = "tpool_shutdown_now", .weight = 1, .group = SHUTDOWNS, .once = true, .run = run_shutdown_now,
                       .take_effect = shutdown_now_takes_effect, .waits = never_waits,
                       .rule = "tpool_shutdown_now: tpool_shutdown, and it drops the tasks still queued - "
                               "taken, never run" },
    [AWAIT] = { .name = "tpool_await_termination", .weight = 2, .group = AWAITS, .timed = true, .run = run_await,
                .take_effect = await_takes_effect, .waits = never_waits,
                .rule = "tpool_await_termination: 0 only once the pool is shut down, its queue empty, its "
                        "workers gone; else ETIMEDOUT, not before its time" },
    [STATS] = { .name = "tpool_stats", .weight = 0, .post = true, .run = run_stats, .take_effect = stats_takes_effect,
                .waits = never_waits, .rule = "tpool_stats reads every counter at one instant" },
};

/* Submitters crowding a small pool - five or six tasks for a queue of one
 * or two and one or two workers: every policy acts, every counter moves,
 * and a lost update shows in tpool_stats; submitters racing both
 * shutdowns; awaiters asleep while anything happens. */
static const kit_shape_t pool_shapes[] = {
    { .sleepers = EXECUTES, .mover = EXECUTES },
    { .sleepers = EXECUTES, .mover = SHUTDOWNS },
    { .sleepers = AWAITS, .mover = 0 },
};

const kit_spec_t pool_spec = {
    .object = "p",
    .state_size = sizeof(struct pool_model),
    .param = draw_config,
    .create = make_scene,
    .model = model_of,
    .release = shut_pool_down,
    .released_ret = ECANCELED,
    .destroy = destroy_pool,
    .print_create = print_create,
    .print_call = print_call,
    .print_out = print_out,
    .print_state = print_state,
    .at_quiet = pool_at_quiet,
    .ops = pool_ops,
    .nops = (int)(sizeof pool_ops / sizeof pool_ops[0]),
    .shapes = pool_shapes,
    .nshapes = (int)(sizeof pool_shapes / sizeof pool_shapes[0]),
};

/* Both sides of a judged test find the spec here. */
const kit_spec_t *const kit_scenario_specs[] = { &pool_spec, NULL };
