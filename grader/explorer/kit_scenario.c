/**
 * @file kit_scenario.c
 * @brief Generated scenarios (kit_scenario.h): drawing them from a seed,
 *        running one under the explorer, and checking its history against
 *        the chapter's sequential model.
 *
 * The check is Wing and Gong's: search for an order of the calls that
 * returned - one call at a time, each after every call that returned before
 * it began - in which the model, applying each call's effect, gives every
 * result the call returned. A timed call that returned ETIMEDOUT takes
 * effect at its deadline, so it comes after every call that returned before
 * then. The calls still asleep when nothing else can move must then be
 * calls that wait in the state that order leaves; a sleeper that the state
 * lets through missed its wake-up.
 */
#define _GNU_SOURCE
#include "kit_scenario.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_errno.h"
#include "kit_test.h"
#include "kit_thread.h"
#include "kit_time.h"

enum {
    MAX_INIT = 3,       /* calls before the threads start */
    MAX_THREADS = 3,
    MAX_PER_THREAD = 3,
    MAX_THREAD_CALLS = 6, /* over all threads: keeps each scenario's search small enough to finish */
    MAX_POST = 3,       /* the calls after, on the test's thread */
    MAX_CALLS = MAX_INIT + MAX_THREADS * MAX_PER_THREAD + MAX_POST,
    STATE_MAX = 1024,
    MEMO_SLOTS = 4096
};

struct scenario {
    const kit_spec_t *spec;
    int number;
    long param;
    int nthreads;
    int ncalls;
    int first_post;             /* the calls from here on run after the threads */
    kit_call_t plan[MAX_CALLS]; /* the calls before the threads (thread 0), then thread 1's, 2's ...,
                                   then the calls after (thread 0, post) */
};

/* One schedule's run of the scenario. */
struct run {
    const struct scenario *sc;
    void *object;
    kit_call_t calls[MAX_CALLS];
    bool skipped[MAX_CALLS];     /* a call before the threads that would have waited for ever alone */
    bool pending[MAX_CALLS];     /* asleep when the scenario went quiet */
    long events;                 /* invocations and responses so far */
    unsigned char initial[STATE_MAX];
    unsigned char final[STATE_MAX]; /* the model after the order the check found */
    const char *file;
    int line;
};

/* ---- Drawing a scenario ------------------------------------------------------------ */

static int draw_op(const kit_spec_t *spec, kit_rng_t *rng, const bool *used)
{
    int total = 0;
    for (int i = 0; i < spec->nops; i++)
        if (!(spec->ops[i].once && used[i]))
            total += spec->ops[i].weight;
    int pick = (int)kit_rng_below(rng, (uint64_t)total);
    for (int i = 0; i < spec->nops; i++) {
        if (spec->ops[i].once && used[i])
            continue;
        if (pick < spec->ops[i].weight)
            return i;
        pick -= spec->ops[i].weight;
    }
    return 0;
}

static void draw_call(const kit_spec_t *spec, kit_rng_t *rng, bool *used, int thread, kit_call_t *call, long *ids)
{
    memset(call, 0, sizeof *call);
    call->op = draw_op(spec, rng, used);
    used[call->op] = true;
    call->arg = ++*ids; /* a fresh value each call: a message id, a task number */
    call->thread = thread;
    call->timeout_ms = spec->ops[call->op].timed ? (long)kit_rng_below(rng, 3) : 0;
    call->invoked = call->responded = -1;
}


