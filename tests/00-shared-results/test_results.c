/**
 * @file test_results.c
 * @brief Chapter 00 tests: nothing lost, nothing doubled, under concurrency.
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_test.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kit_sched.h"
#include "results.h"

enum { APPENDERS = 4 };

/* Appends each appender makes: 50,000 on real threads, where a lost record
 * needs the threads to collide by chance; 300 on a schedule, where the first
 * race makes the racing places switch points and the search collides them.
 * Under ThreadSanitizer and valgrind (KIT_SLOW) the point is races, memory
 * errors and leaks, which the array's doublings and a few thousand appends
 * show as well: 2,000 there (valgrind runs one thread at a time). */
static long per_appender(void)
{
    if (kit_sched_active())
        return 300;
    return getenv("KIT_SLOW") != NULL ? 2000 : 50000;
}

static long total(void)
{
    return APPENDERS * per_appender();
}

static results_t *make_list(size_t hint)
{
    results_t *list = NULL;
    assert_ok(results_create(&list, hint));
    assert_non_null_or_say(list, "results_create returned 0 but left *out NULL");
    return list;
}

/* Drains everything and counts how often each value 0..total()-1 appears. */
static void tally_drain(results_t *list, unsigned char *seen, size_t *bad)
{
    long chunk[512];
    size_t taken = 0; /* (judged, an inout's value goes as it is: never the stack's leftovers) */
    do {
        assert_ok(results_drain(list, chunk, 512, &taken));
        for (size_t i = 0; i < taken; i++) {
            if (chunk[i] < 0 || chunk[i] >= total())
                (*bad)++;
            else if (seen[chunk[i]] < 255)
                seen[chunk[i]]++;
        }
    } while (taken > 0);
}

/* Fails the test naming the first record lost or doubled. */
static void assert_each_exactly_once(const unsigned char *seen, size_t bad)
{
    size_t lost = 0, doubled = 0;
    long first_lost = -1, first_doubled = -1;
    for (long v = 0; v < total(); v++) {
        if (seen[v] == 0 && lost++ == 0)
            first_lost = v;
        if (seen[v] > 1 && doubled++ == 0)
            first_doubled = v;
    }
    if (lost || doubled || bad)
        fail_msg("of %ld records: %zu lost (first %ld), %zu duplicated (first %ld), %zu garbage",
                 total(), lost, first_lost, doubled, first_doubled, bad);
}

static void test_results_create_rejects_null(void **state)
{
    (void)state;
    assert_err(results_create(NULL, 8), EINVAL);
}

static int create_and_destroy(void *ctx)
{
    results_t *list = (results_t *)&list;
    int err = results_create(&list, *(size_t *)ctx);
    if (err != 0 && list != NULL)
        return err == ENOSYS ? ENOSYS : EFAULT; /* out must be NULL after a failure (a stub is told as one) */
    results_destroy(list);
    return err;
}

/* Every allocation create makes, failed in turn: ENOMEM, out NULL, nothing leaked. */
static void test_results_create_undoes_partial_work_without_memory(void **state)
{
    (void)state;
    size_t hint = 8;
    assert_true_or_say(kit_sweep_allocation_failures("results_create", create_and_destroy, &hint) >= 1,
        "results_create allocated nothing: the list must live in memory it allocates");
}

/* A full list whose growth fails: ENOMEM, and the list keeps every record and
 * still works - a failed append loses nothing and breaks nothing. The header
 * leaves open when a list grows (a hint is "at least"): every append runs
 * with its first allocation failing, and the first that needs one must say
 * ENOMEM. */
static void test_results_append_survives_failed_growth(void **state)
{
    (void)state;
    results_t *list = make_list(4);
    long kept = 0;
    int err = 0;
    for (; kept < 4096; kept++) {
        kit_fail_allocation(1); /* the growth's allocation, if this append needs one */
        err = results_append(list, kept);
        kit_fail_allocation(0);
        if (err != 0)
            break;
    }
    assert_code_or_say(err, ENOMEM, "results_append whose growth could not allocate");
    assert_int_equal(results_count(list), kept);
    assert_ok(results_append(list, kept)); /* the next growth succeeds */
    long *out = calloc((size_t)kept + 1, sizeof *out);
    size_t taken = 0; /* (judged, an inout's value goes as it is: never the stack's leftovers) */
    assert_ok(results_drain(list, out, (size_t)kept + 1, &taken));
    assert_int_equal_or_say(taken, kept + 1, "results_drain said it took another count than the records appended");
    for (long v = 0; v <= kept; v++)
        assert_int_equal_or_say(out[v], v,
            "record %ld out of results_drain is not the one appended %ld-th (oldest first)", v, v);
    free(out);
    results_destroy(list);
}

