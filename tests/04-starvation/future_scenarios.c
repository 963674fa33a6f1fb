/**
 * @file future_scenarios.c
 * @brief Chapter 04's generated scenarios (kit_scenario.h): a pool and three
 *        futures whose tasks the test lets return, fail or wait for one
 *        another; the model of the workers' own steps and of the calls, and
 *        how each is printed.
 *
 * Apart from the test that runs them, so that both sides of a judged test
 * link the same spec: the judge draws and checks with it (its model and its
 * printing), the subject makes its calls on the pool and futures under test
 * - the scenario's tasks included, which run there, on the pool's workers.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "future.h"
#include "kit_errno.h"
#include "kit_scenario.h"
#include "kit_sched.h"
#include "tpool.h"

/* ---- Generated scenarios (kit_scenario.h) ------------------------------------------
 * Three futures of one pool of one or two workers: fN = tpool_submit(p, task,
 * &tN), N = 1..3. Each task waits on its worker until the test lets it go
 * (task_go): to return rN, to fail with EIO, or to call future_get() on
 * another future of the pool and hand over what that gave. So the test
 * decides how a task ends, but not when a worker starts it or moves on:
 * that is the pool's own business, and nobody's call.
 *
 * The sequential model therefore keeps every way the workers may have gone
 * so far - a `way`: each future's state and outcome, what each task was
 * told, which task sits in its own future_get(). A call takes effect if the
 * workers, by steps of their own, can reach a way that gives what the call
 * returned; the ways that do are what the next call starts from. Calls asleep
 * at the end must sleep in a way the workers can reach and not leave. */

enum { FUTURES = 3, MAX_WAYS = 24, MAX_REACH = 256 };

/* What task N was told by the first task_go(tN, ...). */
enum go { HELD, RETURN, FAIL, GET_F1, GET_F2, GET_F3, RELEASED /* the scenario's end: fail with ECANCELED */ };

enum { UNTOUCHED = -2, OTHER_POINTER = -1 }; /* what future_get left in r, besides r1..r3 and NULL (0) */

/* Where a running task is: acting on its go-ahead (or held); asleep in its
 * future_get(), counted as a blocked worker; or refused by it with EDEADLK -
 * an answer given at once, though the task returns (and the future fails)
 * only later. */
enum phase { ACTING, WAITING, REFUSED };

/* One way the pool may have gone. Bytes only: the check compares models byte by byte. */
struct way {
    unsigned char state[FUTURES];   /* future_state_t */
    unsigned char outcome[FUTURES]; /* DONE: whose result (1..3); FAILED: the error */
    unsigned char go[FUTURES];      /* enum go */
    unsigned char phase[FUTURES];   /* enum phase, while RUNNING */
};

struct futures_model {
    unsigned char workers;
    unsigned char count;            /* ways in use; the rest stay zero */
    struct way ways[MAX_WAYS];      /* sorted, none reachable from another */
};

static char results[FUTURES]; /* task N returns &results[N - 1]: "rN" */

/* The call's id is fresh for every call; a fixed shuffle of it (Knuth's
 * multiplicative hash) picks the future, so that the calls of one thread
 * do not simply take turns. */
static unsigned shuffled(long id)
{
    return (unsigned)(((unsigned long)id * 2654435761UL) >> 8);
}

static int future_of(long id)
{
    return (int)(shuffled(id) % FUTURES);
}

/* The other future a GET_Fj go-ahead makes the task wait for (never its own). */
static int target_of(long id)
{
    unsigned h = shuffled(id);
    return (int)((h % FUTURES + 1 + h / FUTURES % (FUTURES - 1)) % FUTURES);
}

/* ---- The model: the workers' own steps ---------------------------------------------- */

static bool finished(int state)
{
    return state == FUTURE_DONE || state == FUTURE_FAILED || state == FUTURE_CANCELLED;
}

/* The first `workers` tasks went straight to workers of their own; the rest
 * wait in the queue, in order, until enough of those before them have
 * finished (a cancelled one is skipped at once) to free a worker. */
static bool worker_free_for(const struct way *w, int workers, int i)
{
    int done = 0;
    for (int j = 0; j < i; j++)
        if (finished(w->state[j]))
            done++;
    return i < workers || done >= i + 1 - workers;
}

