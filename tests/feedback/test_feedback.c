/**
 * @file test_feedback.c
 * @brief Tests that fail on purpose, one per kind of failure, so that
 *        `make feedback` can check what the grader says about each: the
 *        student's line for a crash, every thread's wait for a hang, both
 *        accesses of a race (also one made by a memcpy), the words for a
 *        misused pthread call, both lines of a use after free, the change a
 *        lost wake-up missed (also one a time-out hid), the access to change
 *        of a race that lost an update (and the call that led to a helper's
 *        line), the path a timed call's time-out took.
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_test.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "buggy.h"
#include "buggy_copy.h"
#include "kit_scenario.h"
#include "kit_time.h"

static counter_t *make_counter(void)
{
    counter_t *c = counter_create();
    assert_non_null(c);
    return c;
}

static void test_feedback_crash_shows_the_faulting_line(void **state)
{
    (void)state;
    assert_int_equal(counter_read(NULL), 0);
}

static void *wait_ready(void *raw)
{
    counter_wait_ready(raw);
    return NULL;
}

static void test_feedback_hang_check_shows_every_thread(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    kit_worker_t worker;
    kit_worker_start(&worker, "waiter", wait_ready, c);
    kit_worker_must_finish(&worker, "counter_wait_ready");
    counter_destroy(c);
}

static void test_feedback_deadlock_shows_where_it_waits(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    counter_increment_forgetting_unlock(c);
    counter_increment_forgetting_unlock(c); /* waits for itself */
    counter_destroy(c);
}

static void test_feedback_misused_timed_wait_is_named(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    assert_err(counter_wait_ms(c, 1500), ETIMEDOUT);
    counter_destroy(c);
}

static void test_feedback_pipe_handover_runs_on_real_threads(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    assert_int_equal(counter_add_on_a_helper(c), 1);
    counter_destroy(c);
}

static void *add_many(void *raw)
{
    for (int i = 0; i < 1000; i++)
        counter_add_unlocked(*(counter_t **)raw, 1);
    return NULL;
}

static void test_feedback_race_shows_both_accesses(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    counter_t *args[2] = { c, c };
    kit_test_run_group(2, "adder", add_many, args, sizeof args[0]);
    counter_destroy(c);
}

/* ---- A copy the C library makes after the unlock is a race on the schedule --------- */

static void *add_to_every_slot(void *raw)
{
    for (int i = 0; i < 4 * TALLY_SLOTS; i++)
        tally_add(raw, i % TALLY_SLOTS);
    return NULL;
}

static void test_feedback_copy_after_the_unlock_is_seen(void **state)
{
    (void)state;
    tally_t *t = tally_create();
    assert_non_null(t);
    kit_worker_t worker;
    kit_worker_start(&worker, "adder", add_to_every_slot, t);
    long seen[TALLY_SLOTS];
    for (int i = 0; i < 4; i++)
        tally_snapshot(t, seen, TALLY_SLOTS);
    kit_worker_must_finish(&worker, "the adder");
    tally_destroy(t);
}

/* ---- A lost wake-up names the line that changed the state ------------------------ */

/* A waiter in @p call (run by @p wait), then a quiet set of "ready": a lost
 * wake-up, if the waiter waits for "ready". */
static void ready_set_quietly_under(void *(*wait)(void *), const char *call)
{
    counter_t *c = make_counter();
    kit_worker_t worker;
    kit_worker_start(&worker, "waiter", wait, c);
    kit_await_waiting_threads(1, "the waiter");
    counter_set_ready_quietly(c);
    kit_worker_must_finish(&worker, call);
    counter_destroy(c);
}

static void test_feedback_lost_wakeup_names_the_change(void **state)
{
    (void)state;
    ready_set_quietly_under(wait_ready, "counter_wait_ready");
}

static void *wait_ready_for_an_hour(void *raw)
{
    return (void *)(intptr_t)counter_wait_ready_within(raw, 3600L * 1000);
}

/* The waiter's deadline, an hour on, ends its wait: the lost wake-up is
 * hidden by a time-out, and the check that fails is the test's own. */
