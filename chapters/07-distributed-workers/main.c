/**
 * @file main.c
 * @brief Chapter 07 program: a master and worker processes on a Redis reliable queue.
 *
 * As the master (the default) it starts a private redis-server (or uses
 * `--redis-url` / $REDIS_URL), starts N worker processes - itself again with
 * `--worker` - submits a batch, waits for every outcome while reaping, and
 * prints who did what, the retries, the dead letters and the conservation
 * line. `--kill-worker` SIGKILLs worker w0 in the middle of a task;
 * `--restart-redis` restarts the server in the middle of the run;
 * `--bench` measures throughput. Exit status: 0 when every task is
 * accounted for, 1 when not, 2 for bad arguments, 3 when Redis cannot be
 * reached or started.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dmw.h"
#include "dmw_redis.h"
#include "dmw_server.h"
#include "kit_cli.h"
#include "kit_log.h"
#include "kit_rand.h"
#include "kit_thread.h"
#include "kit_time.h"
#include "program.h"

static long workers = 3, tasks = 12, task_ms = 200, always_fail = 1, bad = 0, max_attempts = 3;
static long visibility_ms = 1000, timeout_ms = 60000, bench_tasks = 2000, task_us = 200;
static bool worker_mode, kill_worker, restart_redis, bench, keep;
static const char *redis_url, *run_name, *worker_name;
static kit_run_t run;

static const kit_opt_t options[] = {
    { "workers", KIT_OPT_LONG, "N", "worker processes to start here (0: only workers started elsewhere)",
      &workers, 0, CH07_MAX_WORKERS, NULL },
    { "tasks", KIT_OPT_LONG, "N", "tasks in the batch", &tasks, 1, 100000, NULL },
    { "task-ms", KIT_OPT_LONG, "MS", "simulated work per task (varies +-50% with the seed)", &task_ms, 0, 60000,
      NULL },
    { "always-fail", KIT_OPT_LONG, "N", "tasks that fail for now (EAGAIN) on every delivery: dead letters",
      &always_fail, 0, 100000, NULL },
    { "bad", KIT_OPT_LONG, "N", "tasks that fail for good (not retried)", &bad, 0, 100000, NULL },
    { "max-attempts", KIT_OPT_LONG, "N", "deliveries before a task is dead-lettered", &max_attempts, 1, 100, NULL },
    { "visibility-ms", KIT_OPT_LONG, "MS", "a worker silent this long is presumed dead", &visibility_ms, 50,
      600000, NULL },
    { "kill-worker", KIT_OPT_FLAG, NULL, "SIGKILL worker w0 in the middle of a task", &kill_worker, 0, 0, NULL },
    { "restart-redis", KIT_OPT_FLAG, NULL, "restart the private Redis server in the middle of the run",
      &restart_redis, 0, 0, NULL },
    { "bench", KIT_OPT_FLAG, NULL, "throughput with 1, 2, 4, 8 worker processes vs threads in one process",
      &bench, 0, 0, NULL },
    { "bench-tasks", KIT_OPT_LONG, "N", "tasks per bench batch", &bench_tasks, 1, 1000000, NULL },
    { "task-us", KIT_OPT_LONG, "US", "computation per bench task", &task_us, 0, 1000000, NULL },
    { "timeout-ms", KIT_OPT_LONG, "MS", "how long the master waits for the batch", &timeout_ms, 1, 3600000, NULL },
    { "redis-url", KIT_OPT_STRING, "URL", "an existing server, redis://HOST:PORT (default: $REDIS_URL, "
      "else a private one)", &redis_url, 0, 0, NULL },
    { "run", KIT_OPT_STRING, "NAME", "the run's name: workers elsewhere join it by name (default run-PID)",
      &run_name, 0, 0, NULL },
    { "keep", KIT_OPT_FLAG, NULL, "leave the run's keys on the server at the end", &keep, 0, 0, NULL },
    { "worker", KIT_OPT_FLAG, NULL, "be a worker of --run on --redis-url (what the master starts)",
      &worker_mode, 0, 0, NULL },
    { "name", KIT_OPT_STRING, "NAME", "the worker's name, unique in the run (with --worker)", &worker_name, 0, 0,
      NULL },
    KIT_RUN_OPTIONS(run),
};

static const kit_cli_t cli = {
    "ch07-distributed-workers",
    "A master and worker processes share a reliable queue on Redis: take (BLMOVE), heartbeat,\n"
    "  outcome (HSETNX), acknowledge (LREM); a reaper returns the tasks of dead workers.",
    "examples:\n"
    "  ch07-distributed-workers --kill-worker            # a worker dies mid-task; another finishes it\n"
    "  ch07-distributed-workers --restart-redis --tasks 30 --task-ms 100\n"
    "  ch07-distributed-workers --bench --task-us 200 --quiet\n"
    "  ch07-distributed-workers --workers 0 --redis-url redis://HOST:6379 --run demo   # on machine A\n"
    "  ch07-distributed-workers --worker --name b1 --redis-url redis://HOST:6379 --run demo   # on B, C, ...\n"
    "exit status: 0 every task accounted for, 1 not, 2 bad arguments, 3 Redis unreachable",
    options, sizeof options / sizeof options[0],
};

static dmw_config_t config;
static dmw_server_t *server;
static char default_run[DMW_NAME_MAX], url_text[160];

/* The run's configuration, the same in the master and in every worker. */
static void make_config(const char *url)
{
    snprintf(default_run, sizeof default_run, "run-%ld", (long)getpid());
    config = (dmw_config_t){ .redis_url = url, .run = run_name ? run_name : default_run,
                             .visibility_ms = visibility_ms, .max_attempts = (int)max_attempts,
                             .reconnect_ms = restart_redis ? 10000 : 5000 };
}


