/**
 * @file dmw_fixture.c
 * @brief The chapter-07 test fixture: servers, runs, worker processes, cleanup.
 */
#if defined(__linux__)
#define _GNU_SOURCE /* fopencookie */
#else
#define _POSIX_C_SOURCE 200809L
#endif
#include "dmw_fixture.h"

#include "kit_test.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kit_log.h"
#include "kit_thread.h"
#include "kit_time.h"

static atomic_int runs_made;

long fixture_scale(long ms)
{
    return getenv("KIT_SLOW") ? ms * 2 : ms;
}

bool fixture_owns_server(const fixture_t *fx)
{
    return fx->server != NULL;
}

void fixture_stop_server(fixture_t *fx)
{
    dmw_server_stop(fx->server);
    fx->server = NULL;
}

static void use_server(fixture_t *fx)
{
    const char *url = getenv("REDIS_URL");
    if (url && url[0]) {
        snprintf(fx->url, sizeof fx->url, "%s", url);
        fx->shared = true;
        return;
    }
    int err = dmw_server_start(&fx->server, 10000);
    if (err != 0)
        fail_msg("cannot start a private redis-server: %s%s", dmw_errno_name(err),
                 err == ENOENT ? " - redis-server is not installed (tools/bootstrap installs it)" : "");
    snprintf(fx->url, sizeof fx->url, "%s", dmw_server_url(fx->server));
}

#if defined(__linux__)
/* The log lines of every process of the test, each one line of the test's
 * log starting with "[ log      ]": the grader reads lines starting with a
 * bracket as the log's own, never as the failure's explanation. One write()
 * per line: the processes of a test share the log's file offset, so lines
 * of two processes never mix. */
static ssize_t write_log_lines(void *cookie, const char *text, size_t size)
{
    (void)cookie;
    for (size_t at = 0; at < size;) {
        size_t length = strcspn(text + at, "\n");
        if (at + length > size)
            length = size - at;
        char line[700];
        int n = snprintf(line, sizeof line, "[ log      ] %.*s\n", (int)length, text + at);
        if (n > 0 && write(STDERR_FILENO, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1) < 0)
            break;
        at += length + 1;
    }
    return (ssize_t)size;
}

/* Unbuffered: each fprintf formats its line on its own thread's stack and
 * hands it to write_log_lines at once, so the worker's threads (its loop and
 * its heartbeat) never share a buffer, whose lock, stdio's own, is one that
 * ThreadSanitizer does not see. */
static void log_to_test_log(void)
{
    static FILE *lines;
    if (lines == NULL) {
        lines = fopencookie(NULL, "w", (cookie_io_functions_t){ .write = write_log_lines });
        if (lines != NULL)
            setvbuf(lines, NULL, _IONBF, 0);
    }
    kit_log_to(lines);
}
#else
static void log_to_test_log(void)
{
    kit_log_to(stderr);
}
#endif

int fixture_setup(void **state)
{
    fixture_t *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    *state = fx;
    fx->owner = getpid();
    journal_open();
    log_to_test_log();
    use_server(fx);
    snprintf(fx->run, sizeof fx->run, "t%ld-%d", (long)getpid(), atomic_fetch_add(&runs_made, 1));
    fx->config = (dmw_config_t){ .redis_url = fx->url, .run = fx->run, .visibility_ms = fixture_scale(1000),
                                 .max_attempts = 3, .connect_timeout_ms = 2000, .reconnect_ms = 5000 };
    assert_ok(dmw_redis_open(&fx->redis, &fx->config));
    assert_ok(dmw_master_create(&fx->master, &fx->config));
    journal_watch(dmw_redis_keys(fx->redis)->shutdown); /* (fixture_before_next_shutdown_look) */
    journal_watch(dmw_redis_keys(fx->redis)->outcomes); /* (fixture_before_next_outcomes_command) */
    return 0;
}

static void reap_children(fixture_t *fx)
{
    for (int i = 0; i < fx->child_count; i++) {
        fixture_child_t *child = &fx->children[i];
        if (child->pid > 0) {
            kill(child->pid, SIGKILL);
            waitpid(child->pid, NULL, 0);
            child->pid = 0;
        }
        if (child->report_fd >= 0)
            close(child->report_fd);
        child->report_fd = -1;
    }
}

