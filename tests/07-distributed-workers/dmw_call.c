/**
 * @file dmw_call.c
 * @brief A call of the code under test, by value, and its making in the
 *        process it was handed to (dmw_call.h).
 */
#if defined(__linux__)
#define _GNU_SOURCE /* prctl(PR_SET_PDEATHSIG, PR_SET_PTRACER) */
#include <sys/prctl.h>
#else
#define _POSIX_C_SOURCE 200809L
#endif
#include "dmw_call.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dmw_redis.h"
#include "dmw_work.h"
#include "kit_test.h"
#include "kit_thread.h"

enum { TSAN_RACED = 66 }; /* the grader's TSAN_OPTIONS exitcode */

/* ---- the call, by value ----------------------------------------------------------------- */

static void put_text(dmw_call_text_t *to, const char *text, const char *what)
{
    to->null = text == NULL;
    if (text && strlen(text) >= sizeof to->text)
        fail_msg("a test hands dmw_worker_run a %s of %zu bytes: a call carries %d at most", what, strlen(text),
                 DMW_CALL_TEXT - 1);
    snprintf(to->text, sizeof to->text, "%s", text ? text : "");
}

static void put_config(dmw_call_t *call, const dmw_config_t *config)
{
    call->has_config = config != NULL;
    if (config == NULL)
        return;
    put_text(&call->url, config->redis_url, "redis_url");
    put_text(&call->run, config->run, "run name");
    call->visibility_ms = config->visibility_ms;
    call->max_attempts = config->max_attempts;
    call->connect_timeout_ms = config->connect_timeout_ms;
    call->reconnect_ms = config->reconnect_ms;
}

void dmw_call_worker(dmw_call_t *call, const dmw_config_t *config, const dmw_worker_config_t *worker,
                     bool want_stats)
{
    *call = (dmw_call_t){ .kind = DMW_CALL_WORKER, .owner = getpid(), .want_stats = want_stats };
    const char *name = worker && worker->name ? worker->name : NULL;
    snprintf(call->role, sizeof call->role, "worker %s", name ? name : "(unnamed)");
    snprintf(call->thread_name, sizeof call->thread_name, "%s", name ? name : "worker");
    put_config(call, config);
    call->has_worker = worker != NULL;
    if (worker == NULL)
        return;
    /* The work crosses to the call's process by name: the tests' scripted work is the only one. */
    if (worker->process != NULL && worker->process != dmw_work_scripted)
        fail_msg("a test hands a worker another process function than dmw_work_scripted (dmw_work.h)");
    put_text(&call->name, worker->name, "worker name");
    call->has_process = worker->process != NULL;
    call->take_timeout_ms = worker->take_timeout_ms;
    call->max_tasks = worker->max_tasks;
}

void dmw_call_reaper(dmw_call_t *call, const dmw_config_t *config, bool want_returned, bool want_dead)
{
    *call = (dmw_call_t){ .kind = DMW_CALL_REAPER, .owner = getpid(), .want_returned = want_returned,
                          .want_dead = want_dead };
    snprintf(call->role, sizeof call->role, "reaper");
    snprintf(call->thread_name, sizeof call->thread_name, "reaper");
    put_config(call, config);
}

/* ---- making it here ------------------------------------------------------------------------ */

/* Plain signal handling (cmocka's handlers would run the test runner in the
 * child), death with the test, its name in the log, its crash point. */
void dmw_call_become_its_process(const dmw_call_t *call)
{
    static const int caught[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGSYS };
    for (size_t i = 0; i < sizeof caught / sizeof caught[0]; i++)
        signal(caught[i], SIG_DFL);
#if defined(__linux__)
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    if (getppid() != call->owner)
        _exit(126);
    kit_thread_set_name(call->thread_name);
    journal_call_process(call->role, call->crash_after);
#if defined(__linux__) && defined(PR_SET_PTRACER)
    /* As the test process: a gdb may attach to it (gdb -p PID, or the runner's, for stacks). */
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
#endif
}

static const char *text_of(const dmw_call_text_t *text)
{
    return text->null ? NULL : text->text;
}

static dmw_config_t config_of(const dmw_call_t *call)
{
    return (dmw_config_t){ .redis_url = text_of(&call->url), .run = text_of(&call->run),
                           .visibility_ms = call->visibility_ms, .max_attempts = call->max_attempts,
                           .connect_timeout_ms = call->connect_timeout_ms, .reconnect_ms = call->reconnect_ms };
}

static void run_worker(const dmw_call_t *call, fixture_report_t *report)
{
    dmw_config_t config = config_of(call);
    dmw_worker_config_t worker = { .name = text_of(&call->name),
                                   .process = call->has_process ? dmw_work_scripted : NULL,
                                   .take_timeout_ms = call->take_timeout_ms, .max_tasks = call->max_tasks };
    report->rc = dmw_worker_run(call->has_config ? &config : NULL, call->has_worker ? &worker : NULL,
                                call->want_stats ? &report->stats : NULL);
}

static void run_reaper(const dmw_call_t *call, fixture_report_t *report)
{
    dmw_config_t config = config_of(call);
    dmw_redis_t *redis = NULL;
    if (call->has_config)
        report->rc = dmw_redis_open(&redis, &config);
    if (report->rc == 0)
        report->rc = dmw_reap(redis, call->want_returned ? &report->returned : NULL,
                              call->want_dead ? &report->dead : NULL);
    dmw_redis_close(redis);
}

_Noreturn void dmw_call_run_here(const dmw_call_t *call, int report_fd)
{
    dmw_call_become_its_process(call);
    dmw_call_make(call, report_fd);
}

_Noreturn void dmw_call_make(const dmw_call_t *call, int report_fd)
{
    dmw_call_message_t message = { .kind = DMW_CALL_REPORT };
    if (call->kind == DMW_CALL_WORKER)
        run_worker(call, &message.report);
    else
        run_reaper(call, &message.report);
    ssize_t written = write(report_fd, &message, sizeof message);
    _exit(written == (ssize_t)sizeof message ? 0 : 125);
}

/* ThreadSanitizer's report ended the call's process (status 66): the race
 * is the test's own, as if it ran here - the test ends with the status that
 * says so, whichever check it was at. */
static void end_on_a_race(int status)
{
    if (!KIT_TSAN || !WIFEXITED(status) || WEXITSTATUS(status) != TSAN_RACED)
        return;
    fprintf(stderr, "[  FAILED  ] ThreadSanitizer found a data race in the code under test's process: its report is "
                    "above\n");
    kit_verdict_end(false);
    fflush(NULL);
    _exit(TSAN_RACED);
}

bool dmw_call_flag_death(int status)
{
    end_on_a_race(status);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSYS)
        return false;
    fprintf(stderr, "[ integrity ] the code under test's process made a system call no test needs (its filter "
                    "killed it)\n");
    return true;
}

void dmw_call_death_words(int status, char *out, size_t size)
{
    if (WIFSIGNALED(status))
        snprintf(out, size, "killed by %s", strsignal(WTERMSIG(status)));
    else if (WIFEXITED(status))
        snprintf(out, size, "exited with status %d", WEXITSTATUS(status));
    else
        snprintf(out, size, "ended");
}
