/**
 * @file dmw.h
 * @brief Chapter 07: master-worker beyond one machine, on a Redis reliable queue.
 *
 * The source document's "extension four": the master-worker of chapter 05
 * with its in-process blocking queue replaced by lists on a Redis server, so
 * that workers can be processes on any machine that reaches the server.
 * What changes is what can fail: a worker can die in the middle of a task,
 * freeze and come back, or lose its connection; a reply can be lost after
 * its command took effect. The protocol below keeps every task and gives it
 * exactly one outcome anyway.
 *
 * **Thread safety.** dmw_worker_run() may run on any number of threads and
 * processes at once, concurrently with everything else, as long as the
 * worker names differ: each call makes its own connections. dmw_reap() may
 * run concurrently with the workers and with other reapers, but the
 * connection it is given serves one thread at a time.
 *
 * **The reliable queue.** Every key of a run starts with `dmw:{RUN}:`.
 * - The master records each task in `tasks` and pushes it onto `queue`.
 * - A worker takes one with `BLMOVE queue processing:W RIGHT LEFT`: one
 *   atomic step moves it into the worker's own `processing:W` list, so a
 *   taken task is never only in the worker's memory.
 * - While the worker lives it *heartbeats*: the key `alive:W` is refreshed
 *   with a time-to-live of `visibility_ms` (dmw_heartbeat_start()).
 * - It runs the process function, then writes the outcome with
 *   `HSETNX outcomes ID ...` (set if absent: the first outcome of a task
 *   wins, a second delivery writes nothing), and only then
 *   *acknowledges*: `LREM processing:W 1 RECORD`.
 * - The reaper (dmw_reap(), run by the master while it waits) finds workers
 *   whose `alive:W` has expired and moves each task of their `processing:W`
 *   back to `queue` with one more attempt counted, or, once a task has used
 *   `max_attempts`, to the dead-letter list `dead` with its last error.
 *
 * **At-least-once delivery, exactly-once effect.** A worker that dies after
 * writing an outcome but before its acknowledgement, or that freezes past
 * its visibility timeout and comes back, means the same task is delivered
 * twice. Nothing can rule that out: a worker cannot tell "the server did
 * not get my acknowledgement" from "its reply was lost". So deliveries are
 * at least once, and the *effect* is made exactly once: outcomes are keyed
 * by task id and written only if absent.
 *
 * **Outcomes.** Each task ends in exactly one of three ways:
 * - done: the process function returned 0; its text is the result;
 * - failed: it returned an error other than EAGAIN: a permanent failure,
 *   not retried (retrying a bad input fails again);
 * - dead-lettered: it returned EAGAIN (a transient failure), or its worker
 *   stopped heartbeating, on each of `max_attempts` deliveries.
 *
 * Once dmw_await() returns 0: `submitted == completed + failed + dead_lettered`.
 *
 * **Who writes what.** This header is the chapter's exercise: the types
 * of a run and the two functions a student writes, dmw_worker_run() and
 * dmw_reap() (exercises/07-distributed-workers/). Everything else is the
 * kit's, in kit/: the connection with its reconnection, the record formats,
 * the atomic scripts and the heartbeat (dmw_redis.h), the master that
 * submits and waits (dmw_master.h), and a private redis-server for tests
 * and the program (dmw_server.h).
 *
 * Errors are errno values, as everywhere in the kit. Beyond the usual ones:
 * ECONNREFUSED, ETIMEDOUT, EHOSTUNREACH (and other connect errors): the
 * server could not be reached, at first or for longer than
 * `reconnect_ms` after a connection was lost; EPROTO: the server answered
 * with an error; EIO: the server lost the run's keys (restarted without
 * persistence).
 *
 * @ingroup ch07
 */
#ifndef DMW_H
#define DMW_H

#include <stdbool.h>
#include <stddef.h>

/** @defgroup ch07 Chapter 07 - distributed workers on Redis
 *  @brief A reliable queue across processes and machines: take, heartbeat,
 *         idempotent outcome, acknowledge; a reaper; dead letters.
 *  @{ */

/** Longest task payload kept, including the terminating NUL. */
#define DMW_PAYLOAD_MAX 256
/** Longest result or error text kept, including the terminating NUL. */
#define DMW_TEXT_MAX 256
/** Longest worker or run name, including the terminating NUL. */
#define DMW_NAME_MAX 48

/**
 * @brief Where the run lives and how patient everyone is with it.
 *
 * Zero in a numeric field picks its default; a negative value is EINVAL.
 * Every process of a run (master, workers, each on any machine) must use
 * the same `redis_url`, `run`, `visibility_ms` and `max_attempts`.
 */
typedef struct dmw_config {
    const char *redis_url;   /**< `redis://[:PASSWORD@]HOST:PORT[/DB]`; NULL: $REDIS_URL */
    const char *run;         /**< the run's name: letters, digits, `.`, `_`, `-` (keys are `dmw:{RUN}:...`) */
    long visibility_ms;      /**< a worker silent this long is presumed dead (default 1000) */
    int max_attempts;        /**< deliveries before a task is dead-lettered (default 3) */
    long connect_timeout_ms; /**< one connection attempt, and one reply (default 1000) */
    long reconnect_ms;       /**< keep reconnecting this long after a loss, then fail (default 5000) */
} dmw_config_t;

/** @brief One delivery of a task, as the process function sees it. */
typedef struct dmw_task {
    long id;                        /**< the master's id, unique within the run */
    int attempt;                    /**< 1 on the first delivery, 2 on the first retry, ... */
    char payload[DMW_PAYLOAD_MAX];  /**< what the master submitted */
} dmw_task_t;

