/**
 * @file kit_judge_scenario.c
 * @brief A judged test's generated scenarios, as the judge sees them: the
 *        subject explores each scenario whole and sends each schedule's
 *        history; the judge checks every field of it against its own copy
 *        of the scenario, then the history itself, and counts the schedules.
 *
 * DESIGN: the judge draws each scenario from its number as the subject
 * does (the same spec, kit_scenario_check.c), so the calls, their threads
 * and their arguments are the judge's own; from the subject it takes what
 * each call returned and gave back, its place in the schedule's order and
 * the schedule's time. A history whose harness's fields do not fit (an
 * event twice, a call before the one its thread made first, time running
 * backwards) is a protocol violation; what a call returned or gave back is
 * the code under test's answer, any value, which the model checks. A
 * history that fits is checked for linearizability against the model and
 * for lost wake-ups, here: a subject that lies can only send histories a
 * sequential object gives. Which schedules ran, and races, stay the
 * subject's word.
 */
#define _GNU_SOURCE
#include "kit_judge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kit_scenario_internal.h"
#include "kit_test.h"

void sched_make_args(char *out, size_t size);

/* What the judge made of one scenario's histories. */
struct tally {
    long histories;         /* received and checked */
    long unreleased;        /* ... that ended at a failed check before the release */
    bool failed;            /* one failed the judge's check */
    long failed_at;         /* ... the first: its number among the histories */
    char message[3200];     /* ... and why */
};

/* The fields of one call that the subject's harness says, in range; NULL or
 * what is wrong. What the call returned and gave back (ret, out) are the
 * code under test's answers, checked against the model, whatever they are:
 * an -EINVAL or a count gone round is a wrong answer, not a forgery. */
static const char *call_fields(const struct scenario *sc, const kit_wire_history_t *h, int i,
                               const kit_wire_history_call_t *w)
{
    if (w->invoked < -1 || w->invoked >= h->events || w->responded < -1 || w->responded >= h->events)
        return "an event outside the history";
    if (w->responded >= 0 && (w->invoked < 0 || w->invoked >= w->responded))
        return "a call that ended before it began";
    if (w->responded >= 0 && w->started_ns > w->ended_ns)
        return "a call whose time ran backwards";
    bool init = i < sc->first_post && sc->plan[i].thread == 0;
    if (w->skipped > 1 || (w->skipped && (!init || w->invoked >= 0)))
        return "a call left out that cannot be";
    if (init && !w->skipped && w->responded < 0)
        return "a call before the threads that did not return";
    return NULL;
}

/* Each event once; and a call that returned before another began ended
 * no later, on the schedule's clock, than the other started. */
static const char *events_in_order(const kit_wire_history_t *h, const kit_wire_history_call_t *w)
{
    uint64_t seen = 0;
    int count = 0;
    for (int i = 0; i < h->ncalls; i++) {
        int8_t e[2] = { w[i].invoked, w[i].responded };
        for (int k = 0; k < 2; k++) {
            if (e[k] < 0)
                continue;
            if (seen & (1ULL << e[k]))
                return "an event twice";
            seen |= 1ULL << e[k];
            count++;
        }
    }
    if (count != h->events)
        return "an event missing";
    for (int a = 0; a < h->ncalls; a++)
        for (int b = 0; b < h->ncalls; b++)
            if (w[a].responded >= 0 && w[a].responded < w[b].invoked && w[a].ended_ns > w[b].started_ns)
                return "a call that ended, on the schedule's clock, after one that began after it";
    return NULL;
}

/* Each thread's calls in the script's order, the threads after the calls
 * before them, the calls after once the scenario was quiet. */
