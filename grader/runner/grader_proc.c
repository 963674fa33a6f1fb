/**
 * @file grader_proc.c
 * @brief Running one test case in its own process - confined when graded -
 *        with a time limit, the verdict channel, and a diagnosis when it hangs.
 *
 * Graded, a test runs under kit-confine (confine.h): bubblewrap's namespaces,
 * the sandbox uid, limits. Its verdict comes from two pipes, at descriptors
 * 3 and 4 of the test: the grader writes a one-time token into the first and
 * closes it; the harness moves the token into the second only once cmocka
 * says the test passed (kit_test.c). The grader reads the second pipe after
 * kit-confine has returned, which it does only when every process of the test
 * is dead: the verdict is the exit status plus that token, read where nothing
 * of the test can reach any more.
 */
#if defined(__linux__)
#define _GNU_SOURCE /* the nftw flags */
#else
#define _POSIX_C_SOURCE 200809L
#endif
#include "grader.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { MAX_ARGS = 64, VERDICT_PASS = 3, VERDICT_OUT = 4, VERDICT_RACE = 5 };

const char *verdict_text(enum verdict verdict)
{
    switch (verdict) {
    case V_PASSED: return "passed";
    case V_FAILED: return "FAILED";
    case V_CRASHED: return "CRASHED";
    case V_TIMED_OUT: return "TIMED OUT";
    case V_RACE: return "DATA RACE";
    case V_THREAD_LEAK: return "THREAD LEAK";
    case V_MEMORY: return "MEMORY ERROR";
    case V_NO_RESULT: return "NO RESULT";
    case V_MISSING: return "MISSING";
    case V_NOT_RUN: return "not run";
    case V_REJECTED: return "REJECTED";
    }
    return "?";
}

static double now_seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

static void set_limit(int resource, long value)
{
    struct rlimit limit = { (rlim_t)value, (rlim_t)value };
    setrlimit(resource, &limit);
}

/* ---- one process ----------------------------------------------------------- */

/* Moves descriptor `from` to number `to` in the child, wherever it was. */
static void place_fd(int from, int to)
{
    if (from == to) {
        fcntl(to, F_SETFD, 0);
        return;
    }
    dup2(from, to);
    close(from);
}

/* In the child, between fork and exec: a process group of its own (so the
 * whole group can be stopped), output to the log, the verdict pipes at 3, 4
 * and 5, and - unconfined, kit-confine sets them otherwise - the limits. */