static void test_feedback_stalled_wait_names_the_change(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    pthread_t waiter;
    assert_ok(pthread_create(&waiter, NULL, wait_ready_for_an_hour, c));
    kit_await_waiting_threads(1, "the waiter");
    counter_set_ready_quietly(c);
    int64_t start = kit_now_ns();
    assert_ok(pthread_join(waiter, NULL));
    long waited_ms = (long)((kit_now_ns() - start) / 1000000);
    assert_true_or_say(waited_ms == 0, "the waiter saw ready %ld ms (virtual) after it was set: only its time-out "
                       "woke it", waited_ms);
    counter_destroy(c);
}

static void *wait_for_one(void *raw)
{
    counter_wait_value(raw, 1);
    return NULL;
}

static void test_feedback_signal_to_the_wrong_sleeper_is_named(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    kit_worker_t first, second;
    kit_worker_start(&first, "first", wait_for_one, c);
    kit_worker_start(&second, "second", wait_for_one, c);
    kit_await_waiting_threads(2, "both waiters");
    counter_add_signalling_one(c, 1);
    kit_worker_must_finish(&first, "the first counter_wait_value");
    kit_worker_must_finish(&second, "the second counter_wait_value");
    counter_destroy(c);
}

static void *wait_ready_for_100_ms(void *raw)
{
    return (void *)(intptr_t)counter_wait_ready_for(raw, 100);
}

static void test_feedback_early_wakeup_is_drawn_as_one(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    kit_wakeups_every(20);
    kit_worker_t worker;
    kit_worker_start(&worker, "waiter", wait_ready_for_100_ms, c);
    kit_worker_must_finish(&worker, "counter_wait_ready_for(c, 100)");
    kit_wakeups_every(0);
    counter_destroy(c);
}

/* ---- The test to debug first (tests/feedback/debug-first.tsv) --------------------- */

static void test_feedback_check_names_the_value(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    assert_int_equal(counter_add_and_read(c, 2), 2);
    counter_destroy(c);
}

static void test_feedback_check_fails_after_many_steps(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    for (int i = 0; i < 40; i++)
        counter_add(c, 1);
    assert_int_equal(counter_add_and_read(c, 1), 41);
    counter_destroy(c);
}

static void *add_thirty(void *raw)
{
    for (int i = 0; i < 30; i++)
        counter_add(*(counter_t **)raw, 1);
    return NULL;
}

static void test_feedback_stress_check_fails_on_a_long_schedule(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    counter_t *args[2] = { c, c };
    kit_test_run_group(2, "adder", add_thirty, args, sizeof args[0]);
    assert_int_equal(counter_add_and_read(c, 1), 61);
    counter_destroy(c);
}

static void *add_one_unlocked(void *raw)
{
    counter_add_unlocked(raw, 1);
    return NULL;
}

/* Which add two threads make (two_adds' ctx). */
struct adder {
    void *(*add_one)(void *counter);
};

static void two_adds(void *ctx)
{
    const struct adder *adder = ctx;
    counter_t *c = counter_create();
    pthread_t adders[2];
    for (int i = 0; i < 2; i++)
        explore_ok(pthread_create(&adders[i], NULL, adder->add_one, c));
    for (int i = 0; i < 2; i++)
        explore_ok(pthread_join(adders[i], NULL));
    long value = counter_read(c);
    counter_destroy(c);
    kit_explore_check(value == 2, "two threads added 1 each, and the counter holds %ld", value);
}

/* Adds outside the lock lose an update on some schedule: the check fails,
 * and the access to change leads its words. */
static void test_feedback_lost_update_names_the_unlocked_access(void **state)
{
    (void)state;
    static struct adder unlocked = { add_one_unlocked };
    kit_explore_t options = { .strategy = "dfs:2", .schedules = 50 };
    kit_explore(&options, two_adds, &unlocked);
}

static void test_feedback_teardown_hangs_after_the_checks_passed(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    counter_add(c, 1);
    assert_int_equal(counter_read(c), 1);
    counter_destroy_when_ready(c);
}

static void test_feedback_unwritten_function_is_named(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    assert_ok(counter_reset(c));
    counter_destroy(c);
}

static void test_feedback_correct_code_passes(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    counter_add(c, 2);
    assert_int_equal(counter_read(c), 2);
    counter_destroy(c);
}

/* ---- ThreadSanitizer: a thread never joined is a leak, not a race ----------------- */

static void test_feedback_thread_leak_is_not_a_race(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    counter_add_on_a_thread_left_behind(c);
    counter_wait_value(c, 1);
    counter_destroy(c);
}

