/**
 * @file grader_proc.c
 * @brief Running one test case in its own process: limits, time-out, verdict, diagnosis.
 */
#if defined(__linux__)
#define _GNU_SOURCE /* unshare, setgroups: the sandbox */
#include <grp.h>
#include <sched.h>
#include <sys/mount.h>
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
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { MAX_ARGS = 48 };

const char *verdict_text(enum verdict verdict)
{
    switch (verdict) {
    case V_PASSED: return "passed";
    case V_FAILED: return "FAILED";
    case V_CRASHED: return "CRASHED";
    case V_TIMED_OUT: return "TIMED OUT";
    case V_RACE: return "DATA RACE";
    case V_MEMORY: return "MEMORY ERROR";
    case V_NO_RESULT: return "NO RESULT";
    case V_MISSING: return "MISSING";
    case V_NOT_RUN: return "not run";
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

/* Waits for pid and leaves the same way it did: same exit status, or the
 * same signal. Process 1 of a PID namespace cannot kill itself with a signal,
 * so it reports one as exit status 128 + signal, which the waiter above it
 * turns back into the signal. */
_Noreturn static void leave_like(pid_t pid, bool is_namespace_init)
{
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    if (!is_namespace_init && sig == 0 && code > 128 && code < 128 + 32)
        sig = code - 128;
    if (sig != 0 && is_namespace_init)
        _exit(128 + sig);
    if (sig != 0) {
        signal(sig, SIG_DFL);
        raise(sig);
    }
    _exit(code);
}

#if defined(__linux__)
static void mount_scratch(const char *path)
{
    /* Small, private, and gone when the test's namespace goes. */
    mount("kit-scratch", path, "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,nr_inodes=4096,mode=1777");
}

/* mkdir -p, for the kit's path inside a fresh tmpfs. */
static void make_path(const char *path)
{
    char partial[PATH_MAX];
    for (const char *slash = strchr(path + 1, '/');; slash = strchr(slash + 1, '/')) {
        size_t length = slash ? (size_t)(slash - path) : strlen(path);
        if (length >= sizeof partial)
            return;
        memcpy(partial, path, length);
        partial[length] = '\0';
        mkdir(partial, 0755);
        if (slash == NULL)
            return;
    }
}

/* A kit that lives under /tmp (say, a student kit unpacked there) would
 * vanish under the scratch tmpfs: the test still runs, from its working
 * directory, but gdb - the hang and crash diagnoses - finds no program
 * file at the path the kernel gives it. Mount the kit back at its own path,
 * read-only. `kit` is an O_PATH descriptor of the kit, opened before. */
static void keep_kit_visible(int kit, const char *path)
{
    if (kit < 0)
        return;
    char source[64];
    snprintf(source, sizeof source, "/proc/self/fd/%d", kit);
    make_path(path);
    if (mount(source, path, NULL, MS_BIND | MS_REC, NULL) == 0)
        mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL);
    close(kit);
    if (chdir(path) != 0)
        _exit(126);
}

/* The kit's folder, open, if a scratch mount is about to hide it; else -1. */
static int open_hidden_kit(char *path, size_t size)
{
    static const char *const scratch[] = { "/tmp/", "/var/tmp/", "/dev/shm/" };
    if (getcwd(path, size) == NULL)
        return -1;
    for (int i = 0; i < 3; i++)
        if (strncmp(path, scratch[i], strlen(scratch[i])) == 0)
            return open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    return -1;
}

/* In the child, when the runner is root: the test gets a sandbox of its own.
 * - A PID namespace: when its process 1 (a reaper we fork) exits, the kernel
 *   kills everything left inside, so a fork bomb dies with its test.
 * - A mount namespace with small private tmpfs on /tmp, /var/tmp, /dev/shm:
 *   filling them fills 64 MB of memory, not the grading machine's disk.
 * - An unprivileged uid: RLIMIT_NPROC applies (root is exempt from it) and
 *   nothing outside those tmpfs is writable.
 * Returns in the process that should exec the test. Without the privileges
 * for namespaces it returns at once, and the resource limits still apply. */
static void enter_sandbox(uid_t uid)
{
    if (geteuid() != 0 || unshare(CLONE_NEWNS | CLONE_NEWPID) != 0)
        return;
    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL); /* our mounts stay ours */
    pid_t reaper = fork();
    if (reaper > 0)
        leave_like(reaper, false);
    if (reaper < 0)
        _exit(126);
    char kit_path[PATH_MAX];
    int kit = open_hidden_kit(kit_path, sizeof kit_path);
    /* Its own /proc: the test's gdb (kit_stacks.c) looks itself up by its pid in this namespace. */
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
    mount_scratch("/tmp");
    mount_scratch("/var/tmp");
    mount_scratch("/dev/shm");
    keep_kit_visible(kit, kit_path);
    pid_t test = fork();
    if (test > 0)
        leave_like(test, true);
    if (test < 0)
        _exit(126);
    if (setgroups(0, NULL) != 0 || setgid(uid) != 0 || setuid(uid) != 0)
        _exit(126);
}