/* Workers counted as blocked by the starvation detector: in future_get() for
 * a future that has not finished (its finisher un-counts them). */
static int blocked(const struct way *w)
{
    int count = 0;
    for (int i = 0; i < FUTURES; i++)
        if (w->state[i] == FUTURE_RUNNING && w->phase[i] == WAITING && !finished(w->state[w->go[i] - GET_F1]))
            count++;
    return count;
}

static void finish(struct way *w, int i, int state, int outcome)
{
    w->state[i] = (unsigned char)state;
    w->outcome[i] = (unsigned char)outcome;
    w->phase[i] = ACTING;
}

/* Task i's future_get() of future t returned: the task hands over what it gave. */
static void hand_over(struct way *w, int i, int t)
{
    if (w->state[t] == FUTURE_DONE)
        finish(w, i, FUTURE_DONE, w->outcome[t]);
    else if (w->state[t] == FUTURE_FAILED)
        finish(w, i, FUTURE_FAILED, w->outcome[t]);
    else
        finish(w, i, FUTURE_FAILED, ECANCELED);
}

/* Running task i does what it was told; for GET_Fj, the detector decides
 * whether it may wait: not if every other worker already waits so. */
static void act(struct way *w, int workers, int i)
{
    int t = w->go[i] - GET_F1;
    if (w->go[i] == RETURN)
        finish(w, i, FUTURE_DONE, i + 1);
    else if (w->go[i] == FAIL)
        finish(w, i, FUTURE_FAILED, EIO);
    else if (finished(w->state[t]))
        hand_over(w, i, t);
    else if (blocked(w) + 1 >= workers)
        w->phase[i] = REFUSED; /* the pool is at its size: nobody would be left to do that work */
    else
        w->phase[i] = WAITING;
}

/* The step of future i's worker from @p w, if it has one: start the task,
 * let it act on its go-ahead, wake from its own future_get(), or return
 * after an EDEADLK. */
static bool worker_step(const struct way *w, int workers, int i, struct way *next)
{
    *next = *w;
    bool running = w->state[i] == FUTURE_RUNNING;
    if (w->state[i] == FUTURE_PENDING && worker_free_for(w, workers, i))
        next->state[i] = FUTURE_RUNNING;
    else if (running && w->phase[i] == ACTING && w->go[i] != HELD)
        act(next, workers, i);
    else if (running && w->phase[i] == WAITING && finished(w->state[w->go[i] - GET_F1]))
        hand_over(next, i, w->go[i] - GET_F1);
    else if (running && w->phase[i] == REFUSED)
        finish(next, i, FUTURE_FAILED, EDEADLK);
    else
        return false;
    return true;
}

static bool quiet(const struct way *w, int workers)
{
    struct way next;
    for (int i = 0; i < FUTURES; i++)
        if (worker_step(w, workers, i, &next))
            return false;
    return true;
}

static int find_way(const struct way *ways, int count, const struct way *w)
{
    for (int k = 0; k < count; k++)
        if (memcmp(&ways[k], w, sizeof *w) == 0)
            return k;
    return -1;
}

/* Every way the workers can reach from @p from by steps of their own (from itself included). */
static int reach(const struct way *from, int workers, struct way *out)
{
    int count = 1;
    out[0] = *from;
    for (int k = 0; k < count; k++) {
        for (int i = 0; i < FUTURES; i++) {
            struct way next;
            if (worker_step(&out[k], workers, i, &next) && find_way(out, count, &next) < 0) {
                kit_explore_check(count < MAX_REACH, "the futures' model reaches more than %d ways", MAX_REACH);
                out[count++] = next;
            }
        }
    }
    return count;
}

/* ---- The model: the calls ------------------------------------------------------------ */

enum { GET, GET_TIMED, CANCEL, STATE, IS_DONE, GO_RETURN, GO_FAIL, GO_GET, STATES };
enum { GETS = 1, CANCELS, GOES }; /* the groups of the shapes */