static void draw_scenario(const kit_spec_t *spec, int number, struct scenario *sc)
{
    kit_rng_t rng;
    kit_rng_seed(&rng, 20261203, (uint64_t)number);
    memset(sc, 0, sizeof *sc);
    sc->spec = spec;
    sc->number = number;
    sc->param = spec->param ? spec->param(&rng) : 0;
    bool used[32] = { false };
    long ids = 0;
    int init = (int)kit_rng_below(&rng, MAX_INIT + 1);
    for (int i = 0; i < init; i++)
        draw_call(spec, &rng, used, 0, &sc->plan[sc->ncalls++], &ids);
    sc->nthreads = 2 + (int)kit_rng_below(&rng, MAX_THREADS - 1);
    int budget = MAX_THREAD_CALLS;
    for (int t = 1; t <= sc->nthreads; t++) {
        int left_for_others = sc->nthreads - t; /* each later thread makes one call at least */
        int most = budget - left_for_others < MAX_PER_THREAD ? budget - left_for_others : MAX_PER_THREAD;
        int count = 1 + (int)kit_rng_below(&rng, (uint64_t)most);
        budget -= count;
        for (int i = 0; i < count; i++)
            draw_call(spec, &rng, used, t, &sc->plan[sc->ncalls++], &ids);
    }
    sc->first_post = sc->ncalls;
    for (int i = 0; i < spec->nops && sc->ncalls - sc->first_post < MAX_POST; i++) {
        if (!spec->ops[i].post)
            continue;
        kit_call_t *call = &sc->plan[sc->ncalls++];
        *call = (kit_call_t){ .op = i, .invoked = -1, .responded = -1 };
    }
}

/* ---- Printing it as code ----------------------------------------------------------- */

static char thread_letter(int thread)
{
    return (char)('A' + thread - 1);
}

static void print_call_line(kit_text_t *t, const struct run *r, int i)
{
    const kit_spec_t *spec = r->sc->spec;
    const kit_call_t *c = &r->calls[i];
    char call[160], out[160] = "";
    spec->print_call(c, spec->ops[c->op].name, call, sizeof call);
    if (r->skipped[i])
        snprintf(out, sizeof out, "left out: alone, it would wait for ever");
    else if (r->pending[i])
        snprintf(out, sizeof out, "still waiting");
    else if (c->responded < 0)
        snprintf(out, sizeof out, "not reached");
    else if (spec->print_out)
        spec->print_out(c, out, sizeof out);
    else
        snprintf(out, sizeof out, "-> %s", c->ret == 0 ? "0" : kit_errno_name(c->ret));
    if (c->thread == 0)
        kit_text_put(t, "\n      %-36s /* %s */", call, out);
    else
        kit_text_put(t, "\n      %c: %-33s /* %s */", thread_letter(c->thread), call, out);
}

static void print_scenario(kit_text_t *t, const struct run *r)
{
    const kit_spec_t *spec = r->sc->spec;
    char create[120];
    spec->print_create(r->sc->param, create, sizeof create);
    kit_text_put(t, "\n    the scenario (KIT_SCENARIO=%d):\n      %s;", r->sc->number, create);
    for (int i = 0; i < r->sc->first_post; i++)
        if (r->calls[i].thread == 0)
            print_call_line(t, r, i);
    kit_text_put(t, "\n      then, at once, on threads");
    for (int k = 1; k <= r->sc->nthreads; k++)
        kit_text_put(t, "%s %c", k == 1 ? "" : (k == r->sc->nthreads ? " and" : ","), thread_letter(k));
    kit_text_put(t, ":");
    for (int i = 0; i < r->sc->ncalls; i++)
        if (r->calls[i].thread != 0)
            print_call_line(t, r, i);
    if (r->sc->first_post < r->sc->ncalls)
        kit_text_put(t, "\n      then, once nothing else can move:");
    for (int i = r->sc->first_post; i < r->sc->ncalls; i++)
        print_call_line(t, r, i);
}

/* The scenario on one line, for a crash report: a crash ends the process
 * before any history can be printed. */
static void crash_context_of(const struct scenario *sc, int count)
{
    static char text[1024];
    kit_text_t t = { text, sizeof text, 0 };
    char call[160];
    sc->spec->print_create(sc->param, call, sizeof call);
    kit_text_put(&t, "it crashed in scenario %d of %d (KIT_SCENARIO=%d runs it alone): %s;", sc->number, count,
                 sc->number, call);
    for (int i = 0; i < sc->ncalls; i++) {
        const kit_call_t *c = &sc->plan[i];
        sc->spec->print_call(c, sc->spec->ops[c->op].name, call, sizeof call);
        if (i == sc->first_post)
            kit_text_put(&t, " then");
        if (c->thread == 0)
            kit_text_put(&t, " %s;", call);
        else
            kit_text_put(&t, " %c: %s;", thread_letter(c->thread), call);
    }
    kit_crash_context(text);
}