int fixture_teardown(void **state)
{
    fixture_t *fx = *state;
    if (fx == NULL || fx->owner != getpid())
        return 0;
    kit_log_to(NULL);
    reap_children(fx);
    if (fx->master && fx->shared)
        dmw_purge(fx->master); /* a shared server: leave nothing behind */
    dmw_master_destroy(fx->master);
    dmw_redis_close(fx->redis);
    dmw_server_stop(fx->server);
    free(fx);
    *state = NULL;
    return 0;
}

/* ---- worker processes -------------------------------------------------------- */

void fixture_restart_run(fixture_t *fx)
{
    reap_children(fx); /* each has ended and been joined: only their slots remain */
    fx->child_count = 0;
    assert_ok(dmw_purge(fx->master));
    journal_reset();
}

/* Under make debug: gdb stays with the test process; say how to see a worker's side. */
static void tell_debugger(const fixture_child_t *child)
{
    static pid_t told; /* the test process that said it already */
    if (getenv("KIT_DEBUG") == NULL || told == getpid())
        return;
    told = getpid();
    fprintf(stderr, "[ debug    ] %s runs in a process of its own (pid %ld), as every worker process of this test "
            "does: gdb stays with the test process. The workers' own log lines are the [ log ] lines below. To see "
            "where a worker process is (say it hangs), attach a second gdb from another terminal: gdb -p %ld, then "
            "thread apply all bt. To stop at a line of your worker, debug a test that runs its worker on a thread of "
            "the test process, such as test_dmw_one_worker_completes_every_task or "
            "test_dmw_always_failing_task_is_dead_lettered, with a breakpoint (break dmw_worker.c:LINE).\n",
            child->role, (long)child->pid, (long)child->pid);
}

/* Fork a child that runs @p worker, or the reaper when @p worker is NULL:
 * the call's own process (dmw_call.h). */
static int spawn(fixture_t *fx, const dmw_worker_config_t *worker, int crash_after)
{
    assert_true(fx->child_count < FIXTURE_MAX_CHILDREN);
    fixture_child_t *child = &fx->children[fx->child_count];
    *child = (fixture_child_t){ .report_fd = -1 };
    dmw_call_t call;
    if (worker)
        dmw_call_worker(&call, &fx->config, worker, true);
    else
        dmw_call_reaper(&call, &fx->config, true, true);
    call.crash_after = crash_after;
    snprintf(child->name, sizeof child->name, "%s", worker == NULL ? "reaper" : worker->name ? worker->name : "");
    snprintf(child->role, sizeof child->role, "%s", call.role);
    int request[2], reports[2];
    assert_int_equal(pipe(request), 0);
    assert_int_equal(pipe(reports), 0);
    fflush(NULL); /* nothing buffered is written twice */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        dmw_call_start(&call, request, reports[1]);
    close(request[0]);
    close(request[1]); /* (no look is armed for a spawned child: nothing to answer) */
    close(reports[1]);
    child->pid = child->was = pid;
    child->report_fd = reports[0];
    tell_debugger(child);
    return fx->child_count++;
}

int fixture_spawn(fixture_t *fx, const dmw_worker_config_t *worker)
{
    return spawn(fx, worker, 0);
}

int fixture_spawn_crashing(fixture_t *fx, const dmw_worker_config_t *worker, int crash_after)
{
    return spawn(fx, worker, crash_after);
}

int fixture_spawn_reaper(fixture_t *fx, int crash_after)
{
    return spawn(fx, NULL, crash_after);
}

/* The report arrives, or end-of-file when the child died without one. */
int fixture_join(fixture_t *fx, int index, long timeout_ms)
{
    fixture_child_t *child = &fx->children[index];
    if (child->pid == 0)
        return 0;
    struct pollfd wait = { .fd = child->report_fd, .events = POLLIN };
    int ready = poll(&wait, 1, (int)timeout_ms);
    if (ready == 0)
        return ETIMEDOUT;
    dmw_call_message_t message;
    ssize_t n = read(child->report_fd, &message, sizeof message);
    child->reported = n == (ssize_t)sizeof message && message.kind == DMW_CALL_REPORT;
    child->report = message.report;
    close(child->report_fd);
    child->report_fd = -1;
    if (child->reported)
        kill(child->pid, SIGKILL); /* it is on its way out: none lingers */
    waitpid(child->pid, &child->status, 0);
    dmw_call_flag_death(child->status);
    child->pid = 0;
    return 0;
}

