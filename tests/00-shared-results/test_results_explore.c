/**
 * @file test_results_explore.c
 * @brief Chapter 00 under the schedule explorer: appends racing drains,
 *        with fixed seeds - every record comes out exactly once - and
 *        generated scenarios checked against a model of the list.
 *
 * A drain whose copy and clear are two critical sections shows in the
 * aimed test; an append that takes no lock at all races, and once the race
 * detector has seen it every access of it is a switch point, so the
 * scenarios find the schedule on which a record is lost.
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_test.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kit_errno.h"
#include "kit_scenario.h"
#include "kit_sched.h"
#include "results.h"

#define APPENDERS 2
#define EACH 3

struct appender {
    results_t *list;
    int index;
    int errors;
};

static void *append_some(void *raw)
{
    struct appender *a = raw;
    for (int i = 0; i < EACH; i++)
        a->errors += results_append(a->list, a->index * 100 + i) != 0;
    return NULL;
}

/* Drain into seen[], counting each record; a record nobody appended fails the schedule. */
static void drain_into(results_t *list, int seen[APPENDERS][EACH])
{
    long taken[APPENDERS * EACH];
    size_t n = 0;
    explore_ok(results_drain(list, taken, APPENDERS * EACH, &n));
    for (size_t i = 0; i < n; i++) {
        long p = taken[i] / 100, k = taken[i] % 100;
        kit_explore_check(p >= 0 && p < APPENDERS && k >= 0 && k < EACH, "drain gave %ld, which nobody appended",
                          taken[i]);
        seen[p][k]++;
    }
}

static void appends_against_drains(void *ctx)
{
    (void)ctx;
    results_t *list = NULL;
    explore_ok(results_create(&list, 2));
    pthread_t threads[APPENDERS];
    struct appender appenders[APPENDERS];
    for (int i = 0; i < APPENDERS; i++) {
        appenders[i] = (struct appender){ list, i, 0 };
        explore_ok(pthread_create(&threads[i], NULL, append_some, &appenders[i]));
    }
    int seen[APPENDERS][EACH] = { { 0 } };
    drain_into(list, seen); /* while the appenders run */
    drain_into(list, seen);
    for (int i = 0; i < APPENDERS; i++) {
        explore_ok(pthread_join(threads[i], NULL));
        kit_explore_check(appenders[i].errors == 0, "appender %d: %d appends failed", i, appenders[i].errors);
    }
    drain_into(list, seen); /* what is left */
    for (int p = 0; p < APPENDERS; p++)
        for (int k = 0; k < EACH; k++)
            kit_explore_check(seen[p][k] == 1, "record %d came out %d time(s), not once", p * 100 + k, seen[p][k]);
    results_destroy(list);
}

static void test_results_explore_appends_racing_drains(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:2 pct:1:3 random:1", .schedules = 750 };
    kit_explore(&options, appends_against_drains, NULL);
}

/* The scenarios' spec: the sequential model, the calls and their printing (results_scenarios.c). */
extern const kit_spec_t list_spec;

/* Scenarios nobody wrote: appends and drains of one to three records on two
 * to four threads, on a list that grows as they run, every interleaving of
 * each searched up to equivalence; some order of the calls must explain
 * each history, and the count at the end the records left. */
static void test_results_explore_generated_scenarios(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dpor:2", .schedules = 60 };
    kit_scenarios(&list_spec, 60, &options);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_results_explore_appends_racing_drains),
    cmocka_unit_test(test_results_explore_generated_scenarios),
};

KIT_TEST_MAIN(tests)
