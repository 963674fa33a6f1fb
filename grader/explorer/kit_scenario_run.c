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
    void *earlier[SCENARIO_GIVEN_UP_PLACES];
    kit_sched_wakeup_given_up(earlier, SCENARIO_GIVEN_UP_PLACES); /* (an earlier call's, not this one's) */
    kit_sched_timeout_path(earlier, SCENARIO_GIVEN_UP_PLACES);
    kit_sched_touch_history();
    c->invoked = r->events++;
    c->started_ns = kit_now_ns();
    c->ret = op->run(r->object, c->arg, c->timeout_ms, &c->out);
    c->ended_ns = kit_now_ns();
    if (kit_last_call(&after) && !(called_before && same_call(&before, &after)))
        r->touched[c - r->calls] = after.touched; /* (one that looks like the last call: not named) */
    if (c->ret == ETIMEDOUT && op->timed) {
        r->ngiven_up[c - r->calls] = kit_sched_wakeup_given_up(r->given_up[c - r->calls], SCENARIO_GIVEN_UP_PLACES);
        r->ntimed_out[c - r->calls] = kit_sched_timeout_path(r->timed_out[c - r->calls], SCENARIO_GIVEN_UP_PLACES);
    }
    r->nleft[c - r->calls] = kit_sched_left_by_timeout(r->left[c - r->calls], SCENARIO_GIVEN_UP_PLACES + 2);
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
 * bq_poll(...) to read or write memory was bq.c:160 (in wait_for_item_locked)",
 * and for a helper inlined into its caller, the call to it (", called from
 * wait_for (future.c:256)"): a helper's test is often right, its caller's use
 * of the answer wrong. */
static void name_line(kit_text_t *t, const struct run *r, int call)
{
    if (call < 0 || call >= r->sc->first_post || r->touched[call] == NULL)
        return; /* a read of what the threads left behind: the wrong value was made elsewhere */
    char place[1][160], name[160], caller[300];
    kit_describe_places(&r->touched[call], 1, place);
    if (strchr(place[0], ':') == NULL)
        return; /* no line to name: the earlier chapters' reference, or no debugging information */
    kit_describe_caller(r->touched[call], caller, sizeof caller); /* a helper's line: the call to it too */
    const kit_call_t *c = &r->calls[call];
    r->sc->spec->print_call(c, r->sc->spec->ops[c->op].name, name, sizeof name);
    kit_text_put(t, " The last line of %s to read or write memory was %s%s.", name, place[0], caller);
}

/* "bq.c:169, bq.c:173 in wait_for_item_locked, bq.c:210 in bq_poll": places
 * as kit_describe_places gives them ("bq.c:173 in wait_for_item_locked"),
 * each line once, a function named once for its run of lines. */
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

/* Of @p n places, the code under test's own (a line known, not a test's nor
 * an earlier chapter's reference), kept in order; their number. */
static int own_places(char (*places)[160], int n)
{
    int kept = 0;
    for (int i = 0; i < n; i++)
        if (strchr(places[i], ':') && !strstr(places[i], "(reference)") && strncmp(places[i], "test_", 5) != 0)
            memmove(places[kept++], places[i], sizeof places[i]);
    return kept;
}

/* "after the wait it ran bq.c:148, bq.c:141 in wait_for_room_locked and
 * released the mutex at bq.c:187 in enqueue": the lines a thread ran after
 * its timed wait (places[0]) until it let the mutex go (places[n - 1]), the
 * code under test's own; false if the wait or the let-go is not. */
static bool put_timeout_path(kit_text_t *t, char (*places)[160], int n)
{
    if (n < 2 || own_places(places, 1) == 0 || own_places(places + n - 1, 1) == 0)
        return false;
    int path = own_places(places + 1, n - 2); /* the lines between, moved up to places + 1 */
    memmove(places[path + 1], places[n - 1], sizeof places[0]);
    if (path > 0 && strcmp(places[path], places[path + 1]) == 0)
        path--; /* the let-go's own line, named as such */
    if (path > 0) {
        kit_text_put(t, "after the wait it ran ");
        put_path(t, places + 1, path);
        kit_text_put(t, " and released the mutex at %s", places[path + 1]);
    } else {
        kit_text_put(t, "it released the mutex at %s right after the wait", places[path + 1]);
    }
    return true;
}

/* A timed call's wait and the path after it (put_timeout_path), and the call
 * as the scenario prints it: false if they are not the code under test's. */
static bool describe_timeout(const struct run *r, int call, bool signalled, char (*places)[160], char *name,
                             kit_text_t *path)
{
    int n = signalled ? r->ngiven_up[call] : r->ntimed_out[call];
    kit_describe_places(signalled ? r->given_up[call] : r->timed_out[call], n, places);
    if (!put_timeout_path(path, places, n))
        return false;
    const kit_call_t *c = &r->calls[call];
    r->sc->spec->print_call(c, r->sc->spec->ops[c->op].name, name, 160);
    return true;
}

/* The lead of a failure that a timed call's given-up wake-up explains:
 * the call returned ETIMEDOUT although a signal chose its wait, and the
 * lines its time-out path ran, where the look again belongs. */
static bool given_up_text(kit_text_t *t, const struct run *r, int call)
{
    char places[SCENARIO_GIVEN_UP_PLACES][160], name[160], path[1200];
    kit_text_t p = { path, sizeof path, 0 };
    if (!describe_timeout(r, call, true, places, name, &p))
        return false; /* not the code under test's own wait */
    kit_text_put(t, "%s on thread %c returned ETIMEDOUT although a signal had chosen its timed wait at %s: the "
                 "wake-up and the time-out came at once (POSIX allows both), and the code dropped the wake-up: %s "
                 "without going on or passing the wake-up on. On ETIMEDOUT, look at the condition once more under "
                 "the lock and go on if it holds (or signal again before giving up). What the check saw: ",
                 name, thread_letter(r->calls[call].thread), places[0], path);
    return true;
}

/* After "... What it waited for had come by its deadline ...": the path a
 * timed call's time-out took, where the look again belongs - its wait that
 * returned ETIMEDOUT, and the lines its thread ran until it let the mutex
 * go. False if the wait or the let-go is not the code under test's. */
static bool timeout_path_text(kit_text_t *t, const struct run *r, int call)
{
    char places[SCENARIO_GIVEN_UP_PLACES][160], name[160], path[1200];
    kit_text_t p = { path, sizeof path, 0 };
    if (!describe_timeout(r, call, false, places, name, &p))
        return false;
    kit_text_put(t, " The timed wait of %s at %s returned ETIMEDOUT; %s, and the call returned ETIMEDOUT: on that "
                 "path, look at the condition once more under the lock, and go on if it holds.", name, places[0],
                 path);
    return true;
}

/* After a failed check's words: the change a call read that a time-out
 * left in place (kit_sched_left_by_timeout) - made right before a wait
 * that returned ETIMEDOUT, whose way out did not change it back. False if
 * the change or the wait is not the code under test's. */
static bool left_text(kit_text_t *t, const struct run *r, int call)
{
    char places[SCENARIO_GIVEN_UP_PLACES + 2][160], name[160], path[1200];
    kit_text_t p = { path, sizeof path, 0 };
    int n = r->nleft[call];
    kit_describe_places(r->left[call], n, places);
    if (n < 4 || own_places(places, 1) == 0 || strcmp(places[1], places[2]) != 0)
        return false; /* not the student's change, or its writer's next wait is not the one that timed out */
    char change[160], wait[160];
    snprintf(change, sizeof change, "%s", places[0]);
    snprintf(wait, sizeof wait, "%s", places[2]);
    if (!put_timeout_path(&p, places + 2, n - 2))
        return false;
    const kit_call_t *c = &r->calls[call];
    r->sc->spec->print_call(c, r->sc->spec->ops[c->op].name, name, sizeof name);
    kit_text_put(t, " %s read memory whose last change, at %s, came right before a wait at %s that returned "
                 "ETIMEDOUT; %s without changing it back, and nothing changed it since: if that change was made for "
                 "the wait, the time-out's way out must undo it too.", name, change, wait, path);
    return true;
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
    memset(r->ngiven_up, 0, sizeof r->ngiven_up);
    memset(r->ntimed_out, 0, sizeof r->ntimed_out);
    memset(r->nleft, 0, sizeof r->nleft);
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
    r.given_up_text = given_up_text;
    r.timeout_path_text = timeout_path_text;
    r.left_text = left_text;
    r.sink = sink;
    char extra[32];
    snprintf(extra, sizeof extra, "%d", sc->number);
    kit_sched_replay_scenario(extra);
    scenario_crash_context(sc, total);
    bool passed = kit_explore_search(test, options, scenario_body, &r, result);
    kit_crash_context(NULL);
    return passed;
}