/* ---- A use after free and a misused pthread call name the student's lines ---------- */

static void test_feedback_use_after_free_names_both_lines(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    counter_add(c, 3);
    counter_close(c);
}

static void test_feedback_second_join_is_named(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    counter_add_on_a_helper_joined_twice(c);
    assert_int_equal(counter_read(c), 1);
    counter_destroy(c);
}

/* ---- A crash in a generated scenario names the scenario -------------------------- */

struct counter_model {
    long value;
};

static int run_add(void *object, long arg, long timeout_ms, long *out)
{
    (void)arg, (void)timeout_ms, (void)out;
    counter_add(object, 1);
    return 0;
}

static int run_share(void *object, long arg, long timeout_ms, long *out)
{
    (void)arg, (void)timeout_ms;
    *out = counter_share(object, 12);
    return 0;
}

static bool add_takes_effect(void *raw, const kit_call_t *call)
{
    (void)call;
    ((struct counter_model *)raw)->value++;
    return true;
}

static bool share_takes_effect(void *raw, const kit_call_t *call)
{
    const struct counter_model *model = raw;
    return model->value > 0 && call->out == 12 / model->value;
}

static bool never_waits(const void *state, const kit_call_t *call)
{
    (void)state, (void)call;
    return false;
}

static void *create_counter(long param, void *state)
{
    (void)param;
    memset(state, 0, sizeof(struct counter_model));
    return counter_create();
}

static void destroy_counter(void *object)
{
    counter_destroy(object);
}

static void print_create(long param, char *text, size_t size)
{
    (void)param;
    snprintf(text, size, "counter_t *c = counter_create()");
}

static void print_call(const kit_call_t *call, const char *name, char *text, size_t size)
{
    snprintf(text, size, strcmp(name, "counter_add") == 0 ? "%s(c, 1)" : "%s(c, 12)", name);
    (void)call;
}

static const kit_op_t counter_ops[] = {
    { .name = "counter_add", .weight = 1, .run = run_add, .take_effect = add_takes_effect, .waits = never_waits },
    { .name = "counter_share", .weight = 1, .run = run_share, .take_effect = share_takes_effect,
      .waits = never_waits },
};

static const kit_spec_t counter_spec = {
    .object = "c",
    .state_size = sizeof(struct counter_model),
    .create = create_counter,
    .destroy = destroy_counter,
    .print_create = print_create,
    .print_call = print_call,
    .ops = counter_ops,
    .nops = 2,
};

static void test_feedback_scenario_crash_names_the_scenario(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:1", .schedules = 20 };
    kit_scenarios(&counter_spec, 10, &options);
}

/* ---- A wake-up a time-out took, and a join decided twice, name the student's lines ---- */

static int run_put(void *object, long arg, long timeout_ms, long *out)
{
    (void)arg, (void)timeout_ms, (void)out;
    counter_put_one(object);
    return 0;
}

static int run_take(void *object, long arg, long timeout_ms, long *out)
{
    (void)arg, (void)timeout_ms, (void)out;
    counter_take_one(object);
    return 0;
}

static int run_take_within(void *object, long arg, long timeout_ms, long *out)
{
    (void)arg, (void)out;
    return counter_take_one_within(object, timeout_ms);
}

static bool put_takes_effect(void *raw, const kit_call_t *call)
{
    (void)call;
    ((struct counter_model *)raw)->value++;
    return true;
}

static bool take_takes_effect(void *raw, const kit_call_t *call)
{
    struct counter_model *model = raw;
    if (call->ret == ETIMEDOUT)
        return model->value == 0; /* a time-out while nothing could be taken */
    if (call->ret != 0 || model->value == 0)
        return false;
    model->value--;
    return true;
}

static bool take_waits(const void *state, const kit_call_t *call)
{
    (void)call;
    return ((const struct counter_model *)state)->value == 0;
}

static void print_take_call(const kit_call_t *call, const char *name, char *text, size_t size)
{
    if (strcmp(name, "counter_take_one_within") == 0)
        snprintf(text, size, "%s(c, %ld)", name, call->timeout_ms);
    else
        snprintf(text, size, "%s(c)", name);
}

#define TAKE_WITHIN_OP                                                                                 \
    { .name = "counter_take_one_within", .weight = 2, .timed = true, .run = run_take_within,            \
      .take_effect = take_takes_effect, .waits = take_waits, .group = 1,                                \
      .rule = "counter_take_one_within: takes one, or ETIMEDOUT if none came by the deadline" }

