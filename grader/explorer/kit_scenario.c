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
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_errno.h"
#include "kit_test.h"
#include "kit_thread.h"
#include "kit_time.h"

enum {
    MAX_INIT = 3,       /* calls before the threads start */
    FREE_THREADS = 3,   /* a free scenario's threads */
    MAX_THREADS = 4,    /* a shape's: its sleepers and its mover */
    MAX_DRAWN = 3,      /* calls drawn for one thread, */
    MAX_PER_THREAD = 2 * MAX_DRAWN, /* ... and with those that give back what they took */
    MAX_THREAD_CALLS = 6, /* drawn over all threads: keeps each scenario's search small enough to finish */
    MAX_POST = 3,       /* the calls after, on the test's thread */
    MAX_CALLS = MAX_INIT + MAX_THREADS * MAX_PER_THREAD + MAX_POST, /* at most 32: the search's masks */
    STATE_MAX = 1024,
    MEMO_SLOTS = 4096,
    MAX_SCENARIOS_SEEN = 1024 /* a test's scenarios whose patterns are told apart */
};

struct scenario {
    const kit_spec_t *spec;
    int number;
    int shape;                  /* 1.. for a shape's scenario, 0 for a free one */
    long param;
    int nthreads;
    int ncalls;
    int first_post;             /* the calls from here on run after the threads */
    kit_call_t plan[MAX_CALLS]; /* the calls before the threads (thread 0), then thread 1's, 2's ...,
                                   then the calls after (thread 0, post) */
};

/* One schedule's run of the scenario. */
/* The places of a wake-up a time-out took: the wait, the path after it, where the mutex was let go. */
#define GIVEN_UP_PLACES 8

struct run {
    const struct scenario *sc;
    void *object;
    kit_call_t calls[MAX_CALLS];
    bool skipped[MAX_CALLS];     /* a call before the threads that would have waited for ever alone */
    bool pending[MAX_CALLS];     /* asleep when the scenario went quiet */
    void *touched[MAX_CALLS];    /* the last place of the code under test each call read or wrote, or NULL */
    void *given_up[MAX_CALLS][GIVEN_UP_PLACES]; /* a timed call's wake-up its time-out took (kit_sched.h) */
    int ngiven_up[MAX_CALLS];
    long events;                 /* invocations and responses so far */
    unsigned char initial[STATE_MAX];
    unsigned char final[STATE_MAX]; /* the model after the order the check found */
    const char *file;
    int line;
};

/* ---- Drawing a scenario ------------------------------------------------------------ */

/* An op of @p group (0: any), by weight; -1 if none can be drawn. */
static int draw_op(const kit_spec_t *spec, kit_rng_t *rng, const bool *used, int group)
{
    int total = 0;
    for (int i = 0; i < spec->nops; i++)
        if (!(spec->ops[i].once && used[i]) && (group == 0 || spec->ops[i].group == group))
            total += spec->ops[i].weight;
    if (total == 0)
        return -1;
    int pick = (int)kit_rng_below(rng, (uint64_t)total);
    for (int i = 0; i < spec->nops; i++) {
        if ((spec->ops[i].once && used[i]) || (group != 0 && spec->ops[i].group != group))
            continue;
        if (pick < spec->ops[i].weight)
            return i;
        pick -= spec->ops[i].weight;
    }
    return 0;
}

static void plan_call(const kit_spec_t *spec, kit_rng_t *rng, int op, int thread, kit_call_t *call, long *ids)
{
    memset(call, 0, sizeof *call);
    call->op = op;
    call->arg = ++*ids; /* a fresh value each call: a message id, a task number */
    call->thread = thread;
    call->timeout_ms = spec->ops[op].timed ? (long)kit_rng_below(rng, 3) : 0;
    call->invoked = call->responded = -1;
}

static void draw_call(struct scenario *sc, kit_rng_t *rng, bool *used, int thread, int group, long *ids)
{
    int op = draw_op(sc->spec, rng, used, group);
    if (op < 0 || sc->ncalls >= MAX_CALLS - MAX_POST)
        return;
    used[op] = true;
    plan_call(sc->spec, rng, op, thread, &sc->plan[sc->ncalls++], ids);
}

/* A thread's calls that took something and did not give it back (a lock)
 * end with the calls that do, the last taken given back first. */
