/**
 * @file kit_scenario.c
 * @brief Generated scenarios (kit_scenario.h) in one process: each scenario
 *        drawn, explored (kit_scenario_run.c), its histories checked where
 *        they are made (kit_scenario_check.c), and the test's summary line.
 *        A judged chapter's judge has its own front (kit_judge_scenario.c).
 */
#define _GNU_SOURCE
#include "kit_scenario_internal.h"

#include <stdio.h>
#include <string.h>

#include "kit_test.h"

void sched_make_args(char *out, size_t size);

/* The test fails at @p file:@p line with the scenario's failure and its replay command. */
static void scenario_failed(const char *test, const char *file, int line, int number, int total,
                            const kit_explore_result_t *result)
{
    if (result->gave_up)
        fail_msg("%s: scenario %d could not run on the schedules: %s", test, number, result->message);
    char make_args[1200];
    sched_make_args(make_args, sizeof make_args);
    if (strcmp(result->token, ".") == 0)
        print_error("%s\n    in scenario %d of %d, before any thread had a choice\n", result->message, number,
                    total);
    else
        print_error("%s\n    in scenario %d of %d; its steps are printed with the test's output (under "
                    "make grade: in its log); replay it with\n    make explore %s TEST=%s REPLAY=%s\n",
                    result->message, number, total, make_args, test, result->token);
    kit_note_stacks_dumped();
    _fail(file, line);
}

/* Scenario @p number of @p count: drawn, searched, and on a failure the test
 * fails at @p file:@p line with the scenario and its replay command. */
static void run_scenario(const char *test, const char *file, int line, const kit_spec_t *spec, int number,
                         int count, const kit_explore_t *options, struct coverage *seen)
{
    static struct scenario sc;
    static kit_explore_result_t result;
    scenario_draw(spec, number, count, &sc);
    int total = scenario_total(spec, count);
    if (!scenario_explore(test, file, line, &sc, total, options, NULL, &result))
        scenario_failed(test, file, line, number, total, &result);
    kit_sched_replay_scenario(NULL);
    if (number <= count)
        seen->free++;
    else
        seen->shaped++;
    scenario_count(&sc, seen);
    seen->schedules += result.schedules;
    seen->interleavings += result.complete ? result.interleavings : 0;
    seen->complete += result.complete && !result.bound_reached;
    seen->within_bound += result.complete && result.bound_reached;
}

void kit_scenarios_run(const char *test, const char *file, int line, const kit_spec_t *spec, int count,
                       const kit_explore_t *options)
{
    if (spec->state_size > SCENARIO_STATE_MAX || spec->nops > 32)
        fail_msg("%s: the spec's model is larger than the scenarios allow", test);
    int only = scenario_only();
    int total = scenario_total(spec, count);
    static struct coverage seen;
    memset(&seen, 0, sizeof seen);
    for (int number = 1; number <= total; number++)
        if (scenario_runs_here(number, count, only))
            run_scenario(test, file, line, spec, number, count, options, &seen);
    scenario_summary(test, spec, only, &seen);
}