/* What future_get() of future i gives in @p w: a result once finished. */
static bool get_gives(const struct way *w, int i, const kit_call_t *call)
{
    if (call->ret == ETIMEDOUT && call->op == GET_TIMED)
        return !finished(w->state[i]) && call->out == UNTOUCHED;
    if (w->state[i] == FUTURE_DONE)
        return call->ret == 0 && call->out == w->outcome[i];
    if (w->state[i] == FUTURE_FAILED)
        return call->ret == w->outcome[i] && call->out == UNTOUCHED;
    return w->state[i] == FUTURE_CANCELLED && call->ret == ECANCELED && call->out == UNTOUCHED;
}

static bool cancel_gives(struct way *w, int i, int ret)
{
    if (ret == 0 && w->state[i] == FUTURE_PENDING) {
        finish(w, i, FUTURE_CANCELLED, 0);
        return true;
    }
    if (ret == 0)
        return w->state[i] == FUTURE_CANCELLED;
    return ret == EBUSY && w->state[i] != FUTURE_PENDING && w->state[i] != FUTURE_CANCELLED;
}

/* task_go(): the first go-ahead decides; a later one is refused, changing nothing. */
static bool go_gives(struct way *w, int i, int what, int ret)
{
    if (w->go[i] != HELD)
        return ret == EALREADY;
    w->go[i] = (unsigned char)what;
    return ret == 0;
}

static long packed_states(const unsigned char *state)
{
    long packed = 0;
    for (int i = 0; i < FUTURES; i++)
        packed |= (long)state[i] << (4 * i);
    return packed;
}

/* Whether the call, made in way @p w, could give what it returned; if so, applies it. */
static bool call_gives(struct way *w, int workers, const kit_call_t *call)
{
    int i = future_of(call->arg);
    switch (call->op) {
    case GET:
    case GET_TIMED: return get_gives(w, i, call);
    case CANCEL: return cancel_gives(w, i, call->ret);
    case STATE: return call->out == w->state[i];
    case IS_DONE: return call->out == finished(w->state[i]);
    case GO_RETURN: return go_gives(w, i, RETURN, call->ret);
    case GO_FAIL: return go_gives(w, i, FAIL, call->ret);
    case GO_GET: return go_gives(w, i, GET_F1 + target_of(call->arg), call->ret);
    case STATES: return quiet(w, workers) && call->out == packed_states(w->state); /* read once all is still */
    }
    return false;
}

static int compare_ways(const void *a, const void *b)
{
    return memcmp(a, b, sizeof(struct way));
}

/* Drops every way that another reaches by the workers' own steps: it stays
 * possible from there, and the model stays small. Then sorts, so that equal
 * sets of ways are equal bytes. */
static void keep_earliest(struct way *ways, int *count, int workers)
{
    static struct way reached[MAX_REACH];
    bool later[MAX_REACH] = { false };
    for (int k = 0; k < *count; k++) {
        int n = reach(&ways[k], workers, reached);
        for (int r = 1; r < n; r++) {
            int found = find_way(ways, *count, &reached[r]);
            if (found >= 0)
                later[found] = true;
        }
    }
    int kept = 0;
    for (int k = 0; k < *count; k++)
        if (!later[k])
            ways[kept++] = ways[k];
    *count = kept;
    qsort(ways, (size_t)kept, sizeof ways[0], compare_ways);
}

static bool takes_effect(void *state, const kit_call_t *call)
{
    struct futures_model *m = state;
    static struct way after[MAX_REACH], reached[MAX_REACH];
    int count = 0;
    for (int k = 0; k < m->count; k++) {
        int n = reach(&m->ways[k], m->workers, reached);
        for (int r = 0; r < n; r++) {
            struct way w = reached[r];
            if (call_gives(&w, m->workers, call) && find_way(after, count, &w) < 0) {
                kit_explore_check(count < MAX_REACH, "the futures' model has more than %d ways", MAX_REACH);
                after[count++] = w;
            }
        }
    }
    if (count == 0)
        return false;
    keep_earliest(after, &count, m->workers);
    kit_explore_check(count <= MAX_WAYS, "the futures' model has %d ways, more than its %d", count, MAX_WAYS);
    memset(m->ways, 0, sizeof m->ways);
    memcpy(m->ways, after, (size_t)count * sizeof after[0]);
    m->count = (unsigned char)count;
    return true;
}

