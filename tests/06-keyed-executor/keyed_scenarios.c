/**
 * @file keyed_scenarios.c
 * @brief Chapter 06's generated scenarios (kit_scenario.h): an executor on
 *        a roomy pool or a full one that refuses, runs on the caller or
 *        discards; its sequential model per key, the calls and how each is
 *        printed, and the check of the tasks' record once the scenario is
 *        quiet.
 *
 * Apart from the test that runs them, so that both sides of a judged test
 * link the same spec: the judge draws and checks with it (its model and its
 * printing), the subject makes its calls on the executor under test - the
 * scenario's tasks included, which run there, on the pool's workers.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_errno.h"
#include "kit_scenario.h"
#include "kit_sched.h"
#include "kit_time.h"
#include "keyed.h"

/* ---- Generated scenarios (kit_scenario.h) ------------------------------------------
 * The executor's sequential model: per key, the tasks accepted, in the
 * order their keyed_submit() calls took effect; the tasks refused; whether
 * the executor is closed and the pool shut down. When a task runs is the
 * pool's business, not a call's, so the model does not say: the tasks keep
 * their own record (struct record), and what they left behind is read once
 * nothing else can move - by keyed_active_keys(), keyed_await_termination()
 * and a read of the record, whose order per key must be the order of some
 * history the model accepts. Two threads submitting to one key at once may
 * be ordered either way - the tasks run in the order the submits took the
 * executor's lock - so the order is checked there, with the calls, and not
 * against whichever order the check found first. keyed_at_quiet() then
 * holds the record to that order: each accepted task ran once (or, from a
 * dropped drain, was cancelled), no refused one ran, no two of a key at
 * once. */

enum { KEYS = 3, TASKS = 16 /* task numbers are the calls' args: below 16 */ };

static const char *const key_names[KEYS] = { "a", "b", "c" };

/* The pools a scenario may get: the drains of a new key may always find a
 * place; or, when the one worker is busy and its queue of one is full, be
 * refused (abort), run on the submitting thread (caller-runs), or push the
 * oldest queued drain out (discard-oldest: that key's waiting tasks are
 * cancelled). */
enum pool_kind { ROOMY, ABORTS, CALLER_RUNS, DISCARDS_OLDEST, POOL_KINDS };

struct scene;

struct scene_task {
    struct scene *scene;
    int key;
    int n;       /* the task's number: t1, t2, ... */
};

/* What the tasks did, as they ran. */
struct record {
    int ran[KEYS][TASKS];     /* each key's tasks, in the order they started */
    int nran[KEYS];
    int times_run[TASKS];
    uint32_t finished;        /* bit n: task tn has returned */
    int running[KEYS];        /* tasks of each key running now ... */
    int current[KEYS];        /* ... the last one to start */
    int overlap[2];           /* the first two tasks of one key found running at once ... */
    int overlap_key;          /* ... and their key */
    int idle_task;            /* a task that saw keyed_active_keys() == 0 as it ran */
    int waiting_task;         /* a task whose keyed_await_termination() did not give EDEADLK ... */
    int waiting_err;          /* ... but this */
};

/* A scenario's object: the executor, its pool, and the tasks' record. */
struct scene {
    tpool_t *pool;
    keyed_t *kx;
    future_t *futures[TASKS];       /* of the accepted tasks, by number */
    struct scene_task tasks[TASKS]; /* what each task is given: its key and number */

    pthread_mutex_t lock;
    struct record record;           /* guarded by lock */
};

/* A task: it notes when it starts and when it returns, and that no other
 * task of its key runs meanwhile. It also calls the executor, as a task
 * may: keyed_active_keys() counts its own key, as long as it runs, and
 * keyed_await_termination() would wait for itself, so returns EDEADLK. */
