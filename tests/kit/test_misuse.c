/**
 * @file test_misuse.c
 * @brief Tests that each misused pthread call is an error at the caller's
 *        line, on a schedule and on real threads, whatever the code does
 *        with the error it may get back: a thread joined twice, a detached
 *        thread joined, two threads joining one, a mutex unlocked by a thread that does not hold it,
 *        a locked mutex destroyed, a condition variable destroyed under a
 *        sleeper, a wait without its mutex, one condition variable waited on
 *        with two mutexes.
 *
 * Each body runs in a child process - once on a schedule
 * (kit_sched_run_test), once on real threads - which must end failed and
 * say what was wrong, at this file's line, and how to fix it.
 */
#define _GNU_SOURCE
#include "kit_test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kit_sched.h"
#include "kit_time.h"

/* ---- Bodies: each misuses one call, and ignores what the call returns --------------- */

static void *return_at_once(void *unused)
{
    return unused;
}

static void join_twice_body(void **state)
{
    (void)state;
    pthread_t worker;
    assert_ok(pthread_create(&worker, NULL, return_at_once, NULL));
    pthread_join(worker, NULL);
    pthread_join(worker, NULL);
}

static void join_detached_body(void **state)
{
    (void)state;
    pthread_t worker;
    assert_ok(pthread_create(&worker, NULL, return_at_once, NULL));
    pthread_detach(worker);
    pthread_join(worker, NULL);
}

static void unlock_not_held_body(void **state)
{
    (void)state;
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_unlock(&lock);
}

static void destroy_locked_body(void **state)
{
    (void)state;
    static pthread_mutex_t lock;
    assert_ok(pthread_mutex_init(&lock, NULL));
    pthread_mutex_lock(&lock);
    pthread_mutex_destroy(&lock);
}

/* A condition variable and the mutexes its sleepers use; nothing ever signals it. */
static pthread_mutex_t first_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t second_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never;
static bool signalled; /* guarded by first_lock; never set */

/* Sleeps on `never` with first_lock until the process ends. */
static void *sleep_for_ever(void *unused)
{
    pthread_mutex_lock(&first_lock);
    while (!signalled) /* while, as every wait: no wake-up ever makes it true */
        pthread_cond_wait(&never, &first_lock);
    pthread_mutex_unlock(&first_lock);
    return unused;
}

static void start_a_sleeper(void)
{
    assert_ok(pthread_cond_init(&never, NULL));
    pthread_t sleeper;
    assert_ok(pthread_create(&sleeper, NULL, sleep_for_ever, NULL));
    kit_await_waiting_threads(1, "the sleeper");
}

/* Two threads join one worker, which sleeps until the process ends: the
 * second join comes while the first waits. */
static pthread_t shared_worker;

static void *join_the_shared_worker(void *unused)
{
    pthread_join(shared_worker, NULL);
    return unused;
}

static void two_joiners_body(void **state)
{
    (void)state;
    assert_ok(pthread_cond_init(&never, NULL));
    assert_ok(pthread_create(&shared_worker, NULL, sleep_for_ever, NULL));
    kit_await_waiting_threads(1, "the worker");
    pthread_t joiners[2];
    for (int i = 0; i < 2; i++)
        assert_ok(pthread_create(&joiners[i], NULL, join_the_shared_worker, NULL));
    for (int i = 0; i < 2; i++)
        pthread_join(joiners[i], NULL);
}

static void destroy_slept_on_body(void **state)
{
    (void)state;
    start_a_sleeper();
    pthread_cond_destroy(&never);
}

/* A deadline 10 ms away: a wait the check misses still ends. */
static struct timespec soon(void)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_nsec += 10 * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_nsec -= 1000000000L;
        deadline.tv_sec++;
    }
    return deadline;
}

static void wait_without_the_mutex_body(void **state)
{
    (void)state;
    static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
    struct timespec deadline = soon();
    pthread_cond_timedwait(&cond, &second_lock, &deadline);
}

static void wait_with_two_mutexes_body(void **state)
{
    (void)state;
    start_a_sleeper();
    struct timespec deadline = soon();
    pthread_mutex_lock(&second_lock);
    pthread_cond_timedwait(&never, &second_lock, &deadline);
    pthread_mutex_unlock(&second_lock);
}

/* ---- Running a body in a child process --------------------------------------------- */

struct child {
    int status; /* exit status, or 128 + signal */
    char output[65536];
};

/* The body on a schedule (seed 1) or on real threads, in a child process
 * whose standard error is kept. */