/* A get may sleep for good where the workers can stop with its future unfinished. */
static bool get_waits(const void *state, const kit_call_t *call)
{
    const struct futures_model *m = state;
    static struct way reached[MAX_REACH];
    for (int k = 0; k < m->count; k++) {
        int n = reach(&m->ways[k], m->workers, reached);
        for (int r = 0; r < n; r++)
            if (quiet(&reached[r], m->workers) && !finished(reached[r].state[future_of(call->arg)]))
                return true;
    }
    return false;
}

static bool never_waits(const void *state, const kit_call_t *call)
{
    (void)state;
    (void)call;
    return false;
}

/* ---- The object: a pool, its three futures, and the tasks' go-aheads ------------------ */

struct scene;

/* What the test lets task N do; given once. */
struct go_ahead {
    pthread_mutex_t lock;
    pthread_cond_t given;  /* broadcast when `what` is set */
    int what;              /* guarded by lock: HELD until the first task_go() */
    int task;              /* immutable: N - 1 */
    struct scene *scene;   /* immutable: for GET_Fj, the futures */
};

struct scene {
    tpool_t *pool;
    future_t *futures[FUTURES];
    struct go_ahead go[FUTURES];
};

static int await_go(struct go_ahead *g)
{
    pthread_mutex_lock(&g->lock);
    while (g->what == HELD) /* while, not if: wake-ups can be spurious */
        pthread_cond_wait(&g->given, &g->lock);
    int what = g->what;
    pthread_mutex_unlock(&g->lock);
    return what;
}

static int give_go(struct go_ahead *g, int what)
{
    pthread_mutex_lock(&g->lock);
    int err = g->what == HELD ? 0 : EALREADY;
    if (err == 0)
        g->what = what;
    pthread_cond_broadcast(&g->given);
    pthread_mutex_unlock(&g->lock);
    return err;
}

/* Task N, on a worker of the pool: waits for its go-ahead, then does it. */
static void *scenario_task(void *raw)
{
    struct go_ahead *g = raw;
    int what = await_go(g);
    if (what == RETURN)
        return &results[g->task];
    if (what == FAIL || what == RELEASED) {
        future_fail(what == FAIL ? EIO : ECANCELED);
        return NULL;
    }
    void *got = NULL; /* GET_Fj: a wait on this worker for work of its own pool */
    int err = future_get(g->scene->futures[what - GET_F1], &got);
    if (err != 0)
        future_fail(err);
    return got;
}

static long draw_workers(kit_rng_t *rng)
{
    return 1 + (long)kit_rng_below(rng, 2);
}

/* The model of the scene make_scene(workers) makes: also the judge's first state. */
static void model_of(long workers, void *state)
{
    struct futures_model *m = state;
    *m = (struct futures_model){ .workers = (unsigned char)workers, .count = 1 }; /* all PENDING and HELD */
}

static void *make_scene(long workers, void *state)
{
    model_of(workers, state);
    struct scene *s = calloc(1, sizeof *s);
    kit_explore_check(s != NULL, "out of memory");
    for (int i = 0; i < FUTURES; i++) {
        s->go[i] = (struct go_ahead){ .what = HELD, .task = i, .scene = s };
        explore_ok(pthread_mutex_init(&s->go[i].lock, NULL));
        explore_ok(pthread_cond_init(&s->go[i].given, NULL));
    }
    tpool_config_t config = { .core_threads = (size_t)workers, .queue_capacity = 8, .keep_alive_ms = 3600L * 1000,
                              .reject = bq_policy_block(), .name = "xf" };
    explore_ok(tpool_create(&s->pool, &config));
    for (int i = 0; i < FUTURES; i++)
        explore_ok(tpool_submit(s->pool, scenario_task, &s->go[i], &s->futures[i]));
    return s;
}

/* Wakes every sleeper as the header promises: tpool_shutdown_now() cancels
 * the futures of queued tasks, and each task still held fails with
 * ECANCELED - which its waiters, and those of tasks waiting on it, get.
 * Every go-ahead is held meanwhile, so that a thread this wakes cannot let a
 * task go some other way first. (Lock order: the go-aheads', in turn, then
 * the pool's and the futures'; a task holds no lock of its own pool or
 * future while it waits for its go-ahead.) */
