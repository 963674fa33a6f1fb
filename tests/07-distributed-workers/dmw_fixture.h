/**
 * @file dmw_fixture.h
 * @brief Chapter 07 test fixture: a Redis per test, a run, and worker processes.
 *
 * Each test (each its own process under the grading runner) gets, from
 * fixture_setup():
 * - a private redis-server on a free loopback port (dmw_server.h), or the
 *   server $REDIS_URL names;
 * - a run of its own (`t<pid>-<n>`), a master for it, and a connection for
 *   looking at the run's keys directly;
 * - helpers to fork worker and reaper processes, wait for them with a
 *   timeout, and kill, stop or continue them, and crash points that kill a
 *   worker or a reaper right after any command it sends (dmw_journal.h);
 * - the workers' and the reaper's own log lines (kit_log) in the test's
 *   log, each line starting with "[ log      ]".
 *
 * fixture_teardown() runs even when the test failed: it kills every worker
 * process still there, purges the run and stops the server. A worker
 * process makes its call as dmw_call.h says: a forked copy of the test in
 * one process, the subject program judged; fork them before the test
 * starts any thread (ThreadSanitizer refuses threads in a child forked
 * from a multi-threaded process).
 */
#ifndef DMW_FIXTURE_H
#define DMW_FIXTURE_H

#include <stdbool.h>
#include <sys/types.h>

#include "dmw.h"
#include "dmw_call.h"
#include "dmw_master.h"
#include "dmw_journal.h"
#include "dmw_redis.h"
#include "dmw_server.h"

/** Most worker processes one test forks. */
#define FIXTURE_MAX_CHILDREN 16

/** @brief One forked worker or reaper process. */
typedef struct fixture_child {
    pid_t pid;                    /**< 0 once reaped */
    pid_t was;                    /**< its process id, kept once reaped (for the journal) */
    int report_fd;                /**< read end of its report pipe; -1 once read */
    char name[DMW_NAME_MAX];      /**< its worker name, or "reaper" */
    char role[JOURNAL_ROLE_MAX];  /**< its role in the journal: "worker NAME" or "reaper" */
    bool reported;                /**< true if it returned from dmw_worker_run() or dmw_reap() */
    int status;                   /**< its wait status, once reaped */
    fixture_report_t report;      /**< valid when reported */
} fixture_child_t;

/** @brief Everything a chapter-07 test works with. */
typedef struct fixture {
    dmw_server_t *server;         /**< NULL when $REDIS_URL names the server, or once stopped */
    bool shared;                  /**< true when $REDIS_URL names the server */
    char url[160];                /**< the server */
    char run[DMW_NAME_MAX];       /**< this test's run */
    dmw_config_t config;          /**< url, run, visibility (scaled), 3 attempts */
    dmw_master_t *master;         /**< a master for the run */
    dmw_redis_t *redis;           /**< a connection for looking at keys */
    pid_t owner;                  /**< the test process */
    int child_count;              /**< children forked */
    fixture_child_t children[FIXTURE_MAX_CHILDREN]; /**< the worker processes */
} fixture_t;

/** @brief cmocka setup: server, run, master, connection. */
int fixture_setup(void **state);
/** @brief cmocka teardown: kill the children, purge the run, stop the server. */
int fixture_teardown(void **state);

/** @brief @p ms, made longer under KIT_SLOW (ThreadSanitizer, valgrind). */
long fixture_scale(long ms);

/** @brief True when the fixture started the server (so it can restart or stop it). */
bool fixture_owns_server(const fixture_t *fx);

/** @brief Stop the fixture's own server for good (a server that goes away). */
void fixture_stop_server(fixture_t *fx);

/** @brief Fork a process running dmw_worker_run(&fx->config, worker); returns its index. */
int fixture_spawn(fixture_t *fx, const dmw_worker_config_t *worker);

/**
 * @brief fixture_spawn() with a crash point: the worker process kills itself
 *        right after the reply of its command @p crash_after (counted from
 *        1 over its whole dmw_worker_run(); 0: no crash point).
 */
int fixture_spawn_crashing(fixture_t *fx, const dmw_worker_config_t *worker, int crash_after);

/**
 * @brief Fork a process that opens its own connection to the run and makes
 *        one pass of dmw_reap(), killing itself right after the reply of its
 *        command @p crash_after (0: no crash point); returns its index.
 */
int fixture_spawn_reaper(fixture_t *fx, int crash_after);

/** @brief Start the run again, empty: purge its keys, empty the journal. No worker may be running. */
void fixture_restart_run(fixture_t *fx);

/**
 * @brief Wait up to @p timeout_ms for child @p index to end, then reap it.
 * @return 0, or ETIMEDOUT (the child is left running).
 */
int fixture_join(fixture_t *fx, int index, long timeout_ms);

/**
 * @brief What became of child @p index, once joined, in words: "worker w1
 *        dmw_worker_run returned EPROTO (71)", or "worker w1 died (killed by
 *        Killed) without returning from dmw_worker_run; the last command it
 *        sent, its command 4, was `LREM ...` (dmw_worker.c:97 in acknowledge)".
 */
void fixture_child_story(fixture_t *fx, int index, char *out, size_t size);

/** @brief Send @p sig to child @p index. */
void fixture_signal(fixture_t *fx, int index, int sig);

/** @brief Wait (polling, test side) until worker @p name holds a task. Fails the test after KIT_HANG_MS. */
void fixture_await_taken(fixture_t *fx, const char *name);

/** @brief Wait (polling) until the run has at least @p count outcomes. Fails the test after KIT_HANG_MS. */
void fixture_await_outcomes(fixture_t *fx, long count);

/** @brief An integer command's reply (LLEN, HLEN, EXISTS, ...); fails the test on error. */
long fixture_integer(fixture_t *fx, const char *format, const char *key);

/**
 * @brief A scripted interleaving: the next Redis command, from any thread
 *        of this process, that names the run's shutdown key first calls
 *        @p fn(@p ctx), once - on that thread, before the command is sent.
 *
 * A worker that has just found the queue empty and now looks at the
 * shutdown key can so be made to look exactly when tasks and the shutdown
 * arrive: the window between its empty take and its look, which a loaded
 * machine opens only now and then, is opened every time.
 */
void fixture_before_next_shutdown_look(fixture_t *fx, void (*fn)(void *ctx), void *ctx);

/**
 * @brief The same for the next command, from any thread of this process or
 *        a worker process it started, that names the run's outcomes: a test
 *        can write an outcome between a worker's look at the outcomes and its
 *        write, as another worker may (@p fn may arm itself again).
 */
void fixture_before_next_outcomes_command(fixture_t *fx, void (*fn)(void *ctx), void *ctx);

#endif