static const char *script_order(const struct scenario *sc, const kit_wire_history_t *h,
                                const kit_wire_history_call_t *w)
{
    int init_end = -1;
    for (int i = 0; i < sc->first_post; i++)
        if (sc->plan[i].thread == 0 && w[i].responded > init_end)
            init_end = w[i].responded;
    for (int t = 0; t <= sc->nthreads; t++) {
        int last = -1;
        bool stopped = false; /* a call of the thread's did not end (or did not begin) */
        for (int i = 0; i < sc->ncalls; i++) {
            if (sc->plan[i].thread != t || w[i].skipped)
                continue;
            if (w[i].invoked >= 0 && (stopped || w[i].invoked < last))
                return "a thread's calls out of the script's order";
            if (t > 0 && w[i].invoked >= 0 && w[i].invoked < init_end)
                return "a thread's call before the threads started";
            bool post = i >= sc->first_post;
            if (post && (w[i].invoked < h->quiet_events || w[i].responded < 0 ||
                         w[i].responded >= h->checked_events))
                return "a call after the threads out of its place";
            stopped = stopped || w[i].responded < 0;
            last = w[i].responded;
        }
    }
    return NULL;
}

static const char *released_whole(const struct scenario *sc, const kit_wire_history_t *h,
                                  const kit_wire_history_call_t *w)
{
    if (!h->released)
        return NULL;
    for (int i = 0; i < sc->ncalls; i++)
        if (!w[i].skipped && w[i].responded < 0)
            return "a call that never returned, though its thread was joined";
    return NULL;
}

/* Whether the history fits the judge's scenario; NULL, or what is wrong. */
static const char *history_fits(const struct scenario *sc, const kit_wire_history_t *h,
                                const kit_wire_history_call_t *w)
{
    if (h->ncalls != sc->ncalls || h->events > 2 * sc->ncalls || h->quiet_events > h->checked_events ||
        h->checked_events > h->events || h->released > 1)
        return "a history of another scenario's size";
    for (int i = 0; i < sc->ncalls; i++) {
        const char *wrong = call_fields(sc, h, i, &w[i]);
        if (wrong != NULL)
            return wrong;
    }
    const char *wrong = events_in_order(h, w);
    if (wrong == NULL)
        wrong = script_order(sc, h, w);
    return wrong != NULL ? wrong : released_whole(sc, h, w);
}

/* The history as the judge keeps it: its plan's calls with what the subject said. */
static void take_calls(struct run *r, const kit_wire_history_t *h, const kit_wire_history_call_t *w)
{
    const struct scenario *sc = r->sc;
    memcpy(r->calls, sc->plan, (size_t)sc->ncalls * sizeof r->calls[0]);
    for (int i = 0; i < sc->ncalls; i++) {
        kit_call_t *c = &r->calls[i];
        c->ret = w[i].ret;
        c->out = w[i].out;
        c->invoked = w[i].invoked;
        c->responded = w[i].responded;
        c->started_ns = w[i].started_ns;
        c->ended_ns = w[i].ended_ns;
        r->skipped[i] = w[i].skipped != 0;
        r->pending[i] = c->invoked >= 0 && c->invoked < h->quiet_events &&
                        (c->responded < 0 || c->responded >= h->quiet_events);
    }
    r->events = h->events;
    r->quiet_events = h->quiet_events;
    r->checked_events = h->checked_events;
}

/* The calls before the threads that the model says wait alone are the ones left out. */
static bool skips_fit(struct run *r)
{
    unsigned char model[SCENARIO_STATE_MAX];
    memcpy(model, r->initial, r->sc->spec->state_size);
    for (int i = 0; i < r->sc->first_post; i++) {
        if (r->calls[i].thread != 0)
            continue;
        if (scenario_skips(r, i, model) != r->skipped[i])
            return false;
        if (!r->skipped[i])
            r->sc->spec->ops[r->calls[i].op].take_effect(model, &r->calls[i]);
    }
    return true;
}