static void test_results_append_and_drain_keep_order(void **state)
{
    (void)state;
    results_t *list = make_list(0); /* no hint: forces several growths */
    for (long v = 0; v < 1000; v++)
        assert_ok(results_append(list, v * 3));
    assert_int_equal(results_count(list), 1000);
    long out[400];
    size_t taken = 0; /* (judged, an inout's value goes as it is: never the stack's leftovers) */
    assert_ok(results_drain(list, out, 400, &taken));
    assert_int_equal_or_say(taken, 400, "results_drain took another count than the 400 asked for, of 1000 records");
    for (long i = 0; i < 400; i++)
        assert_int_equal_or_say(out[i], i * 3, "record %ld out of results_drain is out of order (oldest first)", i);
    assert_int_equal(results_count(list), 600);
    assert_ok(results_drain(list, out, 400, &taken));
    assert_int_equal_or_say(out[0], 400 * 3, "the next drain did not start with the oldest record left");
    results_destroy(list);
}

static void test_results_calls_with_bad_arguments_give_einval(void **state)
{
    (void)state;
    results_t *list = make_list(4);
    long out[2];
    size_t taken = 99;
    assert_err(results_append(NULL, 1), EINVAL);
    assert_int_equal(results_count(NULL), 0);
    assert_err(results_drain(NULL, out, 2, &taken), EINVAL);
    assert_int_equal_or_say(taken, 0, "results_drain(NULL, ...) did not set *taken to 0");
    assert_err(results_drain(list, NULL, 2, &taken), EINVAL);
    assert_err(results_drain(list, out, 2, NULL), EINVAL);
    assert_ok(results_drain(list, NULL, 0, &taken)); /* nothing asked, nothing taken */
    assert_int_equal_or_say(taken, 0, "results_drain asked for no record did not set *taken to 0");
    results_destroy(NULL);
    results_destroy(list);
}

static void test_results_destroy_frees_everything(void **state)
{
    (void)state;
    long before = kit_live_allocations();
    results_t *list = make_list(2);
    for (long v = 0; v < 5000; v++)
        assert_ok(results_append(list, v));
    results_destroy(list);
    assert_no_leak_since(before);
}

struct appender {
    results_t *list;
    long first;  /* appends first .. first + per_appender() - 1 */
    int failures;
};

static void *append_range(void *raw)
{
    struct appender *job = raw;
    for (long v = job->first; v < job->first + per_appender(); v++)
        if (results_append(job->list, v) != 0)
            job->failures++;
    return NULL;
}

static void test_results_stress_concurrent_appends(void **state)
{
    (void)state;
    results_t *list = make_list(16);
    struct appender jobs[APPENDERS];
    for (int i = 0; i < APPENDERS; i++)
        jobs[i] = (struct appender){ list, (long)i * per_appender(), 0 };
    kit_test_run_group(APPENDERS, "appender", append_range, jobs, sizeof jobs[0]);
    for (int i = 0; i < APPENDERS; i++)
        assert_int_equal_or_say(jobs[i].failures, 0, "appender %d: calls to results_append that failed", i);
    unsigned char *seen = calloc((size_t)total(), 1);
    size_t bad = 0;
    assert_int_equal(results_count(list), total());
    tally_drain(list, seen, &bad);
    assert_each_exactly_once(seen, bad);
    free(seen);
    results_destroy(list);
}

static bool all_done(kit_worker_t *workers, int count)
{
    for (int i = 0; i < count; i++)
        if (!kit_worker_done(&workers[i]))
            return false;
    return true;
}

/* The master drains while the workers append: the story's "reads while
 * they write". Every record must come out exactly once. */
static void test_results_stress_drain_while_appending(void **state)
{
    (void)state;
    results_t *list = make_list(16);
    struct appender jobs[APPENDERS];
    kit_worker_t appenders[APPENDERS];
    unsigned char *seen = calloc((size_t)total(), 1);
    size_t bad = 0;
    for (int i = 0; i < APPENDERS; i++) {
        jobs[i] = (struct appender){ list, (long)i * per_appender(), 0 };
        kit_worker_start(&appenders[i], "appender", append_range, &jobs[i]);
    }
    while (!all_done(appenders, APPENDERS))
        tally_drain(list, seen, &bad);
    for (int i = 0; i < APPENDERS; i++) {
        kit_worker_must_finish(&appenders[i], "appender");
        assert_int_equal_or_say(jobs[i].failures, 0, "appender %d: calls to results_append that failed", i);
    }
    tally_drain(list, seen, &bad);
    assert_each_exactly_once(seen, bad);
    free(seen);
    results_destroy(list);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_results_create_rejects_null),
    cmocka_unit_test(test_results_create_undoes_partial_work_without_memory),
    cmocka_unit_test(test_results_append_survives_failed_growth),
    cmocka_unit_test(test_results_append_and_drain_keep_order),
    cmocka_unit_test(test_results_calls_with_bad_arguments_give_einval),
    cmocka_unit_test(test_results_destroy_frees_everything),
    /* real threads: an append without the lock loses records only when two
     * threads really run at once, between two pthread calls */
    cmocka_unit_test(test_results_stress_concurrent_appends),
    cmocka_unit_test(test_results_stress_drain_while_appending),
};

KIT_TEST_MAIN(tests)