static void give_back(struct scenario *sc, kit_rng_t *rng, int thread, int first, long *ids)
{
    const kit_spec_t *spec = sc->spec;
    int held[MAX_PER_THREAD], count = 0;
    for (int i = first; i < sc->ncalls; i++) {
        int op = sc->plan[i].op;
        if (spec->ops[op].undone_by > 0 && count < MAX_PER_THREAD) {
            held[count++] = op;
            continue;
        }
        for (int k = count - 1; k >= 0; k--)
            if (spec->ops[held[k]].undone_by == KIT_OP(op)) {
                memmove(&held[k], &held[k + 1], (size_t)(count - k - 1) * sizeof held[0]);
                count--;
                break;
            }
    }
    while (count > 0 && sc->ncalls < MAX_CALLS - MAX_POST)
        plan_call(spec, rng, spec->ops[held[--count]].undone_by - 1, thread, &sc->plan[sc->ncalls++], ids);
}

/* Calls of thread @p thread: @p count of them, of @p group (0: any op). */
static void draw_thread(struct scenario *sc, kit_rng_t *rng, bool *used, int thread, int count, int group,
                        long *ids)
{
    int first = sc->ncalls;
    for (int i = 0; i < count; i++)
        draw_call(sc, rng, used, thread, group, ids);
    give_back(sc, rng, thread, first, ids);
}

/* The calls after the threads, on the test's thread. */
static void plan_post(struct scenario *sc)
{
    const kit_spec_t *spec = sc->spec;
    sc->first_post = sc->ncalls;
    for (int i = 0; i < spec->nops && sc->ncalls - sc->first_post < MAX_POST; i++) {
        if (!spec->ops[i].post)
            continue;
        kit_call_t *call = &sc->plan[sc->ncalls++];
        *call = (kit_call_t){ .op = i, .invoked = -1, .responded = -1 };
    }
}

/* A free scenario: a few calls, then two or three threads of a few calls. */
static void draw_free(struct scenario *sc, kit_rng_t *rng, bool *used, long *ids)
{
    int init = (int)kit_rng_below(rng, MAX_INIT + 1);
    for (int i = 0; i < init; i++)
        draw_call(sc, rng, used, 0, 0, ids);
    sc->nthreads = 2 + (int)kit_rng_below(rng, FREE_THREADS - 1);
    int budget = MAX_THREAD_CALLS;
    for (int t = 1; t <= sc->nthreads; t++) {
        int left_for_others = sc->nthreads - t; /* each later thread makes one call at least */
        int most = budget - left_for_others < MAX_DRAWN ? budget - left_for_others : MAX_DRAWN;
        int count = 1 + (int)kit_rng_below(rng, (uint64_t)most);
        budget -= count;
        draw_thread(sc, rng, used, t, count, 0, ids);
    }
}

/* A shape's scenario: the object filled, two or three sleepers of one
 * group, and a mover making two or three calls of another in a row. */
static void draw_shape(struct scenario *sc, const kit_shape_t *shape, kit_rng_t *rng, bool *used, long *ids)
{
    if (shape->param != 0)
        sc->param = shape->param;
    for (long i = 0; shape->fill != 0 && i < sc->param && i < MAX_INIT; i++)
        draw_call(sc, rng, used, 0, shape->fill, ids);
    int sleepers = 2 + (int)kit_rng_below(rng, 2);
    for (int t = 1; t <= sleepers; t++)
        draw_thread(sc, rng, used, t, 1, shape->sleepers, ids);
    sc->nthreads = sleepers + 1;
    draw_thread(sc, rng, used, sc->nthreads, 2 + (int)kit_rng_below(rng, 2), shape->mover, ids);
}