static void release_scene(void *raw)
{
    struct scene *s = raw;
    for (int i = 0; i < FUTURES; i++)
        pthread_mutex_lock(&s->go[i].lock);
    explore_ok(tpool_shutdown_now(s->pool));
    for (int i = 0; i < FUTURES; i++) {
        if (s->go[i].what == HELD)
            s->go[i].what = RELEASED;
        pthread_cond_broadcast(&s->go[i].given);
    }
    for (int i = FUTURES - 1; i >= 0; i--)
        pthread_mutex_unlock(&s->go[i].lock);
}

static void destroy_scene(void *raw)
{
    struct scene *s = raw;
    tpool_destroy(s->pool);
    for (int i = 0; i < FUTURES; i++) {
        future_release(s->futures[i]);
        pthread_cond_destroy(&s->go[i].given);
        pthread_mutex_destroy(&s->go[i].lock);
    }
    free(s);
}

/* What future_get() left in r: 1..3 for r1..r3, 0 for NULL. */
static long result_seen(const void *r, const void *before)
{
    if (r == before)
        return UNTOUCHED;
    if (r == NULL)
        return 0;
    for (int i = 0; i < FUTURES; i++)
        if (r == &results[i])
            return i + 1;
    return OTHER_POINTER;
}

static int run_get(future_t *f, long timeout_ms, bool timed, long *out)
{
    static char untouched;
    void *r = &untouched;
    int err = timed ? future_get_timed(f, &r, timeout_ms) : future_get(f, &r);
    *out = result_seen(r, &untouched);
    return err;
}

/* future_state() of each future, one after the other. */
static long read_states(struct scene *s)
{
    unsigned char states[FUTURES];
    for (int i = 0; i < FUTURES; i++)
        states[i] = (unsigned char)future_state(s->futures[i]);
    return packed_states(states);
}

static int run_scene_call(struct scene *s, int op, long id, long timeout_ms, long *out)
{
    future_t *f = s->futures[future_of(id)];
    struct go_ahead *g = &s->go[future_of(id)];
    switch (op) {
    case GET: return run_get(f, 0, false, out);
    case GET_TIMED: return run_get(f, timeout_ms, true, out);
    case CANCEL: return future_cancel(f);
    case STATE: *out = future_state(f); return 0;
    case IS_DONE: *out = future_is_done(f); return 0;
    case GO_RETURN: return give_go(g, RETURN);
    case GO_FAIL: return give_go(g, FAIL);
    case GO_GET: return give_go(g, GET_F1 + target_of(id));
    case STATES: *out = read_states(s); return 0;
    }
    return EINVAL;
}

#define RUN_AS(name, op)                                                                                   \
    static int name(void *s, long id, long timeout_ms, long *out)                                          \
    {                                                                                                      \
        return run_scene_call(s, op, id, timeout_ms, out);                                                 \
    }
RUN_AS(run_get_call, GET)
RUN_AS(run_get_timed_call, GET_TIMED)
RUN_AS(run_cancel, CANCEL)
RUN_AS(run_state, STATE)
RUN_AS(run_is_done, IS_DONE)
RUN_AS(run_go_return, GO_RETURN)
RUN_AS(run_go_fail, GO_FAIL)
RUN_AS(run_go_get, GO_GET)
RUN_AS(run_states, STATES)

/* ---- Printing ----------------------------------------------------------------------- */

static const char *state_name(long state)
{
    static const char *const names[] = { "FUTURE_PENDING", "FUTURE_RUNNING", "FUTURE_DONE", "FUTURE_FAILED",
                                         "FUTURE_CANCELLED" };
    return state >= 0 && state < 5 ? names[state] : "no future_state_t";
}

static void print_create(long workers, char *text, size_t size)
{
    snprintf(text, size, "%ld worker%s; fN = tpool_submit(p, task, &tN), N = 1..3; task N held until task_go(tN, ...)",
             workers, workers == 1 ? "" : "s");
}