static void exec_child(char *const argv[], const char *log_path, const struct limits *limits, const int fds[3])
{
    setpgid(0, 0);
    int log = open(log_path ? log_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
    int nothing = open("/dev/null", O_RDONLY);
    int high[3] = { -1, -1, -1 };
    for (int i = 0; fds && i < 3; i++)
        high[i] = fcntl(fds[i], F_DUPFD, 10);
    dup2(log >= 0 ? log : nothing, STDOUT_FILENO);
    dup2(log >= 0 ? log : nothing, STDERR_FILENO);
    dup2(nothing, STDIN_FILENO);
    if (fds) {
        place_fd(high[0], VERDICT_PASS);
        place_fd(high[1], VERDICT_OUT);
        place_fd(high[2], VERDICT_RACE);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (limits) {
        set_limit(RLIMIT_CPU, limits->cpu_seconds);
        set_limit(RLIMIT_FSIZE, limits->file_size_mb << 20);
        set_limit(RLIMIT_CORE, 0);
        if (limits->address_space_mb > 0)
            set_limit(RLIMIT_AS, limits->address_space_mb << 20);
    }
    execvp(argv[0], argv);
    fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

static pid_t innermost_wrapped(pid_t pid);

/* The child of @p judge that runs @p subject_exe (its subject; a subject
 * killed before the judge ran its test again is dead, its exe unreadable),
 * or 0. */
static pid_t running_subject(pid_t judge, const char *subject_exe)
{
    char path[64], exe[4096];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)judge, (int)judge);
    FILE *in = fopen(path, "r");
    int child = 0;
    pid_t found = 0;
    while (in != NULL && found == 0 && fscanf(in, "%d", &child) == 1) {
        snprintf(path, sizeof path, "/proc/%d/exe", child);
        ssize_t n = readlink(path, exe, sizeof exe - 1);
        if (n <= 0)
            continue;
        exe[n] = '\0';
        if (strcmp(exe, subject_exe) == 0)
            found = (pid_t)child;
    }
    if (in)
        fclose(in);
    return found;
}

/* The process a confined run is about: below kit-confine and bubblewrap -
 * and, for a judged test, below its judge: the subject, which runs the code
 * (the judge lets no debugger in, and only waits for its answers). */
static pid_t innermost(pid_t pid)
{
    pid = innermost_wrapped(pid);
    char path[64], exe[4096];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(path, exe, sizeof exe - 16);
    if (n <= 0)
        return pid;
    exe[n] = '\0';
    strcat(exe, ".subject");
    pid_t subject = access(exe, X_OK) == 0 ? running_subject(pid, exe) : 0;
    return subject > 0 ? subject : pid;
}

static pid_t innermost_wrapped(pid_t pid)
{
    for (int level = 0; level < 6; level++) {
        char path[64], name[32] = "";
        snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
        FILE *in = fopen(path, "r");
        bool wrapper = in && fgets(name, sizeof name, in) &&
                       (strncmp(name, "kit-confine", 11) == 0 || strncmp(name, "bwrap", 5) == 0);
        if (in)
            fclose(in);
        snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
        in = wrapper ? fopen(path, "r") : NULL;
        int child = 0;
        bool found = in && fscanf(in, "%d", &child) == 1;
        if (in)
            fclose(in);
        if (!found)
            break;
        pid = child;
    }
    return pid;
}

/* Stops a run that is out of time. A confined one is asked to (kit-confine
 * then kills the sandbox and waits until all of it is dead); whatever is left
 * of its group after 10 s, or of an unconfined one at once, is killed. */
static void stop_run(pid_t pid, bool confined, int *status)
{
    if (confined) {
        kill(pid, SIGTERM);
        for (int waited = 0; waited < 1000; waited++) {
            if (waitpid(pid, status, WNOHANG) == pid)
                return;
            struct timespec pause = { 0, 10000000 };
            nanosleep(&pause, NULL);
        }
    }
    kill(-pid, SIGKILL);
    waitpid(pid, status, 0);
}

struct run {
    char *const *argv;
    const char *log_path;
    const struct limits *limits; /* NULL: kit-confine sets them */
    const int *verdict_fds;      /* the ends the test gets at 3, 4 and 5, or NULL */
    double timeout_seconds;
    on_timeout_fn on_timeout;
    void *ctx;
};

/* Seconds the machine's tasks have spent waiting for a CPU since boot - the
 * "some" line of Linux's pressure stall information - or -1 where the
 * kernel does not keep it. */
static double cpu_stall_seconds(void)
{
    FILE *pressure = fopen("/proc/pressure/cpu", "r");
    if (!pressure)
        return -1;
    unsigned long long total_us = 0;
    int found = fscanf(pressure, "some avg10=%*f avg60=%*f avg300=%*f total=%llu", &total_us);
    fclose(pressure);
    return found == 1 ? (double)total_us / 1e6 : -1;
}

/* A time limit counts the seconds a test had the machine for: on a shared,
 * loaded machine, the time tasks waited for a CPU that other work held is
 * added back, up to LOAD_ALLOWANCE times the limit in all. On an idle
 * machine a stuck test is stopped at the limit itself; on a busy one a
 * correct test is not stopped for being kept waiting. */
enum { LOAD_ALLOWANCE = 3 };

static double seconds_left(double limit, double start, double stall_at_start)
{
    double stalled = stall_at_start >= 0 ? cpu_stall_seconds() - stall_at_start : 0;
    double allowed = limit + (stalled > 0 ? stalled : 0);
    if (allowed > limit * LOAD_ALLOWANCE)
        allowed = limit * LOAD_ALLOWANCE;
    return allowed - (now_seconds() - start);
}

/* The test runs in a process group of its own, which a Ctrl-C at the
 * terminal does not reach: when the grader is interrupted or told to stop,
 * it stops the test first, then goes the way the signal says. */
static void stop_then_leave(pid_t pid, bool confined, int sig, const sigset_t *previous)
{
    int status;
    stop_run(pid, confined, &status);
    signal(sig, SIG_DFL);
    sigprocmask(SIG_SETMASK, previous, NULL);
    raise(sig);
    _exit(128 + sig); /* (if the signal was ignored before) */
}

/* Fork, exec, and wait up to the time limit without polling: SIGCHLD - and
 * the signals that stop the grader - are blocked and collected with
 * sigtimedwait. */
static int run_process(const struct run *run, struct process_end *out)
{
    sigset_t child_signal, previous;
    sigemptyset(&child_signal);
    sigaddset(&child_signal, SIGCHLD);
    sigaddset(&child_signal, SIGINT);
    sigaddset(&child_signal, SIGTERM);
    sigaddset(&child_signal, SIGHUP);
    sigprocmask(SIG_BLOCK, &child_signal, &previous);
    double start = now_seconds(), stall_at_start = cpu_stall_seconds();
    pid_t pid = fork();
    if (pid < 0) {
        sigprocmask(SIG_SETMASK, &previous, NULL);
        return errno;
    }
    if (pid == 0)
        exec_child(run->argv, run->log_path, run->limits, run->verdict_fds);
    setpgid(pid, pid); /* also in the parent: no race with the kill below */
    memset(out, 0, sizeof *out);
    while (waitpid(pid, &out->status, WNOHANG) != pid) {
        double left = seconds_left(run->timeout_seconds, start, stall_at_start);
        if (left <= 0) {
            out->timed_out = true;
            if (run->on_timeout)
                run->on_timeout(innermost(pid), run->ctx);
            stop_run(pid, run->limits == NULL, &out->status);
            break;
        }
        struct timespec wait = { (time_t)left, (long)((left - (double)(time_t)left) * 1e9) };
        int sig = sigtimedwait(&child_signal, NULL, &wait); /* a SIGCHLD, a stop, or the time-out */
        if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP)
            stop_then_leave(pid, run->limits == NULL, sig, &previous);
    }
    if (run->limits)
        kill(-pid, SIGKILL); /* anything an unconfined test left behind in its group */
    out->seconds = now_seconds() - start;
    sigprocmask(SIG_SETMASK, &previous, NULL);
    return 0;
}