void fixture_signal(fixture_t *fx, int index, int sig)
{
    assert_true(fx->children[index].pid > 0);
    kill(fx->children[index].pid, sig);
}

/* ---- looking at the run ---------------------------------------------------------- */

long fixture_integer(fixture_t *fx, const char *format, const char *key)
{
    redisReply *reply = NULL;
    assert_ok(dmw_redis_call(fx->redis, &reply, format, key));
    long value = reply->type == REDIS_REPLY_INTEGER ? (long)reply->integer : -1;
    freeReplyObject(reply);
    return value;
}

/* While a test waits for its workers to get somewhere, a worker process
 * that has already left (say, dmw_worker_run returned ENOSYS) will never
 * get there: fail at once instead of waiting out the time. */
static void assert_children_working(fixture_t *fx)
{
    for (int i = 0; i < fx->child_count; i++) {
        fixture_child_t *child = &fx->children[i];
        struct pollfd wait = { .fd = child->report_fd, .events = POLLIN };
        if (child->pid == 0 || poll(&wait, 1, 0) <= 0)
            continue;
        fixture_join(fx, i, 0);
        if (child->reported && child->report.rc == ENOSYS)
            fail_msg("dmw_worker_run returned ENOSYS: not implemented yet - write it in "
                     "exercises/07-distributed-workers/ (worker %s left at once)", child->name);
        char story[1200];
        fixture_child_story(fx, i, story, sizeof story);
        fail_msg("%s, while the test waited for the run to get on", story);
    }
}

void fixture_child_story(fixture_t *fx, int index, char *out, size_t size)
{
    const fixture_child_t *child = &fx->children[index];
    const char *call = strcmp(child->role, "reaper") == 0 ? "dmw_reap" : "dmw_worker_run";
    if (child->reported) {
        snprintf(out, size, "%s %s returned %s (%d)", child->role, call, dmw_errno_name(child->report.rc),
                 child->report.rc);
        return;
    }
    char death[64], last[600] = "";
    dmw_call_death_words(child->status, death, sizeof death);
    int sent = journal_pass_length(child->was, child->role);
    const journal_command_t *command = journal_find(child->was, child->role, sent);
    if (command) {
        char said[500];
        journal_describe(command, said, sizeof said);
        snprintf(last, sizeof last, "; the last command it sent, its command %d, was %s%s", sent, said,
                 command->crashed_after ? " - a crash point of the test killed it there" : "");
    }
    snprintf(out, size, "%s died (%s) without returning from %s%s", child->role, death, call, last);
}

void fixture_await_taken(fixture_t *fx, const char *name)
{
    char key[DMW_KEY_MAX];
    assert_ok(dmw_key_processing(fx->redis, name, key, sizeof key));
    int64_t start = kit_now_ns();
    while (fixture_integer(fx, "LLEN %s", key) < 1) {
        assert_children_working(fx);
        if (kit_elapsed_ms(start) > KIT_HANG_MS)
            fail_msg("worker %s took no task within %ld ms", name, KIT_HANG_MS);
        kit_sleep_ms(5);
    }
}

void fixture_await_outcomes(fixture_t *fx, long count)
{
    int64_t start = kit_now_ns();
    while (fixture_integer(fx, "HLEN %s", dmw_redis_keys(fx->redis)->outcomes) < count) {
        assert_children_working(fx);
        if (kit_elapsed_ms(start) > KIT_HANG_MS)
            fail_msg("fewer than %ld outcomes after %ld ms", count, KIT_HANG_MS);
        kit_sleep_ms(5);
    }
}

/* ---- scripted interleavings ------------------------------------------------------ */

void fixture_before_next_shutdown_look(fixture_t *fx, void (*fn)(void *ctx), void *ctx)
{
    journal_before_next_command_naming(dmw_redis_keys(fx->redis)->shutdown, fn, ctx);
}

void fixture_before_next_outcomes_command(fixture_t *fx, void (*fn)(void *ctx), void *ctx)
{
    journal_before_next_command_naming(dmw_redis_keys(fx->redis)->outcomes, fn, ctx);
}