/* ---- Running it ---------------------------------------------------------------------- */

static void run_call(struct run *r, kit_call_t *c)
{
    const kit_op_t *op = &r->sc->spec->ops[c->op];
    kit_sched_touch_history();
    c->invoked = r->events++;
    c->started_ns = kit_now_ns();
    c->ret = op->run(r->object, c->arg, c->timeout_ms, &c->out);
    c->ended_ns = kit_now_ns();
    kit_sched_touch_history();
    c->responded = r->events++;
}

struct thread_arg {
    struct run *r;
    int thread;
};

static void *run_thread(void *raw)
{
    struct thread_arg *a = raw;
    char name[8];
    snprintf(name, sizeof name, "%c", thread_letter(a->thread));
    kit_thread_set_name(name);
    for (int i = 0; i < a->r->sc->ncalls; i++)
        if (a->r->calls[i].thread == a->thread)
            run_call(a->r, &a->r->calls[i]);
    return NULL;
}

/* The calls before the threads, one at a time; one that the model says
 * would wait for ever alone is left out. */
static void run_init(struct run *r, unsigned char *model)
{
    const kit_spec_t *spec = r->sc->spec;
    for (int i = 0; i < r->sc->first_post; i++) {
        kit_call_t *c = &r->calls[i];
        const kit_op_t *op = &spec->ops[c->op];
        if (c->thread != 0)
            continue;
        if (!op->timed && op->waits(model, c)) {
            r->skipped[i] = true;
            continue;
        }
        run_call(r, c);
        op->take_effect(model, c); /* if it cannot, the check below says so */
    }
}

/* ---- The check ---------------------------------------------------------------------- */

struct check {
    struct run *r;
    int done[MAX_CALLS];       /* the order found so far */
    int depth;
    int best_depth;            /* the longest order that held */
    int best_order[MAX_CALLS];
    int stuck_call;            /* a call no order could place next at the best depth */
    int lost_call;             /* a call asleep that the first full order lets through */
    int lost_order[MAX_CALLS]; /* ... that order */
    uint64_t memo[MEMO_SLOTS]; /* (calls placed, state) found to lead nowhere */
};

static bool returned(const struct run *r, int i)
{
    return !r->skipped[i] && r->calls[i].responded >= 0 && !r->pending[i];
}

/* Whether call a must come before call b in any order. */
static bool precedes(const struct run *r, int a, int b)
{
    const kit_call_t *ca = &r->calls[a], *cb = &r->calls[b];
    if (ca->responded < cb->invoked)
        return true;
    bool timed_out = cb->ret == ETIMEDOUT && r->sc->spec->ops[cb->op].timed && cb->timeout_ms > 0;
    return timed_out && ca->ended_ns < cb->started_ns + cb->timeout_ms * 1000000LL;
}

static uint64_t hash_of(uint32_t mask, const unsigned char *state, size_t size)
{
    uint64_t h = 1469598103934665603ULL ^ mask;
    for (size_t i = 0; i < size; i++)
        h = (h ^ state[i]) * 1099511628211ULL;
    return h | 1;
}

static bool memo_seen(struct check *k, uint64_t h)
{
    for (unsigned i = 0; i < 8; i++) {
        uint64_t *slot = &k->memo[(h + i) % MEMO_SLOTS];
        if (*slot == h)
            return true;
        if (*slot == 0) {
            *slot = h;
            return false;
        }
    }
    return false;
}

/* The first call still asleep that @p state lets through, or -1. */
static int lost_wakeup(const struct run *r, const unsigned char *state)
{
    for (int i = 0; i < r->sc->ncalls; i++)
        if (r->pending[i] && !r->sc->spec->ops[r->calls[i].op].waits(state, &r->calls[i]))
            return i;
    return -1;
}

