/**
 * @file test_explore.c
 * @brief Tests of the schedule explorer (grader/explorer/kit_sched*.c): it
 *        finds a lost update, a lost wake-up and a deadlock, replays each
 *        exactly from its token, keeps virtual time, passes correct code,
 *        runs code it cannot follow on real threads instead, keeps
 *        each thread's own state its own, and names both lines of a use
 *        after free and of a double free.
 *
 * Each buggy body below is small enough that every strategy finds its bug
 * within a few schedules; each search uses a fixed seed, so these tests do
 * the same thing every run.
 */
#define _GNU_SOURCE /* pthread_setname_np, pthread_getname_np */
#include "kit_test.h"

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_sched.h"
#include "kit_time.h"

/* ---- Bodies under exploration ------------------------------------------------------- */

struct counter {
    pthread_mutex_t lock;
    long value;
    bool split; /* read and write in two critical sections: a lost update */
};

static void *add_one(void *raw)
{
    struct counter *c = raw;
    pthread_mutex_lock(&c->lock);
    long seen = c->value;
    if (c->split) {
        pthread_mutex_unlock(&c->lock);
        pthread_mutex_lock(&c->lock);
    }
    c->value = seen + 1;
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

/* Two threads running fn(arg), both joined. */
static void run_two(void *(*fn)(void *), void *arg)
{
    pthread_t threads[2];
    for (int i = 0; i < 2; i++)
        explore_ok(pthread_create(&threads[i], NULL, fn, arg));
    for (int i = 0; i < 2; i++)
        explore_ok(pthread_join(threads[i], NULL));
}

static void count_to_two(void *ctx)
{
    struct counter c = { .split = *(bool *)ctx };
    explore_ok(pthread_mutex_init(&c.lock, NULL));
    run_two(add_one, &c);
    pthread_mutex_destroy(&c.lock);
    kit_explore_check(c.value == 2, "two increments left the counter at %ld", c.value);
}

struct flag {
    pthread_mutex_t lock;
    pthread_cond_t set;
    bool ready;
};

/* The lost wake-up: the flag is tested outside the lock, and with `if`. */
static void *await_flag_unlocked_check(void *raw)
{
    struct flag *f = raw;
    if (!f->ready) {
        pthread_mutex_lock(&f->lock);
        pthread_cond_wait(&f->set, &f->lock);
        pthread_mutex_unlock(&f->lock);
    }
    return NULL;
}

static void raise_flag(struct flag *f)
{
    pthread_mutex_lock(&f->lock);
    f->ready = true;
    pthread_cond_signal(&f->set);
    pthread_mutex_unlock(&f->lock);
}

static void lost_wakeup(void *ctx)
{
    (void)ctx;
    struct flag f = { .ready = false };
    pthread_t waiter;
    explore_ok(pthread_mutex_init(&f.lock, NULL));
    explore_ok(pthread_cond_init(&f.set, NULL));
    explore_ok(pthread_create(&waiter, NULL, await_flag_unlocked_check, &f));
    raise_flag(&f);
    explore_ok(pthread_join(waiter, NULL));
    pthread_cond_destroy(&f.set);
    pthread_mutex_destroy(&f.lock);
}

struct two_locks {
    pthread_mutex_t a, b;
};

static void *lock_b_then_a(void *raw)
{
    struct two_locks *l = raw;
    pthread_mutex_lock(&l->b);
    pthread_mutex_lock(&l->a);
    pthread_mutex_unlock(&l->a);
    pthread_mutex_unlock(&l->b);
    return NULL;
}

static void lock_order_inversion(void *ctx)
{
    (void)ctx;
    struct two_locks l;
    pthread_t other;
    explore_ok(pthread_mutex_init(&l.a, NULL));
    explore_ok(pthread_mutex_init(&l.b, NULL));
    explore_ok(pthread_create(&other, NULL, lock_b_then_a, &l));
    pthread_mutex_lock(&l.a);
    pthread_mutex_lock(&l.b);
    pthread_mutex_unlock(&l.b);
    pthread_mutex_unlock(&l.a);
    explore_ok(pthread_join(other, NULL));
    pthread_mutex_destroy(&l.a);
    pthread_mutex_destroy(&l.b);
}

/* Nobody signals: the timed wait must end at its deadline, on virtual time. */
static void lonely_timed_wait(void *ctx)
{
    long *waited_ms = ctx;
    pthread_mutex_t lock;
    pthread_cond_t never;
    struct timespec deadline;
    explore_ok(pthread_mutex_init(&lock, NULL));
    explore_ok(kit_cond_init(&never));
    int64_t start = kit_now_ns();
    explore_ok(kit_deadline_after(1000, &deadline));
    pthread_mutex_lock(&lock);
    int err = 0;
    while (err == 0)
        err = pthread_cond_timedwait(&never, &lock, &deadline);
    pthread_mutex_unlock(&lock);
    *waited_ms = (long)((kit_now_ns() - start) / 1000000);
    explore_err(err, ETIMEDOUT);
    pthread_cond_destroy(&never);
    pthread_mutex_destroy(&lock);
}

/* ---- Tests ------------------------------------------------------------------------ */

static const char *const strategies[] = { "random:7", "pct:7:2", "dfs:2" };

/* Search with each strategy; each must find the bug, and its token must replay it. */
static void must_find_and_replay(const char *what, void (*body)(void *), void *ctx, bool deadlock)
{
    static kit_explore_result_t found, again;
    for (size_t s = 0; s < sizeof strategies / sizeof strategies[0]; s++) {
        kit_explore_t options = { .strategy = strategies[s], .schedules = 200, .quiet = true };
        assert_false(kit_explore_search(what, &options, body, ctx, &found));
        assert_int_equal(found.deadlocked, deadlock);
        assert_true(!deadlock || strstr(found.message, "lost wake-up") != NULL);
        char replay[sizeof found.token + 8];
        snprintf(replay, sizeof replay, "replay:%s", found.token);
        for (int i = 0; i < 10; i++) {
            kit_explore_t exact = { .strategy = replay, .quiet = true };
            assert_false(kit_explore_search(what, &exact, body, ctx, &again));
            assert_int_equal(again.schedules, 1);
            assert_string_equal(again.message, found.message);
            assert_string_equal(again.token, found.token);
        }
    }
}

static void test_explore_finds_and_replays_a_lost_update(void **state)
{
    (void)state;
    bool split = true;
    must_find_and_replay(__func__, count_to_two, &split, false);
}

static void test_explore_finds_and_replays_a_lost_wakeup_at_once(void **state)
{
    (void)state;
    int64_t start = kit_now_ns();
    must_find_and_replay(__func__, lost_wakeup, NULL, true);
    /* 3 searches and 30 replays, each reported without any time-out. */
    assert_true(kit_elapsed_ms(start) < KIT_HANG_MS);
}

static void test_explore_finds_and_replays_a_deadlock(void **state)
{
    (void)state;
    must_find_and_replay(__func__, lock_order_inversion, NULL, true);
    assert_true(kit_sched_take_lock_inversion()); /* and the two orders are reported, deadlock or not */
}

static void test_explore_timed_wait_ends_on_virtual_time(void **state)
{
    (void)state;
    long waited_ms = -1;
    int64_t start = kit_now_ns();
    kit_explore_t options = { .strategy = "random:3", .schedules = 20, .spurious = 2 };
    kit_explore(&options, lonely_timed_wait, &waited_ms);
    assert_int_equal(waited_ms, 1000); /* exactly: the clock jumped to the deadline */
    assert_true(kit_elapsed_ms(start) < 1000); /* 20 waits of a virtual second each */
}

static void test_explore_passes_correct_code_everywhere_within_the_bound(void **state)
{
    (void)state;
    bool split = false;
    static kit_explore_result_t result;
    kit_explore_t options = { .strategy = "dfs:3", .schedules = 100000 };
    assert_true(kit_explore_search(__func__, &options, count_to_two, &split, &result));
    /* every schedule of two threads with at most 3 preemptions: the search ends by itself */
    assert_true(result.schedules > 10 && result.schedules < 100000);
    kit_explore_t wide = { .strategy = "random:1 pct:1:3", .schedules = 300, .spurious = 1 };
    kit_explore(&wide, count_to_two, &split);
}

/* Two increments under a robust mutex, which the scheduler does not model. */
struct robust_count {
    pthread_mutex_t lock;
    long value;
};

static void *add_one_robustly(void *raw)
{
    struct robust_count *c = raw;
    pthread_mutex_lock(&c->lock);
    c->value++;
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

static void count_to_two_robustly(void *ctx)
{
    (*(int *)ctx)++;
    struct robust_count c = { .value = 0 };
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    explore_ok(pthread_mutex_init(&c.lock, &attr));
    pthread_mutexattr_destroy(&attr);
    run_two(add_one_robustly, &c);
    pthread_mutex_destroy(&c.lock);
    kit_explore_check(c.value == 2, "two increments left the counter at %ld", c.value);
}

/* Code the scheduler cannot follow is no bug: the search gives up, and
 * kit_explore() runs the body on real threads instead, where it passes. */
static void test_explore_runs_code_it_cannot_follow_on_real_threads(void **state)
{
    (void)state;
    int runs = 0;
    static kit_explore_result_t result;
    kit_explore_t options = { .strategy = "random:1", .schedules = 50, .quiet = true };
    assert_false(kit_explore_search(__func__, &options, count_to_two_robustly, &runs, &result));
    assert_true(result.gave_up);
    assert_false(result.deadlocked);
    assert_non_null(strstr(result.message, "robust"));
    runs = 0;
    kit_explore(&options, count_to_two_robustly, &runs);
    assert_true(runs > 1); /* the explored attempt, then the runs on real threads */
}

/* What a thread keeps of its own - its pthread_t, a _Thread_local variable,
 * a thread-specific value, its name, errno - it keeps across every switch,
 * though the threads of a schedule share one processor thread; and
 * pthread_exit runs its cleanup handler and hands its value to the join. */
static _Thread_local long own_value;
static pthread_key_t own_key;

struct own_check {
    int index;
    pthread_t seen; /* what pthread_self() said on the thread */
    bool kept;      /* everything was still its own after each switch */
    bool cleaned;   /* its cleanup handler ran */
};

static void note_cleanup(void *raw)
{
    ((struct own_check *)raw)->cleaned = true;
}

static bool still_own(struct own_check *c, const char *name)
{
    char now[16] = "";
    pthread_getname_np(pthread_self(), now, sizeof now);
    return own_value == 100 + c->index && pthread_getspecific(own_key) == c && errno == 1000 + c->index &&
           strcmp(now, name) == 0 && pthread_equal(pthread_self(), c->seen);
}

static void *keep_own(void *raw)
{
    struct own_check *c = raw;
    char name[16];
    snprintf(name, sizeof name, "own-%d", c->index);
    c->seen = pthread_self();
    own_value = 100 + c->index;
    pthread_setspecific(own_key, c);
    pthread_setname_np(pthread_self(), name);
    c->kept = true;
    pthread_cleanup_push(note_cleanup, c);
    for (int i = 0; i < 3; i++) {
        errno = 1000 + c->index;
        sched_yield(); /* a switch point: the other thread may run */
        c->kept = c->kept && still_own(c, name);
    }
    pthread_exit(c);
    pthread_cleanup_pop(0);
    return NULL;
}

static void threads_keep_their_own(void *ctx)
{
    (void)ctx;
    struct own_check checks[2] = { { .index = 0 }, { .index = 1 } };
    pthread_t threads[2];
    for (int i = 0; i < 2; i++)
        explore_ok(pthread_create(&threads[i], NULL, keep_own, &checks[i]));
    for (int i = 0; i < 2; i++) {
        void *value = NULL;
        explore_ok(pthread_join(threads[i], &value));
        kit_explore_check(value == &checks[i], "thread %d's pthread_exit value did not reach its join", i);
        kit_explore_check(pthread_equal(checks[i].seen, threads[i]), "thread %d is another to pthread_self()", i);
        kit_explore_check(checks[i].kept, "thread %d lost what is its own at a switch", i);
        kit_explore_check(checks[i].cleaned, "thread %d's cleanup handler did not run at pthread_exit", i);
    }
    kit_explore_check(!pthread_equal(threads[0], threads[1]) && !pthread_equal(threads[0], pthread_self()),
                      "two threads have the same pthread_t");
}

static void test_explore_each_thread_keeps_its_own(void **state)
{
    (void)state;
    assert_int_equal(pthread_key_create(&own_key, NULL), 0);
    kit_explore_t options = { .strategy = "random:4 pct:4:3", .schedules = 100 };
    kit_explore(&options, threads_keep_their_own, NULL);
    pthread_key_delete(own_key);
}

/* ---- Freed memory: a use after free and a double free, with both lines ------------------ */

/* What the compiler's instrumentation puts before a load of the code under
 * test (built with it, as every chapter's code is): the explorer sees the read. */
void __tsan_read8(void *addr);
static long instrumented_read(const long *at)
{
    __tsan_read8((void *)at);
    return *at;
}

static void *read_twice(void *raw)
{
    const long *value = raw;
    long sum = instrumented_read(value);
    sum += instrumented_read(value);
    return (void *)(intptr_t)sum;
}

/* Frees a block another thread may still be reading: a use after free. */
static void free_while_read(void *ctx)
{
    (void)ctx;
    long *value = malloc(sizeof *value);
    kit_explore_check(value != NULL, "out of memory");
    *value = 1;
    pthread_t reader;
    explore_ok(pthread_create(&reader, NULL, read_twice, value));
    free(value);
    explore_ok(pthread_join(reader, NULL));
}

static void *free_it(void *raw)
{
    free(raw);
    return NULL;
}

/* Frees a block a thread it joined freed already: a double free, on every schedule. */
static void free_after_the_thread(void *ctx)
{
    (void)ctx;
    void *block = malloc(32);
    kit_explore_check(block != NULL, "out of memory");
    pthread_t freer;
    explore_ok(pthread_create(&freer, NULL, free_it, block));
    explore_ok(pthread_join(freer, NULL));
    free(block);
}

/* An object with a mutex, torn down (destroyed and freed) by two owners. */
struct owned {
    pthread_mutex_t lock;
};

static void *tear_down(void *raw)
{
    struct owned *o = raw;
    pthread_mutex_destroy(&o->lock);
    free(o);
    return NULL;
}

static void tear_down_twice(void *ctx)
{
    (void)ctx;
    struct owned *o = malloc(sizeof *o);
    kit_explore_check(o != NULL, "out of memory");
    explore_ok(pthread_mutex_init(&o->lock, NULL));
    pthread_t owner;
    explore_ok(pthread_create(&owner, NULL, tear_down, o));
    explore_ok(pthread_join(owner, NULL));
    tear_down(o);
}

/* Each strategy finds it, says @p words, and its token replays the same report. */
static void must_find_saying(const char *what, void (*body)(void *), const char *const *words, int nwords)
{
    static kit_explore_result_t found, again;
    for (size_t s = 0; s < sizeof strategies / sizeof strategies[0]; s++) {
        kit_explore_t options = { .strategy = strategies[s], .schedules = 200, .quiet = true };
        assert_false(kit_explore_search(what, &options, body, NULL, &found));
        for (int i = 0; i < nwords; i++)
            if (strstr(found.message, words[i]) == NULL)
                fail_msg("%s: the report does not say \"%s\": %s", strategies[s], words[i], found.message);
        char replay[sizeof found.token + 8];
        snprintf(replay, sizeof replay, "replay:%s", found.token);
        kit_explore_t exact = { .strategy = replay, .quiet = true };
        assert_false(kit_explore_search(what, &exact, body, NULL, &again));
        assert_string_equal(again.message, found.message);
    }
}

static void test_explore_finds_a_use_after_free_with_both_lines(void **state)
{
    (void)state;
    if (KIT_SANITIZED) /* the sanitizer's runtime has the reads, and its own words for this */
        return;
    const char *const words[] = { "USE AFTER FREE: thread-1 reads memory at test_explore.c:",
                                  "freed before it, on this schedule, by test at test_explore.c:",
                                  "in free_while_read" };
    must_find_saying(__func__, free_while_read, words, 3);
    assert_true(kit_sched_take_race()); /* the free raced with the read, on the schedules before */
}

static void test_explore_finds_a_double_free_with_both_lines(void **state)
{
    (void)state;
    if (KIT_SANITIZED)
        return;
    const char *const words[] = { "DOUBLE FREE: test frees at test_explore.c:",
                                  ("in free_after_the_thread a block that was freed already, on this schedule, by "
                                   "thread-1 at test_explore.c:"),
                                  "in free_it" };
    must_find_saying(__func__, free_after_the_thread, words, 3);
    const char *const torn_down[] = { "DOUBLE FREE: test destroys a mutex at test_explore.c:",
                                      "that thread-1 destroyed already at test_explore.c:",
                                      "and that was freed by thread-1 at test_explore.c:" };
    must_find_saying(__func__, tear_down_twice, torn_down, 3);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_explore_finds_and_replays_a_lost_update),
    cmocka_unit_test(test_explore_finds_and_replays_a_lost_wakeup_at_once),
    cmocka_unit_test(test_explore_finds_and_replays_a_deadlock),
    cmocka_unit_test(test_explore_timed_wait_ends_on_virtual_time),
    cmocka_unit_test(test_explore_passes_correct_code_everywhere_within_the_bound),
    cmocka_unit_test(test_explore_runs_code_it_cannot_follow_on_real_threads),
    cmocka_unit_test(test_explore_each_thread_keeps_its_own),
    cmocka_unit_test(test_explore_finds_a_use_after_free_with_both_lines),
    cmocka_unit_test(test_explore_finds_a_double_free_with_both_lines),
};

KIT_TEST_MAIN(tests)