/* Runs a command of the kit's own (gdb, a trusted binary) unconfined, with
 * limits; its output goes to log_path. */
int run_tool(char *const argv[], const char *log_path, double timeout_seconds, struct process_end *end)
{
    struct limits limits = { .wall_seconds = timeout_seconds, .cpu_seconds = (long)timeout_seconds,
                             .file_size_mb = 64 };
    struct run run = { argv, log_path, &limits, NULL, timeout_seconds, NULL, NULL };
    return run_process(&run, end);
}

/* ---- diagnosing a stuck test with gdb ---------------------------------------- */

struct diagnosis {
    const struct run_options *options;
    char *detail;
    size_t size;
};

static void diagnose_with_gdb(pid_t pid, void *raw)
{
    struct diagnosis *diagnosis = raw;
    if (!diagnosis->options->diagnose_timeouts)
        return;
    char log[] = "/tmp/kit-gdb-XXXXXX";
    int fd = mkstemp(log);
    if (fd < 0)
        return;
    close(fd);
    char pid_text[32];
    snprintf(pid_text, sizeof pid_text, "%d", (int)pid);
    char *argv[] = { "gdb", "-q", "-batch", "-nx", "-p", pid_text, "-ex", "set pagination off",
                     "-ex", "set print frame-arguments none", "-ex", "thread apply all bt 40", NULL };
    struct process_end outcome;
    int err = run_tool(argv, log, 20, &outcome);
    if (err != 0 || (!outcome.timed_out && WIFEXITED(outcome.status) && WEXITSTATUS(outcome.status) == 127)) {
        append_line(diagnosis->detail, diagnosis->size, "  (install gdb to see where each thread was stuck)", 51);
    } else if (outcome.timed_out) {
        append_line(diagnosis->detail, diagnosis->size, "  (gdb could not read the threads in time)", 42);
    } else {
        append_line(diagnosis->detail, diagnosis->size, "where each thread was when the time ran out:", 44);
        char *text = read_log(log);
        summarise_threads(text ? text : "", diagnosis->options, ALL_THREADS, diagnosis->detail, diagnosis->size);
        free(text);
    }
    unlink(log);
}

/* ---- the verdict channel ------------------------------------------------------ */

static void make_token(char *token, size_t size)
{
    unsigned long long a = 0, b = 0;
    FILE *random = fopen("/dev/urandom", "rb");
    if (random) {
        if (fread(&a, sizeof a, 1, random) != 1 || fread(&b, sizeof b, 1, random) != 1)
            a = b = 0;
        fclose(random);
    }
    if (a == 0)
        a = (unsigned long long)now_seconds() * 1000003ULL ^ (unsigned long long)getpid();
    snprintf(token, size, "%016llx%016llx", a, b);
}

