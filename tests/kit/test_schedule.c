/**
 * @file test_schedule.c
 * @brief Tests of an ordinary test run on one schedule, as the grader runs
 *        them (kit_sched_run_test): it passes on virtual time, the same
 *        seed gives the same interleaving and the same failure, and it
 *        gives up - for the test to run again on real threads - on what the
 *        scheduler does not control.
 *
 * A failure on a schedule ends the test process, as the grader wants it;
 * the tests that watch one fail run it in a child process and read what the
 * child wrote and how it ended.
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kit_sched.h"
#include "kit_time.h"

/* ---- Bodies: cmocka test functions, run on a schedule ------------------------------ */

struct holder {
    pthread_mutex_t lock;
    long hold_ms;
};

/* Holds the lock for hold_ms of (virtual) time. */
static void *hold_the_lock(void *raw)
{
    struct holder *h = raw;
    pthread_mutex_lock(&h->lock);
    kit_sleep_ms(h->hold_ms);
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

static int64_t wall_ms(void)
{
    struct timeval now;
    gettimeofday(&now, NULL);
    return (int64_t)now.tv_sec * 1000 + now.tv_usec / 1000;
}

/* Every clock, sleep and timed call on virtual time: exact to the millisecond. */
static void virtual_time_body(void **state)
{
    (void)state;
    int64_t start = kit_now_ns(), wall = wall_ms();
    time_t seconds = time(NULL);
    kit_sleep_ms(1500);
    assert_int_equal(kit_elapsed_ms(start), 1500);
    assert_int_equal(wall_ms() - wall, 1500);
    assert_true(time(NULL) - seconds >= 1);

    static struct holder h = { .hold_ms = 300 };
    assert_ok(pthread_mutex_init(&h.lock, NULL));
    kit_worker_t worker;
    kit_worker_start(&worker, "holder", hold_the_lock, &h);
    kit_sleep_ms(1); /* the holder takes the lock and sleeps on it */
    struct timespec deadline; /* pthread_mutex_timedlock's deadline is on CLOCK_REALTIME */
    assert_ok(clock_gettime(CLOCK_REALTIME, &deadline));
    deadline.tv_nsec += 100 * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_nsec -= 1000000000L;
        deadline.tv_sec++;
    }
    start = kit_now_ns();
    assert_err(pthread_mutex_timedlock(&h.lock, &deadline), ETIMEDOUT);
    assert_int_equal(kit_elapsed_ms(start), 100);
    kit_worker_must_finish(&worker, "the holder");
    assert_ok(pthread_mutex_timedlock(&h.lock, &deadline)); /* free now: no wait */
    pthread_mutex_unlock(&h.lock);
    pthread_mutex_destroy(&h.lock);
}

static void *leave_early(void *raw)
{
    pthread_exit(raw);
}

static void pthread_exit_body(void **state)
{
    (void)state;
    pthread_t thread;
    int value = 7;
    assert_ok(pthread_create(&thread, NULL, leave_early, &value));
    void *got = NULL;
    assert_ok(pthread_join(thread, &got));
    assert_ptr_equal(got, &value);
}

struct counter {
    pthread_mutex_t lock;
    long value;
};

/* The lost update: read and write in two critical sections. */
static void *add_in_two_steps(void *raw)
{
    struct counter *c = raw;
    pthread_mutex_lock(&c->lock);
    long seen = c->value;
    pthread_mutex_unlock(&c->lock);
    pthread_mutex_lock(&c->lock);
    c->value = seen + 1;
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

static void lost_update_body(void **state)
{
    (void)state;
    static struct counter c;
    c.value = 0;
    assert_ok(pthread_mutex_init(&c.lock, NULL));
    pthread_t threads[2];
    for (int i = 0; i < 2; i++)
        assert_ok(pthread_create(&threads[i], NULL, add_in_two_steps, &c));
    for (int i = 0; i < 2; i++)
        assert_ok(pthread_join(threads[i], NULL));
    pthread_mutex_destroy(&c.lock);
    assert_int_equal(c.value, 2);
}

int __real_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);

