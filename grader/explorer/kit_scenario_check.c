/**
 * @file kit_scenario_check.c
 * @brief Generated scenarios (kit_scenario.h): drawing one from its number,
 *        printing it as code, and checking a schedule's history of it
 *        against the chapter's sequential model - the part a judge links.
 *
 * The check is Wing and Gong's: search for an order of the calls that
 * returned - one call at a time, each after every call that returned before
 * it began - in which the model, applying each call's effect, gives every
 * result the call returned. A timed call that returned ETIMEDOUT takes
 * effect at its deadline, so it comes after every call that returned before
 * then. The calls still asleep when nothing else can move must then be
 * calls that wait in the state that order leaves; a sleeper that the state
 * lets through missed its wake-up. Nothing here calls the object under
 * test: only the spec's model and its printing.
 */
#define _GNU_SOURCE
#include "kit_scenario_internal.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_errno.h"
#include "kit_test.h"

enum {
    MAX_INIT = SCENARIO_MAX_INIT,
    FREE_THREADS = SCENARIO_FREE_THREADS,
    MAX_THREADS = SCENARIO_MAX_THREADS,
    MAX_DRAWN = SCENARIO_MAX_DRAWN,
    MAX_PER_THREAD = SCENARIO_MAX_PER_THREAD,
    MAX_THREAD_CALLS = SCENARIO_MAX_THREAD_CALLS,
    MAX_POST = SCENARIO_MAX_POST,
    MAX_CALLS = SCENARIO_MAX_CALLS, /* at most 32: the search's masks */
    STATE_MAX = SCENARIO_STATE_MAX,
    MEMO_SLOTS = 4096,
    MAX_SCENARIOS_SEEN = SCENARIO_SEEN_MAX
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

void scenario_draw(const kit_spec_t *spec, int number, int count, struct scenario *sc)
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

void scenario_print(kit_text_t *t, const struct run *r)
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
void scenario_crash_context(const struct scenario *sc, int count)
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

/* ---- The check ---------------------------------------------------------------------- */

struct check {
    struct run *r;
    uint32_t returned;         /* the calls that returned: those an order places */
    uint32_t before[MAX_CALLS]; /* of them, those that must come before call i (precedes) */
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

/* FNV-1a over the calls placed, then the state eight bytes at a time (a
 * state of a few hundred bytes is hashed at every step of the search), then
 * mixed so that its low bits, the memo's slot, depend on every bit. The mask
 * is hashed on its own first, so that no bit of it cancels one of the
 * state's. Two states that differ in one word never hash alike (each step
 * is one-to-one); that two others do is as unlikely as with any 64-bit hash. */
static uint64_t hash_of(uint32_t mask, const unsigned char *state, size_t size)
{
    const uint64_t prime = 1099511628211ULL;
    uint64_t h = (1469598103934665603ULL ^ mask) * prime;
    size_t i = 0;
    for (; i + sizeof(uint64_t) <= size; i += sizeof(uint64_t)) {
        uint64_t word;
        memcpy(&word, state + i, sizeof word);
        h = (h ^ word) * prime;
    }
    for (; i < size; i++)
        h = (h ^ state[i]) * prime;
    h ^= h >> 32;
    h *= 0x9E3779B97F4A7C15ULL;
    h ^= h >> 29;
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

/* Every call that returned is placed: the order holds if no sleeper missed its wake-up in @p state. */
static bool order_ends(struct check *k, const unsigned char *state)
{
    struct run *r = k->r;
    int lost = lost_wakeup(r, state);
    if (lost < 0) {
        memcpy(r->final, state, r->sc->spec->state_size);
        return true;
    }
    if (k->lost_call < 0) {
        k->lost_call = lost;
        memcpy(k->lost_order, k->done, sizeof k->done);
    }
    return false;
}

/* The calls that returned, and which must come before which: the history
 * does not change while an order is searched for, so each is worked out once. */
static void note_precedence(struct check *k)
{
    const struct run *r = k->r;
    for (int i = 0; i < r->sc->ncalls; i++)
        if (returned(r, i))
            k->returned |= 1u << i;
    for (int i = 0; i < r->sc->ncalls; i++)
        for (int j = 0; j < r->sc->ncalls; j++)
            if (j != i && (k->returned & (1u << j)) && precedes(r, j, i))
                k->before[i] |= 1u << j;
}

static bool search(struct check *k, uint32_t placed, const unsigned char *state)
{
    struct run *r = k->r;
    const kit_spec_t *spec = r->sc->spec;
    if ((k->returned & ~placed) == 0) /* every call that returned is placed */
        return order_ends(k, state);
    if (memo_seen(k, hash_of(placed, state, spec->state_size)))
        return false;
    for (int i = 0; i < r->sc->ncalls; i++) {
        if (!(k->returned & (1u << i)) || (placed & (1u << i)))
            continue;
        if ((k->before[i] & ~placed) != 0)
            continue; /* a call that must come first is not placed yet */
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

/* The end of a failed check's words: the header's rule the call broke, and the scenario. */
static bool fail_check(struct run *r, int call, kit_text_t *t)
{
    const kit_spec_t *spec = r->sc->spec;
    kit_text_put(t, "\n    the header: %s", spec->ops[r->calls[call].op].rule);
    scenario_print(t, r);
    return false;
}

/* Where in the code under test a call last read or wrote memory, where
 * the process that ran it can say (kit_scenario_run.c); a judge cannot. */
static void name_line(kit_text_t *t, const struct run *r, int call)
{
    if (r->name_line != NULL)
        r->name_line(t, r, call);
}

/* A timed call that gave up with ETIMEDOUT, other than @p but, or -1. */
static int gave_up(const struct run *r, int but)
{
    for (int i = 0; i < r->sc->ncalls; i++)
        if (i != but && returned(r, i) && r->calls[i].ret == ETIMEDOUT && r->sc->spec->ops[r->calls[i].op].timed)
            return i;
    return -1;
}

/* A timed call whose time-out took a wake-up and gave it up, other than @p but, or -1. */
static int gave_up_wakeup(const struct run *r, int but)
{
    for (int i = 0; i < r->sc->ncalls; i++)
        if (i != but && returned(r, i) && r->ngiven_up[i] >= 2)
            return i;
    return -1;
}

/* The lead a given-up wake-up of @p call gives, where the process can say (not in a judge). */
static bool given_up_text(kit_text_t *t, const struct run *r, int call)
{
    return call >= 0 && r->given_up_text != NULL && r->ngiven_up[call] >= 2 && r->given_up_text(t, r, call);
}

/* The path a time-out of @p call took, where the process can say (not in a judge). */
static bool timeout_path_text(kit_text_t *t, const struct run *r, int call)
{
    return r->timeout_path_text != NULL && r->ntimed_out[call] >= 2 && r->timeout_path_text(t, r, call);
}

/* What @p call read that a time-out left in place, where the process can say (not in a judge). */
static void left_text(kit_text_t *t, const struct run *r, int call)
{
    if (call >= 0 && r->left_text != NULL && r->nleft[call] >= 4)
        r->left_text(t, r, call);
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

/* A call still asleep that never was to wait (kit_spec_t.never_waits):
 * "a wait that should not have begun", which explain_hang follows with the
 * place of the wait and the call that began it. False if the spec does not
 * say so of this call. */
static bool report_never_waits(struct run *r, struct check *k, const void *model, kit_text_t *t)
{
    const kit_spec_t *spec = r->sc->spec;
    const kit_call_t *c = &r->calls[k->lost_call];
    char call[160], why[400];
    if (spec->never_waits == NULL || !spec->never_waits(model, c, why, sizeof why))
        return false;
    spec->print_call(c, spec->ops[c->op].name, call, sizeof call);
    kit_text_put(t, "a wait that should not have begun: %s on thread %c still waits", call, thread_letter(c->thread));
    describe_order(t, k);
    kit_text_put(t, ", though %s.", why);
    return true;
}

static bool report_lost(struct run *r, struct check *k, const char *state, const void *model, kit_text_t *t)
{
    const kit_spec_t *spec = r->sc->spec;
    const kit_call_t *c = &r->calls[k->lost_call];
    char call[160];
    if (report_never_waits(r, k, model, t))
        return fail_check(r, k->lost_call, t);
    spec->print_call(c, spec->ops[c->op].name, call, sizeof call);
    bool told = given_up_text(t, r, gave_up_wakeup(r, k->lost_call));
    kit_text_put(t, "a lost wake-up: %s on thread %c still waits, though nothing else can move and %s", call,
                 thread_letter(c->thread), state[0] ? state : "the calls that returned let it through");
    describe_order(t, k);
    kit_text_put(t, ": it should have been woken.");
    if (!told)
        timeout_note(t, r, gave_up(r, k->lost_call), false);
    name_line(t, r, gave_up(r, k->lost_call));
    return fail_check(r, k->lost_call, t);
}

static bool report_stuck(struct run *r, struct check *k, const char *state, kit_text_t *t)
{
    const kit_spec_t *spec = r->sc->spec;
    const kit_call_t *c = &r->calls[k->stuck_call];
    char call[160], out[160] = "";
    spec->print_call(c, spec->ops[c->op].name, call, sizeof call);
    if (spec->print_out)
        spec->print_out(c, out, sizeof out);
    bool told = given_up_text(t, r, k->stuck_call);
    kit_text_put(t, "no order of the calls, one at a time, gives what they returned: %s %s, but %s", call,
                 out[0] ? out : "returned as it did", state[0] ? state : "the state did not allow it");
    describe_order(t, k);
    kit_text_put(t, ".");
    bool own_timeout = c->ret == ETIMEDOUT && spec->ops[c->op].timed && !told;
    if (own_timeout)
        timeout_note(t, r, k->stuck_call, true);
    if (!own_timeout || !timeout_path_text(t, r, k->stuck_call))
        name_line(t, r, k->stuck_call);
    left_text(t, r, k->stuck_call);
    return fail_check(r, k->stuck_call, t);
}

static const struct run *checking; /* the history under check (kit_scenario_calls); one at a time */

const kit_call_t *kit_scenario_calls(int *count)
{
    *count = checking != NULL ? checking->sc->ncalls : 0;
    return checking != NULL ? checking->calls : NULL;
}

static bool early_timeout_fails(struct run *r, kit_text_t *t)
{
    int early = early_timeout(r);
    if (early < 0)
        return true;
    const kit_spec_t *spec = r->sc->spec;
    const kit_call_t *c = &r->calls[early];
    char call[160];
    spec->print_call(c, spec->ops[c->op].name, call, sizeof call);
    kit_text_put(t, "%s returned ETIMEDOUT after %.3f ms, before its timeout of %ld ms.", call,
                 (double)(c->ended_ns - c->started_ns) / 1e6, c->timeout_ms);
    name_line(t, r, early);
    return fail_check(r, early, t);
}

static bool search_history(struct run *r, struct check *k)
{
    for (int i = 0; i < k->memo_count; i++) /* (a schedule's check: the whole memo is 32 KB) */
        k->memo[k->memo_filled[i]] = 0;
    memset(k, 0, offsetof(struct check, memo_filled));
    k->r = r;
    k->stuck_call = k->lost_call = -1;
    note_precedence(k);
    checking = r;
    bool found = search(k, 0, r->initial);
    checking = NULL;
    return found;
}

bool scenario_check_quiet(struct run *r, kit_text_t *t)
{
    static struct check k;
    const kit_spec_t *spec = r->sc->spec;
    if (!early_timeout_fails(r, t))
        return false;
    if (search_history(r, &k))
        return true;
    char state[600];
    state[0] = '\0';
    unsigned char after[STATE_MAX];
    if (k.lost_call >= 0) { /* every call that returned fits an order: a sleeper was forgotten */
        int returned_calls = 0;
        for (int i = 0; i < r->sc->ncalls; i++)
            returned_calls += returned(r, i);
        k.best_depth = returned_calls;
        memcpy(k.best_order, k.lost_order, sizeof k.best_order);
    }
    checking = r;
    state_after(&k, after);
    checking = NULL;
    if (spec->print_state)
        spec->print_state(after, state, sizeof state);
    if (k.lost_call >= 0)
        return report_lost(r, &k, state, after, t);
    return report_stuck(r, &k, state, t);
}

/* After the release, each call that slept must have returned what a
 * released call returns. */
bool scenario_check_released(struct run *r, kit_text_t *t)
{
    const kit_spec_t *spec = r->sc->spec;
    for (int i = 0; i < r->sc->ncalls; i++) {
        const kit_call_t *c = &r->calls[i];
        if (!r->pending[i] || c->ret == spec->released_ret)
            continue;
        char call[160];
        spec->print_call(c, spec->ops[c->op].name, call, sizeof call);
        kit_text_put(t, "%s slept until the end, was woken by the release, and returned %s: it must return %s.", call,
                     kit_errno_name(c->ret), kit_errno_name(spec->released_ret));
        name_line(t, r, i);
        return fail_check(r, i, t);
    }
    return true;
}

/* Whether a call before the threads that @p model says waits alone is left out. */
bool scenario_skips(const struct run *r, int call, const unsigned char *model)
{
    const kit_op_t *op = &r->sc->spec->ops[r->calls[call].op];
    return !op->timed && op->waits(model, &r->calls[call]);
}

void scenario_model(const struct scenario *sc, unsigned char *state)
{
    memset(state, 0, sc->spec->state_size); /* (the bytes past it are never read) */
    if (sc->spec->model != NULL)
        sc->spec->model(sc->param, state);
}

/* ---- The scenarios of a test ------------------------------------------------------- */

int scenario_only(void)
{
    const char *text = getenv("KIT_SCENARIO");
    return text && text[0] ? atoi(text) : 0;
}

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
void scenario_count(const struct scenario *sc, struct coverage *seen)
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

/* Under ThreadSanitizer or valgrind (KIT_SLOW) the point is memory and race
 * errors on the paths the scenarios take, not more paths: a fifth of the
 * free scenarios (at least ten) and one of each shape, as each search runs a
 * twenty-fifth of its schedules there. */
bool scenario_runs_here(int number, int count, int only)
{
    if (only > 0)
        return number == only;
    if (getenv("KIT_SLOW") == NULL)
        return true;
    int free_count = count / 5 > 10 ? count / 5 : (count < 10 ? count : 10);
    return number <= count ? number <= free_count : (number - count - 1) % KIT_SHAPE_DRAWS == 0;
}

int scenario_total(const kit_spec_t *spec, int count)
{
    return count + spec->nshapes * KIT_SHAPE_DRAWS;
}

/* The test's summary line: what its scenarios covered. */
void scenario_summary(const char *test, const kit_spec_t *spec, int only, const struct coverage *seen)
{
    if (only > 0)
        fprintf(stderr, "[ scenario ] %s: scenario %d alone, %ld schedules, all passed", test, only, seen->schedules);
    else
        fprintf(stderr, "[ scenario ] %s: %d scenarios (%d free, %d drawn from %d shapes), %ld schedules, all "
                "passed", test, seen->free + seen->shaped, seen->free, seen->shaped, spec->nshapes, seen->schedules);
    if (only == 0)
        fprintf(stderr, "; %d distinct patterns of calls, %d by kind of call; %d with a timed call on a thread; up "
                "to %d threads and %d calls", seen->patterns, seen->shapes, seen->timed, seen->most_threads,
                seen->most_calls);
    if (seen->complete + seen->within_bound > 0) /* a dfs or dpor search that ran out of branches */
        fprintf(stderr, "; searched to the end: %ld scenarios completely and %ld within the preemption bound, "
                "%ld interleavings in all", seen->complete, seen->within_bound, seen->interleavings);
    fprintf(stderr, "\n");
}

/* The spec's name on the channel: its object and its operations, "q:msgq_put,msgq_take,...". */
void scenario_spec_name(const kit_spec_t *spec, char *out, size_t size)
{
    kit_text_t t = { out, size, 0 };
    out[0] = '\0';
    kit_text_put(&t, "%s:", spec->object);
    for (int i = 0; i < spec->nops; i++)
        kit_text_put(&t, "%s%s", i ? "," : "", spec->ops[i].name);
}