/* The history when it was checked: what came after is not in it yet. */
static void as_checked(struct run *r)
{
    for (int i = 0; i < r->sc->ncalls; i++) {
        kit_call_t *c = &r->calls[i];
        if (c->invoked >= r->checked_events)
            c->invoked = c->responded = -1;
        else if (c->responded >= r->checked_events)
            c->responded = -1;
    }
}

/* ---- histories checked already -----------------------------------------------------
 * Most schedules of a scenario repeat the history of one before them, byte
 * for byte - the same calls returning the same values, in the same order,
 * at the same times (chapter 01: 8,872 histories of their own among 70,678).
 * The check of a history is a function of its bytes and of the scenario, so
 * one that passed passes again: each that passed is kept whole, found by a
 * hash and compared whole, and a history equal to one is not checked again.
 * It is still fitted against the scenario and counted. */

enum { SEEN_ROOM = 4096, SEEN_MOST = SEEN_ROOM / 2, SEEN_BYTES = 4 << 20 };
struct seen {
    uint64_t hash;  /* 0 marks a free place */
    uint32_t at;    /* where its bytes begin in seen_bytes */
};
static struct seen seen_table[SEEN_ROOM]; /* open addressing, this scenario's histories that passed */
static unsigned char *seen_bytes;         /* their bytes: the head, then the calls */
static size_t seen_used;
static int seen_count;

static void seen_forget(void)
{
    memset(seen_table, 0, sizeof seen_table);
    seen_used = 0;
    seen_count = 0;
}

static uint64_t hash_words(uint64_t hash, const void *bytes, size_t size)
{
    for (size_t i = 0; i + 8 <= size; i += 8) {
        uint64_t word;
        memcpy(&word, (const unsigned char *)bytes + i, sizeof word);
        hash = (hash ^ word) * 0x9e3779b97f4a7c15ULL;
        hash ^= hash >> 29;
    }
    return hash | 1;
}

/* Where the history (@p h, @p w; @p hash) is kept, or the free place it would take. */
static struct seen *seen_place(const kit_wire_history_t *h, const kit_wire_history_call_t *w, uint64_t hash)
{
    size_t size = (size_t)h->ncalls * sizeof *w;
    size_t i = hash & (SEEN_ROOM - 1);
    for (; seen_table[i].hash != 0; i = (i + 1) & (SEEN_ROOM - 1)) {
        const unsigned char *kept = seen_bytes + seen_table[i].at;
        if (seen_table[i].hash == hash && memcmp(kept, h, sizeof *h) == 0 && memcmp(kept + sizeof *h, w, size) == 0)
            break;
    }
    return &seen_table[i];
}

static void seen_keep(const kit_wire_history_t *h, const kit_wire_history_call_t *w, struct seen *place,
                      uint64_t hash)
{
    size_t size = sizeof *h + (size_t)h->ncalls * sizeof *w;
    if (seen_bytes == NULL && (seen_bytes = malloc(SEEN_BYTES)) == NULL)
        return; /* (then every history is checked) */
    if (seen_count >= SEEN_MOST || seen_used + size > SEEN_BYTES)
        return;
    memcpy(seen_bytes + seen_used, h, sizeof *h);
    memcpy(seen_bytes + seen_used + sizeof *h, w, size - sizeof *h);
    *place = (struct seen){ hash, (uint32_t)seen_used };
    seen_used += size;
    seen_count++;
}

/* The history of @p from, and its model's first state, into @p to. */
static void copy_history(struct run *to, const struct run *from)
{
    size_t n = (size_t)from->sc->ncalls;
    to->sc = from->sc;
    memcpy(to->calls, from->calls, n * sizeof to->calls[0]);
    memcpy(to->skipped, from->skipped, n * sizeof to->skipped[0]);
    memcpy(to->pending, from->pending, n * sizeof to->pending[0]);
    memcpy(to->initial, from->initial, from->sc->spec->state_size);
    to->events = from->events;
    to->quiet_events = from->quiet_events;
    to->checked_events = from->checked_events;
}