static void print_call(const kit_call_t *call, const char *name, char *text, size_t size)
{
    int f = future_of(call->arg) + 1;
    switch (call->op) {
    case GET: snprintf(text, size, "future_get(f%d, &r)", f); break;
    case GET_TIMED: snprintf(text, size, "future_get_timed(f%d, &r, %ld)", f, call->timeout_ms); break;
    case GO_RETURN: snprintf(text, size, "task_go(t%d, RETURN_R%d)", f, f); break;
    case GO_FAIL: snprintf(text, size, "task_go(t%d, FAIL_EIO)", f); break;
    case GO_GET: snprintf(text, size, "task_go(t%d, GET_F%d)", f, target_of(call->arg) + 1); break;
    case STATES: snprintf(text, size, "future_state(fN), N = 1..3"); break;
    default: snprintf(text, size, "%s(f%d)", name, f);
    }
}

static void print_result(long seen, char *text, size_t size)
{
    if (seen > 0)
        snprintf(text, size, "-> 0, r = r%ld", seen);
    else if (seen == 0)
        snprintf(text, size, "-> 0, r = NULL");
    else if (seen == UNTOUCHED)
        snprintf(text, size, "-> 0, r left as it was");
    else
        snprintf(text, size, "-> 0, r = a pointer no task returned");
}

static void print_out(const kit_call_t *call, char *text, size_t size)
{
    long o = call->out;
    bool get = call->op == GET || call->op == GET_TIMED;
    if (get && call->ret == 0)
        print_result(o, text, size);
    else if (get && o != UNTOUCHED)
        snprintf(text, size, "-> %s, yet r was written", kit_errno_name(call->ret));
    else if (call->op == STATE)
        snprintf(text, size, "-> %s", state_name(o));
    else if (call->op == IS_DONE)
        snprintf(text, size, "-> %s", o ? "true" : "false");
    else if (call->op == STATES)
        snprintf(text, size, "-> %s, %s, %s", state_name(o & 15), state_name(o >> 4 & 15), state_name(o >> 8 & 15));
    else
        snprintf(text, size, "-> %s", call->ret == 0 ? "0" : kit_errno_name(call->ret));
}

/* What a task not yet finished was told, or where it is in it: "held", "go: GET_F1", "in future_get(f1)". */
static void print_task(const struct way *w, int i, char *text, size_t size)
{
    int t = w->go[i] - GET_F1 + 1;
    bool running = w->state[i] == FUTURE_RUNNING;
    if (w->go[i] == HELD)
        snprintf(text, size, "held");
    else if (w->go[i] == RETURN)
        snprintf(text, size, "go: RETURN_R%d", i + 1);
    else if (w->go[i] == FAIL)
        snprintf(text, size, "go: FAIL_EIO");
    else if (running && w->phase[i] == WAITING)
        snprintf(text, size, "in future_get(f%d)", t);
    else if (running && w->phase[i] == REFUSED)
        snprintf(text, size, "EDEADLK from future_get(f%d)", t);
    else
        snprintf(text, size, "go: GET_F%d", t);
}

/* "f1 done (r1)", "f2 running (held)", "f3 not started (go: GET_F1)". */
static int print_future(const struct way *w, int i, char *text, size_t size)
{
    int s = w->state[i];
    if (s == FUTURE_DONE)
        return snprintf(text, size, "f%d done (r%d)", i + 1, w->outcome[i]);
    if (s == FUTURE_FAILED)
        return snprintf(text, size, "f%d failed (%s)", i + 1, kit_errno_name(w->outcome[i]));
    if (s == FUTURE_CANCELLED)
        return snprintf(text, size, "f%d cancelled", i + 1);
    char task[48];
    print_task(w, i, task, sizeof task);
    return snprintf(text, size, "f%d %s (%s)", i + 1, s == FUTURE_RUNNING ? "running" : "not started", task);
}

/* "f1 done (r1), f2 running (held), f3 not started (held)" - the earliest
 * way the calls so far allow; the workers may have gone on from there. */
static void print_state(const void *state, char *text, size_t size)
{
    const struct futures_model *m = state;
    int at = 0;
    for (int i = 0; i < FUTURES && at < (int)size; i++) {
        if (i > 0)
            at += snprintf(text + at, size - (size_t)at, ", ");
        if (at < (int)size)
            at += print_future(&m->ways[0], i, text + at, size - (size_t)at);
    }
    if (m->count > 1 && at < (int)size)
        snprintf(text + at, size - (size_t)at, " (or %d other way%s)", m->count - 1, m->count > 2 ? "s" : "");
}