static const kit_op_t take_ops[] = {
    { .name = "counter_put_one", .weight = 2, .run = run_put, .take_effect = put_takes_effect,
      .waits = never_waits, .group = 2, .rule = "counter_put_one: adds one and wakes a taker" },
    { .name = "counter_take_one", .weight = 1, .run = run_take, .take_effect = take_takes_effect,
      .waits = take_waits, .group = 1, .rule = "counter_take_one: waits until it can take one" },
    TAKE_WITHIN_OP,
};

static const kit_shape_t take_shapes[] = {
    { .sleepers = 1, .mover = 2 }, /* two takers asleep, a thread that puts */
};

/* Every taker still asleep at the end gets one (three at most sleep). */
static void release_takers(void *object)
{
    for (int i = 0; i < 3; i++)
        counter_put_one(object);
}

static const kit_spec_t take_spec = {
    .object = "c",
    .state_size = sizeof(struct counter_model),
    .create = create_counter,
    .release = release_takers,
    .released_ret = 0,
    .destroy = destroy_counter,
    .print_create = print_create,
    .print_call = print_take_call,
    .ops = take_ops,
    .nops = 3,
    .shapes = take_shapes,
    .nshapes = 1,
};

static void test_feedback_wakeup_taken_by_a_timeout_is_named(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dpor:2", .schedules = 300, .timeouts_race = true };
    kit_scenarios(&take_spec, 10, &options);
}

static void *add_one_on_a_helper(void *raw)
{
    counter_add(raw, 1);
    return NULL;
}

static void test_feedback_join_decided_twice_is_named(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    pthread_t helper;
    assert_ok(pthread_create(&helper, NULL, add_one_on_a_helper, c));
    counter_join_helper(c, helper);
    counter_join_helper(c, helper); /* a second owner's teardown: the helper must be joined once */
    counter_destroy(c);
}

/* ---- A wrong value a test's check reads names the line that wrote it ---------------- */

static void *add_to_the_meter(void *raw)
{
    meter_add(raw, 5);
    return NULL;
}

static void test_feedback_wrong_count_names_its_write(void **state)
{
    (void)state;
    meter_t *m = meter_create();
    assert_non_null(m);
    pthread_t adder;
    assert_ok(pthread_create(&adder, NULL, add_to_the_meter, m));
    assert_ok(pthread_join(adder, NULL));
    meter_reading_t reading;
    meter_read(m, &reading);
    assert_int_equal(reading.value, 5);
    assert_int_equal(reading.adds, 1);
    meter_destroy(m);
}

/* ---- A helper's line names the call that led there; a time-out's path is named ------- */

static void *add_one_through_the_helper(void *raw)
{
    counter_add_through_a_helper(raw, 1);
    return NULL;
}

/* The unlocked access is in a helper the compiler inlined: the access to
 * change names the call that led there, where the lock belongs. */
static void test_feedback_unlocked_helper_names_its_caller(void **state)
{
    (void)state;
    static struct adder through_the_helper = { add_one_through_the_helper };
    kit_explore_t options = { .strategy = "dfs:2", .schedules = 50 };
    kit_explore(&options, two_adds, &through_the_helper);
}

/* A waiter for 1, then @p add of 1 - which wakes nobody: a lost wake-up. */
static void add_one_to_a_waiter(void (*add)(counter_t *c, long n))
{
    counter_t *c = make_counter();
    kit_worker_t worker;
    kit_worker_start(&worker, "waiter", wait_for_one, c);
    kit_await_waiting_threads(1, "the waiter");
    add(c, 1);
    kit_worker_must_finish(&worker, "counter_wait_value");
    counter_destroy(c);
}

static void *pass_through(void *raw)
{
    counter_pass_through(raw);
    return NULL;
}

/* A turn handed on one thread at a time: the thread the signal woke went
 * on, and did not hand the turn on when it left - its leaving is named, not
 * a broadcast. */
static void test_feedback_turn_not_handed_on_is_named(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    kit_worker_t first, second;
    counter_enter(c);
    kit_worker_start(&first, "first", pass_through, c);
    kit_worker_start(&second, "second", pass_through, c);
    kit_await_waiting_threads(2, "both threads waiting their turn");
    counter_leave(c);
    kit_worker_must_finish(&first, "counter_pass_through");
    kit_worker_must_finish(&second, "counter_pass_through");
    counter_destroy(c);
}