/* One history: fitted, then checked; a failed check is kept in @p tally. */
static void judge_history(const struct scenario *sc, const kit_wire_history_t *h, const kit_wire_history_call_t *w,
                          struct tally *tally)
{
    /* What a judge never sets (the places of the subject's a report names)
     * stays zero; the rest is set anew for each history, and copied, by its
     * fields: the whole run is some 12 KB, a history a few hundred bytes. */
    static struct run whole, checked;
    const char *wrong = history_fits(sc, h, w);
    if (wrong != NULL)
        kit_judge_violation("scenario %d, schedule %ld: %s", sc->number, tally->histories + 1, wrong);
    whole.sc = sc;
    scenario_model(sc, whole.initial);
    take_calls(&whole, h, w);
    if (!skips_fit(&whole))
        kit_judge_violation("scenario %d, schedule %ld: a call before the threads left out, or not, against "
                            "the model", sc->number, tally->histories + 1);
    tally->histories++;
    tally->unreleased += !h->released;
    if (tally->failed)
        return;
    uint64_t hash = hash_words(hash_words(0, h, sizeof *h), w, (size_t)h->ncalls * sizeof *w);
    struct seen *place = seen_place(h, w, hash);
    if (place->hash != 0)
        return; /* checked already, and it passed */
    copy_history(&checked, &whole);
    as_checked(&checked);
    kit_text_t t = { tally->message, sizeof tally->message, 0 };
    tally->message[0] = '\0';
    bool held = scenario_check_quiet(&checked, &t);
    if (held && h->released)
        held = scenario_check_released(&whole, &t);
    if (!held) {
        tally->failed = true;
        tally->failed_at = tally->histories;
    } else {
        seen_keep(h, w, place, hash);
    }
}

static void take_batch(const struct scenario *sc, const kit_wire_t *m, long budget, struct tally *tally)
{
    if (m->nargs != 1)
        kit_judge_violation("a batch of histories without its count");
    kit_wire_reader_t reader = { m, 0 };
    for (uint64_t k = 0; k < m->arg[0]; k++) {
        const kit_wire_history_t *h = kit_wire_take(&reader, sizeof *h);
        if (h == NULL || h->ncalls != sc->ncalls)
            kit_judge_violation("scenario %d: a batch of histories cut short, or of another scenario", sc->number);
        kit_wire_history_t head;
        memcpy(&head, h, sizeof head);
        static kit_wire_history_call_t calls[SCENARIO_MAX_CALLS];
        const void *bytes = kit_wire_take(&reader, (size_t)head.ncalls * sizeof calls[0]);
        if (bytes == NULL)
            kit_judge_violation("scenario %d: a history cut short", sc->number);
        memcpy(calls, bytes, (size_t)head.ncalls * sizeof calls[0]);
        if (tally->histories >= budget)
            kit_judge_violation("scenario %d: more schedules than the %ld the search may run", sc->number, budget);
        judge_history(sc, &head, calls, tally);
    }
    if (reader.at != m->nbytes)
        kit_judge_violation("scenario %d: a batch of histories with bytes to spare", sc->number);
}

static void ask_to_explore(const char *test, const char *file, int line, const struct scenario *sc, int count,
                           const kit_explore_t *options)
{
    char name[1024];
    scenario_spec_name(sc->spec, name, sizeof name);
    const char *slash = strrchr(file, '/');
    kit_wire_t *m = kit_judge_begin(WIRE_HISTORY_SCENARIO, 0);
    uint64_t words[] = { (uint64_t)sc->number, (uint64_t)count, (uint64_t)line, (uint64_t)options->schedules,
                         (uint64_t)options->spurious, options->timeouts_race, (uint64_t)options->max_steps,
                         options->quiet, options->strategy != NULL };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        kit_judge_word(m, words[i]);
    kit_judge_bytes(m, test, strlen(test) + 1, "the test's name");
    kit_judge_bytes(m, slash ? slash + 1 : file, strlen(slash ? slash + 1 : file) + 1, "the test's file");
    kit_judge_bytes(m, options->strategy ? options->strategy : "", strlen(options->strategy ? options->strategy : "") + 1,
                    "the strategy");
    kit_judge_bytes(m, name, strlen(name) + 1, "the spec's name");
    kit_judge_post(m);
}