static void run_in_child(void (*body)(void **state), const char *name, bool scheduled, struct child *child)
{
    char path[] = "/tmp/kit-misuse-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fd, STDERR_FILENO);
        alarm(60); /* a misuse the check missed may hang the C library */
        char reason[512];
        bool passed = true;
        if (scheduled)
            passed = kit_sched_run_test(name, body, NULL, 1, reason, sizeof reason);
        else
            body(NULL);
        if (!passed)
            fprintf(stderr, "gave up: %s\n", reason);
        fflush(stderr);
        _exit(passed ? 0 : 2);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    child->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    ssize_t n = pread(fd, child->output, sizeof child->output - 1, 0);
    child->output[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
}

/* ---- Tests ------------------------------------------------------------------------- */

/* A misuse, and what its message must hold on both runs. */
struct misuse {
    void (*body)(void **state);
    const char *name;
    const char *words[3]; /* the misuse, in words, and how to fix it */
};

#define MISUSE(body, ...) { body, #body, { __VA_ARGS__ } }

static const struct misuse misuses[] = {
    MISUSE(join_twice_body, "pthread_join at test_misuse.c:", "joined already", "join it there only"),
    MISUSE(two_joiners_body, "pthread_join at test_misuse.c:", "already", "join it there only"),
    MISUSE(join_detached_body, "pthread_join at test_misuse.c:", "detached", "Either detach a thread or join it"),
    MISUSE(unlock_not_held_body, " at test_misuse.c:", "does not hold", "Unlock only a mutex this thread locked"),
    MISUSE(destroy_locked_body, " at test_misuse.c:", "destroying a locked mutex is undefined", "Unlock it first"),
    MISUSE(destroy_slept_on_body, " at test_misuse.c:", "still", "Wake every sleeper first"),
    MISUSE(wait_without_the_mutex_body, " at test_misuse.c:", "does not hold",
           "Lock the mutex before the loop that checks the condition and waits"),
    MISUSE(wait_with_two_mutexes_body, " at test_misuse.c:", "with one mutex at a time",
           "with the same mutex everywhere"),
};

/* The child failed, and said each of the misuse's words. */
static void must_be_told(const struct misuse *m, const struct child *child, const char *run)
{
    if (child->status == 0 || child->status == 2)
        fail_msg("%s %s: the misuse was not reported (the child ended with status %d); it wrote:\n%.3000s", m->name,
                 run, child->status, child->output);
    for (int i = 0; i < 3; i++)
        if (strstr(child->output, m->words[i]) == NULL)
            fail_msg("%s %s: the report does not say \"%s\"; it wrote:\n%.3000s", m->name, run, m->words[i],
                     child->output);
}

static void test_misuse_is_reported_on_a_schedule(void **state)
{
    (void)state;
    static struct child child;
    for (size_t i = 0; i < sizeof misuses / sizeof misuses[0]; i++) {
        run_in_child(misuses[i].body, misuses[i].name, true, &child);
        must_be_told(&misuses[i], &child, "on a schedule");
    }
}

static void test_misuse_is_reported_on_real_threads(void **state)
{
    (void)state;
    static struct child child;
    for (size_t i = 0; i < sizeof misuses / sizeof misuses[0]; i++) {
        run_in_child(misuses[i].body, misuses[i].name, false, &child);
        must_be_told(&misuses[i], &child, "on real threads");
    }
}

/* The same calls, used as POSIX allows, are never reported: a signalled
 * sleeper may still be on its way out of the wait when its condition
 * variable is destroyed. */
static bool woken; /* guarded by first_lock */

static void *wait_to_be_woken(void *unused)
{
    pthread_mutex_lock(&first_lock);
    while (!woken) /* while: a wake-up may come before woken is set */
        pthread_cond_wait(&never, &first_lock);
    pthread_mutex_unlock(&first_lock);
    return unused;
}

static void correct_use_body(void **state)
{
    (void)state;
    assert_ok(pthread_cond_init(&never, NULL));
    pthread_t sleeper, detached;
    assert_ok(pthread_create(&sleeper, NULL, wait_to_be_woken, NULL));
    assert_ok(pthread_create(&detached, NULL, return_at_once, NULL));
    assert_ok(pthread_detach(detached));
    kit_await_waiting_threads(1, "the sleeper");
    pthread_mutex_lock(&first_lock);
    woken = true;
    pthread_cond_broadcast(&never);
    pthread_mutex_unlock(&first_lock);
    assert_ok(pthread_cond_destroy(&never)); /* no thread blocked on it: it was signalled */
    assert_ok(pthread_join(sleeper, NULL));
    pthread_mutex_lock(&second_lock);
    assert_ok(pthread_mutex_unlock(&second_lock));
    woken = false;
}

static void test_misuse_correct_use_is_never_reported(void **state)
{
    (void)state;
    static struct child child;
    for (int run = 0; run < 2; run++) {
        run_in_child(correct_use_body, "correct_use_body", run == 0, &child);
        if (child.status != 0)
            fail_msg("correct use was reported %s (status %d):\n%.3000s", run == 0 ? "on a schedule" : "on real threads",
                     child.status, child.output);
    }
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_misuse_is_reported_on_a_schedule),
    cmocka_unit_test(test_misuse_is_reported_on_real_threads),
    cmocka_unit_test(test_misuse_correct_use_is_never_reported),
};

KIT_TEST_MAIN(tests)