/* A waiter for a value, and a section that changes something else and
 * wakes nobody: the section is named, as a guess (the wait never read what
 * it changed). */
static void test_feedback_lost_wakeup_guessed_at_a_section(void **state)
{
    (void)state;
    ready_set_quietly_under(wait_for_one, "counter_wait_value");
}

/* Two sleepers, and what one of them waits for never comes: the one in the
 * call the failure names is told, though the other has slept longer. */
static void test_feedback_hang_tells_the_sleeper_in_the_named_call(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    kit_worker_t ready_waiter, value_waiter;
    kit_worker_start(&ready_waiter, "ready-waiter", wait_ready, c);
    kit_await_waiting_threads(1, "the ready-waiter");
    kit_worker_start(&value_waiter, "value-waiter", wait_for_one, c);
    kit_await_waiting_threads(2, "both waiters");
    kit_worker_must_finish(&value_waiter, "counter_wait_value");
    kit_worker_must_finish(&ready_waiter, "counter_wait_ready");
    counter_destroy(c);
}

/* The change nobody signalled is in an inlined helper: the call to it is named too. */
static void test_feedback_lost_wakeup_names_the_helpers_caller(void **state)
{
    (void)state;
    add_one_to_a_waiter(counter_add_quietly_through_a_helper);
}

/* The changer's own test decided not to signal: the lines it ran after its change are named. */
static void test_feedback_lost_wakeup_names_the_lines_after_the_change(void **state)
{
    (void)state;
    add_one_to_a_waiter(counter_add_waking_once_ready);
}

/* A time-out path that leaves out the undoing step: the lines it ran are named. */
static void test_feedback_timed_out_taker_left_counted_is_named(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    assert_int_equal(counter_take_one_counted_within(c, 10), ETIMEDOUT);
    counter_destroy_once_no_taker_waits(c);
}

/* A check of a count that a time-out's way out left raised: the change,
 * the timed wait and the lines its way out ran are named. */
static void test_feedback_check_names_what_a_timeout_left(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    assert_int_equal(counter_take_one_counted_within(c, 10), ETIMEDOUT);
    long takers = counter_takers(c);
    if (takers != 0)
        fail_msg("counter_takers(c) returned %ld after the only timed take gave up: expected 0", takers);
    counter_destroy(c);
}

/* A check of a count left raised by a call that was refused: the raise
 * and the lines that call ran on its way out are named. */
static void test_feedback_count_a_refusal_left_raised_is_named(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    assert_int_equal(counter_offer_refusable(c), 0);
    assert_int_equal(counter_offer_refusable(c), EAGAIN);
    long offered = counter_offered(c);
    assert_int_equal(offered, 1);
    assert_int_equal(counter_take_offered(c), 1);
    counter_destroy(c);
}

/* A refusal that leaves out the undoing step in a helper of a later
 * critical section: the rest of the call that made the change is named. */
static void test_feedback_refused_offer_left_arriving_is_named(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    assert_int_equal(counter_offer_arriving(c), 0);
    assert_int_equal(counter_offer_arriving(c), EAGAIN);
    counter_destroy_once_none_arriving(c);
}

/* A path out that leaves out the undoing step, though every other undid it:
 * the change never undone and the lines that path ran are named. */
static void test_feedback_shut_taker_left_counted_is_named(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    counter_put_one(c);
    assert_int_equal(counter_take_one_counted_unless_shut(c), 0);
    counter_shut(c);
    assert_int_equal(counter_take_one_counted_unless_shut(c), ECANCELED);
    counter_destroy_once_no_taker_waits(c);
}

static int shut_taker_result; /* what the taker asleep when the counter was shut returned */

static void *take_one_unless_shut(void *raw)
{
    shut_taker_result = counter_take_one_unless_shut(raw);
    return NULL;
}

/* A value another thread's call returned, decided on its way out of a wait:
 * the lines that way out ran are named, the stale copy's test among them. */
static void test_feedback_value_returned_after_a_wait_names_its_way_out(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    kit_worker_t taker;
    shut_taker_result = -1;
    kit_worker_start(&taker, "taker", take_one_unless_shut, c);
    kit_await_waiting_threads(1, "the taker");
    counter_shut(c);
    assert_int_equal(kit_worker_join(&taker, KIT_HANG_MS, NULL), 0);
    assert_code_or_say(shut_taker_result, ECANCELED,
                       "the counter_take_one_unless_shut asleep when the counter was shut");
    counter_destroy(c);
}

