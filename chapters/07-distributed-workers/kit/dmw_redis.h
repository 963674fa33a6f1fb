/**
 * @file dmw_redis.h
 * @brief Chapter 07 kit: the connection, the run's keys, its records, and
 *        the few atomic steps the worker and the reaper build on.
 *
 * Kit-written, linked into the program and the tests; the exercise
 * (dmw_worker_run(), dmw_reap()) is written on top of it.
 *
 * **Connection.** dmw_redis_call() sends one command and returns its reply.
 * When the connection is lost - the server restarted, a cable was pulled, a
 * reply did not come within `connect_timeout_ms` - it connects again, waiting
 * 20 ms, 40 ms, ... at most 1 s between attempts, and sends the command
 * again; after `reconnect_ms` without success it gives up with the connect
 * error. Sending again is safe for the commands of this protocol because
 * each is idempotent in effect (HSETNX, LREM of one record, the scripts
 * below) or, for the take (BLMOVE), recoverable: a take whose reply was lost
 * left its task in the worker's processing list, which the worker adopts
 * after dmw_redis_reconnected() says a reconnection happened.
 *
 * **Records.** A task travels as the text `ID ATTEMPTS PAYLOAD`, where
 * ATTEMPTS counts the deliveries that already ended without an outcome. An
 * outcome is stored as `KIND WORKER ATTEMPTS TEXT` (KIND is done, failed or
 * dead).
 *
 * @ingroup ch07
 */
#ifndef DMW_REDIS_H
#define DMW_REDIS_H

#include <stdbool.h>
#include <stddef.h>

#include <hiredis/hiredis.h>

#include "dmw.h"

/** @addtogroup ch07
 *  @{ */

/** Longest key name, including the terminating NUL. */
#define DMW_KEY_MAX 128
/** Longest task record (`ID ATTEMPTS PAYLOAD`), including the terminating NUL. */
#define DMW_RECORD_MAX (DMW_PAYLOAD_MAX + 48)
/** Longest outcome record, including the terminating NUL. */
#define DMW_OUTCOME_MAX (DMW_TEXT_MAX + DMW_NAME_MAX + 32)

/** @brief An opaque connection to one run: one hiredis context, used by one thread at a time. */
typedef struct dmw_redis dmw_redis_t;

/** @brief The run's keys; per-worker keys come from dmw_key_processing() and dmw_key_alive(). */
typedef struct dmw_keys {
    char queue[DMW_KEY_MAX];    /**< list: tasks waiting; LPUSH adds, the oldest is at the RIGHT */
    char dead[DMW_KEY_MAX];     /**< list: dead-lettered task records */
    char outcomes[DMW_KEY_MAX]; /**< hash: id -> outcome record, written only with HSETNX */
    char tasks[DMW_KEY_MAX];    /**< hash: id -> payload of every task submitted */
    char workers[DMW_KEY_MAX];  /**< set: workers that may hold tasks */
    char events[DMW_KEY_MAX];   /**< list: "an outcome was written" hints for the master */
    char shutdown[DMW_KEY_MAX]; /**< string: present once the master said stop */
    char retries[DMW_KEY_MAX];  /**< counter: tasks put back on the queue */
} dmw_keys_t;

/**
 * @brief Resolve @p config (defaults, $REDIS_URL) and connect.
 * @param[out] out    the connection; NULL on failure.
 * @param[in]  config the run.
 * @return 0; EINVAL (NULL, bad URL, bad run name, negative knob); the
 *         connect error (ECONNREFUSED, ETIMEDOUT, EHOSTUNREACH, EPERM for a
 *         refused password, EIO otherwise): one attempt, no retries, so an
 *         unreachable server is reported at once; ENOMEM.
 * @see dmw_redis_close
 */
int dmw_redis_open(dmw_redis_t **out, const dmw_config_t *config);

/** @brief Disconnect and free. NULL is a no-op. */
void dmw_redis_close(dmw_redis_t *redis);

