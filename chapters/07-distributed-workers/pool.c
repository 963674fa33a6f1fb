/**
 * @file pool.c
 * @brief Chapter 07 program: the work, and the worker processes the master starts.
 */
#define _POSIX_C_SOURCE 200809L
#include "program.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kit_time.h"

const char *ch07_self = "ch07-distributed-workers";

/* Computation that the compiler cannot skip: mix until the time is up. */
static uint64_t spin_us(long us)
{
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    int64_t start = kit_now_ns();
    do {
        for (int i = 0; i < 64; i++)
            x = (x ^ (x >> 31)) * 0xBF58476D1CE4E5B9ULL + (uint64_t)i;
    } while (kit_now_ns() - start < us * 1000L);
    return x;
}

int ch07_work(const dmw_task_t *task, char *text, size_t size, void *ctx)
{
    (void)ctx;
    long amount = 0;
    uint64_t mixed = (uint64_t)(task->id + 1) * 0x9E3779B97F4A7C15ULL;
    if (sscanf(task->payload, "work %ld", &amount) == 1)
        kit_sleep_ms(amount); /* waiting on something: a download, a disk */
    else if (sscanf(task->payload, "spin %ld", &amount) == 1)
        mixed ^= spin_us(amount) & 1; /* computing */
    if (strcmp(task->payload, "flaky") == 0) {
        snprintf(text, size, "upstream not ready");
        return EAGAIN;
    }
    if (strcmp(task->payload, "bad") == 0) {
        snprintf(text, size, "cannot parse the page");
        return EINVAL;
    }
    snprintf(text, size, "checksum %08lx", (unsigned long)(mixed >> 32));
    return 0;
}

/* In the child: the same program as a worker of the same run. */
static void exec_worker(const dmw_config_t *config, const char *name, bool quiet)
{
    char visibility[24], attempts[24];
    snprintf(visibility, sizeof visibility, "%ld", config->visibility_ms);
    snprintf(attempts, sizeof attempts, "%d", config->max_attempts);
    char *argv[] = { (char *)ch07_self, "--worker", "--name", (char *)name, "--redis-url",
                     (char *)config->redis_url, "--run", (char *)config->run, "--visibility-ms", visibility,
                     "--max-attempts", attempts, quiet ? "--quiet" : NULL, NULL };
    execv(ch07_self, argv);
    execvp(ch07_self, argv);
    fprintf(stderr, "cannot run %s: %s\n", ch07_self, strerror(errno));
    _exit(3);
}

int ch07_pool_start(ch07_pool_t *pool, int count, const char *prefix, const dmw_config_t *config, bool quiet)
{
    int fds[2];
    memset(pool, 0, sizeof *pool);
    pool->exited_fd = -1;
    if (count > CH07_MAX_WORKERS || pipe(fds) != 0)
        return count > CH07_MAX_WORKERS ? EINVAL : errno;
    fflush(NULL);
    for (int i = 0; i < count; i++) {
        snprintf(pool->names[i], sizeof pool->names[i], "%s%d", prefix, i);
        pid_t pid = fork();
        if (pid < 0) {
            int err = errno;
            close(fds[1]);
            pool->exited_fd = fds[0];
            ch07_pool_wait(pool, 0);
            return err;
        }
        if (pid == 0) {
            close(fds[0]); /* the write end stays open until the worker exits */
            exec_worker(config, pool->names[i], quiet);
        }
        pool->pids[i] = pid;
        pool->count++;
    }
    close(fds[1]);
    pool->exited_fd = fds[0];
    return 0;
}

int ch07_pool_wait(ch07_pool_t *pool, long timeout_ms)
{
    char ignored[64];
    int64_t start = kit_now_ns();
    for (;;) { /* end-of-file: every worker has exited (a worker writes nothing) */
        long left = timeout_ms - (long)kit_elapsed_ms(start);
        struct pollfd wait = { .fd = pool->exited_fd, .events = POLLIN };
        if (left <= 0 || poll(&wait, 1, (int)left) <= 0 || read(pool->exited_fd, ignored, sizeof ignored) <= 0)
            break;
    }
    int abnormal = 0;
    for (int i = 0; i < pool->count; i++) {
        if (pool->pids[i] <= 0)
            continue;
        if (waitpid(pool->pids[i], &pool->status[i], WNOHANG) == 0) { /* still there: time is up */
            kill(pool->pids[i], SIGKILL);
            waitpid(pool->pids[i], &pool->status[i], 0);
        }
        pool->pids[i] = 0;
        if (!WIFEXITED(pool->status[i]) || WEXITSTATUS(pool->status[i]) != 0)
            abnormal++;
    }
    if (pool->exited_fd >= 0)
        close(pool->exited_fd);
    pool->exited_fd = -1;
    return abnormal;
}