struct verdict_channel {
    char pass[64], race_free[64]; /* the tokens */
    int test_ends[3]; /* what the test gets: the pass token's pipe, the result's, the race token's */
    int result;       /* the grader's end of the result pipe */
};

/* A pipe that holds token and nothing more: its writing end is closed at once. */
static int token_pipe(const char *token, int *read_end)
{
    int ends[2];
    if (pipe(ends) != 0)
        return errno;
    ssize_t length = (ssize_t)strlen(token);
    bool written = write(ends[1], token, (size_t)length) == length;
    close(ends[1]);
    *read_end = ends[0];
    fcntl(ends[0], F_SETFD, FD_CLOEXEC);
    return written ? 0 : EIO;
}

static int open_channel(struct verdict_channel *channel)
{
    int result[2];
    make_token(channel->pass, sizeof channel->pass);
    make_token(channel->race_free, sizeof channel->race_free);
    int err = token_pipe(channel->pass, &channel->test_ends[0]);
    if (err != 0)
        return err;
    if ((err = token_pipe(channel->race_free, &channel->test_ends[2])) != 0 || pipe(result) != 0) {
        err = err ? err : errno;
        close(channel->test_ends[0]);
        return err;
    }
    channel->test_ends[1] = result[1];
    channel->result = result[0];
    fcntl(result[1], F_SETFD, FD_CLOEXEC);
    fcntl(result[0], F_SETFD, FD_CLOEXEC);
    fcntl(result[0], F_SETFL, O_NONBLOCK);
    return 0;
}

/* After the run: the test's ends are closed, so the result pipe holds all it
 * will ever hold - the pass token if the test passed, then the race token if
 * it saw no data race, then, from a judge, "#N": what the verdict rests on of
 * the code under test's word (kit_test.h); exactly those, nothing else. */
static void close_channel(struct verdict_channel *channel, bool *passed, bool *race_free, char *words, size_t size)
{
    for (int i = 0; i < 3; i++)
        close(channel->test_ends[i]);
    char buffer[256];
    ssize_t n = read(channel->result, buffer, sizeof buffer - 1);
    close(channel->result);
    buffer[n > 0 ? n : 0] = '\0';
    char *mark = strchr(buffer, '#'); /* never in a token, which is hex */
    snprintf(words, size, "%s", mark ? mark + 1 : "");
    for (char *c = words; *c; c++)
        *c = *c >= ' ' && *c <= '~' ? *c : '?'; /* printed as it is: one plain line */
    if (mark)
        *mark = '\0';
    size_t p = strlen(channel->pass);
    *passed = strncmp(buffer, channel->pass, p) == 0;
    const char *rest = *passed ? buffer + p : buffer;
    *race_free = strcmp(rest, channel->race_free) == 0;
    if (!*race_free && rest[0] != '\0') /* anything else in the pipe: no verdict at all */
        *passed = false;
}

/* ---- one test case --------------------------------------------------------- */

static void add_words(char **argv, int *argc, char *copy)
{
    for (char *save = NULL, *word = strtok_r(copy, " ", &save); word && *argc < MAX_ARGS - 12;
         word = strtok_r(NULL, " ", &save))
        argv[(*argc)++] = word;
}

/* kit-confine's options for one test: the kit's headers, its test
 * binaries and the submission's staged sources read-only (its own lines,
 * which the explorer quotes), the verdict's descriptors, the limits. It writes
 * nowhere on the grader's disk but its log (RLIMIT_FSIZE, then cap_log):
 * its scratch space, where the explorer draws its own pictures too, is the
 * confinement's small private /tmp, gone with it. */
static void add_confinement(char **argv, int *argc, const struct run_options *options, char text[][32],
                            const char *binaries, long tasks)
{
    const struct limits *limits = &options->limits;
    snprintf(text[0], 32, "%ld", limits->cpu_seconds);
    snprintf(text[1], 32, "%ld", limits->memory_mb);
    snprintf(text[2], 32, "%ld", limits->file_size_mb);
    snprintf(text[3], 32, "%ld", tasks);
    char *words[] = { (char *)options->confine, "--kit", (char *)options->kit_root, "--ro", (char *)binaries,
                      "--fd", "3", "--fd", "4", "--fd", "5", "--cpu", text[0],
                      "--memory", text[1], "--file-size", text[2], "--tasks", text[3], NULL };
    for (int i = 0; words[i]; i++)
        argv[(*argc)++] = words[i];
    if (limits->address_space_mb == 0)
        argv[(*argc)++] = "--no-address-limit";
    if (options->stage && options->stage_at) {
        argv[(*argc)++] = "--ro-at";
        argv[(*argc)++] = (char *)options->stage;
        argv[(*argc)++] = (char *)options->stage_at;
    }
    argv[(*argc)++] = "--";
}