/**
 * @brief Send one command (hiredis format: `%s` string, `%b` bytes + length,
 *        `%ld`, ...) and wait for its reply, reconnecting as described above.
 * @param[in]  redis  the connection.
 * @param[out] reply  the reply (never an error reply); the caller frees it
 *                    with freeReplyObject(). NULL on error.
 * @param[in]  format the command.
 * @return 0; EINVAL; EPROTO if the server answered with an error (the text
 *         is in dmw_redis_error()); the connect error after `reconnect_ms`.
 */
int dmw_redis_call(dmw_redis_t *redis, redisReply **reply, const char *format, ...);

/**
 * @brief dmw_redis_call() for a command that blocks on the server for up to
 *        @p block_ms (BLMOVE, BLPOP): the reply may take that much longer.
 */
int dmw_redis_block(dmw_redis_t *redis, long block_ms, redisReply **reply, const char *format, ...);

/** @brief True once after each reconnection (then false until the next one). */
bool dmw_redis_reconnected(dmw_redis_t *redis);

/** @brief Reconnections made so far. */
long dmw_redis_reconnects(const dmw_redis_t *redis);

/** @brief The last error's text ("Connection refused", "WRONGTYPE ..."); "" if none. */
const char *dmw_redis_error(const dmw_redis_t *redis);

/** @brief The run's keys. */
const dmw_keys_t *dmw_redis_keys(const dmw_redis_t *redis);

/** @brief The resolved configuration: defaults filled in, `redis_url` set. */
const dmw_config_t *dmw_redis_config(const dmw_redis_t *redis);

/** @brief Write `dmw:{RUN}:processing:WORKER` into @p key. @return 0 or ERANGE. */
int dmw_key_processing(const dmw_redis_t *redis, const char *worker, char *key, size_t size);

/** @brief Write `dmw:{RUN}:alive:WORKER` into @p key. @return 0 or ERANGE. */
int dmw_key_alive(const dmw_redis_t *redis, const char *worker, char *key, size_t size);

/** @brief True if @p name is a valid worker or run name (1..DMW_NAME_MAX-1 of `A-Za-z0-9._-`). */
bool dmw_name_ok(const char *name);

/** @brief The name of a dmw error code: kit_errno_name() plus the connection errors. */
const char *dmw_errno_name(int code);

/* ---- Records --------------------------------------------------------------- */

/**
 * @brief Write the task record `ID ATTEMPTS PAYLOAD` into @p record.
 * @param[in]  id       the task's id, >= 0.
 * @param[in]  attempts deliveries that already ended without an outcome.
 * @param[in]  payload  the task's payload.
 * @param[out] record   the text.
 * @param[in]  size     size of @p record (DMW_RECORD_MAX is enough).
 * @return 0, EINVAL (NULL, negative), or ERANGE if @p size is too small.
 */
int dmw_record_encode(long id, int attempts, const char *payload, char *record, size_t size);

/**
 * @brief Read a task record.
 * @param[in]  record the text taken from a list.
 * @param[out] task   id, payload, and in `attempt` the deliveries that
 *                    already ended without an outcome (so this delivery
 *                    is attempt `task->attempt + 1`).
 * @return 0, or EINVAL if it is not a task record.
 */
int dmw_record_decode(const char *record, dmw_task_t *task);

/** @brief Write an outcome record. @return 0, EINVAL, or ERANGE. */
int dmw_outcome_encode(const dmw_outcome_t *outcome, char *text, size_t size);

/** @brief Read an outcome record for task @p id. @return 0 or EINVAL. */
int dmw_outcome_decode(long id, const char *text, dmw_outcome_t *outcome);

/* ---- Atomic steps (Lua scripts, run by the server as one step) ------------ */