static void *store_one(void *raw)
{
    counter_store_counted_first(raw);
    return NULL;
}

/* A total counted by a thread that then waits for room, and still waits:
 * the count and the wait are named. The store is let through at the end. */
static void test_feedback_count_before_its_wait_is_named(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    kit_worker_t storer;
    counter_put_one(c);
    kit_worker_start(&storer, "storer", store_one, c);
    kit_await_waiting_threads(1, "the storer");
    long stored = counter_stored(c);
    if (stored != 0)
        fail_msg("stored is %ld while the only store still waits for room: a store is counted once it is done", stored);
    counter_take_one(c);
    assert_int_equal(kit_worker_join(&storer, KIT_HANG_MS, NULL), 0);
    counter_destroy(c);
}

/* The change nobody signalled is made in a helper the code calls: the call is named. */
static void test_feedback_lost_wakeup_names_the_called_helpers_caller(void **state)
{
    (void)state;
    add_one_to_a_waiter(counter_add_quietly_through_a_called_helper);
}

static void *wait_until_empty(void *raw)
{
    roster_wait_empty(raw);
    return NULL;
}

/* The change nobody signalled is in memory the explorer does not follow
 * (the kit's map): the section after the change it sees, which wrote and
 * woke nobody either, is named too. */
static void test_feedback_lost_wakeup_names_a_later_section(void **state)
{
    (void)state;
    roster_t *r = roster_create();
    assert_non_null(r);
    roster_add(r, "a");
    kit_worker_t worker;
    kit_worker_start(&worker, "waiter", wait_until_empty, r);
    kit_await_waiting_threads(1, "the waiter");
    roster_close(r);
    roster_remove_quietly(r, "a");
    assert_int_equal(roster_size(r), 0); /* a section that only reads, after the one that removed */
    kit_worker_must_finish(&worker, "roster_wait_empty");
    roster_destroy(r);
}

/* A count lowered twice for one raise: the second lowering and the first are named. */
static void test_feedback_count_lowered_twice_is_named(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    counter_put_one(c);
    counter_take_one_uncounting_twice(c);
    long takers = counter_takers(c);
    if (takers != 0)
        fail_msg("counter_takers(c) returned %ld once the only take had returned: expected 0", takers);
    counter_destroy(c);
}

static void *add_one_below_one(void *raw)
{
    counter_add_once_below(raw, 1);
    return NULL;
}

/* Two threads each add 1 only while the counter is below 1: it ends at 1. */
static void two_adds_below_one(void *ctx)
{
    (void)ctx;
    counter_t *c = counter_create();
    pthread_t adders[2];
    for (int i = 0; i < 2; i++)
        explore_ok(pthread_create(&adders[i], NULL, add_one_below_one, c));
    for (int i = 0; i < 2; i++)
        explore_ok(pthread_join(adders[i], NULL));
    long value = counter_read(c);
    counter_destroy(c);
    kit_explore_check(value == 1, "two threads each added 1 only while the counter was below 1, and it holds %ld",
                      value);
}

/* A check and its act in two critical sections: the other thread's add
 * between them is told, with the line that let the mutex go. */
static void test_feedback_split_section_names_the_unlock(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:2", .schedules = 50 };
    kit_explore(&options, two_adds_below_one, NULL);
}

/* A write past the block: the lines the writer ran on its way there (the test that let it through) are named. */
static void test_feedback_overrun_names_the_lines_before_it(void **state)
{
    (void)state;
    numbers_t *l = numbers_create(2);
    assert_non_null(l);
    for (long i = 0; i < 3; i++)
        numbers_append(l, i);
    numbers_destroy(l);
}

static int run_put_quietly(void *object, long arg, long timeout_ms, long *out)
{
    (void)arg, (void)timeout_ms, (void)out;
    counter_put_one_quietly(object);
    return 0;
}

static const kit_op_t quiet_take_ops[] = {
    { .name = "counter_put_one_quietly", .weight = 1, .run = run_put_quietly, .take_effect = put_takes_effect,
      .waits = never_waits, .group = 2, .rule = "counter_put_one_quietly: adds one (and wakes nobody)" },
    TAKE_WITHIN_OP,
};