/**
 * @brief The work: process one delivery of a task.
 * @param[in]  task  the delivery.
 * @param[out] text  the result on success, or an error message (may be
 *                   left empty: the error code's name is used).
 * @param[in]  size  size of @p text (DMW_TEXT_MAX).
 * @param[in]  ctx   the worker's context pointer.
 * @return 0: done (text is the result); EAGAIN: failed for now, deliver it
 *         again (until max_attempts, then it is dead-lettered); any other
 *         errno value: failed for good.
 *
 * Must be safe to run more than once for the same task: deliveries are at
 * least once. Its *effect* outside the result (a payment, an e-mail) needs
 * its own idempotency key; the result itself is made exactly-once here.
 */
typedef int (*dmw_process_fn)(const dmw_task_t *task, char *text, size_t size, void *ctx);

/** @brief How a task ended. */
typedef enum dmw_kind {
    DMW_DONE,   /**< the process function succeeded: text is the result */
    DMW_FAILED, /**< it failed for good: text is the error */
    DMW_DEAD    /**< dead-lettered after max_attempts: text is the last error */
} dmw_kind_t;

/** @brief A task's outcome: written once, never changed. */
typedef struct dmw_outcome {
    long id;                     /**< the task */
    dmw_kind_t kind;             /**< how it ended */
    int attempts;                /**< deliveries it took, this one included */
    char worker[DMW_NAME_MAX];   /**< who wrote the outcome ("reaper" for a reaped task) */
    char text[DMW_TEXT_MAX];     /**< result or error */
} dmw_outcome_t;

/* ---- The worker and the reaper: the chapter's exercise ------------------------ */

/** @brief A worker's knobs. */
typedef struct dmw_worker_config {
    const char *name;        /**< unique within the run (letters, digits, `.`, `_`, `-`); NULL: HOST-PID */
    dmw_process_fn process;  /**< the work (required) */
    void *ctx;               /**< passed to process */
    long take_timeout_ms;    /**< one blocking take waits this long before checking for shutdown (default 200) */
    long max_tasks;          /**< leave after handling this many deliveries (0: no limit) */
} dmw_worker_config_t;

/** @brief What one worker did (its own view; the run's truth is in dmw_stats()). */
typedef struct dmw_worker_stats {
    long taken;          /**< deliveries handled */
    long completed;      /**< results this worker wrote */
    long failed;         /**< permanent failures this worker wrote */
    long retried;        /**< deliveries returned to the queue after EAGAIN */
    long dead_lettered;  /**< tasks this worker moved to the dead-letter list */
    long duplicates;     /**< deliveries whose task already had an outcome: nothing written */
    long adopted;        /**< tasks found in its own processing list after a reconnection */
    long reconnects;     /**< times its connection was lost and made again */
} dmw_worker_stats_t;

/**
 * @brief Run a worker until the run is shut down: take a task, work on it
 *        while heartbeating, write its outcome, acknowledge it; repeat.
 *
 * Connects, starts the heartbeat, and loops. A take that finds the queue
 * empty for `take_timeout_ms` checks whether dmw_shutdown() was called; the
 * worker leaves only when a take begun after it saw the shutdown finds the
 * queue empty: so every task submitted before dmw_shutdown() is drained,
 * then the worker leaves. A lost
 * connection is made again (with bounded backoff) and the loop carries on;
 * after a reconnection the worker first *adopts* what its own processing
 * list holds (a take whose reply was lost). On leaving, the worker stops
 * heartbeating and removes itself from the run.
 *
 * @param[in]  config  the run (see dmw_config_t).
 * @param[in]  worker  the worker's knobs.
 * @param[out] stats   what it did, also on error; may be NULL.
 * @return 0 after a shutdown or `max_tasks` deliveries; EINVAL (NULL
 *         @p config or @p worker, no process function, a bad name or
 *         URL, a negative knob); a connect error (ECONNREFUSED, ETIMEDOUT,
 *         ...) if the server cannot be reached at the start or stays
 *         unreachable for `reconnect_ms`; EPROTO, ENOMEM.
 * @par Thread safety
 * Any number of workers may run, in threads of one process or in many
 * processes on many machines, as long as their names differ.
 */
int dmw_worker_run(const dmw_config_t *config, const dmw_worker_config_t *worker, dmw_worker_stats_t *stats);

struct dmw_redis;

/**
 * @brief One pass of the reaper: return the tasks of dead workers.
 *
 * For every worker of the run whose heartbeat has expired, each task in its
 * processing list goes back to the queue with one more attempt counted, or
 * to the dead-letter list (outcome DMW_DEAD, error "worker W stopped
 * heartbeating") once it has used `max_attempts`. A task that already has
 * an outcome (its worker died between the outcome and the acknowledgement)
 * is only removed. Live workers are never touched, however long their tasks
 * take; silent ones stay in the run (see dmw_redis_forget_worker()).
 * Returning a task costs an attempt whatever the reason: a task that kills
 * every worker that takes it ends in the dead letters, not in a crash loop.
 *
 * @param[in]  redis     a connection to the run (dmw_redis_open()).
 * @param[out] returned  tasks put back on the queue by this pass; may be NULL.
 * @param[out] dead      tasks dead-lettered by this pass; may be NULL.
 * @return 0; EINVAL if @p redis is NULL; the connection's errors.
 * @par Thread safety
 * Any number of reapers may run at once, with each other and with the
 * workers: each move is one atomic step that only happens if the task is
 * still where the reaper saw it.
 */
int dmw_reap(struct dmw_redis *redis, long *returned, long *dead);

/** @} */
#endif