static void draw_scenario(const kit_spec_t *spec, int number, int count, struct scenario *sc)
{
    kit_rng_t rng;
    kit_rng_seed(&rng, 20261203, (uint64_t)number);
    memset(sc, 0, sizeof *sc);
    sc->spec = spec;
    sc->number = number;
    sc->param = spec->param ? spec->param(&rng) : 0;
    bool used[32] = { false };
    long ids = 0;
    if (number > count) {
        sc->shape = 1 + (number - count - 1) / KIT_SHAPE_DRAWS;
        draw_shape(sc, &spec->shapes[sc->shape - 1], &rng, used, &ids);
    } else {
        draw_free(sc, &rng, used, &ids);
    }
    plan_post(sc);
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

/* Whether two records of a call into the code under test are the same one. */
static bool same_call(const kit_code_call_t *a, const kit_code_call_t *b)
{
    return a->site == b->site && a->function == b->function && a->touched == b->touched;
}

static void run_call(struct run *r, kit_call_t *c)
{
    const kit_op_t *op = &r->sc->spec->ops[c->op];
    kit_code_call_t before = { 0 }, after = { 0 };
    bool called_before = kit_last_call(&before);
    void *earlier[GIVEN_UP_PLACES];
    kit_sched_wakeup_given_up(earlier, GIVEN_UP_PLACES); /* (an earlier call's, not this one's) */
    kit_sched_touch_history();
    c->invoked = r->events++;
    c->started_ns = kit_now_ns();
    c->ret = op->run(r->object, c->arg, c->timeout_ms, &c->out);
    c->ended_ns = kit_now_ns();
    if (kit_last_call(&after) && !(called_before && same_call(&before, &after)))
        r->touched[c - r->calls] = after.touched; /* (one that looks like the last call: not named) */
    if (c->ret == ETIMEDOUT && op->timed)
        r->ngiven_up[c - r->calls] = kit_sched_wakeup_given_up(r->given_up[c - r->calls], GIVEN_UP_PLACES);
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
    int memo_count;            /* slots of memo filled, listed in memo_filled: */
    uint16_t memo_filled[MEMO_SLOTS]; /* a check clears only those the last one filled */
    uint64_t memo[MEMO_SLOTS]; /* (calls placed, state) found to lead nowhere; 0: empty */
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

/* FNV-1a over the calls placed, then the state: the mask's bytes are
 * hashed as bytes of their own, so that no bit of it cancels one of the
 * state's (mask 1 with a first state byte of 1 hashed as mask 0 with 0). */
static uint64_t hash_of(uint32_t mask, const unsigned char *state, size_t size)
{
    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; i < 4; i++)
        h = (h ^ (mask >> (8 * i) & 255)) * 1099511628211ULL;
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
            k->memo_filled[k->memo_count++] = (uint16_t)((h + i) % MEMO_SLOTS);
            return false;
        }
    }
    return false;
}

/* The first call still asleep that @p state lets through, or -1. Each
 * sleeper is checked against the state as the other sleepers' waiting
 * leaves it (kit_op_t.asleep): a writer asleep holds new readers back. */