static void *lock_from_outside(void *raw)
{
    pthread_mutex_lock(raw);
    pthread_mutex_unlock(raw);
    return NULL;
}

/* A thread the scheduler did not start (made past the wrapper, as
 * thrd_create or a library would) calls a wrapped function. */
static void outsider_body(void **state)
{
    (void)state;
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_t outsider;
    assert_int_equal(__real_pthread_create(&outsider, NULL, lock_from_outside, &lock), 0);
    pthread_join(outsider, NULL);
}

static void *lock_and_unlock(void *raw)
{
    pthread_mutex_lock(raw);
    pthread_mutex_unlock(raw);
    return NULL;
}

static void mutex_of_kind(pthread_mutex_t *lock, int kind)
{
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, kind);
    assert_ok(pthread_mutex_init(lock, &attr));
    pthread_mutexattr_destroy(&attr);
}

/* Locked three times by its owner, free after the third unlock. */
static void recursive_mutex_body(void **state)
{
    (void)state;
    pthread_mutex_t lock;
    mutex_of_kind(&lock, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_lock(&lock);
    pthread_mutex_lock(&lock);
    assert_int_equal(pthread_mutex_trylock(&lock), 0);
    for (int i = 0; i < 3; i++)
        pthread_mutex_unlock(&lock);
    pthread_t other;
    assert_ok(pthread_create(&other, NULL, lock_and_unlock, &lock));
    pthread_join(other, NULL);
    pthread_mutex_destroy(&lock);
}

/* Relocked by its owner: EDEADLK, which the harness reports as a misuse. */
static void errorcheck_mutex_body(void **state)
{
    (void)state;
    static pthread_mutex_t lock;
    mutex_of_kind(&lock, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_lock(&lock);
    pthread_mutex_lock(&lock);
}

static void robust_mutex_body(void **state)
{
    (void)state;
    pthread_mutexattr_t attr;
    pthread_mutex_t lock;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    assert_ok(pthread_mutex_init(&lock, &attr));
    pthread_mutex_lock(&lock);
    pthread_mutex_unlock(&lock);
    pthread_mutex_destroy(&lock);
}

static void nothing(void *ctx)
{
    (void)ctx;
}

/* A test graded on one schedule that explores schedules of its own. */
static void nested_exploration_body(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "random:1", .schedules = 2 };
    kit_explore(&options, nothing, NULL);
}

/* ---- Running a body in a child process --------------------------------------------- */

struct child {
    int status;       /* exit status, or 128 + signal */
    bool passed;      /* kit_sched_run_test returned true */
    char output[65536];
};

static void run_in_child(void (*body)(void **state), const char *name, uint64_t seed, struct child *child)
{
    char path[] = "/tmp/kit-schedule-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fd, STDERR_FILENO);
        char reason[512];
        bool passed = kit_sched_run_test(name, body, NULL, seed, reason, sizeof reason);
        if (!passed)
            fprintf(stderr, "gave up: %s\n", reason);
        fflush(stderr);
        _exit(passed ? 0 : 2);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    child->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    child->passed = child->status == 0;
    ssize_t n = pread(fd, child->output, sizeof child->output - 1, 0);
    child->output[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
}

/* The child ended with @p status, or the test fails showing what it wrote. */
static void child_must_end_with(const struct child *child, int status)
{
    if (child->status != status)
        fail_msg("the child process ended with status %d, expected %d; it wrote:\n%.3000s", child->status, status,
                 child->output);
}

/* The numbered steps of a schedule's report, as one text. */
static void steps_of(const char *output, char *out, size_t size)
{
    out[0] = '\0';
    size_t used = 0;
    for (const char *line = output; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t length = end ? (size_t)(end - line) + 1 : strlen(line);
        int number;
        if (sscanf(line, "[ schedule ] %d", &number) == 1 && used + length < size) {
            memcpy(out + used, line, length);
            used += length;
            out[used] = '\0';
        }
        line = end ? end + 1 : NULL;
    }
}

/* ---- Tests ------------------------------------------------------------------------- */

static void test_schedule_runs_a_test_on_virtual_time(void **state)
{
    (void)state;
    char reason[512] = "";
    int64_t start = kit_now_ns();
    assert_true(kit_sched_run_test("virtual_time_body", virtual_time_body, NULL, 1, reason, sizeof reason));
    assert_string_equal(reason, "");
    /* 1.8 s of virtual sleeps and waits, run without sleeping for real */
    assert_true(kit_elapsed_ms(start) < 1500);
    assert_true(kit_sched_run_test("pthread_exit_body", pthread_exit_body, NULL, 1, reason, sizeof reason));
}

static void test_schedule_same_seed_same_interleaving_same_failure(void **state)
{
    (void)state;
    static struct child first, again;
    uint64_t seed = 1;
    run_in_child(lost_update_body, "lost_update_body", seed, &first);
    while (first.passed && seed < 50) {
        seed++;
        run_in_child(lost_update_body, "lost_update_body", seed, &first);
    }
    if (first.passed)
        fail_msg("no seed from 1 to 50 lost an update of two threads");
    child_must_end_with(&first, 1);
    assert_non_null(strstr(first.output, "c.value is 1, expected 2"));
    assert_non_null(strstr(first.output, "[ stacks   ] begin: the failed check"));
    static char steps[16384], steps_again[16384];
    steps_of(first.output, steps, sizeof steps);
    assert_true(strlen(steps) > 0);
    for (int i = 0; i < 5; i++) {
        run_in_child(lost_update_body, "lost_update_body", seed, &again);
        child_must_end_with(&again, 1);
        steps_of(again.output, steps_again, sizeof steps_again);
        assert_string_equal(steps_again, steps);
    }
}

static void test_schedule_gives_up_on_what_it_does_not_control(void **state)
{
    (void)state;
    static struct child child;
    /* An outsider runs beside the schedule, uncontrolled: ThreadSanitizer
     * rightly sees that as a race (and the abandoned threads as leaked), so
     * that case is checked in plain builds only. */
    if (!KIT_SANITIZED) {
        run_in_child(outsider_body, "outsider_body", 1, &child);
        child_must_end_with(&child, 2);
        assert_non_null(strstr(child.output, "gave up: a thread the scheduler did not start called "
                                             "pthread_mutex_lock"));
    }
    run_in_child(robust_mutex_body, "robust_mutex_body", 1, &child);
    child_must_end_with(&child, 2);
    assert_non_null(strstr(child.output, "gave up: a robust, process-shared or priority mutex"));
    run_in_child(nested_exploration_body, "nested_exploration_body", 1, &child);
    child_must_end_with(&child, 2);
    assert_non_null(strstr(child.output, "gave up: the test explores schedules of its own"));
}

/* The model knows recursive and error-checking mutexes as POSIX defines them. */
static void test_schedule_models_recursive_and_error_checking_mutexes(void **state)
{
    (void)state;
    static struct child child;
    run_in_child(recursive_mutex_body, "recursive_mutex_body", 1, &child);
    child_must_end_with(&child, 0);
    run_in_child(errorcheck_mutex_body, "errorcheck_mutex_body", 1, &child);
    child_must_end_with(&child, 1);
    assert_non_null(strstr(child.output, "pthread_mutex_lock at "));
    assert_non_null(strstr(child.output, "returned EDEADLK"));
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_schedule_runs_a_test_on_virtual_time),
    cmocka_unit_test(test_schedule_same_seed_same_interleaving_same_failure),
    cmocka_unit_test(test_schedule_gives_up_on_what_it_does_not_control),
    cmocka_unit_test(test_schedule_models_recursive_and_error_checking_mutexes),
};

KIT_TEST_MAIN(tests)