/* No signal ever comes: a timed take's wait runs out though a put came
 * before its deadline, and the path its time-out took is named. */
static void test_feedback_timeout_path_is_named(void **state)
{
    (void)state;
    static kit_spec_t quiet_take_spec;
    quiet_take_spec = take_spec; /* the same counter, with a put that wakes nobody */
    quiet_take_spec.ops = quiet_take_ops;
    quiet_take_spec.nops = 2;
    kit_explore_t options = { .strategy = "dpor:2", .schedules = 300, .timeouts_race = true };
    kit_scenarios(&quiet_take_spec, 10, &options);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_feedback_crash_shows_the_faulting_line),
    cmocka_unit_test(test_feedback_hang_check_shows_every_thread),
    cmocka_unit_test(test_feedback_deadlock_shows_where_it_waits),
    cmocka_unit_test(test_feedback_misused_timed_wait_is_named),
    cmocka_unit_test(test_feedback_pipe_handover_runs_on_real_threads),
    cmocka_unit_test(test_feedback_race_shows_both_accesses),
    cmocka_unit_test(test_feedback_copy_after_the_unlock_is_seen),
    cmocka_unit_test(test_feedback_scenario_crash_names_the_scenario),
    cmocka_unit_test(test_feedback_lost_wakeup_names_the_change),
    cmocka_unit_test(test_feedback_stalled_wait_names_the_change),
    cmocka_unit_test(test_feedback_signal_to_the_wrong_sleeper_is_named),
    cmocka_unit_test(test_feedback_early_wakeup_is_drawn_as_one),
    cmocka_unit_test(test_feedback_check_names_the_value),
    cmocka_unit_test(test_feedback_check_fails_after_many_steps),
    cmocka_unit_test(test_feedback_stress_check_fails_on_a_long_schedule),
    cmocka_unit_test(test_feedback_lost_update_names_the_unlocked_access),
    cmocka_unit_test(test_feedback_teardown_hangs_after_the_checks_passed),
    cmocka_unit_test(test_feedback_unwritten_function_is_named),
    cmocka_unit_test(test_feedback_correct_code_passes),
    cmocka_unit_test(test_feedback_thread_leak_is_not_a_race),
    cmocka_unit_test(test_feedback_use_after_free_names_both_lines),
    cmocka_unit_test(test_feedback_second_join_is_named),
    cmocka_unit_test(test_feedback_wakeup_taken_by_a_timeout_is_named),
    cmocka_unit_test(test_feedback_join_decided_twice_is_named),
    cmocka_unit_test(test_feedback_wrong_count_names_its_write),
    cmocka_unit_test(test_feedback_unlocked_helper_names_its_caller),
    cmocka_unit_test(test_feedback_lost_wakeup_names_the_helpers_caller),
    cmocka_unit_test(test_feedback_timeout_path_is_named),
    cmocka_unit_test(test_feedback_lost_wakeup_names_the_lines_after_the_change),
    cmocka_unit_test(test_feedback_timed_out_taker_left_counted_is_named),
    cmocka_unit_test(test_feedback_shut_taker_left_counted_is_named),
    cmocka_unit_test(test_feedback_value_returned_after_a_wait_names_its_way_out),
    cmocka_unit_test(test_feedback_count_before_its_wait_is_named),
    cmocka_unit_test(test_feedback_check_names_what_a_timeout_left),
    cmocka_unit_test(test_feedback_count_a_refusal_left_raised_is_named),
    cmocka_unit_test(test_feedback_refused_offer_left_arriving_is_named),
    cmocka_unit_test(test_feedback_hang_tells_the_sleeper_in_the_named_call),
    cmocka_unit_test(test_feedback_turn_not_handed_on_is_named),
    cmocka_unit_test(test_feedback_lost_wakeup_guessed_at_a_section),
    cmocka_unit_test(test_feedback_lost_wakeup_names_the_called_helpers_caller),
    cmocka_unit_test(test_feedback_lost_wakeup_names_a_later_section),
    cmocka_unit_test(test_feedback_count_lowered_twice_is_named),
    cmocka_unit_test(test_feedback_overrun_names_the_lines_before_it),
    cmocka_unit_test(test_feedback_split_section_names_the_unlock),
};

KIT_TEST_MAIN(tests)