static void *record_task(void *raw)
{
    struct scene_task *task = raw;
    struct scene *s = task->scene;
    struct record *r = &s->record;
    size_t active = keyed_active_keys(s->kx);
    int err = keyed_await_termination(s->kx, 0);
    pthread_mutex_lock(&s->lock);
    if (r->nran[task->key] < TASKS)
        r->ran[task->key][r->nran[task->key]++] = task->n;
    r->times_run[task->n]++;
    if (r->running[task->key]++ > 0 && r->overlap[0] == 0) {
        r->overlap[0] = r->current[task->key];
        r->overlap[1] = task->n;
        r->overlap_key = task->key;
    }
    r->current[task->key] = task->n;
    if (active == 0 && r->idle_task == 0)
        r->idle_task = task->n;
    if (err != EDEADLK && r->waiting_task == 0) {
        r->waiting_task = task->n;
        r->waiting_err = err;
    }
    pthread_mutex_unlock(&s->lock);
    /* A second task of the key started now would find running[key] > 0. */
    pthread_mutex_lock(&s->lock);
    r->running[task->key]--;
    r->finished |= 1u << task->n;
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

struct keyed_model {
    unsigned char pool;          /* enum pool_kind */
    bool closed;                 /* keyed_close took effect */
    bool pool_shut;              /* tpool_shutdown or tpool_shutdown_now took effect */
    bool may_drop;               /* the pool may drop a drain (discard-oldest, tpool_shutdown_now): the
                                    tasks then waiting in it are cancelled, not run */
    bool gone[KEYS];             /* refused since the pool's shutdown: no drain, and none can come */
    unsigned char count[KEYS];
    unsigned char accepted[KEYS][TASKS]; /* each key's accepted tasks, oldest first */
    uint32_t refused;            /* bit n: task tn's submit failed */
};

/* The calls, a submit's numbered as its key; the last three are made once
 * nothing else can move. */
enum { SUBMIT_A, SUBMIT_B, SUBMIT_C, CLOSE, SHUTDOWN, SHUTDOWN_NOW, AWAIT, AWAIT_FOREVER,
       ACTIVE_AT_END, AWAIT_AT_END, RECORD };
enum { SUBMITS = 1, ENDS, AWAITS }; /* the groups of the shapes */

static long draw_pool(kit_rng_t *rng)
{
    return (long)kit_rng_below(rng, POOL_KINDS);
}

/* The model of an executor on a pool of this kind, before any call. */
static void model_of(long kind, void *state)
{
    struct keyed_model *m = state;
    *m = (struct keyed_model){ .pool = (unsigned char)kind, .may_drop = kind == DISCARDS_OLDEST };
}

static void *make_scene(long kind, void *state)
{
    model_of(kind, state);
    struct scene *s = calloc(1, sizeof *s);
    kit_explore_check(s != NULL, "out of memory");
    explore_ok(pthread_mutex_init(&s->lock, NULL));
    bq_policy_t policy = bq_policy_abort();
    if (kind == CALLER_RUNS)
        policy = bq_policy_caller_runs(NULL);
    if (kind == DISCARDS_OLDEST)
        policy = bq_policy_discard_oldest(NULL);
    /* Idle workers stay (a keep-alive past the explorer's horizon): a scenario is quiet with them asleep. */
    tpool_config_t config = { .core_threads = kind == ROOMY ? 2 : 1, .queue_capacity = kind == ROOMY ? 4 : 1,
                              .keep_alive_ms = 2000000000L, .reject = policy, .name = "xk" };
    explore_ok(tpool_create(&s->pool, &config));
    explore_ok(keyed_create(&s->kx, s->pool));
    return s;
}

static void close_scene(void *object)
{
    struct scene *s = object;
    keyed_close(s->kx);
}

static void destroy_scene(void *object)
{
    struct scene *s = object;
    keyed_destroy(s->kx);
    tpool_destroy(s->pool);
    for (int n = 0; n < TASKS; n++)
        future_release(s->futures[n]);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* The tasks that have returned, as a set of bits. */
static long finished_tasks(struct scene *s)
{
    pthread_mutex_lock(&s->lock);
    long finished = (long)s->record.finished;
    pthread_mutex_unlock(&s->lock);
    return finished;
}

/* The record as one number, four bits a task: key a's tasks in the order
 * they started, a 0, key b's, a 0, key c's, a 0 (a task number is never 0). */
static long packed_record(struct scene *s)
{
    uint64_t packed = 0;
    int at = 0;
    pthread_mutex_lock(&s->lock);
    for (int k = 0; k < KEYS; k++) {
        for (int i = 0; i < s->record.nran[k] && at < 15; i++)
            packed |= (uint64_t)s->record.ran[k][i] << (4 * at++);
        at++;
    }
    pthread_mutex_unlock(&s->lock);
    return (long)packed;
}

static int run_call(struct scene *s, int op, long arg, long timeout_ms, long *out)
{
    int err = 0;
    switch (op) {
    case SUBMIT_A:
    case SUBMIT_B:
    case SUBMIT_C:
        s->tasks[arg] = (struct scene_task){ s, op, (int)arg };
        return keyed_submit(s->kx, key_names[s->tasks[arg].key], record_task, &s->tasks[arg], &s->futures[arg]);
    case CLOSE: return keyed_close(s->kx);
    case SHUTDOWN: return tpool_shutdown(s->pool);
    case SHUTDOWN_NOW: return tpool_shutdown_now(s->pool);
    case AWAIT:
    case AWAIT_AT_END: err = keyed_await_termination(s->kx, timeout_ms); break;
    case AWAIT_FOREVER: err = keyed_await_termination(s->kx, LONG_MAX); break;
    case ACTIVE_AT_END: *out = (long)keyed_active_keys(s->kx); return 0;
    case RECORD: *out = packed_record(s); return 0;
    }
    *out = finished_tasks(s); /* what had run by the time the wait ended */
    return err;
}

#define RUN_AS(name, op)                                                                                   \
    static int name(void *s, long arg, long timeout_ms, long *out)                                         \
    {                                                                                                      \
        return run_call(s, op, arg, timeout_ms, out);                                                      \
    }
RUN_AS(run_submit_a, SUBMIT_A)
RUN_AS(run_submit_b, SUBMIT_B)
RUN_AS(run_submit_c, SUBMIT_C)
RUN_AS(run_close, CLOSE)
RUN_AS(run_shutdown, SHUTDOWN)
RUN_AS(run_shutdown_now, SHUTDOWN_NOW)
RUN_AS(run_await, AWAIT)
RUN_AS(run_await_forever, AWAIT_FOREVER)
RUN_AS(run_active_at_end, ACTIVE_AT_END)
RUN_AS(run_await_at_end, AWAIT_AT_END)
RUN_AS(run_record, RECORD)

/* Whether key k may still have a drain: it took a task, and was not refused since the pool's shutdown. */
static bool may_have_drain(const struct keyed_model *m, int key)
{
    return m->count[key] > 0 && !m->gone[key];
}

static bool submit_takes_effect(struct keyed_model *m, int key, const kit_call_t *call)
{
    uint32_t bit = 1u << call->arg;
    switch (call->ret) {
    case 0: /* after the pool's shutdown, only a key whose drain is still there takes tasks */
        if (m->closed || (m->pool_shut && !may_have_drain(m, key)))
            return false;
        m->accepted[key][m->count[key]++] = (unsigned char)call->arg;
        return true;
    case ECANCELED: /* closed; or the key had no drain left, and the pool, shut down, refused one */
        if (!m->closed && !m->pool_shut)
            return false;
        if (!m->closed)
            m->gone[key] = true;
        m->refused |= bit;
        return true;
    case EAGAIN: /* a full abort pool refused the new key's drain */
        if (m->closed || m->pool_shut || m->pool != ABORTS)
            return false;
        m->refused |= bit;
        return true;
    }
    return false;
}

static bool submit_any_takes_effect(void *state, const kit_call_t *call)
{
    return submit_takes_effect(state, call->op, call);
}

static bool close_takes_effect(void *state, const kit_call_t *call)
{
    struct keyed_model *m = state;
    m->closed = true;
    return call->ret == 0;
}

static bool shutdown_takes_effect(void *state, const kit_call_t *call)
{
    struct keyed_model *m = state;
    m->pool_shut = true;
    return call->ret == 0;
}

static bool shutdown_now_takes_effect(void *state, const kit_call_t *call)
{
    struct keyed_model *m = state;
    m->may_drop = true; /* the drains still queued: their tasks are cancelled */
    return shutdown_takes_effect(state, call);
}

static uint32_t all_accepted(const struct keyed_model *m)
{
    uint32_t all = 0;
    for (int k = 0; k < KEYS; k++)
        for (int i = 0; i < m->count[k]; i++)
            all |= 1u << m->accepted[k][i];
    return all;
}

/* Terminated: closed, and every key drained - so every accepted task has
 * run (but for those of a dropped drain, which may still be being cancelled). */
static bool terminated_with(const struct keyed_model *m, const kit_call_t *call)
{
    uint32_t finished = (uint32_t)call->out;
    return m->closed && (m->may_drop || (all_accepted(m) & ~finished) == 0);
}

static bool await_takes_effect(void *state, const kit_call_t *call)
{
    const struct keyed_model *m = state;
    if (call->ret == 0)
        return terminated_with(m, call);
    /* Not terminated at the deadline: not closed, or some accepted task (or its drain) not yet done. */
    return call->ret == ETIMEDOUT && (!m->closed || all_accepted(m) != 0);
}

static bool await_forever_takes_effect(void *state, const kit_call_t *call)
{
    return call->ret == 0 && terminated_with(state, call);
}

static bool await_waits(const void *state, const kit_call_t *call)
{
    (void)call;
    const struct keyed_model *m = state;
    return !m->closed; /* once closed, the drains end: nothing else can move only when they have */
}

static bool never_waits(const void *state, const kit_call_t *call)
{
    (void)state;
    (void)call;
    return false;
}

/* Called once nothing else can move: every drain has left. */
static bool active_at_end_takes_effect(void *state, const kit_call_t *call)
{
    (void)state;
    return call->ret == 0 && call->out == 0;
}

/* Called once nothing else can move: terminated exactly when closed. */
static bool await_at_end_takes_effect(void *state, const kit_call_t *call)
{
    const struct keyed_model *m = state;
    return m->closed ? call->ret == 0 : call->ret == ETIMEDOUT;
}

static int accepted_at(const struct keyed_model *m, int key, int n)
{
    for (int i = 0; i < m->count[key]; i++)
        if (m->accepted[key][i] == n)
            return i;
    return -1;
}

/* The record's order, key by key, must be the order the model accepted the
 * tasks in. (A task missing, run twice or run though refused is told apart
 * by keyed_at_quiet(), with the order settled here.) */
static bool record_takes_effect(void *state, const kit_call_t *call)
{
    const struct keyed_model *m = state;
    uint64_t packed = (uint64_t)call->out;
    for (int k = 0; k < KEYS; k++, packed >>= 4) {
        uint32_t seen = 0;
        int next = 0; /* the earliest place in accepted[k] the next task to start may have */
        for (; (packed & 15) != 0; packed >>= 4) {
            int n = (int)(packed & 15), i = accepted_at(m, k, n);
            if (i < 0 || (seen & 1u << n))
                continue; /* refused, or run again: keyed_at_quiet() says so */
            seen |= 1u << n;
            if (i < next)
                return false;
            next = i + 1;
        }
    }
    return true;
}

static void print_create(long kind, char *text, size_t size)
{
    static const char *const pools[POOL_KINDS] = { "2 workers, a queue of 4, abort", "1 worker, a queue of 1, abort",
                                                   "1 worker, a queue of 1, caller-runs",
                                                   "1 worker, a queue of 1, discard-oldest" };
    snprintf(text, size, "tpool_create(&p, {%s}); keyed_create(&kx, p)", pools[kind]);
}

static void print_call(const kit_call_t *call, const char *name, char *text, size_t size)
{
    switch (call->op) {
    case SUBMIT_A:
    case SUBMIT_B:
    case SUBMIT_C:
        snprintf(text, size, "%s(kx, \"%s\", task, &t%ld, &f)", name, key_names[call->op], call->arg);
        break;
    case SHUTDOWN:
    case SHUTDOWN_NOW: snprintf(text, size, "%s(p)", name); break;
    case AWAIT:
    case AWAIT_AT_END: snprintf(text, size, "%s(kx, %ld)", name, call->timeout_ms); break;
    case AWAIT_FOREVER: snprintf(text, size, "%s(kx, LONG_MAX)", name); break;
    case RECORD: snprintf(text, size, "the tasks' record"); break;
    default: snprintf(text, size, "%s(kx)", name);
    }
}

/* Adds to text what fits. */
static void append(char *text, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *text, size_t size, const char *fmt, ...)
{
    size_t at = strlen(text);
    va_list args;
    va_start(args, fmt);
    vsnprintf(text + at, size - at, fmt, args);
    va_end(args);
}

/* "key \"a\" ran t1 t3, key \"c\" t5", or "no task ran": tasks[k] holds key k's count[k] tasks. */
static void append_by_key(char *text, size_t size, const char *verb, int tasks[KEYS][TASKS], const int *count)
{
    bool first = true;
    for (int k = 0; k < KEYS; k++) {
        if (count[k] == 0)
            continue;
        append(text, size, first ? "key \"%s\" %s" : ", key \"%s\"", key_names[k], verb);
        for (int i = 0; i < count[k]; i++)
            append(text, size, " t%d", tasks[k][i]);
        first = false;
    }
    if (first)
        append(text, size, "no task %s", verb);
}

static void print_out(const kit_call_t *call, char *text, size_t size)
{
    snprintf(text, size, "-> %s", call->ret == 0 ? "0" : kit_errno_name(call->ret));
    if (call->op == ACTIVE_AT_END)
        snprintf(text, size, "-> %ld", call->out);
    if ((call->op == AWAIT || call->op == AWAIT_FOREVER) && call->ret == 0) {
        uint32_t finished = (uint32_t)call->out;
        append(text, size, " (");
        for (int n = 1; n < TASKS; n++)
            if (finished & 1u << n)
                append(text, size, "t%d ", n);
        append(text, size, finished == 0 ? "no task had run)" : "had run)");
    }
    if (call->op == RECORD) {
        int tasks[KEYS][TASKS], count[KEYS] = { 0 };
        uint64_t packed = (uint64_t)call->out;
        for (int k = 0; k < KEYS; k++, packed >>= 4)
            for (; (packed & 15) != 0; packed >>= 4)
                tasks[k][count[k]++] = (int)(packed & 15);
        snprintf(text, size, "-> ");
        append_by_key(text, size, "ran", tasks, count);
    }
}

static void print_state(const void *state, char *text, size_t size)
{
    const struct keyed_model *m = state;
    int tasks[KEYS][TASKS], count[KEYS];
    for (int k = 0; k < KEYS; k++) {
        count[k] = m->count[k];
        for (int i = 0; i < m->count[k]; i++)
            tasks[k][i] = m->accepted[k][i];
    }
    text[0] = '\0';
    append_by_key(text, size, "accepted", tasks, count);
    if (m->closed)
        append(text, size, "; the executor is closed");
    if (m->pool_shut)
        append(text, size, "; the pool is shut down");
}

/* What the tasks' record says once nothing else can move, against the
 * accepted tasks of the order the check found. */
static const char *keyed_at_quiet(void *object, const void *state)
{
    struct scene *s = object;
    const struct keyed_model *m = state;
    static char text[400];
    pthread_mutex_lock(&s->lock);
    struct record r = s->record;
    pthread_mutex_unlock(&s->lock);
    if (r.overlap[0] != 0) {
        snprintf(text, sizeof text, "tasks t%d and t%d of key \"%s\" ran at the same time: a key's tasks run one at "
                 "a time, each after the one before has returned.", r.overlap[0], r.overlap[1],
                 key_names[r.overlap_key]);
        return text;
    }
    uint32_t accepted = all_accepted(m);
    for (int n = 1; n < TASKS; n++) {
        bool ok = accepted & 1u << n;
        future_state_t future = ok ? future_state(s->futures[n]) : FUTURE_CANCELLED;
        if (ok && r.times_run[n] == 0 && m->may_drop && future == FUTURE_CANCELLED)
            continue; /* its drain was dropped */
        if (ok && r.times_run[n] == 0 && m->may_drop)
            snprintf(text, sizeof text, "task t%d was accepted (its keyed_submit returned 0) but neither ran nor "
                     "was cancelled, and nothing else can move: a dropped drain cancels the tasks waiting in it, "
                     "any other drain runs them.", n);
        else if (ok && r.times_run[n] == 0)
            snprintf(text, sizeof text, "task t%d was accepted (its keyed_submit returned 0) but never ran, and "
                     "nothing else can move: it was left in its key's FIFO with no drain to take it.", n);
        else if (ok && r.times_run[n] > 1)
            snprintf(text, sizeof text, "task t%d ran %d times: an accepted task runs exactly once.", n,
                     r.times_run[n]);
        else if (!ok && (m->refused & 1u << n) && r.times_run[n] > 0)
            snprintf(text, sizeof text, "task t%d ran, though its keyed_submit failed: on any error the task "
                     "never runs.", n);
        else if (ok && future != FUTURE_DONE)
            snprintf(text, sizeof text, "task t%d ran, but its future is not done: future_get() on it would "
                     "wait for ever.", n);
        else
            continue;
        return text;
    }
    if (r.idle_task != 0) {
        snprintf(text, sizeof text, "task t%d called keyed_active_keys() as it ran and got 0: while a key's "
                 "task runs, its drain is running and the key is active.", r.idle_task);
        return text;
    }
    if (r.waiting_task != 0) {
        snprintf(text, sizeof text, "task t%d called keyed_await_termination(kx, 0) as it ran and got %s: "
                 "from one of the executor's own tasks, which would wait for itself, it returns EDEADLK.",
                 r.waiting_task, r.waiting_err == 0 ? "0" : kit_errno_name(r.waiting_err));
        return text;
    }
    return NULL;
}

#define SUBMIT_RULE                                                                                       \
    "keyed_submit: 0, the task queued behind its key's earlier ones; ECANCELED if closed, or if the key "  \
    "has no drain and the shut-down pool refuses one; EAGAIN from a full abort pool"

static const kit_op_t keyed_ops[] = {
    [SUBMIT_A] = { .name = "keyed_submit", .weight = 3, .group = SUBMITS, .run = run_submit_a, .take_effect = submit_any_takes_effect,
                   .waits = never_waits, .rule = SUBMIT_RULE },
    [SUBMIT_B] = { .name = "keyed_submit", .weight = 2, .group = SUBMITS, .run = run_submit_b, .take_effect = submit_any_takes_effect,
                   .waits = never_waits, .rule = SUBMIT_RULE },
    [SUBMIT_C] = { .name = "keyed_submit", .weight = 2, .group = SUBMITS, .run = run_submit_c, .take_effect = submit_any_takes_effect,
                   .waits = never_waits, .rule = SUBMIT_RULE },
    [CLOSE] = { .name = "keyed_close", .weight = 2, .group = ENDS, .once = true, .run = run_close, .take_effect = close_takes_effect,
                .waits = never_waits,
                .rule = "keyed_close: later submits fail with ECANCELED; accepted tasks still run" },
    [SHUTDOWN] = { .name = "tpool_shutdown", .weight = 1, .group = ENDS, .once = true, .run = run_shutdown,
                   .take_effect = shutdown_takes_effect, .waits = never_waits,
                   .rule = "after the pool's shutdown, a key with a drain still takes tasks; a key without gets "
                           "ECANCELED" },
    [SHUTDOWN_NOW] = { .name = "tpool_shutdown_now", .weight = 1, .group = ENDS, .once = true, .run = run_shutdown_now,
                       .take_effect = shutdown_now_takes_effect, .waits = never_waits,
                       .rule = "tpool_shutdown_now drops the queued drains, whose tasks are cancelled; a key without "
                               "a drain then gets ECANCELED" },
    [AWAIT] = { .name = "keyed_await_termination", .weight = 1, .group = AWAITS, .timed = true, .run = run_await,
                .take_effect = await_takes_effect, .waits = await_waits,
                .rule = "keyed_await_termination: 0 once closed and every key drained (every accepted task run); "
                        "ETIMEDOUT if not by the deadline" },
    [AWAIT_FOREVER] = { .name = "keyed_await_termination", .weight = 1, .group = AWAITS, .run = run_await_forever,
                        .take_effect = await_forever_takes_effect, .waits = await_waits,
                        .rule = "keyed_await_termination: 0 once closed and every key drained (every accepted task "
                                "run); the end wakes every waiter" },
    [ACTIVE_AT_END] = { .name = "keyed_active_keys", .run = run_active_at_end,
                        .take_effect = active_at_end_takes_effect, .waits = never_waits, .post = true,
                        .rule = "keyed_active_keys: 0 once every key is idle (a drain that finds its FIFO empty "
                                "removes its key)" },
    [AWAIT_AT_END] = { .name = "keyed_await_termination", .run = run_await_at_end,
                       .take_effect = await_at_end_takes_effect, .waits = never_waits, .post = true,
                       .rule = "with every key idle, keyed_await_termination gives 0 if closed, ETIMEDOUT if not" },
    [RECORD] = { .name = "record", .run = run_record, .take_effect = record_takes_effect, .waits = never_waits,
                 .post = true,
                 .rule = "one key's tasks run one at a time, in the order their keyed_submit calls took effect" },
};

/* Submitters crowding the keys - five or six tasks on three keys, a pool
 * that may be full or caller-runs - while a drain leaves; awaiters asleep
 * while keys drain and the executor closes; submitters racing close and
 * the pool's shutdowns. */
static const kit_shape_t keyed_shapes[] = {
    { .sleepers = SUBMITS, .mover = SUBMITS },
    { .sleepers = AWAITS, .mover = 0 },
    { .sleepers = SUBMITS, .mover = ENDS },
};

const kit_spec_t keyed_spec = {
    .object = "kx",
    .state_size = sizeof(struct keyed_model),
    .param = draw_pool,
    .create = make_scene,
    .model = model_of,
    .release = close_scene,
    .released_ret = 0, /* an await still asleep returns 0 once closed: every key has drained */
    .destroy = destroy_scene,
    .print_create = print_create,
    .print_call = print_call,
    .print_out = print_out,
    .print_state = print_state,
    .at_quiet = keyed_at_quiet,
    .ops = keyed_ops,
    .nops = (int)(sizeof keyed_ops / sizeof keyed_ops[0]),
    .shapes = keyed_shapes,
    .nshapes = (int)(sizeof keyed_shapes / sizeof keyed_shapes[0]),
};

/* Both sides of a judged test find the spec here. */
const kit_spec_t *const kit_scenario_specs[] = { &keyed_spec, NULL };