static bool write_text(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY);
    bool ok = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);
    if (fd >= 0)
        close(fd);
    return ok;
}

/* Two grades at once on one machine (two instructors, a grade beside a
 * make test in another copy of the kit) must not share a sandbox uid:
 * RLIMIT_NPROC and the slot's control groups count every process of the
 * uid, so each would eat into the other's limits and fail tests that
 * start many processes. The grader holds an exclusive lock on
 * /tmp/kit-grade-slot-<uid>.lock while it runs (the descriptor stays open,
 * and is closed on exec), and takes the next uid while one is held. */
long claim_sandbox_uid(long uid)
{
    for (long candidate = uid; candidate < uid + 64; candidate++) {
        char path[64];
        snprintf(path, sizeof path, "/tmp/kit-grade-slot-%ld.lock", candidate);
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0)
            return uid; /* no lock to take: share, as before */
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return candidate;
        close(fd);
    }
    return uid;
}

/* Best effort, as root: the sandbox slot's own control groups - at most 64
 * tasks (threads count) and its share of the CPUs, whatever the test does. A fork bomb or
 * a spinning test then cannot take the cores another slot's grade is using.
 * cgroup v2 when the unified hierarchy has the controllers, else v1. */
static void join_slot_cgroups(long slot, long cpus)
{
    char quota[32];
    snprintf(quota, sizeof quota, "%ld", (cpus > 0 ? cpus : 1) * 100000);
    static const char *const v2 = "/sys/fs/cgroup";
    char dir[128], file[192], pid[32];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    snprintf(dir, sizeof dir, "%s/kit-grade-%ld", v2, slot);
    write_text("/sys/fs/cgroup/cgroup.subtree_control", "+pids +cpu");
    if (mkdir(dir, 0755) == 0 || errno == EEXIST) {
        snprintf(file, sizeof file, "%s/pids.max", dir);
        bool limited = write_text(file, "64");
        snprintf(file, sizeof file, "%s/cpu.max", dir);
        char cpu_max[64];
        snprintf(cpu_max, sizeof cpu_max, "%s 100000", quota);
        limited = write_text(file, cpu_max) && limited;
        snprintf(file, sizeof file, "%s/cgroup.procs", dir);
        if (limited && write_text(file, pid))
            return;
    }
    const char *const v1[][3] = { { "pids", "pids.max", "64" }, { "cpu", "cpu.cfs_quota_us", quota } };
    for (int i = 0; i < 2; i++) {
        snprintf(dir, sizeof dir, "/sys/fs/cgroup/%s/kit-grade-%ld", v1[i][0], slot);
        if (mkdir(dir, 0755) != 0 && errno != EEXIST)
            continue;
        snprintf(file, sizeof file, "%s/%s", dir, v1[i][1]);
        write_text(file, v1[i][2]);
        snprintf(file, sizeof file, "%s/cgroup.procs", dir);
        write_text(file, pid);
    }
}