static const kit_op_t future_ops[] = {
    [GET] = { .name = "future_get", .weight = 3, .group = GETS, .run = run_get_call, .take_effect = takes_effect,
              .waits = get_waits,
              .rule = "future_get waits until the future has finished: 0 and the result, ECANCELED, or the task's "
                      "future_fail() error; r written only on success; in a task, EDEADLK if every other worker "
                      "waits so" },
    [GET_TIMED] = { .name = "future_get_timed", .weight = 2, .group = GETS, .timed = true, .run = run_get_timed_call,
                    .take_effect = takes_effect, .waits = get_waits,
                    .rule = "future_get_timed: as future_get, or ETIMEDOUT once timeout_ms has passed with the "
                            "future unfinished" },
    [CANCEL] = { .name = "future_cancel", .weight = 2, .group = CANCELS, .run = run_cancel, .take_effect = takes_effect,
                 .waits = never_waits,
                 .rule = "future_cancel: 0 if not started (it never will; waiters wake with ECANCELED) or "
                         "cancelled already; EBUSY once started" },
    [STATE] = { .name = "future_state", .weight = 1, .run = run_state, .take_effect = takes_effect,
                .waits = never_waits,
                .rule = "future_state: the state now, only ever moving forward: PENDING, RUNNING, DONE or FAILED; "
                        "or PENDING, CANCELLED" },
    [IS_DONE] = { .name = "future_is_done", .weight = 1, .run = run_is_done, .take_effect = takes_effect,
                  .waits = never_waits, .rule = "future_is_done: true once DONE, FAILED or CANCELLED" },
    /* The test's own calls: they let a task go, and break no rule of the header. */
    [GO_RETURN] = { .name = "task_go", .weight = 3, .group = GOES, .run = run_go_return, .take_effect = takes_effect,
                    .waits = never_waits, .rule = "task N, let go, returns rN: its future is DONE with rN" },
    [GO_FAIL] = { .name = "task_go", .weight = 1, .group = GOES, .run = run_go_fail, .take_effect = takes_effect,
                  .waits = never_waits, .rule = "task N, let go, calls future_fail(EIO): its future is FAILED" },
    [GO_GET] = { .name = "task_go", .weight = 2, .group = GOES, .run = run_go_get, .take_effect = takes_effect,
                 .waits = never_waits,
                 .rule = "task N, let go, calls future_get(fj) on its worker: EDEADLK only when every other worker "
                         "already waits so" },
    /* Called once nothing else can move: every task a worker could start has
     * started, and every task let go has done what it was told. */
    [STATES] = { .name = "future_state", .weight = 0, .run = run_states, .take_effect = takes_effect,
                 .waits = never_waits, .post = true,
                 .rule = "a free worker runs the next queued task; a future is DONE or FAILED once its task returned;"
                         " a task's future_get gives EDEADLK only if every other worker waits so" },
};

/* Waiters asleep on the futures, plain and timed, while tasks are let go in
 * a row (each finish wakes every waiter of its future; a timed wait may run
 * out as it does; a task may wait on its own pool); waiters asleep while
 * futures are cancelled; waiters asleep and anything. */
static const kit_shape_t future_shapes[] = {
    { .sleepers = GETS, .mover = GOES },
    { .sleepers = GETS, .mover = CANCELS },
    { .sleepers = GETS, .mover = 0 },
};

const kit_spec_t future_spec = {
    .object = "p",
    .state_size = sizeof(struct futures_model),
    .param = draw_workers,
    .create = make_scene,
    .model = model_of,
    .release = release_scene,
    .released_ret = ECANCELED,
    .destroy = destroy_scene,
    .print_create = print_create,
    .print_call = print_call,
    .print_out = print_out,
    .print_state = print_state,
    .ops = future_ops,
    .nops = (int)(sizeof future_ops / sizeof future_ops[0]),
    .shapes = future_shapes,
    .nshapes = (int)(sizeof future_shapes / sizeof future_shapes[0]),
};

/* Both sides of a judged test find the spec here. */
const kit_spec_t *const kit_scenario_specs[] = { &future_spec, NULL };
