/**
 * @file kit_scenario_internal.h
 * @brief Between the files of the generated scenarios: a scenario as drawn,
 *        one schedule's history of it, and the check of that history.
 *
 * DESIGN: three parts. Drawing a scenario and checking a history
 * (kit_scenario_check.c) use only the chapter's spec: its model, its
 * printing, never its object, so the judge links them and checks what the
 * subject sends. Driving a scenario under the explorer (kit_scenario_run.c)
 * makes the calls: in one process, or in a judged chapter's subject, which
 * sends each schedule's history to the judge (kit_serve_scenario.c). The
 * front a test calls, kit_scenarios_run(), is kit_scenario.c in one process
 * and kit_judge_scenario.c in a judge.
 */
#ifndef KIT_SCENARIO_INTERNAL_H
#define KIT_SCENARIO_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "kit_scenario.h"
#include "kit_sched.h"

enum {
    SCENARIO_MAX_INIT = 3,       /* calls before the threads start */
    SCENARIO_FREE_THREADS = 3,   /* a free scenario's threads */
    SCENARIO_MAX_THREADS = 4,    /* a shape's: its sleepers and its mover */
    SCENARIO_MAX_DRAWN = 3,      /* calls drawn for one thread, */
    SCENARIO_MAX_PER_THREAD = 2 * SCENARIO_MAX_DRAWN, /* ... and with those that give back what they took */
    SCENARIO_MAX_THREAD_CALLS = 6, /* drawn over all threads: keeps each scenario's search small enough */
    SCENARIO_MAX_POST = 3,       /* the calls after, on the test's thread */
    SCENARIO_MAX_CALLS = SCENARIO_MAX_INIT + SCENARIO_MAX_THREADS * SCENARIO_MAX_PER_THREAD + SCENARIO_MAX_POST,
    SCENARIO_STATE_MAX = 1024,
    SCENARIO_GIVEN_UP_PLACES = 16, /* a given-up wake-up's places: the wait, the path after it, the let go */
    SCENARIO_SEEN_MAX = 1024     /* a test's scenarios whose patterns are told apart */
};

/** A scenario as drawn from its number: the same on both sides of a judged test. */
struct scenario {
    const kit_spec_t *spec;
    int number;
    int shape;                  /* 1.. for a shape's scenario, 0 for a free one */
    long param;
    int nthreads;
    int ncalls;
    int first_post;             /* the calls from here on run after the threads */
    kit_call_t plan[SCENARIO_MAX_CALLS]; /* the calls before the threads (thread 0), then thread 1's, 2's
                                            ..., then the calls after (thread 0, post) */
};

struct run;
/** Names the line of the code under test a call last touched (the subject's or one process's), or NULL. */
typedef void kit_scenario_namer_t(kit_text_t *t, const struct run *r, int call);
/** Leads a failure with a timed call's given-up wake-up (kit_sched.h), if it had one and the process
 *  that ran it can say where (the subject's or one process's): true if it did. */
typedef bool kit_scenario_explainer_t(kit_text_t *t, const struct run *r, int call);
/** Where a schedule's history goes once it is known (@p released: after the release and the joins). */
typedef void kit_scenario_sink_t(const struct run *r, bool released);

/** One schedule's run of the scenario: its history. */
struct run {
    const struct scenario *sc;
    void *object;
    kit_call_t calls[SCENARIO_MAX_CALLS];
    bool skipped[SCENARIO_MAX_CALLS];  /* a call before the threads that would have waited for ever alone */
    bool pending[SCENARIO_MAX_CALLS];  /* asleep when the scenario went quiet */
    void *touched[SCENARIO_MAX_CALLS]; /* the last place of the code under test each call touched, or NULL */
    void *given_up[SCENARIO_MAX_CALLS][SCENARIO_GIVEN_UP_PLACES]; /* a timed call's wake-up its time-out took */
    int ngiven_up[SCENARIO_MAX_CALLS]; /* ... its places: the wait, the path after it, where the mutex was let go */
    void *timed_out[SCENARIO_MAX_CALLS][SCENARIO_GIVEN_UP_PLACES]; /* a timed call's wait that only ran out: */
    int ntimed_out[SCENARIO_MAX_CALLS]; /* ... the same places, for the path its time-out took */
    void *left[SCENARIO_MAX_CALLS][SCENARIO_GIVEN_UP_PLACES + 2]; /* what a call read that a time-out left: */
    int nleft[SCENARIO_MAX_CALLS]; /* ... the change, the wait after it, its time-out's path (kit_sched.h) */
    long events;                       /* invocations and responses so far */
    long quiet_events;                 /* ... when the scenario went quiet (before the calls after) */
    long checked_events;               /* ... when its history was checked (after them) */
    unsigned char initial[SCENARIO_STATE_MAX];
    unsigned char final[SCENARIO_STATE_MAX]; /* the model after the order the check found */
    const char *file;
    int line;
    kit_scenario_namer_t *name_line;   /* NULL in a judge: it has no line of the subject's to name */
    kit_scenario_explainer_t *given_up_text; /* NULL in a judge, likewise */
    kit_scenario_explainer_t *timeout_path_text; /* NULL in a judge, likewise */
    kit_scenario_explainer_t *left_text; /* NULL in a judge, likewise */
    kit_scenario_sink_t *sink;         /* NULL in one process */
};

/** What the searches of a test's scenarios covered, for its summary line. */
struct coverage {
    int free, shaped;
    long interleavings, complete, within_bound, schedules;
    int patterns, shapes;                 /* distinct ones among pattern[], shape[] */
    uint64_t pattern[SCENARIO_SEEN_MAX];  /* what each scenario calls, whatever the values */
    uint64_t shape[SCENARIO_SEEN_MAX];    /* ... and by kind of call (its group), untimed or timed alike */
    int timed;                            /* scenarios with a timed call on a thread */
    int most_threads, most_calls;
};

/* kit_scenario_check.c: drawing, printing, checking. */
void scenario_draw(const kit_spec_t *spec, int number, int count, struct scenario *sc);
/** The model's state for the object create(param) makes, without making it. */
void scenario_model(const struct scenario *sc, unsigned char *state);
void scenario_print(kit_text_t *t, const struct run *r);
void scenario_crash_context(const struct scenario *sc, int count);
/** Whether the quiet history holds; if not, @p t says why, the scenario printed after. */
bool scenario_check_quiet(struct run *r, kit_text_t *t);
/** Whether each call that slept returned what a released call returns; if not, @p t says why. */
bool scenario_check_released(struct run *r, kit_text_t *t);
/** Whether a call before the threads that @p model says waits alone is left out. */
bool scenario_skips(const struct run *r, int call, const unsigned char *model);
int scenario_total(const kit_spec_t *spec, int count);
/** The spec's name on a judged test's channel: its object and its operations. */
void scenario_spec_name(const kit_spec_t *spec, char *out, size_t size);
int scenario_only(void);
bool scenario_runs_here(int number, int count, int only);
void scenario_count(const struct scenario *sc, struct coverage *seen);
void scenario_summary(const char *test, const kit_spec_t *spec, int only, const struct coverage *seen);

/* kit_scenario_run.c: driving one under the explorer. */
/** Explore scenario @p sc (drawn), of @p total; each schedule's history goes to @p sink if not NULL. */
bool scenario_explore(const char *test, const char *file, int line, const struct scenario *sc, int total,
                      const kit_explore_t *options, kit_scenario_sink_t *sink, kit_explore_result_t *result);

#endif
