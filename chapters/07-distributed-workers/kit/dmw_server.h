/**
 * @file dmw_server.h
 * @brief Chapter 07 kit: a private redis-server for one test or one program run.
 *
 * The chapter never touches a Redis the machine already runs. The tests and
 * the program start their own `redis-server` on a free loopback port, in a
 * temporary directory of its own, without persistence (`--save ""
 * --appendonly no`), and stop it when they are done. Setting `REDIS_URL`
 * points them at an existing server instead, and then none is started.
 *
 * The server is a child process in the caller's process group, and on
 * Linux it is also killed if its parent dies (PR_SET_PDEATHSIG): a test
 * that crashes, or a grading runner that kills a stuck test's process
 * group, leaves no server behind. The kernel means the parent *thread*:
 * start and restart the server from a thread that outlives it, such as
 * the main thread, or it dies when that thread returns.
 *
 * @ingroup ch07
 */
#ifndef DMW_SERVER_H
#define DMW_SERVER_H

/** @addtogroup ch07
 *  @{ */

/** @brief An opaque private redis-server. */
typedef struct dmw_server dmw_server_t;

/**
 * @brief Start a private redis-server on a free port of 127.0.0.1.
 *
 * Runs `redis-server` ($REDIS_SERVER if set) and waits until it says it is
 * ready to accept connections (it reads the server's log through a pipe: no
 * polling). A port that another process took in the meantime is replaced by
 * a new one, a few times. The directory is `$TMPDIR/dmw-redis-PID-XXXXXX`;
 * directories of processes that died without stopping their server (a
 * test killed at its time limit) are removed here.
 * @param[out] out        the server; NULL on failure.
 * @param[in]  timeout_ms how long to wait for it to be ready.
 * @return 0; EINVAL; ENOENT if redis-server is not installed; ETIMEDOUT;
 *         EIO if it would not start; ENOMEM; an error of mkdtemp(), pipe(), fork().
 * @see dmw_server_stop
 */
int dmw_server_start(dmw_server_t **out, long timeout_ms);

/** @brief `redis://127.0.0.1:PORT`, valid until dmw_server_stop(). */
const char *dmw_server_url(const dmw_server_t *server);

/**
 * @brief Restart the server on the same port, keeping its data: it saves a
 *        snapshot as it shuts down (`SHUTDOWN SAVE`), then loads it. Clients
 *        see their connections drop and must reconnect.
 * @return 0, or an error of dmw_server_start(); then the server is down.
 */
int dmw_server_restart(dmw_server_t *server, long timeout_ms);

/**
 * @brief Kill the server (SIGKILL: nothing is saved), reap it and remove its
 *        directory. NULL is a no-op. Only the process that started it acts;
 *        in a forked child this only frees memory.
 * @see dmw_server_start
 */
void dmw_server_stop(dmw_server_t *server);

/** @} */
#endif