/* The process that runs the test: in a sandbox it is two levels down. */
static pid_t innermost(pid_t pid)
{
    for (int level = 0; level < 2; level++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
        FILE *in = fopen(path, "r");
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
#else
static void enter_sandbox(uid_t uid) { (void)uid; }
static void join_slot_cgroups(long slot, long cpus) { (void)slot; (void)cpus; }
static pid_t innermost(pid_t pid) { return pid; }
#endif

/* In the child, between fork and exec: a process group of its own (so the
 * whole group can be killed), output to the log, the sandbox, limits, then
 * the test. */
static void exec_child(char *const argv[], const char *log_path, const struct limits *limits)
{
    setpgid(0, 0);
    int log = open(log_path ? log_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int nothing = open("/dev/null", O_RDONLY);
    if (log >= 0) {
        dup2(log, STDOUT_FILENO);
        dup2(log, STDERR_FILENO);
    }
    if (nothing >= 0)
        dup2(nothing, STDIN_FILENO);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (limits && limits->sandbox_uid > 0 && geteuid() == 0) {
        join_slot_cgroups(limits->sandbox_uid, limits->sandbox_cpus); /* inherited by all it starts */
        enter_sandbox((uid_t)limits->sandbox_uid);
    }
    if (limits) {
        set_limit(RLIMIT_CPU, limits->cpu_seconds);
        set_limit(RLIMIT_FSIZE, limits->file_size_mb << 20);
        set_limit(RLIMIT_CORE, 0);
        if (limits->address_space_mb > 0)
            set_limit(RLIMIT_AS, limits->address_space_mb << 20);
        if (limits->processes > 0)
            set_limit(RLIMIT_NPROC, limits->processes);
    }
    execvp(argv[0], argv);
    fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

struct outcome {
    int status;       /* from waitpid */
    bool timed_out;
    double seconds;
};

typedef void (*on_timeout_fn)(pid_t pid, void *ctx);

/* Fork, exec, and wait up to timeout_seconds without polling: SIGCHLD is
 * blocked and collected with sigtimedwait. */
static int run_process(char *const argv[], const char *log_path, const struct limits *limits,
                       double timeout_seconds, on_timeout_fn on_timeout, void *ctx, struct outcome *out)
{
    sigset_t child_signal, previous;
    sigemptyset(&child_signal);
    sigaddset(&child_signal, SIGCHLD);
    sigprocmask(SIG_BLOCK, &child_signal, &previous);
    double start = now_seconds();
    pid_t pid = fork();
    if (pid < 0) {
        sigprocmask(SIG_SETMASK, &previous, NULL);
        return errno;
    }
    if (pid == 0)
        exec_child(argv, log_path, limits);
    setpgid(pid, pid); /* also in the parent: no race with the kill below */
    memset(out, 0, sizeof *out);
    for (;;) {
        pid_t done = waitpid(pid, &out->status, WNOHANG);
        if (done == pid)
            break;
        double left = timeout_seconds - (now_seconds() - start);
        if (left <= 0) {
            out->timed_out = true;
            if (on_timeout)
                on_timeout(innermost(pid), ctx);
            kill(-pid, SIGKILL);
            waitpid(pid, &out->status, 0);
            break;
        }
        struct timespec wait = { (time_t)left, (long)((left - (double)(time_t)left) * 1e9) };
        sigtimedwait(&child_signal, NULL, &wait); /* a SIGCHLD or the time-out */
    }
    kill(-pid, SIGKILL); /* anything the test left behind in its group */
    out->seconds = now_seconds() - start;
    sigprocmask(SIG_SETMASK, &previous, NULL);
    return 0;
}

int list_tests(const char *binary, char names[][128], int max_names)
{
    char log[] = "/tmp/kit-list-XXXXXX";
    int fd = mkstemp(log);
    if (fd < 0)
        return -1;
    close(fd);
    char *argv[] = { (char *)binary, "--list", NULL };
    struct limits limits = { 30, 30, 0, 16, 0, 0, 0 };
    struct outcome outcome;
    int count = -1;
    if (run_process(argv, log, &limits, 30, NULL, NULL, &outcome) == 0 && !outcome.timed_out &&
        WIFEXITED(outcome.status) && WEXITSTATUS(outcome.status) == 0) {
        FILE *in = fopen(log, "r");
        count = 0;
        char line[256];
        while (in && count < max_names && fgets(line, sizeof line, in)) {
            line[strcspn(line, "\r\n")] = '\0';
            if (strncmp(line, "test_", 5) == 0)
                textf(names[count++], 128, "%s", line);
        }
        if (in)
            fclose(in);
    }
    unlink(log);
    return count;
}

/* ---- reading a test's log --------------------------------------------------- */

static char *read_log(const char *path)
{
    FILE *in = fopen(path, "r");
    if (in == NULL)
        return NULL;
    enum { KEEP = 1 << 20 }; /* the last megabyte is plenty */
    fseek(in, 0, SEEK_END);
    long size = ftell(in);
    long from = size > KEEP ? size - KEEP : 0;
    fseek(in, from, SEEK_SET);
    char *text = malloc((size_t)(size - from) + 1);
    size_t n = text ? fread(text, 1, (size_t)(size - from), in) : 0;
    if (text)
        text[n] = '\0';
    fclose(in);
    return text;
}

static void append_line(char *detail, size_t size, const char *line, size_t length)
{
    size_t used = strlen(detail);
    if (used + length + 2 >= size)
        return;
    memcpy(detail + used, line, length);
    detail[used + length] = '\n';
    detail[used + length + 1] = '\0';
}

static bool line_contains(const char *line, size_t length, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= length; i++)
        if (memcmp(line + i, needle, n) == 0)
            return true;
    return false;
}

/* Copies the lines that explain a failure: what the test said, where it
 * failed, and the seed; cmocka's own RUN/OK/summary lines are left out. */
static void failure_lines(const char *log, char *detail, size_t size, int max_lines)
{
    static const char *const prefixes[] = { "[  ERROR   ] --- ", "[   LINE   ] --- ", "[ seed     ] " };
    int kept = 0;
    for (const char *line = log; line && *line && kept < max_lines;) {
        const char *end = strchr(line, '\n');
        size_t length = end ? (size_t)(end - line) : strlen(line);
        const char *text = line;
        for (int p = 0; p < 3; p++) /* cmocka nests them: "[ ERROR ] --- [ LINE ] --- file:7" */
            while (strncmp(text, prefixes[p], strlen(prefixes[p])) == 0)
                text += strlen(prefixes[p]);
        bool noise = length == 0 || (text == line && line[0] == '[') || line_contains(line, length, "FAILED TEST(S)");
        if (!noise) {
            char copy[600];
            textf(copy, sizeof copy, "%.*s", (int)(length - (size_t)(text - line)), text);
            char *failure = strstr(copy, ": error: Failure!");
            if (failure) { /* "tests/x.c:19: error: Failure!" -> "at tests/x.c:19" */
                *failure = '\0';
                memmove(copy + 3, copy, strlen(copy) + 1);
                memcpy(copy, "at ", 3);
            }
            append_line(detail, size, copy, strlen(copy));
            kept++;
        }
        line = end ? end + 1 : NULL;
    }
}

static void last_lines(const char *log, char *detail, size_t size, int count)
{
    const char *start = log + strlen(log);
    for (int seen = 0; start > log && seen <= count; start--)
        if (start[-1] == '\n' && ++seen > count)
            break;
    append_line(detail, size, start, strlen(start));
}

/* The first sanitizer or valgrind report, cut to its headline and the
 * frames inside the kit's own sources. */
static void report_lines(const char *log, const char *headline, const char *root, char *detail, size_t size)
{
    const char *at = strstr(log, headline);
    if (at == NULL) {
        last_lines(log, detail, size, 6);
        return;
    }
    int kept = 0;
    for (const char *line = at; line && *line && kept < 14;) {
        const char *end = strchr(line, '\n');
        size_t length = end ? (size_t)(end - line) : strlen(line);
        bool frame = line_contains(line, length, "#") && root && line_contains(line, length, root);
        bool header = line == at || (length > 0 && line[0] != ' ' && line[0] != '=');
        if (frame || (header && kept < 8)) {
            char copy[600];
            snprintf(copy, sizeof copy, "%.*s", (int)(length < 590 ? length : 590), line);
            char *cut = root ? strstr(copy, root) : NULL; /* shorten absolute paths */
            if (cut)
                memmove(cut, cut + strlen(root), strlen(cut + strlen(root)) + 1);
            append_line(detail, size, copy, strlen(copy));
            kept++;
        }
        line = end ? end + 1 : NULL;
    }
}

static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV (invalid memory access: a NULL, freed or out-of-range pointer)";
    case SIGABRT: return "SIGABRT (abort: a failed assert(), or the C library found a double free or a corrupted heap or stack)";
    case SIGBUS: return "SIGBUS (bad memory access)";
    case SIGFPE: return "SIGFPE (arithmetic error)";
    case SIGILL: return "SIGILL (illegal instruction)";
    case SIGKILL: return "SIGKILL (killed: out of memory?)";
    case SIGXCPU: return "SIGXCPU (CPU time limit exceeded: a spinning thread?)";
    case SIGXFSZ: return "SIGXFSZ (output size limit exceeded)";
    case SIGPIPE: return "SIGPIPE";
    default: return "a signal";
    }
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
    struct limits limits = { 20, 20, 0, 64, 0, 0, 0 };
    struct outcome outcome;
    int err = run_process(argv, log, &limits, 20, NULL, NULL, &outcome);
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

/* ---- one test case --------------------------------------------------------- */

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

static bool pipe_has_token(int fd, const char *token)
{
    char buffer[256];
    ssize_t n = read(fd, buffer, sizeof buffer - 1);
    if (n <= 0)
        return false;
    buffer[n] = '\0';
    char expected[128];
    snprintf(expected, sizeof expected, "passed %s\n", token);
    return strcmp(buffer, expected) == 0;
}

static int build_argv(char **argv, char *wrapper_copy, const struct test_case *test)
{
    int argc = 0;
    for (char *save = NULL, *word = strtok_r(wrapper_copy, " ", &save); word && argc < MAX_ARGS - 4;
         word = strtok_r(NULL, " ", &save))
        argv[argc++] = word;
    argv[argc++] = (char *)test->binary;
    argv[argc++] = "--run";
    argv[argc++] = (char *)test->name;
    argv[argc] = NULL;
    return argc;
}

/* The stacks a test printed itself (kit_dump_stacks(), tests/support/
 * kit_stacks.c: a crash, a hang check, a failed pthread call) are cut out of
 * the log, so that the rest reads as the test's own words. */
static const char STACKS_BEGIN[] = "[ stacks   ] begin";
static const char STACKS_END[] = "[ stacks   ] end";

static char *cut_stacks(char *log)
{
    char *begin = log ? strstr(log, STACKS_BEGIN) : NULL;
    if (begin == NULL)
        return NULL;
    char *end = strstr(begin, STACKS_END);
    size_t length = end ? (size_t)(end - begin) : strlen(begin);
    char *stacks = malloc(length + 1);
    if (stacks) {
        memcpy(stacks, begin, length);
        stacks[length] = '\0';
    }
    const char *rest = end ? end + strlen(STACKS_END) : begin + length;
    memmove(begin, rest, strlen(rest) + 1);
    return stacks;
}

static void judge_crash(struct test_case *test, int sig, const char *log, const char *stacks,
                        const struct run_options *options)
{
    if (stacks == NULL) /* else the test said it itself, in words, below */
        textf(test->detail, sizeof test->detail, "killed by %s\n", signal_name(sig));
    if (log)
        failure_lines(log, test->detail, sizeof test->detail, 4);
    if (stacks) {
        append_line(test->detail, sizeof test->detail, "the thread that crashed, at the fault:", 38);
        summarise_threads(stacks, options, CRASHED_THREAD, test->detail, sizeof test->detail);
    }
}

/* A failed check shows the calls that led to it, when it sat in a helper
 * (one frame is the test's own line, shown already); anything else shows
 * where every thread was. */
static void explain_stacks(struct test_case *test, const char *stacks, const struct run_options *options)
{
    if (strncmp(stacks, "[ stacks   ] begin: the failed check", 36) == 0) {
        char chain[1500] = "";
        summarise_threads(stacks, options, REPORTING_THREAD, chain, sizeof chain);
        if (strstr(chain, " <- "))
            append_line(test->detail, sizeof test->detail, chain, strcspn(chain, "\n"));
        return;
    }
    append_line(test->detail, sizeof test->detail, "where each thread was at that moment:", 37);
    summarise_threads(stacks, options, ALL_THREADS, test->detail, sizeof test->detail);
}

static void judge_exit(struct test_case *test, int code, bool token_ok, const char *log, const char *stacks,
                       const struct run_options *options)
{
    if (code == 0 && token_ok) {
        test->verdict = V_PASSED;
    } else if (code == 0) {
        test->verdict = V_NO_RESULT;
        textf(test->detail, sizeof test->detail,
              "the test process exited with status 0 before the test finished (something called exit?)\n");
    } else if (code == 66 && log) {
        test->verdict = V_RACE;
        summarise_race(log, options, test->detail, sizeof test->detail);
        if (test->detail[0] == '\0')
            report_lines(log, "WARNING: ThreadSanitizer", options->source_root, test->detail, sizeof test->detail);
    } else if (code == 99 && log) {
        test->verdict = V_MEMORY;
        report_lines(log, strstr(log, "ERROR: ") ? "ERROR: " : "==", options->source_root, test->detail,
                     sizeof test->detail);
    } else {
        test->verdict = V_FAILED;
        if (log)
            failure_lines(log, test->detail, sizeof test->detail, 8);
        if (code == 127 || code == 3)
            last_lines(log ? log : "", test->detail, sizeof test->detail, 3);
        if (code == 126 && test->detail[0] == '\0') /* enter_sandbox() gave up before the test began */
            textf(test->detail, sizeof test->detail,
                  "the grader could not start this test in its sandbox (no process left for its user? "
                  "another grading run may be using the same SANDBOX_UID)\n");
    }
    if (stacks && test->verdict != V_PASSED)
        explain_stacks(test, stacks, options);
}

static void judge(struct test_case *test, const struct outcome *outcome, bool token_ok, char *log,
                  const struct run_options *options)
{
    int status = outcome->status;
    char *stacks = cut_stacks(log);
    if (outcome->timed_out)
        test->verdict = V_TIMED_OUT; /* the diagnosis is already in detail */
    else if (WIFSIGNALED(status)) {
        test->verdict = V_CRASHED;
        judge_crash(test, WTERMSIG(status), log, stacks, options);
    } else {
        judge_exit(test, WEXITSTATUS(status), token_ok, log, stacks, options);
    }
    free(stacks);
}

void run_test_case(struct test_case *test, const struct run_options *options)
{
    char log_path[1024];
    snprintf(log_path, sizeof log_path, "%s/%s.%s.log", options->log_dir, test->chapter, test->name);
    char wrapper_copy[1024];
    snprintf(wrapper_copy, sizeof wrapper_copy, "%s", options->wrapper ? options->wrapper : "");
    char *argv[MAX_ARGS];
    build_argv(argv, wrapper_copy, test);

    int result_pipe[2];
    char token[64], fd_text[16];
    test->detail[0] = '\0';
    if (pipe(result_pipe) != 0) {
        test->verdict = V_FAILED;
        snprintf(test->detail, sizeof test->detail, "runner: pipe: %s\n", strerror(errno));
        return;
    }
    fcntl(result_pipe[0], F_SETFD, FD_CLOEXEC);
    fcntl(result_pipe[0], F_SETFL, O_NONBLOCK);
    make_token(token, sizeof token);
    snprintf(fd_text, sizeof fd_text, "%d", result_pipe[1]);
    setenv("KIT_RESULT_FD", fd_text, 1);
    setenv("KIT_RESULT_TOKEN", token, 1);

    char stuck_threads[3000] = "";
    struct diagnosis diagnosis = { options, stuck_threads, sizeof stuck_threads };
    struct outcome outcome;
    int err = run_process(argv, log_path, &options->limits, options->limits.wall_seconds, diagnose_with_gdb,
                          &diagnosis, &outcome);
    unsetenv("KIT_RESULT_FD");
    unsetenv("KIT_RESULT_TOKEN");
    close(result_pipe[1]);
    bool token_ok = err == 0 && pipe_has_token(result_pipe[0], token);
    close(result_pipe[0]);
    if (err != 0) {
        test->verdict = V_FAILED;
        snprintf(test->detail, sizeof test->detail, "runner: cannot start the test: %s\n", strerror(err));
        return;
    }
    test->seconds = outcome.seconds;
    char *log = read_log(log_path);
    judge(test, &outcome, token_ok, log, options);
    if (outcome.timed_out)
        textf(test->detail, sizeof test->detail, "timed out after %.0f s - likely a deadlock or a lost wake-up\n%s",
              options->limits.wall_seconds, stuck_threads);
    if (test->verdict != V_PASSED) { /* the whole story is in the log: say where */
        char where[1100];
        snprintf(where, sizeof where, "full log: %s", log_path);
        append_line(test->detail, sizeof test->detail, where, strlen(where));
        char drawn[1000]; /* a test that failed on a schedule drew it */
        snprintf(drawn, sizeof drawn, "%s/schedules/%s.%s.svg", options->log_dir, test->chapter, test->name);
        if (log && strstr(log, "[ schedule ] ") && strstr(log, ": its schedule (")) {
            const char *note = "it failed on its one schedule, the same in every grading: the steps are in the log";
            append_line(test->detail, sizeof test->detail, note, strlen(note));
        }
        if (access(drawn, R_OK) == 0) {
            snprintf(where, sizeof where, "the failing schedule, drawn: %s", drawn);
            append_line(test->detail, sizeof test->detail, where, strlen(where));
        }
    }
    free(log);
}