static bool search(struct check *k, uint32_t placed, const unsigned char *state)
{
    struct run *r = k->r;
    const kit_spec_t *spec = r->sc->spec;
    bool all = true;
    for (int i = 0; i < r->sc->ncalls; i++)
        if (returned(r, i) && !(placed & (1u << i)))
            all = false;
    if (all) {
        int lost = lost_wakeup(r, state);
        if (lost < 0) {
            memcpy(r->final, state, spec->state_size);
            return true;
        }
        if (k->lost_call < 0) {
            k->lost_call = lost;
            memcpy(k->lost_order, k->done, sizeof k->done);
        }
        return false;
    }
    if (memo_seen(k, hash_of(placed, state, spec->state_size)))
        return false;
    for (int i = 0; i < r->sc->ncalls; i++) {
        if (!returned(r, i) || (placed & (1u << i)))
            continue;
        bool ready = true;
        for (int j = 0; j < r->sc->ncalls && ready; j++)
            if (j != i && returned(r, j) && !(placed & (1u << j)) && precedes(r, j, i))
                ready = false;
        if (!ready)
            continue;
        unsigned char next[STATE_MAX];
        memcpy(next, state, spec->state_size);
        if (!spec->ops[r->calls[i].op].take_effect(next, &r->calls[i])) {
            if (k->depth > k->best_depth || k->stuck_call < 0) {
                k->best_depth = k->depth;
                k->stuck_call = i;
                memcpy(k->best_order, k->done, sizeof k->done);
            }
            continue;
        }
        k->done[k->depth++] = i;
        if (search(k, placed | (1u << i), next))
            return true;
        k->depth--;
    }
    return false;
}

/* A timed call that gave up before its time. */
static int early_timeout(const struct run *r)
{
    for (int i = 0; i < r->sc->ncalls; i++) {
        const kit_call_t *c = &r->calls[i];
        if (returned(r, i) && c->ret == ETIMEDOUT && r->sc->spec->ops[c->op].timed &&
            c->ended_ns - c->started_ns < c->timeout_ms * 1000000LL)
            return i;
    }
    return -1;
}

static void describe_order(kit_text_t *t, const struct check *k)
{
    const struct run *r = k->r;
    if (k->best_depth == 0) {
        kit_text_put(t, " (before any call takes effect)");
        return;
    }
    kit_text_put(t, " (after ");
    for (int d = 0; d < k->best_depth; d++) {
        const kit_call_t *c = &r->calls[k->best_order[d]];
        char call[160];
        r->sc->spec->print_call(c, r->sc->spec->ops[c->op].name, call, sizeof call);
        kit_text_put(t, "%s%s", d ? ", " : "", call);
    }
    kit_text_put(t, ")");
}

static void state_after(const struct check *k, unsigned char *state)
{
    const struct run *r = k->r;
    memcpy(state, r->initial, r->sc->spec->state_size);
    for (int d = 0; d < k->best_depth; d++)
        r->sc->spec->ops[r->calls[k->best_order[d]].op].take_effect(state, &r->calls[k->best_order[d]]);
}

static void fail_check(struct run *r, const char *what, int call, kit_text_t *t)
{
    const kit_spec_t *spec = r->sc->spec;
    kit_text_put(t, "\n    the header: %s", spec->ops[r->calls[call].op].rule);
    print_scenario(t, r);
    kit_explore_fail(r->file, r->line, "%s%s", what, t->out);
}