/* The i-th text of a result's blob (message, token, schedule). */
static void blob_text(const kit_wire_t *m, int index, char *out, size_t size)
{
    size_t at = 0;
    for (int i = 0; i < index && at < m->nbytes; i++)
        at += strnlen((const char *)m->blob + at, m->nbytes - at) + 1;
    size_t n = at < m->nbytes ? strnlen((const char *)m->blob + at, m->nbytes - at) : 0;
    snprintf(out, size, "%.*s", (int)(n < size ? n : size - 1), at < m->nbytes ? (const char *)m->blob + at : "");
}

/* The scenario's threads that still ran in the subject when its search ended (its word; for the report). */
static long threads_left;

static bool take_result(const kit_wire_t *m, kit_explore_result_t *r)
{
    if (m->nargs != 8)
        kit_judge_violation("a scenario's end without its counts");
    memset(r, 0, sizeof *r);
    r->failed = m->arg[0] == 0;
    r->gave_up = m->arg[1] != 0;
    r->deadlocked = m->arg[2] != 0;
    r->schedules = (long)m->arg[3];
    r->complete = m->arg[4] != 0;
    r->interleavings = (long)m->arg[5];
    r->bound_reached = m->arg[6] != 0;
    threads_left = m->arg[7] < SCENARIO_MAX_THREADS ? (long)m->arg[7] : SCENARIO_MAX_THREADS;
    blob_text(m, 0, r->message, sizeof r->message);
    blob_text(m, 1, r->token, sizeof r->token);
    return !r->failed;
}

/* The test fails at @p file:@p line: the subject's report of the failing schedule, and its replay command. */
static _Noreturn void scenario_failed(const char *test, const char *file, int line, int number, int total,
                                      const kit_explore_result_t *result)
{
    if (result->gave_up)
        fail_msg("%s: scenario %d could not run on the schedules: %s", test, number, result->message);
    char make_args[1200], words[32];
    snprintf(words, sizeof words, "%d", number);
    kit_sched_replay_scenario(words); /* (the subject kept them too, for its own report) */
    sched_make_args(make_args, sizeof make_args);
    if (strcmp(result->token, ".") == 0 || result->token[0] == '\0')
        print_error("%s\n    in scenario %d of %d, before any thread had a choice\n", result->message, number,
                    total);
    else
        print_error("%s\n    in scenario %d of %d; its steps are printed with the test's output (under "
                    "make grade: in its log); replay it with\n    make explore %s TEST=%s REPLAY=%s\n",
                    result->message, number, total, make_args, test, result->token);
    kit_note_stacks_dumped(); /* the subject's report told where every thread was */
    if (threads_left > 0) { /* as in one process: the failing schedule's threads stay where they stopped */
        kit_verdict_end(false);
        fprintf(stderr, "[   LINE   ] --- %s:%d: error: Failure!\n", file, line);
        fprintf(stderr, "[  FAILED  ] the test stopped here: %ld of its threads still run\n", threads_left);
        fflush(stderr);
        _exit(1);
    }
    _fail(file, line);
    abort();
}

