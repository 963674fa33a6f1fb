/**
 * @file kit_serve_scenario.c
 * @brief A judged test's generated scenarios, run whole in the subject: the
 *        scenario drawn from its number, its script driven on the explorer's
 *        schedules as in one process, and each schedule's history sent to
 *        the judge, which checks it (grader/judge/kit_judge_scenario.c).
 *
 * DESIGN: the histories go in batches (WIRE_HISTORY_BATCH), as many as a
 * message holds, the last before the scenario's result: a schedule costs
 * no round trip, and the judge checks one batch while the next is made. A
 * failing schedule's report (its steps, the scenario as code, the line of
 * the code under test its call last touched) is made here, as in one
 * process; whether the scenario failed is the judge's to say.
 */
#define _GNU_SOURCE
#include "kit_serve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kit_scenario_internal.h"
#include "kit_test.h"

/* The chapter's specs (its tests' *_scenarios.c); none in a chapter without scenarios. */
extern const kit_spec_t *const kit_scenario_specs[] __attribute__((weak));

const char *kit_sched_failed_schedule(void);

static kit_wire_t batch; /* the histories not sent yet; only the schedule's running thread adds to it */
/* The last history put in the batch: its schedule (kit_sched_schedule()),
 * its bytes (0: none there, sent or dropped); and the schedule of the last
 * history sent. */
static unsigned long last_schedule, sent_schedule;
static size_t last_size;

static void flush(void)
{
    if (batch.nargs == 0 || batch.arg[0] == 0)
        return;
    if (kit_wire_send(KIT_WIRE_FD, &batch) != 0)
        _exit(0); /* the judge ended the test (or died) */
    kit_wire_begin(&batch, WIRE_HISTORY_BATCH, 0);
    kit_wire_word(&batch, 0);
    if (last_schedule != 0)
        sent_schedule = last_schedule;
    last_schedule = 0;
}

/* kit_sched_drop_schedule: a failed schedule the explorer does not report
 * (a replay whose token does not fit this program) - its history, if it
 * sent one, is taken back out of the batch; false if the batch has gone. */
static bool drop_history(unsigned long schedule)
{
    if (sent_schedule == schedule || (last_schedule == schedule && last_size > batch.nbytes))
        return false;
    if (last_schedule != schedule)
        return true; /* it put none in the batch: it failed before its check */
    batch.nbytes -= (uint32_t)last_size;
    batch.arg[0]--;
    last_schedule = 0;
    return true;
}

/* The sink of kit_scenario_run.c: one schedule's history, into the batch. */
static void send_history(const struct run *r, bool released)
{
    if (kit_sched_running_again())
        return; /* a failing schedule run again for its report's lines: the judge has its history */
    kit_wire_history_t head = { .ncalls = (uint8_t)r->sc->ncalls, .released = released,
                                .events = (uint8_t)r->events, .quiet_events = (uint8_t)r->quiet_events,
                                .checked_events = (uint8_t)r->checked_events };
    size_t size = sizeof head + (size_t)r->sc->ncalls * sizeof(kit_wire_history_call_t);
    if (batch.nbytes + size > KIT_WIRE_BLOB)
        flush();
    kit_wire_bytes(&batch, &head, sizeof head);
    for (int i = 0; i < r->sc->ncalls; i++) {
        const kit_call_t *c = &r->calls[i];
        kit_wire_history_call_t call = { .out = c->out, .started_ns = c->started_ns, .ended_ns = c->ended_ns,
                                         .ret = c->ret, .invoked = (int8_t)c->invoked,
                                         .responded = (int8_t)c->responded, .skipped = r->skipped[i] };
        kit_wire_bytes(&batch, &call, sizeof call);
    }
    batch.arg[0]++;
    last_schedule = kit_sched_schedule();
    last_size = size;
}

/* The i-th NUL-ended text of a request's blob, or "". */
static const char *text_at(const kit_wire_t *m, int index)
{
    size_t at = 0;
    for (int i = 0; i < index && at < m->nbytes; i++)
        at += strnlen((const char *)m->blob + at, m->nbytes - at) + 1;
    if (at >= m->nbytes || strnlen((const char *)m->blob + at, m->nbytes - at) == m->nbytes - at)
        return "";
    return (const char *)m->blob + at;
}

static const kit_spec_t *spec_named(const char *name)
{
    char mine[1024];
    for (int i = 0; kit_scenario_specs != NULL && kit_scenario_specs[i] != NULL; i++) {
        scenario_spec_name(kit_scenario_specs[i], mine, sizeof mine);
        if (strcmp(mine, name) == 0)
            return kit_scenario_specs[i];
    }
    return NULL;
}

static void put_result(kit_wire_t *reply, bool passed, const kit_explore_result_t *result)
{
    kit_wire_begin(reply, WIRE_RESULT, 0);
    uint64_t words[] = { passed, result->gave_up, result->deadlocked, (uint64_t)result->schedules,
                         result->complete, (uint64_t)result->interleavings, result->bound_reached,
                         (uint64_t)kit_threads_alive() };
    for (int i = 0; i < 8; i++)
        kit_wire_word(reply, words[i]);
    kit_wire_bytes(reply, result->message, strlen(result->message) + 1);
    kit_wire_bytes(reply, result->token, strlen(result->token) + 1);
    kit_wire_bytes(reply, kit_sched_failed_schedule(), strlen(kit_sched_failed_schedule()) + 1);
}

/* WIRE_HISTORY_SCENARIO: explore the scenario the judge names; @p reply: its result. */
bool kit_serve_scenario(const kit_wire_t *q, kit_wire_t *reply)
{
    static char test[256], file[256], strategy[256];
    static struct scenario sc;
    static kit_explore_result_t result;
    if (q->nargs != 9)
        return false;
    snprintf(test, sizeof test, "%.255s", text_at(q, 0));
    snprintf(file, sizeof file, "%.255s", text_at(q, 1));
    snprintf(strategy, sizeof strategy, "%.255s", text_at(q, 2));
    const kit_spec_t *spec = spec_named(text_at(q, 3));
    if (spec == NULL || q->arg[1] > 100000 || q->arg[0] < 1 ||
        q->arg[0] > (uint64_t)scenario_total(spec, (int)q->arg[1]))
        return false;
    kit_explore_t options = { .strategy = q->arg[8] ? strategy : NULL, .schedules = (long)q->arg[3],
                              .spurious = (int)q->arg[4], .timeouts_race = q->arg[5] != 0,
                              .max_steps = (long)q->arg[6], .quiet = q->arg[7] != 0 };
    scenario_draw(spec, (int)q->arg[0], (int)q->arg[1], &sc);
    kit_wire_begin(&batch, WIRE_HISTORY_BATCH, 0);
    kit_wire_word(&batch, 0);
    memset(&result, 0, sizeof result);
    kit_sched_drop_schedule = drop_history;
    kit_sched_report_runs_again(true); /* the body runs here: its failing schedule can run again, untold */
    bool passed = scenario_explore(test, file, (int)q->arg[2], &sc, scenario_total(spec, (int)q->arg[1]), &options,
                                   send_history, &result);
    kit_sched_report_runs_again(false);
    kit_sched_drop_schedule = NULL;
    flush();
    if (passed)
        kit_sched_replay_scenario(NULL);
    put_result(reply, passed, &result);
    return true;
}
