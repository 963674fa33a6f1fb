/**
 * @file program.h
 * @brief Chapter 07 program: what its files share - the work, the worker
 *        processes, and the throughput bench.
 *
 * The program is one binary in two roles. As the master (the default) it
 * starts worker processes by running itself again with `--worker`; a worker
 * on another machine is the same binary, started by hand with the same
 * `--redis-url` and `--run`.
 *
 * @ingroup ch07
 */
#ifndef CH07_PROGRAM_H
#define CH07_PROGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dmw.h"

/** @addtogroup ch07
 *  @{ */

/** Most worker processes the program starts. */
#define CH07_MAX_WORKERS 64

/** @brief The worker processes this program started. */
typedef struct ch07_pool {
    int count;                                    /**< workers started */
    pid_t pids[CH07_MAX_WORKERS];                 /**< their process ids (0 once reaped) */
    char names[CH07_MAX_WORKERS][DMW_NAME_MAX];   /**< their worker names: PREFIX0, PREFIX1, ... */
    int status[CH07_MAX_WORKERS];                 /**< waitpid() status, once reaped */
    int exited_fd;                                /**< read end of a pipe every worker holds open:
                                                       end-of-file once they have all exited */
} ch07_pool_t;

/**
 * @brief The work every worker does, as the task's payload says:
 *        `work MS` sleeps MS (waiting on something, like I/O), `spin US`
 *        computes for US microseconds, `flaky` fails with EAGAIN every
 *        time, `bad` fails for good. The result is a checksum of the id.
 * @return 0, EAGAIN or EINVAL, as dmw_process_fn.
 */
int ch07_work(const dmw_task_t *task, char *text, size_t size, void *ctx);

/**
 * @brief Start @p count worker processes: this program again, with
 *        `--worker --name PREFIXi` and @p config's url, run and knobs.
 * @param[out] pool   the processes.
 * @param[in]  count  how many (at most CH07_MAX_WORKERS).
 * @param[in]  prefix their names' prefix ("w" gives w0, w1, ...).
 * @param[in]  config the run they join.
 * @param[in]  quiet  pass `--quiet` on.
 * @return 0, or an error of pipe() or fork().
 */
int ch07_pool_start(ch07_pool_t *pool, int count, const char *prefix, const dmw_config_t *config, bool quiet);

/**
 * @brief Wait up to @p timeout_ms for every worker to exit (SIGKILL the
 *        rest after that), and reap them all.
 * @return how many did not exit with status 0.
 */
int ch07_pool_wait(ch07_pool_t *pool, long timeout_ms);

/** @brief The path this program runs itself by (set once by main). */
extern const char *ch07_self;

/**
 * @brief The `--bench` table: throughput of one batch with 1, 2, 4 and 8
 *        worker processes on Redis, and with as many threads in this
 *        process sharing an in-memory queue (the chapter 01 monitor queue).
 * @param[in] url      the server.
 * @param[in] tasks    tasks per batch.
 * @param[in] task_us  computation per task, in microseconds.
 * @return 0, or 1 if a run failed (after saying why).
 */
int ch07_bench(const char *url, long tasks, long task_us);

/** @brief What the master role of the program does: the options, resolved. */
typedef struct ch07_demo {
    const dmw_config_t *config; /**< the run */
    struct dmw_server *server;  /**< the private server (NULL: an outside one) */
    int workers;                /**< worker processes to start */
    long tasks;                 /**< tasks in the batch */
    long task_ms;               /**< simulated work per task */
    long always_fail;           /**< tasks that fail with EAGAIN every time */
    long bad;                   /**< tasks that fail for good */
    long timeout_ms;            /**< how long to wait for the batch */
    bool kill_worker;           /**< SIGKILL w0 in the middle of a task */
    bool restart_redis;         /**< restart the server in the middle of the run */
    bool keep;                  /**< leave the run's keys on the server */
    bool quiet;                 /**< workers print no trace either */
    uint64_t seed;              /**< varies the task durations */
} ch07_demo_t;

/**
 * @brief The master role: start the workers, submit, wait, report.
 * @return the program's exit status (0, 1 or 3).
 */
int ch07_demo(const ch07_demo_t *demo);

/**
 * @brief Say that Redis at @p url cannot be reached and why, on stderr.
 * @return 3, the program's exit status for it.
 */
int ch07_unreachable(const char *who, const char *url, int err);

/** @} */
#endif
