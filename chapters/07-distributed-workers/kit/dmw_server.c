/**
 * @file dmw_server.c
 * @brief Starting, restarting and stopping a private redis-server.
 *
 * DESIGN: the server's log goes to a pipe. Readiness is the line "Ready to
 * accept connections" and death is end-of-file on that pipe, so both are
 * waited for with poll() and a deadline rather than by trying to connect
 * over and over. Once ready, the server is told to log only warnings, so
 * the pipe, which nobody reads until the server stops, never fills up.
 */
#if defined(__linux__)
#define _GNU_SOURCE /* prctl(PR_SET_PDEATHSIG) */
#include <sys/prctl.h>
#else
#define _POSIX_C_SOURCE 200809L
#endif
#include "dmw_server.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "kit_time.h"

enum { PORT_TRIES = 5, LOG_KEEP = 4096 };

struct dmw_server {
    pid_t owner;     /* the process that started the server: only it stops it */
    pid_t pid;       /* the redis-server, 0 when down */
    int log_fd;      /* read end of the server's stdout; -1 when down */
    int port;
    char dir[256];
    char url[64];
};

/* A port the kernel has just handed out and that nobody listens on now. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t length = sizeof address;
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&address, sizeof address) == 0 &&
        getsockname(fd, (struct sockaddr *)&address, &length) == 0)
        port = ntohs(address.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* In the child: die with the parent, log to the pipe, exec the server. */
static void exec_server(const dmw_server_t *s, int log_fd, pid_t parent)
{
#if defined(__linux__)
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    if (getppid() != parent) /* the parent died before prctl took effect */
        _exit(127);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    for (int fd = 3; fd < 1024; fd++) /* no copies of the parent's sockets and pipes */
        close(fd);
    char port[16];
    snprintf(port, sizeof port, "%d", s->port);
    const char *program = getenv("REDIS_SERVER") ? getenv("REDIS_SERVER") : "redis-server";
    /* --hz 100: the server looks at a blocked client's time-out ten times
     * as often as its default, so a BLMOVE of 20 ms times out after about
     * 20 ms, not at the next tenth of a second; a worker that is to leave
     * on shutdown notices it that much sooner. */
    char *argv[] = { (char *)program, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                     "--dir", (char *)s->dir, "--dbfilename", "dump.rdb", "--daemonize", "no", "--logfile", "",
                     "--hz", "100", NULL };
    execvp(program, argv);
    printf("cannot run %s: %s\n", program, strerror(errno));
    fflush(stdout);
    _exit(127);
}

/* Read the log until @p needle appears (0), the pipe ends (EPIPE) or the time is up. */
static int read_log_until(int fd, const char *needle, long timeout_ms, char *log, size_t size)
{
    size_t used = strlen(log);
    int64_t start = kit_now_ns();
    for (;;) {
        if (needle && strstr(log, needle))
            return 0;
        long left = timeout_ms - (long)kit_elapsed_ms(start);
        struct pollfd wait = { .fd = fd, .events = POLLIN };
        if (left <= 0 || poll(&wait, 1, (int)left) == 0)
            return ETIMEDOUT;
        if (used + 256 >= size) { /* keep the tail: the needle is near the end */
            memmove(log, log + used - size / 2, size / 2);
            used = size / 2;
        }
        ssize_t n = read(fd, log + used, size - used - 1);
        if (n <= 0 && !(n < 0 && errno == EINTR))
            return EPIPE;
        used += n > 0 ? (size_t)n : 0;
        log[used] = '\0';
    }
}

/* Quiet the server once it is ready (see DESIGN above). */
static void lower_log_level(const dmw_server_t *s)
{
    redisContext *c = redisConnectWithTimeout("127.0.0.1", s->port, (struct timeval){ 2, 0 });
    if (c && !c->err)
        freeReplyObject(redisCommand(c, "CONFIG SET loglevel warning"));
    if (c)
        redisFree(c);
}

static void reap(dmw_server_t *s)
{
    if (s->pid > 0) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, NULL, 0);
    }
    if (s->log_fd >= 0)
        close(s->log_fd);
    s->pid = 0;
    s->log_fd = -1;
}

