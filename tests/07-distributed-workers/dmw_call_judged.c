/**
 * @file dmw_call_judged.c
 * @brief Judged: a call's process becomes the subject program, and the
 *        test's own calls of dmw_worker_run() and dmw_reap() are made there.
 *
 * Linked into the test (the judge) in place of the submission: the two
 * functions here stand in for the student's, each making its call in a
 * subject process of its own and answering with what that process
 * reported. What a call returned is its answer, as in every judged
 * chapter; the stats and counts beside it are the subject's word, and a
 * test that reads them says so (KIT_WORD_REPORTS).
 */
#define _GNU_SOURCE /* program_invocation_name, close_range */
#include "dmw_call.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dmw_redis.h"
#include "kit_sched.h"
#include "kit_test.h"

/* The subject program: this one's file with ".subject"; and the places the
 * journal names are in it. */
static char subject[4096];

static void find_the_subject(void)
{
    snprintf(subject, sizeof subject, "%s.subject", program_invocation_name);
    journal_places_in(subject);
}

static const char *subject_program(void)
{
    static pthread_once_t found = PTHREAD_ONCE_INIT;
    pthread_once(&found, find_the_subject);
    return subject;
}

/* The call's descriptors at 3, 4 and 5, and no other: the verdict's
 * descriptors the test holds are not the subject's. */
static void place_descriptors(int request_fd, int report_fd)
{
    int from[3] = { request_fd, report_fd, journal_fd() };
    for (int i = 0; i < 3; i++) /* first out of the way of 3-5 */
        from[i] = fcntl(from[i], F_DUPFD, 100 + i);
    for (int i = 0; i < 3; i++)
        if (from[i] < 0 || dup2(from[i], DMW_CALL_REQUEST_FD + i) < 0)
            _exit(127);
    close_range(DMW_CALL_JOURNAL_FD + 1, ~0U, 0);
}

_Noreturn void dmw_call_start(const dmw_call_t *call, const int request[2], int report_fd)
{
    /* The call goes first on the pipe the test answers looks on: it fits a pipe's buffer. */
    if (write(request[1], call, sizeof *call) != (ssize_t)sizeof *call)
        _exit(127);
    place_descriptors(request[0], report_fd);
    kit_exec_subject(subject_program(), "--call");
}

/* ---- the test's own calls ------------------------------------------------------------------ */

/* The subject's messages until its report: a look at the watched key is
 * answered once the test's armed call for it, if any, is made. False: it
 * ended without a report, or broke the pipe's protocol (killed then, and
 * flagged); its wait status in @p status. */
enum { MOST_LOOKS = 1000000 }; /* a worker looks about ten times a second: more is a flood */
static bool await_report(pid_t pid, int answers, int reports, fixture_report_t *report, int *status)
{
    dmw_call_message_t message;
    bool reported = false, broken = false;
    for (long looks = 0; !reported && !broken;) {
        ssize_t n = read(reports, &message, sizeof message);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0)
            break; /* it ended */
        bool look = n == (ssize_t)sizeof message && message.kind == DMW_CALL_LOOK;
        broken = n != (ssize_t)sizeof message || (!look && message.kind != DMW_CALL_REPORT) ||
                 (look && (journal_watched(message.look) == NULL || ++looks > MOST_LOOKS));
        if (!broken && look) {
            journal_run_armed(journal_watched(message.look));
            char go = 1;
            broken = write(answers, &go, 1) != 1;
        }
        reported = !broken && message.kind == DMW_CALL_REPORT;
    }
    if (broken || reported)
        kill(pid, SIGKILL); /* (one that reported is on its way out: none lingers) */
    if (broken) {
        fprintf(stderr, "[ integrity ] the code under test's process broke its call's protocol (a message that is "
                        "not one, or a flood of them)\n");
    }
    if (reported)
        *report = message.report;
    while (waitpid(pid, status, 0) < 0 && errno == EINTR)
        ;
    return reported;
}

/* A call's process that ended without answering: the test fails, in words. */
static _Noreturn void call_died(const dmw_call_t *call, pid_t pid, int status)
{
    char death[64], last[600] = "";
    dmw_call_flag_death(status);
    dmw_call_death_words(status, death, sizeof death);
    int sent = journal_pass_length(pid, call->role);
    const journal_command_t *command = journal_find(pid, call->role, sent);
    if (command) {
        char said[500];
        journal_describe(command, said, sizeof said);
        snprintf(last, sizeof last, "; the last command it sent, its command %d, was %s", sent, said);
    }
    fail_msg("%s (%s) ran in a process of its own, which %s without returning%s",
             call->kind == DMW_CALL_WORKER ? "dmw_worker_run" : "dmw_reap", call->role, death, last);
    abort(); /* (fail_msg does not return) */
}

static fixture_report_t make_call(dmw_call_t *call)
{
    subject_program(); /* (found before the fork: the journal names its places) */
    for (int i = 0; i < JOURNAL_HOOKS; i++)
        snprintf(call->look_keys[i], sizeof call->look_keys[i], "%s", journal_watched(i) ? journal_watched(i) : "");
    int request[2], reports[2];
    if (pipe2(request, O_CLOEXEC) != 0 || pipe2(reports, O_CLOEXEC) != 0)
        fail_msg("the test could not open the pipes of a call: %s", strerror(errno));
    fflush(NULL); /* nothing buffered is written twice */
    pid_t pid = fork();
    if (pid == 0)
        dmw_call_start(call, request, reports[1]);
    close(request[0]);
    close(reports[1]);
    fixture_report_t report = { 0 };
    int status = 0;
    bool reported = pid > 0 && await_report(pid, request[1], reports[0], &report, &status);
    close(request[1]);
    close(reports[0]);
    if (pid < 0)
        fail_msg("the test could not start a process for a call: %s", strerror(errno));
    if (!reported)
        call_died(call, pid, status);
    return report;
}

int dmw_worker_run(const dmw_config_t *config, const dmw_worker_config_t *worker, dmw_worker_stats_t *stats)
{
    dmw_call_t call;
    dmw_call_worker(&call, config, worker, stats != NULL);
    fixture_report_t report = make_call(&call);
    if (stats) {
        *stats = report.stats;
        kit_verdict_rests_on(KIT_WORD_REPORTS); /* (the tests' workers on threads read theirs) */
    }
    return report.rc;
}

int dmw_reap(struct dmw_redis *redis, long *returned, long *dead)
{
    dmw_call_t call;
    dmw_call_reaper(&call, redis ? dmw_redis_config(redis) : NULL, returned != NULL, dead != NULL);
    fixture_report_t report = make_call(&call);
    if (returned)
        *returned = report.returned;
    if (dead)
        *dead = report.dead;
    return report.rc;
}
