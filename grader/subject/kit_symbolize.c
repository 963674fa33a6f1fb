/**
 * @file kit_symbolize.c
 * @brief The subject's names for its own code, behind its system-call
 *        filter: a helper process, forked before the filter, runs addr2line
 *        and gdb on the subject and reads the sources a report quotes.
 *
 * The explorer's reports name each step's line (addr2line), quote the line a
 * race is on (the source file), and a crash prints every thread's stack
 * (gdb), and a report may look through a source's folder for a line (the
 * names of its files): each needs a call the filter refuses. The helper
 * makes them for the subject, and nothing else: it runs addr2line only on
 * the subject's own program with addresses, gdb only on the subject, reads
 * only a .c or .h file, and lists a folder's names, not in /proc, /sys or
 * /dev. It stays within the confinement of the test, as the subject
 * does; the filter is the subject's alone.
 */
#define _GNU_SOURCE
#include "kit_serve.h"
#include "kit_sched.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

enum { ANSWER = 60000, PATH_MOST = 1024 };

static int helper = -1;    /* the subject's end of the helper's socket */
static char program[PATH_MOST];

/* ---- the helper's side ---------------------------------------------------------------- */

/* The words after "addr2line [-a ]-f -i -e '<exe>'" (the explorer's two
 * forms, kit_sched_report.c) in @p command, or NULL. */
static const char *after_head(const char *command, const char *exe)
{
    static const char *const forms[] = { "addr2line -a -f -i -e '%s'", "addr2line -f -i -e '%s'" };
    char head[PATH_MOST + 64];
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        snprintf(head, sizeof head, forms[i], exe);
        if (strncmp(command, head, strlen(head)) == 0)
            return command + strlen(head);
    }
    return NULL;
}

/* "addr2line [-a ]-f -i -e '<program>' 0x1a2b ..." on the subject's program or
 * its judge's (the same without ".subject"), and nothing else. */
static bool is_addr2line(const char *command)
{
    char judge[PATH_MOST];
    snprintf(judge, sizeof judge, "%s", program);
    char *suffix = strstr(judge, ".subject");
    if (suffix != NULL && suffix[strlen(".subject")] == '\0')
        *suffix = '\0';
    const char *rest = after_head(command, program);
    if (rest == NULL)
        rest = after_head(command, judge);
    if (rest == NULL || strchr(program, '\'') != NULL)
        return false;
    for (; *rest; rest++)
        if (!(isxdigit((unsigned char)*rest) || *rest == ' ' || *rest == 'x'))
            return false;
    return true;
}

static bool outside_the_system(const char *path)
{
    return strncmp(path, "/proc", 5) != 0 && strncmp(path, "/sys", 4) != 0 && strncmp(path, "/dev", 4) != 0;
}

static bool is_source(const char *path)
{
    size_t n = strlen(path);
    return n > 2 && (strcmp(path + n - 2, ".c") == 0 || strcmp(path + n - 2, ".h") == 0) && outside_the_system(path);
}

/* What one request asks: the output of addr2line, a source file, a folder's
 * names, or gdb's stacks (to stderr). */
static size_t answer(const char *request, char *out, size_t size, pid_t subject)
{
    FILE *in = NULL;
    if (request[0] == 'D')
        return outside_the_system(request + 1) ? kit_sched_folder_names(request + 1, out, size) : 0;
    if (request[0] == 'A' && is_addr2line(request + 1))
        in = popen(request + 1, "r");
    else if (request[0] == 'S' && is_source(request + 1))
        in = fopen(request + 1, "r");
    else if (request[0] == 'G') {
        char pid[24];
        snprintf(pid, sizeof pid, "%d", (int)subject);
        char command[256];
        snprintf(command, sizeof command, "gdb -q -batch -nx -p %s -ex 'set pagination off' -ex "
                 "'set print frame-arguments none' -ex 'thread apply all bt 40' 1>&2 </dev/null", pid);
        int status = system(command);
        return (size_t)snprintf(out, size, "%d", status);
    }
    if (in == NULL)
        return 0;
    size_t n = fread(out, 1, size, in);
    if (request[0] == 'A')
        pclose(in);
    else
        fclose(in);
    return n;
}

static _Noreturn void helper_main(int fd, pid_t subject)
{
    static char request[PATH_MOST + 4096], out[ANSWER];
    for (;;) {
        ssize_t n = recv(fd, request, sizeof request - 1, 0);
        if (n <= 0)
            _exit(0); /* the subject is gone */
        request[n] = '\0';
        size_t length = answer(request, out, sizeof out, subject);
        if (send(fd, out, length, 0) < 0)
            _exit(0);
    }
}

int kit_symbolizer_start(void)
{
    ssize_t length = readlink("/proc/self/exe", program, sizeof program - 1);
    if (length <= 0)
        return errno;
    program[length] = '\0';
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
        return errno;
    pid_t subject = getpid();
    pid_t pid = fork();
    if (pid < 0)
        return errno;
    if (pid == 0) {
        close(pair[0]);
        for (int fd = 3; fd < 1024; fd++)
            if (fd != pair[1])
                close(fd); /* not the channels: the helper answers the subject only */
        helper_main(pair[1], subject);
    }
    close(pair[1]);
    /* just below the channels: the filter lets the subject read and write there */
    helper = dup2(pair[0], KIT_WIRE_FD - 1) == KIT_WIRE_FD - 1 ? KIT_WIRE_FD - 1 : -1;
    close(pair[0]);
    return helper >= 0 ? 0 : EBADF;
}

/* ---- the subject's side ----------------------------------------------------------------- */

static char answers[ANSWER + 1];

/* The helper's answer to @p kind + @p text as a stream, or NULL. */
static FILE *ask(char kind, const char *text)
{
    static char request[PATH_MOST + 4096];
    int n = snprintf(request, sizeof request, "%c%s", kind, text);
    if (helper < 0 || n < 0 || (size_t)n >= sizeof request || send(helper, request, (size_t)n, 0) != n)
        return NULL;
    ssize_t got = recv(helper, answers, ANSWER, 0);
    if (got <= 0)
        return NULL;
    return fmemopen(answers, (size_t)got, "r");
}

FILE *kit_symbolizer_popen(const char *command)
{
    return helper >= 0 ? ask('A', command) : popen(command, "r");
}

int kit_symbolizer_pclose(FILE *stream)
{
    return helper >= 0 ? fclose(stream) : pclose(stream);
}

FILE *kit_symbolizer_fopen(const char *path)
{
    return helper >= 0 ? ask('S', path) : fopen(path, "r");
}

FILE *kit_symbolizer_folder(const char *path)
{
    return helper >= 0 ? ask('D', path) : NULL;
}

bool kit_symbolizer_stacks(void)
{
    char request[] = "G";
    if (helper < 0 || send(helper, request, 1, 0) != 1)
        return false;
    char status[32];
    return recv(helper, status, sizeof status, 0) > 0; /* gdb wrote the stacks to the log meanwhile */
}