/* ---- the worker role ------------------------------------------------------------------ */

static int worker_main(void)
{
    if (!redis_url && !getenv("REDIS_URL"))
        kit_cli_fail(&cli, "--worker needs --redis-url (or REDIS_URL) and --run");
    if (!run_name)
        kit_cli_fail(&cli, "--worker needs --run: the name of the master's run");
    make_config(redis_url);
    char fallback[DMW_NAME_MAX];
    snprintf(fallback, sizeof fallback, "w%ld", (long)getpid());
    kit_thread_set_name(worker_name ? worker_name : fallback);
    dmw_worker_config_t knobs = { .name = worker_name, .process = ch07_work };
    dmw_worker_stats_t stats;
    int err = dmw_worker_run(&config, &knobs, &stats);
    if (err == ENOSYS) {
        fprintf(stderr, "dmw_worker_run: ENOSYS - not implemented yet: write "
                        "exercises/07-distributed-workers/dmw_worker.c\n");
        return 1;
    }
    if (err != 0 && err != EINVAL)
        return ch07_unreachable(kit_thread_name(), config.redis_url, err);
    kit_log("worker", "leaving: %ld taken, %ld done, %ld failed, %ld retried, %ld dead-lettered, "
            "%ld duplicate(s), %ld reconnect(s)", stats.taken, stats.completed, stats.failed, stats.retried,
            stats.dead_lettered, stats.duplicates, stats.reconnects);
    return err == 0 ? 0 : 1;
}

/* ---- the master role ------------------------------------------------------------------- */

/* A private server, unless --redis-url or REDIS_URL names one. */
static int start_redis(void)
{
    const char *url = redis_url ? redis_url : getenv("REDIS_URL");
    if (url == NULL) {
        int err = dmw_server_start(&server, 10000);
        if (err != 0) {
            fprintf(stderr, "cannot start a private redis-server: %s (%s)\n",
                    err == ENOENT ? "it is not installed - tools/bootstrap installs it" : strerror(err),
                    dmw_errno_name(err));
            return 3;
        }
        url = dmw_server_url(server);
        kit_log("main", "private redis-server on %s", url);
    }
    snprintf(url_text, sizeof url_text, "%s", url);
    make_config(url_text);
    return 0;
}

static int master_main(uint64_t seed)
{
    ch07_demo_t demo = { .config = &config, .server = server, .workers = (int)workers, .tasks = tasks,
                         .task_ms = task_ms, .always_fail = always_fail, .bad = bad, .timeout_ms = timeout_ms,
                         .kill_worker = kill_worker, .restart_redis = restart_redis, .keep = keep,
                         .quiet = run.quiet, .seed = seed };
    return ch07_demo(&demo);
}

int main(int argc, char **argv)
{
    kit_cli_parse(&cli, argc, argv);
    uint64_t seed = kit_run_begin(&run);
    ch07_self = access("/proc/self/exe", X_OK) == 0 ? "/proc/self/exe" : argv[0];
    if (worker_mode)
        return worker_main();
    if (always_fail + bad > tasks)
        kit_cli_fail(&cli, "--always-fail %ld + --bad %ld is more than --tasks %ld", always_fail, bad, tasks);
    if (kill_worker && workers < 2)
        kit_cli_fail(&cli, "--kill-worker needs --workers 2 or more: one to kill, one to finish its task");
    if (restart_redis && (redis_url || getenv("REDIS_URL")))
        kit_cli_fail(&cli, "--restart-redis restarts the program's own server: drop --redis-url and REDIS_URL");
    int status = start_redis();
    if (status == 0)
        status = bench ? ch07_bench(config.redis_url, bench_tasks, task_us) : master_main(seed);
    dmw_server_stop(server);
    int failed = kit_run_end(&run);
    return status ? status : failed;
}