static int lost_wakeup(const struct run *r, const unsigned char *state)
{
    const kit_spec_t *spec = r->sc->spec;
    unsigned char asleep[STATE_MAX];
    memcpy(asleep, state, spec->state_size);
    for (int i = 0; i < r->sc->ncalls; i++)
        if (r->pending[i] && spec->ops[r->calls[i].op].asleep)
            spec->ops[r->calls[i].op].asleep(asleep, &r->calls[i]);
    for (int i = 0; i < r->sc->ncalls; i++)
        if (r->pending[i] && !spec->ops[r->calls[i].op].waits(asleep, &r->calls[i]))
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

/* Where in the code under test a call that returned last read or wrote
 * memory - where a wrong result is usually made: " - the last line of
 * bq_poll(...) to read or write memory was bq.c:160 (in wait_for_item_locked)". */
static void name_line(kit_text_t *t, const struct run *r, int call)
{
    if (call < 0 || call >= r->sc->first_post || r->touched[call] == NULL)
        return; /* a read of what the threads left behind: the wrong value was made elsewhere */
    char place[1][160], name[160];
    kit_describe_places(&r->touched[call], 1, place);
    if (strchr(place[0], ':') == NULL)
        return; /* no line to name: the earlier chapters' reference, or no debugging information */
    const kit_call_t *c = &r->calls[call];
    r->sc->spec->print_call(c, r->sc->spec->ops[c->op].name, name, sizeof name);
    kit_text_put(t, " The last line of %s to read or write memory was %s.", name, place[0]);
}

/* A timed call that gave up with ETIMEDOUT, other than @p but, or -1. */
static int gave_up(const struct run *r, int but)
{
    for (int i = 0; i < r->sc->ncalls; i++)
        if (i != but && returned(r, i) && r->calls[i].ret == ETIMEDOUT && r->sc->spec->ops[r->calls[i].op].timed)
            return i;
    return -1;
}

/* Why a timed call that gave up may be the culprit: POSIX lets a time-out
 * take the wake-up that raced it. */
static void timeout_note(kit_text_t *t, const struct run *r, int timed, bool own)
{
    if (timed < 0)
        return;
    char call[160];
    const kit_call_t *c = &r->calls[timed];
    r->sc->spec->print_call(c, r->sc->spec->ops[c->op].name, call, sizeof call);
    if (own)
        kit_text_put(t, " What it waited for had come by its deadline: a timed wait that runs out may have been woken "
                     "too (POSIX lets the time-out take the wake-up), so a call that sees ETIMEDOUT looks at its "
                     "condition once more before it gives up.");
    else
        kit_text_put(t, " %s gave up with ETIMEDOUT meanwhile: if the wake-up went to it, it had to take what it "
                     "was woken for, or pass the wake-up on (POSIX lets a time-out take a wake-up that raced it).",
                     call);
}

/* A timed call whose time-out took a wake-up and gave it up, other than @p but, or -1. */
static int gave_up_wakeup(const struct run *r, int but)
{
    for (int i = 0; i < r->sc->ncalls; i++)
        if (i != but && returned(r, i) && r->ngiven_up[i] >= 2)
            return i;
    return -1;
}

/* "bq.c:169, bq.c:173 in wait_for_item_locked, bq.c:210 in bq_poll": places
 * as where_text gives them ("bq.c:173 in wait_for_item_locked"), each line
 * once, a function named once for its run of lines. */
static void put_path(kit_text_t *t, char (*places)[160], int n)
{
    const char *function = NULL;
    int put = 0;
    for (int i = 0; i < n; i++) {
        bool seen = false;
        char *in = strstr(places[i], " in ");
        if (in)
            *in = '\0'; /* places[i] is its file:line now, in + 4 its function */
        for (int j = 0; j < i; j++)
            seen = seen || strcmp(places[j], places[i]) == 0;
        if (seen)
            continue; /* another place on a line named already */
        if (put > 0 && function && !(in && strcmp(function, in + 4) == 0))
            kit_text_put(t, " in %s", function);
        kit_text_put(t, "%s%s", put++ > 0 ? ", " : "", places[i]);
        function = in ? in + 4 : NULL;
    }
    if (function)
        kit_text_put(t, " in %s", function);
}

/* The lead of a failure that a timed call's given-up wake-up explains:
 * the call returned ETIMEDOUT although a signal chose its wait, and the
 * lines its time-out path ran, where the look again belongs. */
static bool given_up_text(kit_text_t *t, const struct run *r, int call)
{
    int n = r->ngiven_up[call];
    char places[GIVEN_UP_PLACES][160], name[160];
    kit_describe_places(r->given_up[call], n, places);
    if (strchr(places[0], ':') == NULL || strstr(places[0], "(reference)") || strncmp(places[0], "test_", 5) == 0)
        return false; /* not the code under test's own wait */
    const kit_call_t *c = &r->calls[call];
    r->sc->spec->print_call(c, r->sc->spec->ops[c->op].name, name, sizeof name);
    kit_text_put(t, "%s on thread %c returned ETIMEDOUT although a signal had chosen its timed wait at %s: the "
                 "wake-up and the time-out came at once (POSIX allows both), and the code dropped the wake-up: ",
                 name, thread_letter(c->thread), places[0]);
    if (n > 2) {
        kit_text_put(t, "after the wait it ran ");
        put_path(t, places + 1, n - 2);
        kit_text_put(t, " and released the mutex at %s", places[n - 1]);
    } else {
        kit_text_put(t, "it released the mutex at %s right after the wait", places[n - 1]);
    }
    kit_text_put(t, " without going on or passing the wake-up on. On ETIMEDOUT, look at the condition once more "
                 "under the lock and go on if it holds (or signal again before giving up). What the check saw: ");
    return true;
}

static void report_lost(struct run *r, struct check *k, const char *state, kit_text_t *t)
{
    const kit_spec_t *spec = r->sc->spec;
    const kit_call_t *c = &r->calls[k->lost_call];
    char call[160];
    spec->print_call(c, spec->ops[c->op].name, call, sizeof call);
    int given_up = gave_up_wakeup(r, k->lost_call);
    bool told = given_up >= 0 && given_up_text(t, r, given_up);
    kit_text_put(t, "a lost wake-up: %s on thread %c still waits, though nothing else can move and %s", call,
                 thread_letter(c->thread), state[0] ? state : "the calls that returned let it through");
    describe_order(t, k);
    kit_text_put(t, ": it should have been woken.");
    if (!told)
        timeout_note(t, r, gave_up(r, k->lost_call), false);
    name_line(t, r, gave_up(r, k->lost_call));
    fail_check(r, "", k->lost_call, t);
}

static void report_stuck(struct run *r, struct check *k, const char *state, kit_text_t *t)
{
    const kit_spec_t *spec = r->sc->spec;
    const kit_call_t *c = &r->calls[k->stuck_call];
    char call[160], out[160] = "";
    spec->print_call(c, spec->ops[c->op].name, call, sizeof call);
    if (spec->print_out)
        spec->print_out(c, out, sizeof out);
    bool told = r->ngiven_up[k->stuck_call] >= 2 && given_up_text(t, r, k->stuck_call);
    kit_text_put(t, "no order of the calls, one at a time, gives what they returned: %s %s, but %s", call,
                 out[0] ? out : "returned as it did", state[0] ? state : "the state did not allow it");
    describe_order(t, k);
    kit_text_put(t, ".");
    if (c->ret == ETIMEDOUT && spec->ops[c->op].timed && !told)
        timeout_note(t, r, k->stuck_call, true);
    name_line(t, r, k->stuck_call);
    fail_check(r, "", k->stuck_call, t);
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
        name_line(&t, r, early);
        fail_check(r, "", early, &t);
    }
    for (int i = 0; i < k.memo_count; i++) /* (a schedule's check: the whole memo is 32 KB) */
        k.memo[k.memo_filled[i]] = 0;
    memset(&k, 0, offsetof(struct check, memo_filled));
    k.r = r;
    k.stuck_call = k.lost_call = -1;
    if (search(&k, 0, r->initial))
        return;
    char state[200] = "";
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
    if (k.lost_call >= 0)
        report_lost(r, &k, state, &t);
    report_stuck(r, &k, state, &t);
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
        name_line(&t, r, i);
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
    memset(r->touched, 0, sizeof r->touched);
    memset(r->ngiven_up, 0, sizeof r->ngiven_up);
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

/* What the searches of a test's scenarios covered, for its summary line. */
struct coverage {
    int free, shaped;
    long interleavings, complete, within_bound, schedules;
    int patterns, shapes;                /* distinct ones among pattern[], shape[] */
    uint64_t pattern[MAX_SCENARIOS_SEEN]; /* what each scenario calls, whatever the values */
    uint64_t shape[MAX_SCENARIOS_SEEN];   /* ... and by kind of call (its group), untimed or timed alike */
    int timed;                           /* scenarios with a timed call on a thread */
    int most_threads, most_calls;
};

static int compare_keys(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t mix(uint64_t h, uint64_t value)
{
    return (h ^ value) * 1099511628211ULL;
}

/* What a scenario calls, whatever its values: the create parameter, the
 * calls before the threads, and each thread's calls (the threads in any
 * order: two scenarios that differ only in which letter runs what are one).
 * By @p kind: each call as its group, a timed one as an untimed one. */
static uint64_t pattern_of(const struct scenario *sc, bool kind)
{
    uint64_t threads[MAX_THREADS + 1] = { 0 };
    for (int i = 0; i < sc->first_post; i++) {
        const kit_call_t *c = &sc->plan[i];
        int group = sc->spec->ops[c->op].group;
        uint64_t what = kind && group ? 1000 + (uint64_t)group : (uint64_t)c->op * 4 + (!kind && c->timeout_ms > 0);
        threads[c->thread] = mix(threads[c->thread] ? threads[c->thread] : 1469598103934665603ULL, what);
    }
    qsort(&threads[1], (size_t)sc->nthreads, sizeof threads[0], compare_keys);
    uint64_t h = mix(1469598103934665603ULL, (uint64_t)sc->param);
    for (int t = 0; t <= sc->nthreads; t++)
        h = mix(h, threads[t]);
    return h;
}

/* Adds @p key to @p keys unless it is there. */
static void count_once(uint64_t *keys, int *count, uint64_t key)
{
    for (int i = 0; i < *count; i++)
        if (keys[i] == key)
            return;
    if (*count < MAX_SCENARIOS_SEEN)
        keys[(*count)++] = key;
}

/* Counts @p sc in what the test's scenarios covered. */
static void count_pattern(const struct scenario *sc, struct coverage *seen)
{
    count_once(seen->pattern, &seen->patterns, pattern_of(sc, false));
    count_once(seen->shape, &seen->shapes, pattern_of(sc, true));
    bool timed = false;
    for (int i = 0; i < sc->first_post; i++)
        timed = timed || (sc->plan[i].thread > 0 && sc->spec->ops[sc->plan[i].op].timed);
    seen->timed += timed;
    seen->most_threads = sc->nthreads > seen->most_threads ? sc->nthreads : seen->most_threads;
    seen->most_calls = sc->first_post > seen->most_calls ? sc->first_post : seen->most_calls;
}

/* Scenario @p number of @p count: drawn, searched, and on a failure the test
 * fails at @p file:@p line with the scenario and its replay command. */
static void run_scenario(const char *test, const char *file, int line, const kit_spec_t *spec, int number,
                         int count, const kit_explore_t *options, struct coverage *seen)
{
    static struct scenario sc;
    static struct run r;
    static kit_explore_result_t result;
    draw_scenario(spec, number, count, &sc);
    memset(&r, 0, sizeof r);
    r.sc = &sc;
    r.file = file;
    r.line = line;
    char extra[32];
    snprintf(extra, sizeof extra, "%d", number);
    kit_sched_replay_scenario(extra);
    int total = count + spec->nshapes * KIT_SHAPE_DRAWS;
    crash_context_of(&sc, total);
    bool passed = kit_explore_search(test, options, scenario_body, &r, &result);
    kit_crash_context(NULL);
    if (!passed) {
        if (result.gave_up)
            fail_msg("%s: scenario %d could not run on the schedules: %s", test, number, result.message);
        char make_args[1200];
        sched_make_args(make_args, sizeof make_args);
        if (strcmp(result.token, ".") == 0)
            print_error("%s\n    in scenario %d of %d, before any thread had a choice\n", result.message, number,
                        total);
        else
            print_error("%s\n    in scenario %d of %d; its steps are printed with the test's output (under "
                        "make grade: in its log); replay it with\n    make explore %s TEST=%s REPLAY=%s\n",
                        result.message, number, total, make_args, test, result.token);
        kit_note_stacks_dumped();
        _fail(file, line);
    }
    kit_sched_replay_scenario(NULL);
    if (number <= count)
        seen->free++;
    else
        seen->shaped++;
    count_pattern(&sc, seen);
    seen->schedules += result.schedules;
    seen->interleavings += result.complete ? result.interleavings : 0;
    seen->complete += result.complete && !result.bound_reached;
    seen->within_bound += result.complete && result.bound_reached;
}

/* Under ThreadSanitizer or valgrind (KIT_SLOW) the point is memory and race
 * errors on the paths the scenarios take, not more paths: a fifth of the
 * free scenarios (at least ten) and one of each shape, as each search runs a
 * twenty-fifth of its schedules there. */
static bool runs_here(int number, int count, int only)
{
    if (only > 0)
        return number == only;
    if (getenv("KIT_SLOW") == NULL)
        return true;
    int free_count = count / 5 > 10 ? count / 5 : (count < 10 ? count : 10);
    return number <= count ? number <= free_count : (number - count - 1) % KIT_SHAPE_DRAWS == 0;
}

void kit_scenarios_run(const char *test, const char *file, int line, const kit_spec_t *spec, int count,
                       const kit_explore_t *options)
{
    if (spec->state_size > STATE_MAX || spec->nops > 32)
        fail_msg("%s: the spec's model is larger than the scenarios allow", test);
    int only = scenario_from_env();
    int total = count + spec->nshapes * KIT_SHAPE_DRAWS;
    struct coverage seen = { 0 };
    for (int number = 1; number <= total; number++)
        if (runs_here(number, count, only))
            run_scenario(test, file, line, spec, number, count, options, &seen);
    if (only > 0)
        fprintf(stderr, "[ scenario ] %s: scenario %d alone, %ld schedules, all passed", test, only, seen.schedules);
    else
        fprintf(stderr, "[ scenario ] %s: %d scenarios (%d free, %d drawn from %d shapes), %ld schedules, all "
                "passed", test, seen.free + seen.shaped, seen.free, seen.shaped, spec->nshapes, seen.schedules);
    if (only == 0)
        fprintf(stderr, "; %d distinct patterns of calls, %d by kind of call; %d with a timed call on a thread; up "
                "to %d threads and %d calls", seen.patterns, seen.shapes, seen.timed, seen.most_threads,
                seen.most_calls);
    if (seen.complete + seen.within_bound > 0) /* a dfs or dpor search that ran out of branches */
        fprintf(stderr, "; searched to the end: %ld scenarios completely and %ld within the preemption bound, "
                "%ld interleavings in all", seen.complete, seen.within_bound, seen.interleavings);
    fprintf(stderr, "\n");
}
