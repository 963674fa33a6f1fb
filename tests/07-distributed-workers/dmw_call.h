/**
 * @file dmw_call.h
 * @brief One call of the code under test - dmw_worker_run() or dmw_reap() -
 *        made in a process of its own, and what that process reports back.
 *
 * In one process (make debug, make tsan, the valgrind run) the process is a
 * forked copy of the test, which links the submission. Judged (the grade's
 * way, docs/grading.md), the test links no object of the submission: the
 * process the test forks becomes the subject program beside it
 * (test_dmw.subject, dmw_subject.c), which alone links the submission, is
 * handed the call by value over a pipe, and is confined by a system-call
 * filter before the submission's first instruction runs. The test's own
 * calls of the two functions - a worker on a thread, the reaper the
 * master's dmw_await() runs - go the same way (dmw_call_judged.c), so the
 * process that holds the verdict never runs the submission's code.
 */
#ifndef DMW_CALL_H
#define DMW_CALL_H

#include <stdbool.h>
#include <sys/types.h>

#include "dmw.h"
#include "dmw_journal.h"

/** Longest text of an argument a call carries, its NUL included. */
#define DMW_CALL_TEXT 512

/** @brief What a worker or reaper process reports when dmw_worker_run() or dmw_reap() returns. */
typedef struct fixture_report {
    int rc;                   /**< dmw_worker_run()'s or dmw_reap()'s return value */
    dmw_worker_stats_t stats; /**< a worker's stats */
    long returned, dead;      /**< a reaper's counts */
} fixture_report_t;

/** @brief Which of the two functions. */
typedef enum { DMW_CALL_WORKER = 1, DMW_CALL_REAPER = 2 } dmw_call_kind_t;

/** @brief A text argument by value: NULL stays NULL. */
typedef struct dmw_call_text {
    bool null;                 /**< the argument was NULL */
    char text[DMW_CALL_TEXT];  /**< else its text */
} dmw_call_text_t;

/** @brief A call and its arguments, by value (each pointer as whether it was NULL, and what it pointed at). */
typedef struct dmw_call {
    int kind;                       /**< dmw_call_kind_t */
    pid_t owner;                    /**< the test process: the call's process dies with it */
    int crash_after;                /**< journal_call_process()'s crash point, 0: none */
    char look_keys[JOURNAL_HOOKS][JOURNAL_KEY_MAX]; /**< judged: ask the test before a command naming one ("": none) */
    char role[JOURNAL_ROLE_MAX];    /**< the journal's role: "worker NAME" or "reaper" */
    char thread_name[DMW_NAME_MAX]; /**< the process's name in stacks and logs */
    bool has_config;                /**< config (a worker's), or the connection's config (a reaper's) */
    dmw_call_text_t url, run;       /**< its texts */
    long visibility_ms, connect_timeout_ms, reconnect_ms; /**< its numbers */
    int max_attempts;               /**< ... */
    bool has_worker;                /**< a worker's knobs were given */
    dmw_call_text_t name;           /**< ... their name */
    bool has_process;               /**< their process function: dmw_work_scripted(), or NULL */
    long take_timeout_ms, max_tasks; /**< ... */
    bool want_stats;                /**< a worker's stats pointer was not NULL */
    bool want_returned, want_dead;  /**< a reaper's count pointers were not NULL */
} dmw_call_t;

/** @brief Where the subject program finds its call's pipes and the journal (dmw_subject.c). */
enum { DMW_CALL_REQUEST_FD = 3, DMW_CALL_REPORT_FD = 4, DMW_CALL_JOURNAL_FD = 5 };

/** @brief A message on a call's report pipe. */
typedef struct dmw_call_message {
    int kind;                  /**< DMW_CALL_REPORT, or DMW_CALL_LOOK (judged: a watched key is about to be named) */
    int look;                  /**< for DMW_CALL_LOOK: which of the call's look_keys */
    fixture_report_t report;   /**< the report, for DMW_CALL_REPORT */
} dmw_call_message_t;
enum { DMW_CALL_REPORT = 1, DMW_CALL_LOOK = 2 };

/** @brief The call dmw_worker_run(@p config, @p worker, stats) with stats NULL unless @p want_stats. */
void dmw_call_worker(dmw_call_t *call, const dmw_config_t *config, const dmw_worker_config_t *worker,
                     bool want_stats);
/** @brief The call dmw_reap(connection, ...): a connection of @p config's (none if NULL). */
void dmw_call_reaper(dmw_call_t *call, const dmw_config_t *config, bool want_returned, bool want_dead);

/**
 * @brief In the forked child: become the call's process and make @p call;
 *        its report goes to @p report_fd, and it never returns. In one
 *        process it runs here (dmw_call_here.c); judged, this child becomes
 *        the subject program (dmw_call_judged.c), handed the call on the
 *        pipe @p request, on which the test then answers its looks.
 */
_Noreturn void dmw_call_start(const dmw_call_t *call, const int request[2], int report_fd);

/** @brief Become @p call's process, make it, and report to @p report_fd; never returns. */
_Noreturn void dmw_call_run_here(const dmw_call_t *call, int report_fd);
/** @brief Become @p call's process: plain signals, death with the test, its name and crash point. */
void dmw_call_become_its_process(const dmw_call_t *call);
/** @brief Make @p call, and report to @p report_fd; never returns. */
_Noreturn void dmw_call_make(const dmw_call_t *call, int report_fd);

/**
 * @brief How a call's process ended, for the test's verdict: one that its
 *        system-call filter killed (judged: a call no code of a worker
 *        needs, such as an attack's) is flagged - the "[ integrity ]" line
 *        the grader reads - and true is returned; one that ThreadSanitizer
 *        ended with a race's status ends the test with that status, as a
 *        race of its own would.
 */
bool dmw_call_flag_death(int status);

/** @brief "killed by Killed", "exited with status 3": a wait status in words. */
void dmw_call_death_words(int status, char *out, size_t size);

#endif
