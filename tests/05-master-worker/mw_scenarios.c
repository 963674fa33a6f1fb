/**
 * @file mw_scenarios.c
 * @brief Chapter 05's generated scenarios (kit_scenario.h): a component of
 *        one or two workers whose tasks fail or submit a sub-task; its
 *        sequential model, the calls and how each is printed, and the check
 *        of every record once the scenario is quiet.
 *
 * Apart from the test that runs them, so that both sides of a judged test
 * link the same spec: the judge draws and checks with it (its model and its
 * printing), the subject makes its calls on the component under test - the
 * scenario's process function included, which runs there, on the workers.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_errno.h"
#include "kit_scenario.h"
#include "kit_sched.h"
#include "mw.h"

#define HOUR_MS (3600L * 1000)

/* ---- Generated scenarios (kit_scenario.h) ------------------------------------------
 * The component's sequential model. What the workers do is no call of the
 * scenario: at any moment an accepted task may be queued, running or done,
 * and the model learns which only from what the calls return. So a task
 * stays "queued, running or done" until a call proves it finished (mw_await
 * returned 0, a take found the results ended, the scenario went quiet), and
 * a call's result is allowed if the workers could have got that far:
 * mw_take_result may time out while a task is still queued, never while a
 * finished task's result is stored. mw_await may close the component and
 * still time out (its workers had not left yet): the model then keeps
 * "perhaps closed" until a later call says which. Where the model cannot
 * know a number - the results still due, say - it counts both ways, and
 * allows what either count allows.
 *
 * The tasks. Task N is submitted by the scenario's call N (N < 10) and
 * carries &payload[N]; it fails with EIO if N is a multiple of 3, and else
 * returns &data[N]. Tasks 2, 5 and 8 first submit a sub-task, N + 10, with
 * timeout 0 (a worker never waits for room); being multiples of 3, the
 * sub-tasks fail - so two workers often record failures at the same time.
 * What that mw_submit returned no call says, so the model has a sub-task
 * only as "perhaps" until a take shows it. The tasks keep their own record
 * (struct record): once the scenario is quiet, every record is taken from
 * the component and held to it - each accepted task ran once, or a stop
 * cancelled it, and left exactly one record; mw_stats counts them all. */

enum { SUBTASK_OFFSET = 10, MAX_TASKS = 2 * SUBTASK_OFFSET };

static bool is_subtask(long id)
{
    return id > SUBTASK_OFFSET;
}

static bool fails(long id)
{
    return id % 3 == 0;
}

static bool spawns(long id)
{
    return !is_subtask(id) && id % 3 == 2;
}

enum { SUBMIT, TAKE, TAKE_FOREVER, AWAIT, STOP, CLOSE, TAKE_FAILED, TAKE_REJECTED, STATS, STATS_AT_QUIET };
enum { SUBMITS = 1, TAKES, ENDS }; /* the groups of the shapes */

/* What the model knows of a task. */
enum task_state {
    NOT_SUBMITTED,
    REFUSED_FULL,      /* mw_submit returned ETIMEDOUT: a rejected record */
    REFUSED_CLOSED,    /* mw_submit returned ECANCELED: a rejected record */
    SUBTASK_MAYBE,     /* a sub-task whose parent was accepted: perhaps not submitted yet, perhaps refused,
                          queued, running or done */
    SUBTASK_SETTLED,   /* ... and nothing has been pending since: refused, done or cancelled, if submitted */
    QUEUED_OR_DONE,    /* accepted; the workers may or may not have finished it */
    DONE,              /* accepted and finished: its result or failure is published */
    DONE_OR_CANCELLED, /* accepted, and a stop that cancelled some tasks came before it was seen */
    CANCELLED,         /* accepted, and taken out of the queue by a stop: a rejected record */
};

enum maybe { NO, MAYBE, YES };

/* The component's three lists of records. */
enum list { RESULTS, FAILURES, REJECTIONS, LISTS };

struct mw_model {
    int64_t joined_at;             /* virtual time mw_await returned 0 or mw_stop returned, or -1: from then
                                      on, the workers are joined and mw_await returns 0 */
    unsigned char workers, limit, capacity;
    unsigned char closed;          /* enum maybe: mw_submit refuses tasks from outside */
    unsigned char over;            /* enum maybe: the workers were told to leave (nothing pending) */
    bool lifted;                   /* a stop may have lifted result_limit: lenient on the limit from then on */
    bool stopped;                  /* mw_stop was called: the only call that cancels accepted tasks */
    unsigned char submits;         /* mw_submit calls so far (sub-tasks not counted) */
    unsigned char task[MAX_TASKS]; /* enum task_state, by task id */
    bool taken[MAX_TASKS];         /* its result, failure or rejected record was taken by a call */
    unsigned char stored[LISTS];   /* at least so many records in each list: an mw_stats counted them, and
                                      fewer takes came since (only a take removes a record) */
};

/* What the tasks did, as they ran. */
struct record {
    int ran[MAX_TASKS];     /* how often each task's process function ran; [0]: tasks with an id no call gave */
    int subtask[MAX_TASKS]; /* what task N's mw_submit of its sub-task returned; -1: not called */
};

/* The object under test: the component, and what its tasks saw. */
struct scene {
    mw_t *mw;
    char payload[MAX_TASKS]; /* task N's payload is &payload[N] */
    char data[MAX_TASKS];    /* task N's result data is &data[N] */
    /* Touched by the scenario's threads only, which the explorer runs one at a time: */
    int submits_running;     /* mw_submit calls under way */
    int submits_timed_out;   /* mw_submit calls that returned ETIMEDOUT */

    pthread_mutex_t lock;
    struct record record;    /* guarded by lock: the workers write it */
};

/* The process function: notes its run - after submitting its sub-task,
 * if it has one - and fails, or returns its data. */
static int run_task(mw_t *mw, const mw_task_t *task, void **result, void *ctx)
{
    struct scene *s = ctx;
    long id = task->id > 0 && task->id < MAX_TASKS ? task->id : 0; /* 0: no task of the scenario */
    int sub = -1;
    if (spawns(id))
        sub = mw_submit(mw, id + SUBTASK_OFFSET, &s->payload[id + SUBTASK_OFFSET], 0);
    pthread_mutex_lock(&s->lock);
    s->record.ran[id]++;
    s->record.subtask[id] = sub;
    pthread_mutex_unlock(&s->lock);
    if (fails(id))
        return EIO;
    *result = &s->data[id];
    return 0;
}

/* The configuration, drawn: 1 or 2 workers, result_limit 1 (two times in
 * three) or none, a queue of 1 or 2. */
