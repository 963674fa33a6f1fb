/**
 * @file dmw_master.h
 * @brief Chapter 07 kit: the master - submits tasks, waits for their
 *        outcomes while reaping, and reads the run's counts.
 *
 * Kit-written, linked into the program and the tests, beside the chapter's
 * contract (dmw.h): the master runs the student's dmw_reap() while it
 * waits, and the student's workers serve what it submits.
 *
 * **Thread safety.** A dmw_master_t is used by one thread at a time (its
 * functions share one connection); two masters of the same run, each on
 * its own thread, may work at once.
 *
 * @ingroup ch07
 */
#ifndef DMW_MASTER_H
#define DMW_MASTER_H

#include "dmw.h"

/** @addtogroup ch07
 *  @{ */

/** @brief An opaque master: submits tasks, waits for their outcomes, counts. */
typedef struct dmw_master dmw_master_t;

/** @brief The run as the server holds it. */
typedef struct dmw_stats {
    long submitted;      /**< tasks the run has recorded */
    long completed;      /**< outcomes DMW_DONE */
    long failed;         /**< outcomes DMW_FAILED */
    long dead_lettered;  /**< outcomes DMW_DEAD */
    long retries;        /**< times a task went back to the queue (EAGAIN or reaped) */
    long queued;         /**< tasks waiting in the queue now */
    long in_flight;      /**< tasks in processing lists now */
    long workers;        /**< workers registered now */
} dmw_stats_t;

/**
 * @brief Connect to the run and create a master for it.
 * @param[out] out    the master; NULL on failure.
 * @param[in]  config the run.
 * @return 0; EINVAL (NULL argument, bad URL or name); a connect error;
 *         ENOMEM. A new run name starts an empty run; an existing one is
 *         joined (see dmw_purge()).
 * @see dmw_master_destroy
 */
int dmw_master_create(dmw_master_t **out, const dmw_config_t *config);

/**
 * @brief Record a task and queue it.
 * @param[in] master  the master.
 * @param[in] task_id the task's id, unique within the run (>= 0).
 * @param[in] payload what the worker gets (shorter than DMW_PAYLOAD_MAX; no NUL).
 * @return 0; EINVAL (NULL, negative id, payload too long); EEXIST if the
 *         run already has this id (nothing queued); connection errors.
 */
int dmw_submit(dmw_master_t *master, long task_id, const char *payload);

/**
 * @brief Wait until every submitted task has an outcome, reaping as it waits.
 *
 * Blocks on the run's event list (workers push a hint after each outcome),
 * wakes at least every `visibility_ms / 2` to run dmw_reap(), and after
 * every wake-up counts the outcomes again: the hints make it prompt, the
 * count makes it correct.
 * @param[in] master     the master.
 * @param[in] timeout_ms how long to wait, >= 0.
 * @return 0; EINVAL; ETIMEDOUT; EIO if the server lost the run (restarted
 *         empty); the connection's errors; an error of dmw_reap().
 */
int dmw_await(dmw_master_t *master, long timeout_ms);

/**
 * @brief Tell the run's workers to leave once the queue is empty.
 * @return 0, EINVAL, or the connection's errors.
 */
int dmw_shutdown(dmw_master_t *master);

/**
 * @brief Read the run's counts from the server (walks the outcomes).
 * @param[in]  master the master.
 * @param[out] out    the counts; zeroed on error.
 * @return 0, EINVAL, or the connection's errors.
 */
int dmw_stats(dmw_master_t *master, dmw_stats_t *out);

/**
 * @brief The outcome of one task.
 * @return 0; ENOENT if it has none yet; EINVAL; the connection's errors.
 */
int dmw_outcome(dmw_master_t *master, long task_id, dmw_outcome_t *out);

/** @brief Called by dmw_outcomes() once per outcome; a non-zero return stops the walk. */
typedef int (*dmw_outcome_fn)(const dmw_outcome_t *outcome, void *ctx);

/**
 * @brief Call @p fn for every outcome of the run (in no particular order).
 * @return 0, the first non-zero value @p fn returned, EINVAL, or the
 *         connection's errors.
 */
int dmw_outcomes(dmw_master_t *master, dmw_outcome_fn fn, void *ctx);

/**
 * @brief Delete every key of the run from the server.
 * @pre No worker of the run is still working.
 * @return 0, EINVAL, or the connection's errors.
 */
int dmw_purge(dmw_master_t *master);

/**
 * @brief Disconnect and free the master. NULL is a no-op. The run's keys
 *        stay on the server (dmw_purge() removes them).
 * @see dmw_master_create
 */
void dmw_master_destroy(dmw_master_t *master);

/** @} */
#endif