static void check_history(struct run *r)
{
    static struct check k;
    static char text[3200];
    kit_text_t t = { text, sizeof text, 0 };
    text[0] = '\0';
    const kit_spec_t *spec = r->sc->spec;
    int early = early_timeout(r);
    if (early >= 0) {
        const kit_call_t *c = &r->calls[early];
        char call[160];
        spec->print_call(c, spec->ops[c->op].name, call, sizeof call);
        kit_text_put(&t, "%s returned ETIMEDOUT after %.3f ms, before its timeout of %ld ms.", call,
            (double)(c->ended_ns - c->started_ns) / 1e6, c->timeout_ms);
        fail_check(r, "", early, &t);
    }
    memset(&k, 0, sizeof k);
    k.r = r;
    k.stuck_call = k.lost_call = -1;
    if (search(&k, 0, r->initial))
        return;
    char call[160], state[200] = "";
    unsigned char after[STATE_MAX];
    if (k.lost_call >= 0) { /* every call that returned fits an order: a sleeper was forgotten */
        int returned_calls = 0;
        for (int i = 0; i < r->sc->ncalls; i++)
            returned_calls += returned(r, i);
        k.best_depth = returned_calls;
        memcpy(k.best_order, k.lost_order, sizeof k.best_order);
    }
    state_after(&k, after);
    if (spec->print_state)
        spec->print_state(after, state, sizeof state);
    if (k.lost_call >= 0) {
        const kit_call_t *c = &r->calls[k.lost_call];
        spec->print_call(c, spec->ops[c->op].name, call, sizeof call);
        kit_text_put(&t, "a lost wake-up: %s on thread %c still waits, though nothing else can move and %s%s", call,
            thread_letter(c->thread), state[0] ? state : "the calls that returned let it through", "");
        describe_order(&t, &k);
        kit_text_put(&t, ": it should have been woken.");
        fail_check(r, "", k.lost_call, &t);
    }
    const kit_call_t *c = &r->calls[k.stuck_call];
    char out[160] = "";
    spec->print_call(c, spec->ops[c->op].name, call, sizeof call);
    if (spec->print_out)
        spec->print_out(c, out, sizeof out);
    kit_text_put(&t, "no order of the calls, one at a time, gives what they returned: %s %s, but %s", call,
        out[0] ? out : "returned as it did", state[0] ? state : "the state did not allow it");
    describe_order(&t, &k);
    kit_text_put(&t, ".");
    fail_check(r, "", k.stuck_call, &t);
}

/* After the release, each call that slept must have returned what a
 * released call returns. */
static void check_released(struct run *r)
{
    const kit_spec_t *spec = r->sc->spec;
    for (int i = 0; i < r->sc->ncalls; i++) {
        const kit_call_t *c = &r->calls[i];
        if (!r->pending[i] || c->ret == spec->released_ret)
            continue;
        static char text[3200];
        kit_text_t t = { text, sizeof text, 0 };
        char call[160];
        spec->print_call(c, spec->ops[c->op].name, call, sizeof call);
        kit_text_put(&t, "%s slept until the end, was woken by the release, and returned %s: it must return %s.", call,
            kit_errno_name(c->ret), kit_errno_name(spec->released_ret));
        fail_check(r, "", i, &t);
    }
}

static void scenario_body(void *raw)
{
    struct run *r = raw;
    const struct scenario *sc = r->sc;
    const kit_spec_t *spec = sc->spec;
    memcpy(r->calls, sc->plan, sizeof r->calls);
    memset(r->skipped, 0, sizeof r->skipped);
    memset(r->pending, 0, sizeof r->pending);
    r->events = 0;
    unsigned char model[STATE_MAX];
    memset(model, 0, sizeof model);
    errno = 0;
    r->object = spec->create(sc->param, model);
    if (r->object == NULL) {
        int err = errno;
        char text[120];
        spec->print_create(sc->param, text, sizeof text);
        const char *create = strrchr(text, ';') ? strrchr(text, ';') + 2 : text; /* the call, not the declaration */
        if (err == ENOSYS)
            kit_explore_fail(r->file, r->line, "%s returned ENOSYS: not implemented yet", create);
        kit_explore_fail(r->file, r->line, "%s failed (%s): the scenarios need the object it makes", create,
                         err ? kit_errno_name(err) : "an error");
    }
    memcpy(r->initial, model, spec->state_size);
    run_init(r, model);
    pthread_t threads[MAX_THREADS];
    struct thread_arg args[MAX_THREADS];
    for (int k = 0; k < sc->nthreads; k++) {
        args[k] = (struct thread_arg){ r, k + 1 };
        explore_ok(pthread_create(&threads[k], NULL, run_thread, &args[k]));
    }
    kit_explore_await_quiet();
    for (int i = 0; i < sc->ncalls; i++)
        r->pending[i] = r->calls[i].invoked >= 0 && r->calls[i].responded < 0;
    for (int i = sc->first_post; i < sc->ncalls; i++)
        run_call(r, &r->calls[i]);
    check_history(r);
    const char *wrong = spec->at_quiet ? spec->at_quiet(r->object, r->final) : NULL;
    if (wrong != NULL) {
        static char text[3200];
        kit_text_t t = { text, sizeof text, 0 };
        kit_text_put(&t, "%s", wrong);
        print_scenario(&t, r);
        kit_explore_fail(r->file, r->line, "%s", text);
    }
    spec->release(r->object);
    for (int k = 0; k < sc->nthreads; k++)
        explore_ok(pthread_join(threads[k], NULL));
    check_released(r);
    spec->destroy(r->object);
}