/* Start redis-server on s->port and wait for it to be ready. */
static int launch(dmw_server_t *s, long timeout_ms)
{
    int fds[2];
    if (pipe(fds) != 0)
        return errno;
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    pid_t parent = getpid();
    s->pid = fork();
    if (s->pid < 0) {
        int err = errno;
        close(fds[0]);
        close(fds[1]);
        s->pid = 0;
        return err;
    }
    if (s->pid == 0)
        exec_server(s, fds[1], parent);
    close(fds[1]);
    s->log_fd = fds[0];
    char log[LOG_KEEP] = "";
    int err = read_log_until(s->log_fd, "Ready to accept connections", timeout_ms, log, sizeof log);
    if (err == 0) {
        lower_log_level(s);
        return 0;
    }
    reap(s);
    if (strstr(log, "cannot run"))
        return ENOENT;
    return strstr(log, "in use") ? EADDRINUSE : err == ETIMEDOUT ? ETIMEDOUT : EIO;
}

static void remove_directory(const char *path);

/* A test killed by its time limit cannot remove its server's directory:
 * the next start removes the directories of processes that are gone. */
static void remove_stale_directories(const char *tmp)
{
    DIR *dir = opendir(tmp);
    for (struct dirent *entry; dir && (entry = readdir(dir));) {
        long pid = 0;
        char path[512];
        if (sscanf(entry->d_name, "dmw-redis-%ld-", &pid) == 1 && pid > 0 && kill((pid_t)pid, 0) != 0 &&
            errno == ESRCH && snprintf(path, sizeof path, "%s/%s", tmp, entry->d_name) < (int)sizeof path)
            remove_directory(path);
    }
    if (dir)
        closedir(dir);
}

int dmw_server_start(dmw_server_t **out, long timeout_ms)
{
    if (out)
        *out = NULL;
    if (out == NULL || timeout_ms < 0)
        return EINVAL;
    dmw_server_t *s = calloc(1, sizeof *s);
    if (s == NULL)
        return ENOMEM;
    const char *tmp = getenv("TMPDIR") && getenv("TMPDIR")[0] ? getenv("TMPDIR") : "/tmp";
    remove_stale_directories(tmp);
    snprintf(s->dir, sizeof s->dir, "%s/dmw-redis-%ld-XXXXXX", tmp, (long)getpid());
    s->owner = getpid();
    s->log_fd = -1;
    int err = mkdtemp(s->dir) ? EADDRINUSE : errno;
    for (int try = 0; try < PORT_TRIES && err == EADDRINUSE; try++) {
        s->port = free_port();
        err = s->port > 0 ? launch(s, timeout_ms) : EIO;
    }
    if (err != 0) {
        dmw_server_stop(s);
        return err;
    }
    snprintf(s->url, sizeof s->url, "redis://127.0.0.1:%d", s->port);
    *out = s;
    return 0;
}

const char *dmw_server_url(const dmw_server_t *s)
{
    return s ? s->url : "";
}

/* SHUTDOWN SAVE writes dump.rdb into the server's directory and exits; the
 * new server on the same port loads it before it says it is ready. */
int dmw_server_restart(dmw_server_t *s, long timeout_ms)
{
    if (s == NULL || timeout_ms < 0 || s->owner != getpid())
        return EINVAL;
    redisContext *c = redisConnectWithTimeout("127.0.0.1", s->port, (struct timeval){ 2, 0 });
    if (c && !c->err)
        freeReplyObject(redisCommand(c, "SHUTDOWN SAVE")); /* no reply: the server is gone */
    if (c)
        redisFree(c);
    char log[LOG_KEEP] = "";
    if (s->log_fd >= 0) /* end of file: the server has exited */
        read_log_until(s->log_fd, NULL, timeout_ms, log, sizeof log);
    reap(s);
    return launch(s, timeout_ms);
}

static void remove_directory(const char *path)
{
    DIR *dir = opendir(path);
    for (struct dirent *entry; dir && (entry = readdir(dir));) {
        char file[512];
        if (strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0 &&
            snprintf(file, sizeof file, "%s/%s", path, entry->d_name) < (int)sizeof file)
            unlink(file);
    }
    if (dir)
        closedir(dir);
    rmdir(path);
}

void dmw_server_stop(dmw_server_t *s)
{
    if (s == NULL)
        return;
    if (s->owner == getpid()) {
        reap(s);
        if (s->dir[0] && strstr(s->dir, "XXXXXX") == NULL)
            remove_directory(s->dir);
    }
    free(s);
}