/**
 * @brief Take @p record out of @p worker's processing list and, only if it
 *        was still there, put it back on the queue as @p requeued (LPUSH:
 *        the end of the line) or, when @p dead is non-NULL, record @p dead
 *        as the task's outcome (if it has none) and push @p requeued onto
 *        the dead-letter list.
 * @param[in]  redis    the connection.
 * @param[in]  worker   whose processing list.
 * @param[in]  record   the record exactly as it is in that list.
 * @param[in]  requeued the record to push (with its new attempt count).
 * @param[in]  dead     the outcome (kind DMW_DEAD), or NULL to retry.
 * @param[out] moved    true if the record was there and was moved; false if
 *                      someone else (a reaper, a late worker) already had.
 *                      May be NULL.
 * @return 0, EINVAL, or the connection's errors.
 *
 * A task that already has an outcome is only removed: delivering it again
 * would change nothing. A @p record that is not a task record at all goes
 * to the dead-letter list as it is, with no outcome.
 */
int dmw_redis_move_back(dmw_redis_t *redis, const char *worker, const char *record, const char *requeued,
                        const dmw_outcome_t *dead, bool *moved);

/**
 * @brief Remove @p worker from the run and delete its heartbeat key, in one
 *        step and only if its processing list is empty: a worker's goodbye.
 *
 * Only the worker itself may say it, once its last take has returned. The
 * reaper never removes a silent worker: a take that worker left blocked on
 * the server can still move a task into its list after it went silent, and
 * only a worker in the set gets its list reaped.
 * @param[in]  redis   the connection.
 * @param[in]  worker  the worker saying goodbye.
 * @param[out] removed true if it was removed; may be NULL.
 * @return 0, EINVAL, or the connection's errors.
 */
int dmw_redis_forget_worker(dmw_redis_t *redis, const char *worker, bool *removed);

/**
 * @brief Record task @p id with @p record in the run and queue it, unless
 *        the run already has this id.
 * @return 0; EEXIST; EINVAL; the connection's errors.
 */
int dmw_redis_submit(dmw_redis_t *redis, long id, const char *payload, const char *record);

/**
 * @brief The master's wake-up, in one step: drop the pending hints (the
 *        `events` list), then count the run's tasks and outcomes. A hint
 *        pushed after this step stays for the next wait; an outcome written
 *        before it is in the count - so no wake-up is ever lost.
 * @return 0, EINVAL, EPROTO, or the connection's errors.
 */
int dmw_redis_count(dmw_redis_t *redis, long *tasks, long *outcomes);

/* ---- Heartbeat ------------------------------------------------------------- */

/** @brief An opaque heartbeat: a thread that keeps a worker's `alive` key fresh. */
typedef struct dmw_heartbeat dmw_heartbeat_t;

/**
 * @brief Start heartbeating for @p worker, on a connection of its own.
 *
 * The first beat is made before this returns: on success the worker is
 * registered in the run and alive. Then a thread named `<worker>-hb` beats
 * every `visibility_ms / 4`: `SET alive:W PX visibility_ms` and `SADD
 * workers W`. It sleeps on a condition variable with a deadline, so
 * dmw_heartbeat_stop() ends it at once. If the server is unreachable the
 * beats fail and the worker is presumed dead: that is the point.
 *
 * @param[out] out    the heartbeat; NULL on failure.
 * @param[in]  config the run (the same as the worker's).
 * @param[in]  worker the worker's name.
 * @return 0; EINVAL; the first beat's connection error; ENOMEM; a pthread error.
 * @see dmw_heartbeat_stop
 */
int dmw_heartbeat_start(dmw_heartbeat_t **out, const dmw_config_t *config, const char *worker);

/**
 * @brief Stop beating, join the thread and free it. If @p goodbye, also
 *        remove the worker from the run (dmw_redis_forget_worker(), so only
 *        if its processing list is empty). NULL is a no-op.
 */
void dmw_heartbeat_stop(dmw_heartbeat_t *heartbeat, bool goodbye);

/** @} */
#endif