static bool has_subject(const struct test_case *test);

/* A judged test's threads are twice its code's: each thread of the code
 * under test that calls the test's functions back has a thread of the
 * judge's that mirrors it. The code under test keeps the limit it has in one
 * process. */
static long judged_tasks(const struct test_case *test)
{
    return has_subject(test) ? 2 : 1;
}

static void build_argv(char **argv, char *wrapper_copy, const struct test_case *test,
                       const struct run_options *options, char text[][32])
{
    int argc = 0;
    static char binaries[1024];
    snprintf(binaries, sizeof binaries, "%s", test->binary);
    char *slash = strrchr(binaries, '/');
    if (slash)
        *slash = '\0';
    if (options->confine)
        add_confinement(argv, &argc, options, text, binaries, options->limits.processes * judged_tasks(test));
    add_words(argv, &argc, wrapper_copy);
    char *tail[] = { (char *)test->binary, "--run", (char *)test->name, "--verdict", "3", "4", "5", NULL };
    for (int i = 0; tail[i]; i++)
        argv[argc++] = tail[i];
    argv[argc] = NULL;
}

/* A judged test (its subject beside it, NAME.subject) crosses between two
 * processes at every call of the code, about ten microseconds each: an
 * exploration's thousands of schedules take a few times as long as in one
 * process, and its time limit is that many times the limit (the CPU limit,
 * twice the time limit and more, follows it: kit-confine's and setrlimit's). */
enum { JUDGED_SCALE = 3 };

static bool has_subject(const struct test_case *test)
{
    char subject[sizeof test->binary + 16];
    snprintf(subject, sizeof subject, "%s.subject", test->binary);
    return access(subject, X_OK) == 0;
}

static double judged_scale(const struct test_case *test)
{
    return has_subject(test) && strstr(test->name, "_explore_") != NULL ? JUDGED_SCALE : 1;
}

void run_test_case(struct test_case *test, const struct run_options *options)
{
    char log_path[1024], wrapper_copy[1024], text[4][32];
    snprintf(log_path, sizeof log_path, "%s/%s.%s.log", options->log_dir, test->chapter, test->name);
    snprintf(wrapper_copy, sizeof wrapper_copy, "%s", options->wrapper ? options->wrapper : "");
    char *argv[MAX_ARGS];
    build_argv(argv, wrapper_copy, test, options, text);
    test->detail[0] = '\0';
    struct verdict_channel channel;
    int err = open_channel(&channel);
    /* A judged test starts the code under test's process under the same wrapper (valgrind, setarch). */
    if (options->wrapper && options->wrapper[0])
        setenv("KIT_SUBJECT_WRAPPER", options->wrapper, 1);
    else
        unsetenv("KIT_SUBJECT_WRAPPER");
    if (options->confine)
        setenv("KIT_EXPLORE_SVG_DIR", "", 1); /* no drawing in the confinement: grader_drawing.c draws the reports' */
    char stuck_threads[3000] = "";
    struct diagnosis diagnosis = { options, stuck_threads, sizeof stuck_threads };
    struct run run = { argv, log_path, options->confine ? NULL : &options->limits, channel.test_ends,
                       options->limits.wall_seconds * judged_scale(test), diagnose_with_gdb, &diagnosis };
    struct process_end end;
    bool token_ok = false;
    if (err == 0) {
        err = run_process(&run, &end);
        close_channel(&channel, &token_ok, &test->race_free, test->subject_word, sizeof test->subject_word);
        test->judged = has_subject(test);
    }
    if (err != 0) {
        test->verdict = V_FAILED;
        snprintf(test->detail, sizeof test->detail, "runner: cannot start the test: %s\n", strerror(err));
        return;
    }
    judge_test(test, &end, token_ok, log_path, stuck_threads, options);
    cap_log(log_path, options->log_budget);
}