/* The verdict on one scenario: the judge's check, and the subject's report when both say it failed. */
static void decide(const char *test, const char *file, int line, const struct scenario *sc, int total,
                   const struct tally *tally, const kit_explore_result_t *result)
{
    if (tally->failed && !result->failed)
        kit_judge_violation("scenario %d: every schedule passed, says the code under test's process, but the "
                            "history of schedule %ld fails the check: %.1500s", sc->number, tally->failed_at,
                            tally->message);
    if (result->failed)
        scenario_failed(test, file, line, sc->number, total, result);
    if (tally->histories == 0) /* every search runs one schedule at least */
        kit_judge_violation("scenario %d: a search that passed, says the code under test's process, without a "
                            "single history", sc->number);
    if (tally->histories != result->schedules || tally->unreleased > 0)
        kit_judge_violation("scenario %d: %ld histories, %ld of them cut short, for a search of %ld schedules "
                            "that passed", sc->number, tally->histories, tally->unreleased, result->schedules);
}

static long strategy_words(const char *strategies)
{
    long words = 0;
    for (const char *c = strategies; *c; c++)
        words += (c == strategies || c[-1] == ' ' || c[-1] == ',') && *c != ' ' && *c != ',';
    return words;
}

/* The most schedules a search of @p options may run, as the explorer counts
 * them (kit_sched_explore.c): its budget for each of its strategies - and,
 * after a replay whose token does not fit the code under test, the test's
 * own strategies too, which the search runs then (search_again). */
static long search_budget(const kit_explore_t *options)
{
    const char *text = getenv("KIT_SCHEDULES");
    long each = text && text[0] ? atol(text) : options->schedules > 0 ? options->schedules : 500;
    const char *own = options->strategy ? options->strategy : "pct:1:3 random:1";
    const char *strategies = getenv("KIT_SCHED");
    if (strategies == NULL || strategies[0] == '\0')
        strategies = own;
    long words = strategy_words(strategies);
    if (strategies != own && strstr(strategies, "replay:") != NULL)
        words += strategy_words(own);
    return each > 0 ? each * (words > 0 ? words : 1) : 1;
}

static void judge_scenario(const char *test, const char *file, int line, const kit_spec_t *spec, int number,
                           int count, const kit_explore_t *options, struct coverage *seen)
{
    static struct scenario sc;
    static struct tally tally;
    static kit_explore_result_t result;
    scenario_draw(spec, number, count, &sc);
    memset(&tally, 0, sizeof tally);
    seen_forget();
    ask_to_explore(test, file, line, &sc, count, options);
    for (;;) {
        const kit_wire_t *m = kit_judge_wait_either(WIRE_HISTORY_BATCH, WIRE_RESULT);
        if (m->kind == WIRE_RESULT) {
            take_result(m, &result);
            break;
        }
        take_batch(&sc, m, search_budget(options), &tally);
    }
    decide(test, file, line, &sc, scenario_total(spec, count), &tally, &result);
    if (number <= count)
        seen->free++;
    else
        seen->shaped++;
    scenario_count(&sc, seen);
    seen->schedules += tally.histories; /* the judge's count */
    seen->interleavings += result.complete ? result.interleavings : 0;
    seen->complete += result.complete && !result.bound_reached;
    seen->within_bound += result.complete && result.bound_reached;
}

void kit_scenarios_run(const char *test, const char *file, int line, const kit_spec_t *spec, int count,
                       const kit_explore_t *options)
{
    if (spec->state_size > SCENARIO_STATE_MAX || spec->nops > 32)
        fail_msg("%s: the spec's model is larger than the scenarios allow", test);
    if (spec->model == NULL)
        fail_msg("%s: a judged test's spec needs its model's first state (kit_spec_t.model)", test);
    if (spec->at_quiet != NULL) /* it reads the object and the records of the scenario's tasks: in the subject */
        kit_verdict_rests_on(KIT_WORD_QUIET_CHECKS);
    int only = scenario_only();
    int total = scenario_total(spec, count);
    static struct coverage seen;
    memset(&seen, 0, sizeof seen);
    for (int number = 1; number <= total; number++)
        if (scenario_runs_here(number, count, only))
            judge_scenario(test, file, line, spec, number, count, options, &seen);
    scenario_summary(test, spec, only, &seen);
}