/* ---- The scenarios of a test ------------------------------------------------------- */

static int scenario_from_env(void)
{
    const char *text = getenv("KIT_SCENARIO");
    return text && text[0] ? atoi(text) : 0;
}

void kit_scenarios_run(const char *test, const char *file, int line, const kit_spec_t *spec, int count,
                       const kit_explore_t *options)
{
    static struct scenario sc;
    static struct run r;
    if (spec->state_size > STATE_MAX || spec->nops > 32)
        fail_msg("%s: the spec's model is larger than the scenarios allow", test);
    int only = scenario_from_env();
    /* Under ThreadSanitizer or valgrind (KIT_SLOW) the point is memory and
     * race errors on the paths the scenarios take, not more paths: a fifth
     * of them, as each search runs a twenty-fifth of its schedules there. */
    if (getenv("KIT_SLOW") != NULL && only == 0)
        count = count / 5 > 10 ? count / 5 : (count < 10 ? count : 10);
    long interleavings = 0, complete = 0, within_bound = 0, schedules = 0;
    for (int number = 1; number <= count; number++) {
        if (only > 0 && number != only)
            continue;
        draw_scenario(spec, number, &sc);
        memset(&r, 0, sizeof r);
        r.sc = &sc;
        r.file = file;
        r.line = line;
        char extra[32];
        snprintf(extra, sizeof extra, "%d", number);
        kit_sched_replay_scenario(extra);
        static kit_explore_result_t result;
        crash_context_of(&sc, count);
        bool passed = kit_explore_search(test, options, scenario_body, &r, &result);
        kit_crash_context(NULL);
        if (!passed) {
            if (result.gave_up)
                fail_msg("%s: scenario %d could not run on the schedules: %s", test, number, result.message);
            char make_args[1200];
            sched_make_args(make_args, sizeof make_args);
            if (strcmp(result.token, ".") == 0)
                print_error("%s\n    in scenario %d of %d, before any thread had a choice\n", result.message, number,
                            count);
            else
                print_error("%s\n    in scenario %d of %d; its steps are printed with the test's output (under "
                            "make grade: in its log); replay it with\n    make explore %s TEST=%s REPLAY=%s\n",
                            result.message, number, count, make_args, test, result.token);
            kit_note_stacks_dumped();
            _fail(file, line);
        }
        kit_sched_replay_scenario(NULL);
        schedules += result.schedules;
        interleavings += result.complete ? result.interleavings : 0;
        complete += result.complete && !result.bound_reached;
        within_bound += result.complete && result.bound_reached;
    }
    if (only > 0)
        fprintf(stderr, "[ scenario ] %s: scenario %d alone, %ld schedules, all passed", test, only, schedules);
    else
        fprintf(stderr, "[ scenario ] %s: %d scenarios, %ld schedules, all passed", test, count, schedules);
    if (complete + within_bound > 0) /* a dfs or dpor search that ran out of branches */
        fprintf(stderr, "; searched to the end: %ld scenarios completely and %ld within the preemption bound, "
                "%ld interleavings in all", complete, within_bound, interleavings);
    fprintf(stderr, "\n");
}
