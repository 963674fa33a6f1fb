/**
 * @file kit_scenario_run.c
 * @brief Generated scenarios (kit_scenario.h): driving one under the
 *        explorer - the object made, the calls made on their threads, the
 *        history recorded - in one process, or in a judged chapter's subject,
 *        which hands each schedule's history to its sink for the judge.
 */
#define _GNU_SOURCE
#include "kit_scenario_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_errno.h"
#include "kit_test.h"
#include "kit_thread.h"
#include "kit_time.h"

static char thread_letter(int thread)
{
    return (char)('A' + thread - 1);
}

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
    kit_sched_touch_history();
    c->invoked = r->events++;
    c->started_ns = kit_now_ns();
    c->ret = op->run(r->object, c->arg, c->timeout_ms, &c->out);
    c->ended_ns = kit_now_ns();
    if (kit_last_call(&after) && !(called_before && same_call(&before, &after)))
        r->touched[c - r->calls] = after.touched; /* (one that looks like the last call: not named) */
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
        if (scenario_skips(r, i, model)) {
            r->skipped[i] = true;
            continue;
        }
        run_call(r, c);
        op->take_effect(model, c); /* if it cannot, the check below says so */
    }
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

/* The object made, or the test fails: the scenarios need it. */
static void create_object(struct run *r, unsigned char *model)
{
    const struct scenario *sc = r->sc;
    errno = 0;
    r->object = sc->spec->create(sc->param, model);
    if (r->object != NULL)
        return;
    int err = errno;
    char text[120];
    sc->spec->print_create(sc->param, text, sizeof text);
    const char *create = strrchr(text, ';') ? strrchr(text, ';') + 2 : text; /* the call, not the declaration */
    if (err == ENOSYS)
        kit_explore_fail(r->file, r->line, "%s returned ENOSYS: not implemented yet", create);
    kit_explore_fail(r->file, r->line, "%s failed (%s): the scenarios need the object it makes", create,
                     err ? kit_errno_name(err) : "an error");
}

/* A check that failed: the history goes to the sink first, then the schedule fails. */
static void failed(struct run *r, bool released, const char *text)
{
    if (r->sink != NULL)
        r->sink(r, released);
    kit_explore_fail(r->file, r->line, "%s", text);
}

/* The history once nothing can move: the calls after, then the check. */
static void check_quiet(struct run *r)
{
    static char text[3200];
    kit_text_t t = { text, sizeof text, 0 };
    text[0] = '\0';
    for (int i = 0; i < r->sc->ncalls; i++)
        r->pending[i] = r->calls[i].invoked >= 0 && r->calls[i].responded < 0;
    r->quiet_events = r->events;
    for (int i = r->sc->first_post; i < r->sc->ncalls; i++)
        run_call(r, &r->calls[i]);
    r->checked_events = r->events;
    if (!scenario_check_quiet(r, &t))
        failed(r, false, text);
    const char *wrong = r->sc->spec->at_quiet ? r->sc->spec->at_quiet(r->object, r->final) : NULL;
    if (wrong != NULL) {
        kit_text_put(&t, "%s", wrong);
        scenario_print(&t, r);
        failed(r, false, text);
    }
}

static void scenario_body(void *raw)
{
    struct run *r = raw;
    const struct scenario *sc = r->sc;
    memcpy(r->calls, sc->plan, sizeof r->calls);
    memset(r->skipped, 0, sizeof r->skipped);
    memset(r->pending, 0, sizeof r->pending);
    memset(r->touched, 0, sizeof r->touched);
    r->events = r->quiet_events = r->checked_events = 0;
    unsigned char model[SCENARIO_STATE_MAX];
    memset(model, 0, sizeof model);
    create_object(r, model);
    if (sc->spec->model != NULL)
        scenario_model(sc, model);
    memcpy(r->initial, model, sc->spec->state_size);
    run_init(r, model);
    pthread_t threads[SCENARIO_MAX_THREADS];
    struct thread_arg args[SCENARIO_MAX_THREADS];
    for (int k = 0; k < sc->nthreads; k++) {
        args[k] = (struct thread_arg){ r, k + 1 };
        explore_ok(pthread_create(&threads[k], NULL, run_thread, &args[k]));
    }
    kit_explore_await_quiet();
    check_quiet(r);
    sc->spec->release(r->object);
    for (int k = 0; k < sc->nthreads; k++)
        explore_ok(pthread_join(threads[k], NULL));
    static char text[3200];
    kit_text_t t = { text, sizeof text, 0 };
    text[0] = '\0';
    bool held = scenario_check_released(r, &t);
    if (!held)
        failed(r, true, text);
    if (r->sink != NULL)
        r->sink(r, true);
    sc->spec->destroy(r->object);
}

bool scenario_explore(const char *test, const char *file, int line, const struct scenario *sc, int total,
                      const kit_explore_t *options, kit_scenario_sink_t *sink, kit_explore_result_t *result)
{
    static struct run r;
    memset(&r, 0, sizeof r);
    r.sc = sc;
    r.file = file;
    r.line = line;
    r.name_line = name_line;
    r.sink = sink;
    char extra[32];
    snprintf(extra, sizeof extra, "%d", sc->number);
    kit_sched_replay_scenario(extra);
    scenario_crash_context(sc, total);
    bool passed = kit_explore_search(test, options, scenario_body, &r, result);
    kit_crash_context(NULL);
    return passed;
}
