/**
 * @file dmw_fixture.c
 * @brief The chapter-07 test fixture: servers, runs, worker processes, cleanup.
 */
#if defined(__linux__)
#define _GNU_SOURCE /* prctl(PR_SET_PDEATHSIG) */
#include <sys/prctl.h>
#else
#define _POSIX_C_SOURCE 200809L
#endif
#include "dmw_fixture.h"

#include "kit_test.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kit_time.h"

static atomic_int runs_made;
static _Thread_local bool crash_armed;
/* fixture_before_next_shutdown_look(): the call to make, taken (set to NULL)
 * by the first command that names the key. */
static void (*_Atomic before_look)(void *ctx);
static void *before_look_ctx;
static char shutdown_key[DMW_KEY_MAX];

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

int fixture_setup(void **state)
{
    fixture_t *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    *state = fx;
    fx->owner = getpid();
    use_server(fx);
    snprintf(fx->run, sizeof fx->run, "t%ld-%d", (long)getpid(), atomic_fetch_add(&runs_made, 1));
    fx->config = (dmw_config_t){ .redis_url = fx->url, .run = fx->run, .visibility_ms = fixture_scale(1000),
                                 .max_attempts = 3, .connect_timeout_ms = 2000, .reconnect_ms = 5000 };
    assert_ok(dmw_redis_open(&fx->redis, &fx->config));
    assert_ok(dmw_master_create(&fx->master, &fx->config));
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

/* In the forked child: plain signal handling (cmocka's handlers would run
 * the test runner in the child), death with the parent, the worker, the report. */
static void run_child(fixture_t *fx, const dmw_worker_config_t *worker, int report_fd)
{
    static const int caught[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGSYS };
    for (size_t i = 0; i < sizeof caught / sizeof caught[0]; i++)
        signal(caught[i], SIG_DFL);
#if defined(__linux__)
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    if (getppid() != fx->owner)
        _exit(126);
    fixture_report_t report = { 0 };
    report.rc = dmw_worker_run(&fx->config, worker, &report.stats);
    ssize_t written = write(report_fd, &report, sizeof report);
    _exit(written == (ssize_t)sizeof report ? 0 : 125);
}

int fixture_spawn(fixture_t *fx, const dmw_worker_config_t *worker)
{
    assert_true(fx->child_count < FIXTURE_MAX_CHILDREN);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL); /* nothing buffered is written twice */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        run_child(fx, worker, fds[1]);
    }
    close(fds[1]);
    fixture_child_t *child = &fx->children[fx->child_count];
    *child = (fixture_child_t){ .pid = pid, .report_fd = fds[0] };
    snprintf(child->name, sizeof child->name, "%s", worker->name ? worker->name : "");
    return fx->child_count++;
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
    ssize_t n = read(child->report_fd, &child->report, sizeof child->report);
    child->reported = n == (ssize_t)sizeof child->report;
    close(child->report_fd);
    child->report_fd = -1;
    waitpid(child->pid, NULL, 0); /* it has written its report or died: it is exiting */
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
        if (child->reported)
            fail_msg("worker %s left early: dmw_worker_run returned %s (%d)%s", child->name,
                     dmw_errno_name(child->report.rc), child->report.rc,
                     child->report.rc == ENOSYS ? " - not implemented yet" : "");
        fail_msg("worker %s died early, without returning from dmw_worker_run", child->name);
    }
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

/* ---- crash points ------------------------------------------------------------------ */

void fixture_crash_after_next_call(void)
{
    crash_armed = true;
}

/* Linked in place of hiredis's redisvCommand() (-Wl,--wrap=redisvCommand):
 * every command of the kit's connection passes here. */
void *__real_redisvCommand(redisContext *context, const char *format, va_list args);
void *__wrap_redisvCommand(redisContext *context, const char *format, va_list args);

void fixture_before_next_shutdown_look(fixture_t *fx, void (*fn)(void *ctx), void *ctx)
{
    snprintf(shutdown_key, sizeof shutdown_key, "%s", dmw_redis_keys(fx->redis)->shutdown);
    before_look_ctx = ctx;
    atomic_store(&before_look, fn);
}

/* Does the command about to be sent name the shutdown key? */
static bool names_shutdown_key(const char *format, va_list args)
{
    char *command = NULL;
    va_list copy;
    va_copy(copy, args);
    int length = redisvFormatCommand(&command, format, copy);
    va_end(copy);
    bool names = length > 0 && strstr(command, shutdown_key) != NULL;
    redisFreeCommand(command);
    return names;
}

void *__wrap_redisvCommand(redisContext *context, const char *format, va_list args)
{
    if (atomic_load(&before_look) != NULL && names_shutdown_key(format, args)) {
        void (*fn)(void *ctx) = atomic_exchange(&before_look, NULL);
        if (fn != NULL)
            fn(before_look_ctx);
    }
    void *reply = __real_redisvCommand(context, format, args);
    if (reply != NULL && crash_armed)
        raise(SIGKILL); /* a crash point: the reply arrived, then the "machine" died */
    return reply;
}