static long draw_config(kit_rng_t *rng)
{
    long workers = 1 + (long)kit_rng_below(rng, 2);
    long limit = kit_rng_below(rng, 3) == 0 ? 0 : 1;
    long capacity = 1 + (long)kit_rng_below(rng, 2);
    return workers | limit << 4 | capacity << 8;
}

static int create_component(struct scene *s, const struct mw_model *m)
{
    mw_config_t config = { .workers = m->workers, .queue_capacity = m->capacity, .process = run_task,
                           .result_limit = m->limit, .ctx = s, .name = "sw" };
    int err = mw_create(&s->mw, &config);
    if (err != 0)
        return err;
    if ((err = mw_start(s->mw)) != 0)
        mw_destroy(s->mw);
    return err;
}

/* The model of the component config describes, before any call. */
static void model_of(long config, void *state)
{
    struct mw_model *m = state;
    memset(m, 0, sizeof *m); /* every byte: the check compares models byte by byte */
    m->joined_at = -1;
    m->workers = (unsigned char)(config & 15);
    m->limit = (unsigned char)(config >> 4 & 15);
    m->capacity = (unsigned char)(config >> 8 & 15);
}

/* The component, started; on failure NULL, with errno set. */
static void *make_scene(long config, void *state)
{
    struct mw_model *m = state;
    model_of(config, state);
    struct scene *s = calloc(1, sizeof *s);
    if (s == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    for (int id = 0; id < MAX_TASKS; id++)
        s->record.subtask[id] = -1;
    int err = pthread_mutex_init(&s->lock, NULL);
    if (err != 0)
        goto free_scene;
    if ((err = create_component(s, m)) != 0)
        goto destroy_lock;
    return s;

destroy_lock:
    pthread_mutex_destroy(&s->lock);
free_scene:
    free(s);
    errno = err;
    return NULL;
}

/* What ends the scenario: a consumer still asleep in mw_take_result wakes with ECANCELED. */
static void close_scene(void *object)
{
    mw_close(((struct scene *)object)->mw);
}

static void destroy_scene(void *object)
{
    struct scene *s = object;
    mw_destroy(s->mw);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* ---- The model's questions ---- */

static int count(const struct mw_model *m, enum task_state state)
{
    int n = 0;
    for (int id = 1; id < MAX_TASKS; id++)
        if (m->task[id] == state)
            n++;
    return n;
}

/* Tasks in @p state whose process function fails (or succeeds). */
static int tally(const struct mw_model *m, enum task_state state, bool failing)
{
    int n = 0;
    for (int id = 1; id < MAX_TASKS; id++)
        if (m->task[id] == state && fails(id) == failing)
            n++;
    return n;
}

static bool accepted(const struct mw_model *m, long id)
{
    return m->task[id] >= QUEUED_OR_DONE;
}

static bool perhaps_subtask(const struct mw_model *m, long id)
{
    return m->task[id] == SUBTASK_MAYBE || m->task[id] == SUBTASK_SETTLED;
}

/* Tasks that may have been accepted and not cancelled - a sub-task perhaps
 * submitted included - whose process function fails (or succeeds). */
static int may_run(const struct mw_model *m, bool failing)
{
    int n = 0;
    for (int id = 1; id < MAX_TASKS; id++)
        if (((accepted(m, id) && m->task[id] != CANCELLED) || perhaps_subtask(m, id)) && fails(id) == failing)
            n++;
    return n;
}

/* Results not taken yet of accepted tasks that succeed: at least (the tasks
 * certain to give one), or at most (with the sub-tasks perhaps submitted,
 * and the tasks a stop perhaps cancelled). */
static int results_due(const struct mw_model *m, bool at_most)
{
    int n = 0;
    for (int id = 1; id < MAX_TASKS; id++) {
        int state = m->task[id];
        if (fails(id) || m->taken[id])
            continue;
        if (state == QUEUED_OR_DONE || state == DONE)
            n++;
        else if (at_most && (state == DONE_OR_CANCELLED || perhaps_subtask(m, id)))
            n++;
    }
    return n;
}

/* Tasks that may still be queued or running. */
static int maybe_pending(const struct mw_model *m)
{
    return count(m, QUEUED_OR_DONE) + count(m, DONE_OR_CANCELLED) + count(m, SUBTASK_MAYBE);
}

/* Sub-tasks perhaps submitted: each of an accepted task that submits one. */
static int subtasks(const struct mw_model *m)
{
    int n = 0;
    for (int id = SUBTASK_OFFSET + 1; id < MAX_TASKS; id++)
        if (m->task[id] != NOT_SUBMITTED)
            n++;
    return n;
}

static int results_taken(const struct mw_model *m)
{
    int n = 0;
    for (int id = 1; id < MAX_TASKS; id++)
        if (m->task[id] == DONE && !fails(id) && m->taken[id])
            n++;
    return n;
}

static int refused(const struct mw_model *m)
{
    return count(m, REFUSED_FULL) + count(m, REFUSED_CLOSED);
}

/* Is task @p id's record, not taken yet, surely in @p list? */
static bool record_in(const struct mw_model *m, long id, enum list list)
{
    int state = m->task[id];
    if (m->taken[id])
        return false;
    if (list == REJECTIONS)
        return state == REFUSED_FULL || state == REFUSED_CLOSED || state == CANCELLED;
    return state == DONE && fails(id) == (list == FAILURES);
}

/* Records of @p list that calls took. */
static int taken_from(const struct mw_model *m, enum list list)
{
    int n = 0;
    for (int id = 1; id < MAX_TASKS; id++) {
        int state = m->task[id];
        if (!m->taken[id])
            continue;
        if (list == REJECTIONS && state != DONE)
            n++;
        else if (list != REJECTIONS && state == DONE && fails(id) == (list == FAILURES))
            n++;
    }
    return n;
}

/* A record is there for the taking: a finished or refused task's, or one an mw_stats counted. */
static bool record_stored(const struct mw_model *m, enum list list)
{
    if (m->stored[list] > 0)
        return true;
    for (int id = 1; id < MAX_TASKS; id++)
        if (record_in(m, id, list))
            return true;
    return false;
}

/* A take removed one record of @p list. */
static void took_one(struct mw_model *m, enum list list)
{
    if (m->stored[list] > 0)
        m->stored[list]--;
}

static bool limit_binds(const struct mw_model *m)
{
    return m->limit > 0 && !m->lifted;
}

/* Could every accepted task be finished now? Not if more results are due
 * than result_limit lets the workers store. */
static bool all_could_be_done(const struct mw_model *m)
{
    return !limit_binds(m) || results_due(m, false) <= m->limit;
}

/* Nothing is pending: every accepted task is finished, and so is every sub-task submitted. */
static void settle(struct mw_model *m)
{
    for (int id = 1; id < MAX_TASKS; id++) {
        if (m->task[id] == QUEUED_OR_DONE)
            m->task[id] = DONE;
        else if (m->task[id] == SUBTASK_MAYBE)
            m->task[id] = SUBTASK_SETTLED;
    }
}

/* A call proved the component open: an mw_await that timed out did not close it. */
static void learn_open(struct mw_model *m)
{
    if (m->closed == MAYBE)
        m->closed = NO;
    if (m->over == MAYBE)
        m->over = NO;
}

/* A call proved it closed. If only an mw_await that timed out could have
 * closed it, it did so with nothing pending - every accepted task is done -
 * and told the workers to leave. */
static void learn_closed(struct mw_model *m)
{
    if (m->closed == MAYBE) {
        settle(m);
        m->over = YES;
    }
    m->closed = YES;
}

/* Did @p call begin after an mw_await or mw_stop had returned, the workers
 * joined? Then every task accepted is finished (none has been since the close). */
static bool finished_before(struct mw_model *m, const kit_call_t *call)
{
    if (m->joined_at < 0 || call->started_ns <= m->joined_at)
        return false;
    settle(m);
    return true;
}

/* ---- The calls ---- */

/* Half of the awaits have an hour: ample, so the work ends or the trap is found. */
static long await_timeout(long arg)
{
    static const long timeouts[] = { 0, HOUR_MS, 2, HOUR_MS };
    return timeouts[arg % 4];
}

static long stop_timeout(long arg)
{
    static const long timeouts[] = { 0, 2, HOUR_MS };
    return timeouts[arg / 3 % 3];
}

static int run_submit(void *object, long id, long timeout_ms, long *out)
{
    struct scene *s = object;
    (void)out;
    s->submits_running++;
    int err = mw_submit(s->mw, id, &s->payload[id], timeout_ms);
    s->submits_running--;
    if (err == ETIMEDOUT)
        s->submits_timed_out++;
    return err;
}

/* A result as a number: its task id, or -1 for a record no task of the scenario made. */
static long result_code(const struct scene *s, const mw_result_t *r)
{
    if (r->task_id <= 0 || r->task_id >= MAX_TASKS || r->data != &s->data[r->task_id])
        return -1;
    return r->task_id;
}

/* What a take that did not get a result says beside its error: whether an
 * mw_submit ran beside it that may have been let in - one that timed out
 * or was still under way: its task was pending, though no call shows it. */
enum { SUBMIT_BESIDE = 1 };

static int take_result(void *object, long timeout_ms, long *out)
{
    struct scene *s = object;
    int running = s->submits_running, timed_out = s->submits_timed_out;
    mw_result_t r = { .task_id = -1 };
    int err = mw_take_result(s->mw, &r, timeout_ms);
    if (err == 0)
        *out = result_code(s, &r);
    else if (running > 0 || s->submits_running > 0 || s->submits_timed_out != timed_out)
        *out = SUBMIT_BESIDE;
    else
        *out = 0;
    return err;
}

static int run_take(void *object, long arg, long timeout_ms, long *out)
{
    (void)arg;
    return take_result(object, timeout_ms, out);
}

static int run_take_forever(void *object, long arg, long timeout_ms, long *out)
{
    (void)arg;
    (void)timeout_ms;
    return take_result(object, LONG_MAX, out);
}

static int run_await(void *object, long arg, long timeout_ms, long *out)
{
    (void)timeout_ms;
    (void)out;
    return mw_await(((struct scene *)object)->mw, await_timeout(arg));
}

static int run_stop(void *object, long arg, long timeout_ms, long *out)
{
    (void)timeout_ms;
    (void)out;
    return mw_stop(((struct scene *)object)->mw, stop_timeout(arg));
}

static int run_close(void *object, long arg, long timeout_ms, long *out)
{
    (void)arg;
    (void)timeout_ms;
    (void)out;
    return mw_close(((struct scene *)object)->mw);
}

/* A failure record as a number: task id + 256 * error, or -1 for a record
 * no task of the scenario made (or one with another payload). */
static long record_code(const struct scene *s, const mw_failure_t *f)
{
    long id = f->task.id;
    if (id <= 0 || id >= MAX_TASKS || f->task.payload != &s->payload[id] || f->error <= 0 || f->error > 0xffff)
        return -1;
    return id | (long)f->error << 8;
}

/* A take from the failed or the rejected list: its code, or 0. */
static int take_record(struct scene *s, int (*take)(mw_t *, mw_failure_t *), long *out)
{
    mw_failure_t f = { .error = 0 };
    int err = take(s->mw, &f);
    *out = err == 0 ? record_code(s, &f) : 0;
    return err;
}

static int run_take_failed(void *object, long arg, long timeout_ms, long *out)
{
    (void)arg, (void)timeout_ms;
    return take_record(object, mw_take_failed, out);
}

static int run_take_rejected(void *object, long arg, long timeout_ms, long *out)
{
    (void)arg, (void)timeout_ms;
    return take_record(object, mw_take_rejected, out);
}

/* mw_stats packed into one number: 6 bits a counter, 63 for any larger value. */
enum { COUNTERS = 10, COUNTER_BITS = 6, HUGE_COUNT = (1 << COUNTER_BITS) - 1 };

struct counts {
    int submitted, completed, failed, rejected, cancelled, pending, unconsumed, most, alive, blocked;
};

static long pack_stats(const mw_stats_t *st)
{
    size_t v[COUNTERS] = { st->submitted, st->completed,  st->failed,          st->rejected,      st->cancelled,
                           st->pending,   st->unconsumed, st->most_unconsumed, st->workers_alive, st->workers_blocked };
    long out = 0;
    for (int i = 0; i < COUNTERS; i++)
        out |= (long)(v[i] < HUGE_COUNT ? v[i] : HUGE_COUNT) << (i * COUNTER_BITS);
    return out;
}

static struct counts unpack_stats(long out)
{
    int v[COUNTERS];
    for (int i = 0; i < COUNTERS; i++)
        v[i] = (int)(out >> (i * COUNTER_BITS) & HUGE_COUNT);
    return (struct counts){ v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9] };
}

static int run_stats(void *object, long arg, long timeout_ms, long *out)
{
    (void)arg;
    (void)timeout_ms;
    mw_stats_t st;
    int err = mw_stats(((struct scene *)object)->mw, &st);
    *out = err == 0 ? pack_stats(&st) : 0;
    return err;
}

/* ---- What each call may return, and what it tells the model ---- */

static bool never_waits(const void *state, const kit_call_t *call)
{
    (void)state;
    (void)call;
    return false;
}

static bool submit_takes_effect(void *state, const kit_call_t *call)
{
    struct mw_model *m = state;
    long id = call->arg;
    if (call->ret == 0) {
        if (m->closed == YES)
            return false;
        learn_open(m);
        m->task[id] = QUEUED_OR_DONE;
        if (spawns(id))
            m->task[id + SUBTASK_OFFSET] = SUBTASK_MAYBE;
    } else if (call->ret == ECANCELED) {
        if (m->closed == NO)
            return false;
        learn_closed(m);
        m->task[id] = REFUSED_CLOSED;
    } else if (call->ret == ETIMEDOUT) {
        /* The queue was full at the deadline: so many tasks were accepted.
         * (It takes effect as the rejected record appears, a little later:
         * those tasks may be done by then, and the component closed.) */
        if (may_run(m, false) + may_run(m, true) + count(m, CANCELLED) < m->capacity)
            return false;
        m->task[id] = REFUSED_FULL;
    } else {
        return false;
    }
    m->submits++;
    return true;
}

/* Task id's record is taken from @p list: the task must have been able to
 * finish by now; it is then done, and its record gone from the list. */
static bool finished_and_taken(struct mw_model *m, long id, enum list list)
{
    int state = m->task[id];
    if (state != QUEUED_OR_DONE && state != DONE && state != DONE_OR_CANCELLED && !perhaps_subtask(m, id))
        return false;
    m->task[id] = DONE;
    m->taken[id] = true;
    took_one(m, list);
    return true;
}

static bool result_taken(struct mw_model *m, long id)
{
    if (id <= 0 || fails(id) || m->taken[id])
        return false;
    return finished_and_taken(m, id, RESULTS);
}

/* ECANCELED: no result stored and none can come - closed, nothing pending. */
static bool results_ended(struct mw_model *m)
{
    if (m->closed == NO || m->stored[RESULTS] > 0)
        return false;
    for (int id = 1; id < MAX_TASKS; id++) {
        if (!accepted(m, id) || fails(id) || m->taken[id] || m->task[id] == CANCELLED)
            continue;
        if (m->task[id] != DONE_OR_CANCELLED)
            return false; /* its result is stored, or still to come */
        m->task[id] = CANCELLED;
    }
    learn_closed(m);
    settle(m);
    return true;
}

static bool take_takes_effect(void *state, const kit_call_t *call)
{
    struct mw_model *m = state;
    if (call->ret == 0)
        return result_taken(m, call->out);
    if (call->ret == ECANCELED)
        return results_ended(m);
    /* Not while a finished task's result is stored; nor once the workers
     * are joined: a result is then stored, or the results have ended. */
    if (call->ret != ETIMEDOUT || record_stored(m, RESULTS) || finished_before(m, call))
        return false;
    /* Nor when closed with nothing pending. (A stop may not have taken
     * out its tasks yet; an mw_submit let in before the close may still
     * wait for room.) */
    return m->closed != YES || maybe_pending(m) > 0 || call->out == SUBMIT_BESIDE;
}

static bool take_forever_takes_effect(void *state, const kit_call_t *call)
{
    if (call->ret == 0)
        return result_taken(state, call->out);
    return call->ret == ECANCELED && results_ended(state);
}

/* Asleep for good only while no result is due and the component is open. */
static bool take_forever_waits(const void *state, const kit_call_t *call)
{
    const struct mw_model *m = state;
    (void)call;
    return m->closed != YES && results_due(m, false) == 0 && m->stored[RESULTS] == 0;
}

/* ETIMEDOUT: only a short timeout runs out - an hour is always long enough
 * here: the work ends, or the trap is found. Another mw_await may have
 * closed and sent the pills, its workers not gone yet - unless that call
 * had returned before this one began. */
static bool await_timed_out(struct mw_model *m, const kit_call_t *call)
{
    long timeout = await_timeout(call->arg);
    if (timeout == HOUR_MS || call->ended_ns - call->started_ns < timeout * 1000000)
        return false;
    if (m->joined_at >= 0 && call->started_ns > m->joined_at)
        return false;
    if (all_could_be_done(m)) { /* this call may have closed, and sent the pills */
        if (m->closed == NO)
            m->closed = MAYBE;
        if (m->over == NO)
            m->over = MAYBE;
    }
    return true;
}

static bool await_takes_effect(void *state, const kit_call_t *call)
{
    struct mw_model *m = state;
    switch (call->ret) {
    case 0:
        if (!all_could_be_done(m))
            return false;
        settle(m);
        m->closed = m->over = YES;
        if (m->joined_at < 0)
            m->joined_at = call->ended_ns;
        return true;
    case EDEADLK: /* the results are full and a worker waits for room with a result */
        if (m->over == YES || m->limit == 0 || results_due(m, true) <= m->limit || finished_before(m, call))
            return false;
        learn_open(m);
        return true;
    case ETIMEDOUT:
        return await_timed_out(m, call);
    default:
        return false;
    }
}

/* mw_stop takes effect as it closes the component, at its start: a call
 * that saw it closed may return before it cancels, lifts the limit or ends
 * the workers. Its result says what it will do: 0, every task accepted by
 * then will be done; ETIMEDOUT, some will be cancelled. */
static bool stop_takes_effect(void *state, const kit_call_t *call)
{
    struct mw_model *m = state;
    int due = results_due(m, true), queued = count(m, QUEUED_OR_DONE) + count(m, SUBTASK_MAYBE);
    if (call->ret == ETIMEDOUT) {
        if (m->over == YES || queued == 0)
            return false;
        /* With an hour, only the trap leaves tasks queued: every worker
         * holds a result it cannot store, and one more task waits. */
        if (stop_timeout(call->arg) == HOUR_MS &&
            !(limit_binds(m) && due >= m->limit + m->workers && queued > m->workers))
            return false;
        learn_open(m);
        for (int id = 1; id < MAX_TASKS; id++)
            if (m->task[id] == QUEUED_OR_DONE)
                m->task[id] = DONE_OR_CANCELLED;
    } else if (call->ret != 0) {
        return false;
    }
    if (limit_binds(m) && due > m->limit)
        m->lifted = true; /* not for certain: lenient on the limit from now on */
    m->closed = YES;
    m->stopped = true;
    if (m->joined_at < 0)
        m->joined_at = call->ended_ns;
    return true;
}

static bool close_takes_effect(void *state, const kit_call_t *call)
{
    struct mw_model *m = state;
    m->closed = YES;
    return call->ret == 0;
}

static bool take_failed_takes_effect(void *state, const kit_call_t *call)
{
    struct mw_model *m = state;
    if (call->ret == ENOENT) {
        finished_before(m, call);
        return !record_stored(m, FAILURES);
    }
    long id = call->out & 255, error = call->out >> 8;
    if (call->ret != 0 || call->out < 0 || !fails(id) || error != EIO || m->taken[id])
        return false;
    return finished_and_taken(m, id, FAILURES);
}

/* Which record of task @p id a rejected record with @p error can be, or NOT_SUBMITTED if none. */
static enum task_state rejection_of(const struct mw_model *m, long id, long error)
{
    switch (m->task[id]) {
    case REFUSED_FULL: return error == ETIMEDOUT ? REFUSED_FULL : NOT_SUBMITTED;
    case REFUSED_CLOSED: return error == ECANCELED ? REFUSED_CLOSED : NOT_SUBMITTED;
    case DONE_OR_CANCELLED:
    case CANCELLED: return error == ECANCELED ? CANCELLED : NOT_SUBMITTED;
    case SUBTASK_MAYBE:
    case SUBTASK_SETTLED: /* refused when the queue was full; or, after a stop, refused or cancelled */
        if (error == ETIMEDOUT)
            return REFUSED_FULL;
        return error == ECANCELED && m->stopped ? REFUSED_CLOSED : NOT_SUBMITTED;
    default: return NOT_SUBMITTED;
    }
}

static bool take_rejected_takes_effect(void *state, const kit_call_t *call)
{
    struct mw_model *m = state;
    if (call->ret == ENOENT)
        return !record_stored(m, REJECTIONS);
    long id = call->out & 255, error = call->out >> 8;
    if (call->ret != 0 || call->out < 0 || m->taken[id])
        return false;
    enum task_state was = rejection_of(m, id, error);
    if (was == NOT_SUBMITTED)
        return false;
    m->task[id] = (unsigned char)was;
    m->taken[id] = true;
    took_one(m, REJECTIONS);
    return true;
}
/* No scenario makes that many: a counter went below zero. */
static bool counts_huge(const struct counts *c)
{
    int v[COUNTERS] = { c->submitted, c->completed,  c->failed, c->rejected, c->cancelled,
                        c->pending,   c->unconsumed, c->most,   c->alive,    c->blocked };
    for (int i = 0; i < COUNTERS; i++)
        if (v[i] == HUGE_COUNT)
            return true;
    return false;
}

/* What holds of a snapshot at any instant. */
static bool counts_balance(const struct counts *c, const struct mw_model *m)
{
    if (counts_huge(c))
        return false;
    if (c->submitted != c->completed + c->failed + c->rejected + c->pending)
        return false;
    if (c->cancelled > c->rejected || c->unconsumed > c->most || c->blocked > c->alive || c->alive > m->workers)
        return false;
    if (limit_binds(m) && c->most > m->limit)
        return false;
    return c->unconsumed == c->completed - results_taken(m);
}


/* A snapshot counts the records in each list: as many as it said are there
 * now. No fewer than the model had (only a take removes one). */
static bool learn_stored(struct mw_model *m, const struct counts *c)
{
    int counted[LISTS] = { c->unconsumed, c->failed - taken_from(m, FAILURES),
                           c->rejected - taken_from(m, REJECTIONS) };
    for (int list = 0; list < LISTS; list++) {
        if (counted[list] < m->stored[list])
            return false;
        m->stored[list] = (unsigned char)counted[list];
    }
    return true;
}

/* While the threads run: what the calls so far guarantee, nothing more (a
 * task may be queued or done; an mw_submit may be waiting for room, its
 * task counted though its call has not returned; a sub-task may or may not
 * have been submitted). */
static bool stats_takes_effect(void *state, const kit_call_t *call)
{
    struct mw_model *m = state;
    struct counts c = unpack_stats(call->out);
    if (call->ret != 0 || !counts_balance(&c, m) || !learn_stored(m, &c))
        return false;
    if (finished_before(m, call) && (c.pending != 0 || c.alive != 0))
        return false; /* an mw_await or mw_stop has returned: all done, every worker joined */
    if (m->over == NO && !m->stopped && c.alive != m->workers)
        return false;
    if (c.pending == 0)
        settle(m); /* every task accepted so far is finished */
    int maybe_cancelled = m->stopped ? count(m, DONE_OR_CANCELLED) + subtasks(m) : 0; /* only a stop cancels */
    return c.submitted >= m->submits && c.completed >= tally(m, DONE, false) && c.completed <= may_run(m, false) &&
           c.failed >= tally(m, DONE, true) && c.failed <= may_run(m, true) &&
           c.rejected >= refused(m) + count(m, CANCELLED) && c.cancelled >= count(m, CANCELLED) &&
           c.cancelled <= count(m, CANCELLED) + maybe_cancelled;
}

/* Once nothing else can move: every accepted task is done - unless the
 * trap holds, the results full and a worker waiting for room. Each record
 * is counted against the tasks' own record by check_at_quiet(). */
static bool stats_at_quiet_takes_effect(void *state, const kit_call_t *call)
{
    struct mw_model *m = state;
    struct counts c = unpack_stats(call->out);
    if (!stats_takes_effect(state, call))
        return false;
    if (c.pending > 0) { /* the trap: nobody consumes, and no worker can finish anything more */
        learn_open(m);
        return limit_binds(m) && !m->stopped && results_due(m, true) > m->limit && c.unconsumed == m->limit &&
               c.blocked >= 1 && c.alive == m->workers;
    }
    if (!all_could_be_done(m))
        return false;
    settle(m);
    if (m->over == MAYBE && c.alive == 0)
        m->over = m->closed = YES;
    learn_open(m);
    bool left = m->over == YES || m->stopped;
    return c.blocked == 0 && c.alive == (left ? 0 : m->workers);
}
/* ---- Once the scenario is quiet: every record, from the component itself ---- */

struct found {
    int results, failures, rejections;
    int error; /* the last rejected record's */
};

static char quiet_text[480];

static const char *say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *say(const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(quiet_text, sizeof quiet_text, fmt, args);
    va_end(args);
    return quiet_text;
}

/* Takes every record left in the three lists; a take makes room for a
 * worker waiting under result_limit, so it goes on until a round finds
 * nothing once the workers are quiet again (each round but the last takes
 * a record, and a scenario makes fewer than MAX_TASKS). */
static const char *drain(struct scene *s, struct found *found)
{
    for (int round = 0; round <= MAX_TASKS; round++) {
        int taken = 0;
        mw_result_t r;
        mw_failure_t f;
        while (taken < 64 && mw_take_result(s->mw, &r, 0) == 0) {
            if (result_code(s, &r) < 0)
                return say("mw_take_result gave a result (task_id %ld) that no task of the scenario made", r.task_id);
            found[r.task_id].results++;
            taken++;
        }
        while (taken < 64 && mw_take_failed(s->mw, &f) == 0) {
            if (record_code(s, &f) < 0 || f.error != EIO)
                return say("mw_take_failed gave a record (task %ld, %s) that no failing task made, or with "
                           "another payload", f.task.id, kit_errno_name(f.error));
            found[f.task.id].failures++;
            taken++;
        }
        while (taken < 64 && mw_take_rejected(s->mw, &f) == 0) {
            if (record_code(s, &f) < 0)
                return say("mw_take_rejected gave a record (task %ld, %s) that no mw_submit made, or with "
                           "another payload", f.task.id, kit_errno_name(f.error));
            found[f.task.id].rejections++;
            found[f.task.id].error = f.error;
            taken++;
        }
        if (taken == 0)
            return NULL;
        kit_explore_await_quiet();
    }
    return NULL;
}

/* What the component left of one task: records taken by the scenario's calls (as the model has them) and by drain(). */
struct left {
    int ran;
    int results, failures, rejections; /* all of them, taken by a call or by drain() */
    int rejected_with;                 /* the error of the rejected record (if only one) */
};

static struct left left_of(const struct mw_model *m, long id, int ran, const struct found *f)
{
    struct left l = { .ran = ran, .results = f->results, .failures = f->failures, .rejections = f->rejections,
                      .rejected_with = f->error };
    int state = m->task[id];
    if (!m->taken[id])
        return l;
    if (state == DONE && fails(id))
        l.failures++;
    else if (state == DONE)
        l.results++;
    else {
        l.rejections++;
        l.rejected_with = state == REFUSED_FULL ? ETIMEDOUT : ECANCELED;
    }
    return l;
}

/* A task mw_submit refused with @p why: one rejected record, with that error, and it never ran. */
static const char *check_refused(long id, int why, const struct left *l)
{
    if (l->ran > 0)
        return say("mw_submit refused task %ld (%s), yet its process function ran: a refused task never runs", id,
                   kit_errno_name(why));
    if (l->rejections != 1 || l->results + l->failures > 0)
        return say("mw_submit refused task %ld (%s): it must be recorded once, in the rejected list, but it was "
                   "there %d times (taken or left), and %d times among the results and failures", id,
                   kit_errno_name(why), l->rejections, l->results + l->failures);
    if (l->rejected_with != why)
        return say("task %ld's rejected record says %s; mw_submit returned %s", id, kit_errno_name(l->rejected_with),
                   kit_errno_name(why));
    return NULL;
}

/* A task mw_submit accepted: it ran once and left its result or failure, or a stop cancelled it. */
static const char *check_accepted(const struct mw_model *m, long id, const struct left *l)
{
    int records = l->results + l->failures + l->rejections;
    if (l->ran > 1)
        return say("task %ld's process function ran %d times: each accepted task runs once", id, l->ran);
    if (l->ran == 0 && !m->stopped)
        return say("mw_submit accepted task %ld (it returned 0), but its process function never ran, and no "
                   "mw_stop cancelled it: the workers must run every accepted task", id);
    if (l->ran == 0 && (records != 1 || l->rejections != 1))
        return say("mw_stop cancelled task %ld before it ran: it must be recorded once, in the rejected list with "
                   "ECANCELED, but it was there %d times (taken or left) and %d times among the results and "
                   "failures", id, l->rejections, l->results + l->failures);
    if (l->ran == 0 && l->rejected_with != ECANCELED)
        return say("mw_stop cancelled task %ld before it ran, but its rejected record says %s, not ECANCELED", id,
                   kit_errno_name(l->rejected_with));
    if (l->ran == 1 && (records != 1 || (fails(id) ? l->failures : l->results) != 1))
        return say("task %ld ran and %s: its %s must be recorded exactly once, but %d records of it were taken or "
                   "left (%d results, %d failures, %d rejections)", id, fails(id) ? "failed (EIO)" : "succeeded",
                   fails(id) ? "failure" : "result", records, l->results, l->failures, l->rejections);
    return NULL;
}

/* Sub-task @p id: its parent's record says whether it was submitted, and what mw_submit said. */
static const char *check_subtask(const struct mw_model *m, long id, const struct record *rec, const struct left *l)
{
    long parent = id - SUBTASK_OFFSET;
    int why = rec->subtask[parent];
    if (!spawns(parent) || rec->ran[parent] == 0) {
        if (l->ran + l->results + l->failures + l->rejections > 0)
            return say("task %ld never submitted sub-task %ld, yet it ran or left a record", parent, id);
        return NULL;
    }
    if (why == 0)
        return check_accepted(m, id, l);
    if (why == ECANCELED && !m->stopped)
        return say("task %ld's mw_submit of sub-task %ld returned ECANCELED, but no mw_stop was called: sub-tasks "
                   "are accepted after mw_close() until a stop", parent, id);
    if (why != ETIMEDOUT && why != ECANCELED)
        return say("task %ld's mw_submit of sub-task %ld (timeout 0) returned %s: 0, ETIMEDOUT or ECANCELED", parent,
                   id, kit_errno_name(why));
    return check_refused(id, why, l);
}

static const char *check_task(const struct mw_model *m, long id, const struct record *rec, const struct left *l)
{
    if (is_subtask(id))
        return check_subtask(m, id, rec, l);
    if (m->task[id] == REFUSED_FULL)
        return check_refused(id, ETIMEDOUT, l);
    if (m->task[id] == REFUSED_CLOSED)
        return check_refused(id, ECANCELED, l);
    if (accepted(m, id))
        return check_accepted(m, id, l);
    if (l->ran + l->results + l->failures + l->rejections > 0)
        return say("task %ld was never submitted, yet it ran or left a record", id);
    return NULL;
}

/* What mw_stats must say once every record is taken: the tasks' own count. */
static mw_stats_t expected_stats(const struct mw_model *m, const struct record *rec)
{
    mw_stats_t want = { .submitted = m->submits };
    for (long id = 1; id < MAX_TASKS; id++) {
        bool submitted = is_subtask(id) ? rec->subtask[id - SUBTASK_OFFSET] != -1 : m->task[id] != NOT_SUBMITTED;
        bool refused_now = is_subtask(id) ? rec->subtask[id - SUBTASK_OFFSET] > 0
                                          : m->task[id] == REFUSED_FULL || m->task[id] == REFUSED_CLOSED;
        if (!submitted)
            continue;
        if (is_subtask(id))
            want.submitted++;
        if (refused_now)
            want.rejected++;
        else if (rec->ran[id] == 0)
            want.cancelled++;
        else if (fails(id))
            want.failed++;
        else
            want.completed++;
    }
    want.rejected += want.cancelled;
    return want;
}

static const char *check_counts(struct scene *s, const struct mw_model *m, const struct record *rec)
{
    mw_stats_t st, want = expected_stats(m, rec);
    if (mw_stats(s->mw, &st) != 0)
        return say("mw_stats failed");
    if (st.submitted != want.submitted || st.completed != want.completed || st.failed != want.failed ||
        st.rejected != want.rejected || st.cancelled != want.cancelled || st.pending != 0 || st.unconsumed != 0)
        return say("once every record was taken, mw_stats says submitted %zu, completed %zu, failed %zu, rejected "
                   "%zu (cancelled %zu), pending %zu, unconsumed %zu; the tasks say %zu, %zu, %zu, %zu (%zu), 0, 0",
                   st.submitted, st.completed, st.failed, st.rejected, st.cancelled, st.pending, st.unconsumed,
                   want.submitted, want.completed, want.failed, want.rejected, want.cancelled);
    return NULL;
}

static const char *check_at_quiet(void *object, const void *state)
{
    struct scene *s = object;
    const struct mw_model *m = state;
    struct found found[MAX_TASKS];
    memset(found, 0, sizeof found);
    const char *wrong = drain(s, found);
    pthread_mutex_lock(&s->lock);
    struct record rec = s->record;
    pthread_mutex_unlock(&s->lock);
    if (wrong == NULL && rec.ran[0] > 0)
        wrong = say("a process function ran for a task whose id no mw_submit gave");
    for (long id = 1; id < MAX_TASKS && wrong == NULL; id++) {
        struct left l = left_of(m, id, rec.ran[id], &found[id]);
        wrong = check_task(m, id, &rec, &l);
    }
    return wrong ? wrong : check_counts(s, m, &rec);
}
/* ---- Printing ---- */

static void print_create(long config, char *text, size_t size)
{
    snprintf(text, size, "mw_config_t c = { .workers = %ld, .queue_capacity = %ld, .result_limit = %ld }; "
             "mw_create(&mw, &c), mw_start(mw)", config & 15, config >> 8 & 15, config >> 4 & 15);
}

static const char *timeout_text(long timeout)
{
    if (timeout == HOUR_MS)
        return "HOUR_MS";
    return timeout == 0 ? "0" : "2";
}

static void print_call(const kit_call_t *call, const char *name, char *text, size_t size)
{
    switch (call->op) {
    case SUBMIT:
        snprintf(text, size, "mw_submit(mw, %ld, &payload[%ld], %ld)", call->arg, call->arg, call->timeout_ms);
        break;
    case TAKE: snprintf(text, size, "mw_take_result(mw, &result, %ld)", call->timeout_ms); break;
    case TAKE_FOREVER: snprintf(text, size, "mw_take_result(mw, &result, LONG_MAX)"); break;
    case AWAIT: snprintf(text, size, "mw_await(mw, %s)", timeout_text(await_timeout(call->arg))); break;
    case STOP: snprintf(text, size, "mw_stop(mw, %s)", timeout_text(stop_timeout(call->arg))); break;
    case TAKE_FAILED:
    case TAKE_REJECTED: snprintf(text, size, "%s(mw, &failure)", name); break;
    case STATS:
    case STATS_AT_QUIET: snprintf(text, size, "mw_stats(mw, &stats)"); break;
    default: snprintf(text, size, "%s(mw)", name);
    }
}

static void print_out(const kit_call_t *call, char *text, size_t size)
{
    long o = call->out;
    if (call->ret != 0) {
        snprintf(text, size, "-> %s", kit_errno_name(call->ret));
    } else if ((call->op == TAKE || call->op == TAKE_FOREVER) && o < 0) {
        snprintf(text, size, "-> 0, a result no task of the scenario made");
    } else if (call->op == TAKE || call->op == TAKE_FOREVER) {
        snprintf(text, size, "-> 0, result.task_id = %ld", o);
    } else if ((call->op == TAKE_FAILED || call->op == TAKE_REJECTED) && o < 0) {
        snprintf(text, size, "-> 0, a record no task of the scenario made (or another payload)");
    } else if (call->op == TAKE_FAILED || call->op == TAKE_REJECTED) {
        snprintf(text, size, "-> 0, task %ld, %s", o & 255, kit_errno_name((int)(o >> 8)));
    } else if (call->op == STATS || call->op == STATS_AT_QUIET) {
        struct counts c = unpack_stats(o);
        snprintf(text, size, "-> submitted %d = completed %d + failed %d + rejected %d + pending %d; cancelled %d, "
                 "unconsumed %d (most %d), workers %d (%d blocked)%s", c.submitted, c.completed, c.failed,
                 c.rejected, c.pending, c.cancelled, c.unconsumed, c.most, c.alive, c.blocked,
                 counts_huge(&c) ? "; 63: that many or more" : "");
    } else {
        snprintf(text, size, "-> 0");
    }
}

/* A task's state in words; tasks with the same words are listed together. */
static const char *task_words(const struct mw_model *m, int id)
{
    bool took = m->taken[id];
    switch (m->task[id]) {
    case REFUSED_FULL: return took ? "refused (ETIMEDOUT), its record taken" : "refused (ETIMEDOUT)";
    case REFUSED_CLOSED: return took ? "refused (ECANCELED), its record taken" : "refused (ECANCELED)";
    case QUEUED_OR_DONE: return "queued, running or done";
    case DONE:
        if (fails(id))
            return took ? "failed, its record taken" : "failed, its record stored";
        return took ? "done, its result taken" : "done, its result stored";
    case DONE_OR_CANCELLED: return "done or cancelled by the stop";
    case CANCELLED: return took ? "cancelled, its record taken" : "cancelled";
    case SUBTASK_MAYBE: return "perhaps submitted (as a sub-task), then refused, queued, running or done";
    case SUBTASK_SETTLED: return "refused, done or cancelled, if submitted (as a sub-task)";
    default: return NULL;
    }
}

/* Between the n-th of @p same task numbers and the one before: "1", "1 and 2", "1, 2 and 3". */
static const char *separator(int n, int same)
{
    if (n == 1)
        return " ";
    return n == same ? " and " : ", ";
}

/* "; tasks 1 and 4 queued, running or done": the tasks from @p id on in the same state as it. */
static size_t print_tasks_like(const struct mw_model *m, int id, bool *listed, char *text, size_t size)
{
    const char *words = task_words(m, id);
    int same = 0;
    for (int other = id; other < MAX_TASKS; other++)
        if (task_words(m, other) == words)
            same++;
    size_t at = (size_t)snprintf(text, size, "; task%s", same > 1 ? "s" : "");
    for (int other = id, n = 0; other < MAX_TASKS && at < size; other++) {
        if (task_words(m, other) != words)
            continue;
        listed[other] = true;
        n++;
        at += (size_t)snprintf(text + at, size - at, "%s%d", separator(n, same), other);
    }
    if (at < size)
        at += (size_t)snprintf(text + at, size - at, " %s", words);
    return at;
}

static void print_state(const void *state, char *text, size_t size)
{
    const struct mw_model *m = state;
    static const char *const closed[] = { "open", "perhaps closed", "closed" };
    size_t at = (size_t)snprintf(text, size, "the component is %s",
                                 m->over == YES ? "closed, its workers told to leave" : closed[m->closed]);
    if (m->limit > 0 && at < size)
        at += (size_t)snprintf(text + at, size - at, ", %d result%s due under result_limit %d%s",
                               results_due(m, false), results_due(m, false) == 1 ? "" : "s", m->limit,
                               m->lifted ? " (perhaps lifted by the stop)" : "");
    bool listed[MAX_TASKS] = { false };
    for (int id = 1; id < MAX_TASKS && at < size; id++)
        if (task_words(m, id) != NULL && !listed[id])
            at += print_tasks_like(m, id, listed, text + at, size - at);
}

static const kit_op_t mw_ops[] = {
    [SUBMIT] = { .name = "mw_submit", .weight = 6, .group = SUBMITS, .timed = true, .run = run_submit,
                 .take_effect = submit_takes_effect, .waits = never_waits,
                 .rule = "mw_submit: 0 (queued; it will complete or fail); ETIMEDOUT (the queue stayed full) or "
                         "ECANCELED (closed: after mw_close(), mw_await() or mw_stop(); sub-tasks are still accepted "
                         "after mw_close() until a stop), the task then recorded as rejected (here task N fails with "
                         "EIO if N is a multiple of 3; tasks 2, 5 and 8 first submit sub-task N + 10)" },
    [TAKE] = { .name = "mw_take_result", .weight = 3, .group = TAKES, .timed = true, .run = run_take,
               .take_effect = take_takes_effect, .waits = never_waits,
               .rule = "mw_take_result removes the oldest stored result, waiting at most timeout_ms: 0; ECANCELED "
                       "(no result stored and none can come: closed and nothing pending); ETIMEDOUT; each result is "
                       "taken exactly once" },
    [TAKE_FOREVER] = { .name = "mw_take_result", .weight = 2, .group = TAKES, .run = run_take_forever,
                       .take_effect = take_forever_takes_effect, .waits = take_forever_waits,
                       .rule = "mw_take_result waits for a stored result: 0 as soon as one is stored; ECANCELED once "
                               "closed with nothing pending; each result is taken exactly once" },
    [AWAIT] = { .name = "mw_await", .weight = 2, .group = ENDS, .run = run_await, .take_effect = await_takes_effect,
                .waits = never_waits,
                .rule = "mw_await: 0 once every submitted task is finished, the workers joined (again: 0); "
                        "ETIMEDOUT (not done yet - an hour is always enough here); EDEADLK (the results are at "
                        "result_limit and no worker can finish anything more)" },
    [STOP] = { .name = "mw_stop", .weight = 1, .group = ENDS, .once = true, .run = run_stop, .take_effect = stop_takes_effect,
               .waits = never_waits,
               .rule = "mw_stop: 0 (every task mw_submit() accepted was done); ETIMEDOUT (some accepted tasks were "
                       "not done by the deadline: recorded as rejected with ECANCELED, counted in cancelled); every "
                       "worker is stopped and joined all the same" },
    [CLOSE] = { .name = "mw_close", .weight = 2, .group = ENDS, .once = true, .run = run_close, .take_effect = close_takes_effect,
                .waits = never_waits,
                .rule = "mw_close stops accepting tasks from outside: later mw_submit calls fail with ECANCELED" },
    [TAKE_FAILED] = { .name = "mw_take_failed", .weight = 1, .run = run_take_failed,
                      .take_effect = take_failed_takes_effect, .waits = never_waits,
                      .rule = "mw_take_failed removes the oldest failed task (here: each task whose id is a multiple "
                              "of 3 fails with EIO), with its payload; ENOENT when none is recorded now" },
    [TAKE_REJECTED] = { .name = "mw_take_rejected", .weight = 1, .run = run_take_rejected,
                        .take_effect = take_rejected_takes_effect, .waits = never_waits,
                        .rule = "mw_take_rejected removes the oldest rejected task - refused by mw_submit (ETIMEDOUT, "
                                "ECANCELED) or cancelled by mw_stop (ECANCELED) - with its payload; ENOENT when none "
                                "is recorded now" },
    [STATS] = { .name = "mw_stats", .weight = 2, .run = run_stats, .take_effect = stats_takes_effect,
                .waits = never_waits,
                .rule = "mw_stats reads every counter at one instant: submitted == completed + failed + rejected + "
                        "pending; never more results stored than result_limit; every worker alive until told to "
                        "leave" },
    [STATS_AT_QUIET] = { .name = "mw_stats", .weight = 0, .run = run_stats,
                         .take_effect = stats_at_quiet_takes_effect, .waits = never_waits, .post = true,
                         .rule = "once nothing else can move, every accepted task is completed, failed or cancelled "
                                 "(unless the results are full and a worker waits for room), each counted once" },
};

/* Both sides blocked: submitters asleep on a full queue and result takers
 * in a row; takers asleep on no result and submits in a row; submitters
 * racing the await, stop and close that end the run. */
static const kit_shape_t mw_shapes[] = {
    { .sleepers = SUBMITS, .mover = TAKES },
    { .sleepers = TAKES, .mover = SUBMITS },
    { .sleepers = SUBMITS, .mover = ENDS },
};

const kit_spec_t mw_spec = {
    .object = "mw",
    .state_size = sizeof(struct mw_model),
    .param = draw_config,
    .create = make_scene,
    .model = model_of,
    .release = close_scene,
    .released_ret = ECANCELED,
    .destroy = destroy_scene,
    .print_create = print_create,
    .print_call = print_call,
    .print_out = print_out,
    .print_state = print_state,
    .at_quiet = check_at_quiet,
    .ops = mw_ops,
    .nops = (int)(sizeof mw_ops / sizeof mw_ops[0]),
    .shapes = mw_shapes,
    .nshapes = (int)(sizeof mw_shapes / sizeof mw_shapes[0]),
};

/* Both sides of a judged test find the spec here. */
const kit_spec_t *const kit_scenario_specs[] = { &mw_spec, NULL };
