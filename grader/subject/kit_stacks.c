/**
 * @file kit_stacks.c
 * @brief Where every thread is: the test binary's own stacks, for crashes and hangs.
 *
 * When a test crashes, or its own hang check gives up on a thread, the
 * useful fact is where each thread stands - the student's line it crashed
 * on or waits at. The test process asks gdb to attach to itself and print
 * every thread's stack to stderr (the test's log), between two marker
 * lines; the grading runner cuts that block out of the log and shows, on
 * screen, the student's and the tests' frames only (grader_stacks.c). Run
 * by hand, the block is gdb's plain output.
 *
 * Everything here may run inside a signal handler: only write(), fork(),
 * exec, waitpid() and nanosleep(), no stdio and no allocation - but for the
 * last part of a crash's report on a schedule, which is guarded (below).
 */
#if defined(__linux__)
#define _GNU_SOURCE /* prctl(PR_GET_NAME) */
#include <sys/prctl.h>
#else
#define _POSIX_C_SOURCE 200809L
#endif
#include "kit_test.h"

#include "kit_sched.h"
#include "kit_thread.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void say(const char *text)
{
    size_t length = strlen(text);
    while (length > 0) {
        ssize_t n = write(STDERR_FILENO, text, length);
        if (n <= 0 && errno != EINTR)
            return;
        if (n > 0) {
            text += n;
            length -= (size_t)n;
        }
    }
}

/* A decimal number, without stdio. */
static void number_text(long value, char *out)
{
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + value % 10);
        value /= 10;
    } while (value > 0 && n < 23);
    while (n > 0)
        *out++ = digits[--n];
    *out = '\0';
}

/* Why gdb cannot be asked, or NULL if it can. */
static const char *no_stacks_reason(void)
{
    const char *preload = getenv("LD_PRELOAD");
    if (preload && strstr(preload, "vgpreload"))
        return "under valgrind: its own report shows the stacks";
    if (getenv("KIT_DEBUG"))
        return "a debugger runs this test: `thread apply all bt` shows them";
    return NULL;
}

/* The kernel's sleep: a crashed thread may be one the scheduler runs, whose
 * nanosleep (wrapped) would sleep on virtual time. */
int __real_nanosleep(const struct timespec *request, struct timespec *left);

/* Waits up to 30 s for gdb; a gdb that hangs is stopped, not waited for. */
static void wait_for_gdb(pid_t gdb)
{
    struct timespec tick = { 0, 50 * 1000 * 1000 };
    for (int ticks = 0; ticks < 600; ticks++) {
        int status;
        pid_t done = waitpid(gdb, &status, WNOHANG);
        if (done == gdb || (done < 0 && errno != EINTR))
            return;
        __real_nanosleep(&tick, NULL);
    }
    kill(gdb, SIGKILL);
    waitpid(gdb, NULL, 0);
    say("(gdb did not finish reading the stacks in 30 s)\n");
}

static volatile sig_atomic_t dumped; /* once is enough: later stacks would show the report itself */

/* Set behind a system-call filter (kit_serve.c): gdb is run by a helper. */
bool (*kit_stacks_helper)(void);

/* ---- The other threads of a schedule, after a crash -------------------------------
 * A schedule's threads are contexts of one OS thread: gdb shows the one
 * that crashed, not those parked at their switch points. The scheduler can
 * tell where they stand, with stdio and a run of addr2line - not safe in a
 * signal handler: if that faults, or takes 10 s, the process dies of the
 * crash's own signal at once (its report is printed already). */
static volatile sig_atomic_t crash_signal; /* while the other threads are told */

static void die_of_the_crash(int unused)
{
    (void)unused;
    sigset_t crash;
    sigemptyset(&crash);
    sigaddset(&crash, crash_signal);
    signal(crash_signal, SIG_DFL);
    sigprocmask(SIG_UNBLOCK, &crash, NULL);
    raise(crash_signal);
}

static void print_the_other_threads(int sig)
{
    if (sig == 0 || !kit_sched_active())
        return;
    crash_signal = sig;
    signal(SIGALRM, die_of_the_crash);
    alarm(10);
    kit_sched_print_parked_threads(3); /* after gdb's two: the controller's, and the one that crashed */
    alarm(0);
    crash_signal = 0;
}

bool kit_stacks_dumped(void)
{
    return dumped != 0;
}

void kit_note_stacks_dumped(void)
{
    dumped = 1;
}

/* gdb attached to this process: `thread apply all bt`, between the markers,
 * and after a crash (`sig`) on a schedule its other threads.
 * (The runner knows the reporting thread by this name in its stack.) */
static void kit_dump_stacks_with_gdb(const char *why, int sig)
{
    dumped = 1;
    const char *reason = no_stacks_reason();
    if (reason) {
        say("[ stacks   ] not shown: ");
        say(reason);
        say("\n");
        return;
    }
    char pid[24];
    number_text((long)getpid(), pid);
    say("[ stacks   ] begin: ");
    say(why);
    say("\n");
    if (kit_stacks_helper != NULL) { /* behind a system-call filter: the helper runs gdb */
        if (!kit_stacks_helper())
            say("(no stacks: the helper that runs gdb did not answer)\n");
        print_the_other_threads(sig);
        say("[ stacks   ] end\n");
        return;
    }
    /* vfork, not fork: fork takes the C library's malloc locks first, and a
     * crash inside malloc (a corrupted heap) holds one - fork would wait for
     * ever. The child only execs. */
    pid_t gdb = vfork();
    if (gdb == 0) {
        dup2(STDERR_FILENO, STDOUT_FILENO);
        execlp("gdb", "gdb", "-q", "-batch", "-nx", "-p", pid, "-ex", "set pagination off", "-ex",
               "set print frame-arguments none", "-ex", "thread apply all bt 40", (char *)NULL);
        say("(no stacks: gdb is not installed - install it to see where each thread was)\n");
        _exit(127);
    }
    if (gdb > 0)
        wait_for_gdb(gdb);
    else
        say("(no stacks: could not start gdb)\n");
    print_the_other_threads(sig);
    say("[ stacks   ] end\n");
}

void kit_dump_stacks(const char *why)
{
    if (kit_sched_active()) { /* the other threads are parked at switch points: the model knows their stacks */
        dumped = 1;
        kit_sched_dump_stacks(why, kit_last_error_text());
        return;
    }
    kit_dump_stacks_with_gdb(why, 0);
}

_Noreturn void kit_stop_test(const char *message, const char *file, int line)
{
    kit_sched_failure_begins(); /* (on a test's schedule: it may run again for its report, kit_sched.h) */
    char where[32] = "";
    say("[  ERROR   ] --- ");
    say(message);
    say("\n");
    kit_dump_stacks(message);
    if (file) {
        number_text(line, where);
        say("[   LINE   ] --- ");
        say(file);
        say(":");
        say(where);
        say(": error: Failure!\n");
    }
    say("[  FAILED  ] the test stopped here, with its threads still running\n");
    kit_verdict_stopped(); /* (never called from a signal handler: a hang check's, a misuse's) */
    fflush(stdout);
    _exit(1);
}

/* ---- crashes ---------------------------------------------------------------- */

static const char *crash_words(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV: an access to memory that is not there (a NULL, freed or out-of-range pointer)";
    case SIGBUS: return "SIGBUS: a bad memory access";
    case SIGFPE: return "SIGFPE: an arithmetic error (a division by zero?)";
    case SIGILL: return "SIGILL: an illegal instruction";
    case SIGABRT: return "SIGABRT: abort() - a failed assert(), or the C library found a corrupted heap or stack";
    default: return "a signal";
    }
}

static const int crash_signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };

/* Written before a part of a test starts its threads, read by the crash
 * handler: ready text, for a handler may not format. */
static char crash_context[1024];

void kit_crash_context(const char *text)
{
    snprintf(crash_context, sizeof crash_context, "%s", text ? text : "");
}

/* The first thread to crash reports; one that crashes while it does (two
 * threads often trip over the same freed memory) waits here for good, so
 * that the report is not cut short: the first ends the process. */
static atomic_flag crashing = ATOMIC_FLAG_INIT; /* lock-free: safe in a signal handler */
static atomic_bool crash_reported;              /* read by the scheduler's watch: not a stall */

bool kit_crash_in_progress(void)
{
    return atomic_load(&crash_reported);
}

/* The crashing thread's name. On a schedule it is the running thread of the
 * schedule (its name is its own, in its thread-local storage), and the OS
 * thread that runs it takes that name too, for gdb's list of threads. */
static void crashing_thread_name(char *name, size_t size)
{
    size_t length = 0;
    const char *own = kit_sched_active() ? kit_thread_name() : "?"; /* (named when it began: no formatting now) */
    while (own[length] != '\0' && length + 1 < size) {
        name[length] = own[length];
        length++;
    }
    name[length] = '\0';
#if defined(__linux__)
    if (kit_sched_active())
        prctl(PR_SET_NAME, name, 0, 0, 0);
    else
        prctl(PR_GET_NAME, name, 0, 0, 0);
#endif
}

static void on_crash(int sig, siginfo_t *info, void *context)
{
    (void)context;
    if (crash_signal != 0) /* the other threads of a schedule were being told: enough */
        die_of_the_crash(0);
    if (atomic_flag_test_and_set(&crashing)) {
        for (;;)
            pause();
    }
    atomic_store(&crash_reported, true);
    char name[32];
    crashing_thread_name(name, sizeof name);
    say("[  ERROR   ] --- the test crashed on thread ");
    say(name);
    say(" with ");
    say(crash_words(sig));
    say("\n");
    if (sig == SIGSEGV && kit_sched_stack_overflow(info->si_addr)) {
        say("[  ERROR   ] --- stack overflow in ");
        say(name);
        say(": it used up its stack (256 KB for each thread on a schedule) - a recursion that does not end, or "
            "a local array too big for a stack; allocate large arrays with malloc\n");
    }
    if (crash_context[0]) {
        say("[  ERROR   ] --- ");
        say(crash_context);
        say("\n");
    }
    kit_dump_stacks_with_gdb("a crash", sig); /* in a signal handler: gdb, and the scheduler's stdio last */
    signal(sig, SIG_DFL);
    raise(sig); /* delivered on return: the process dies of it, for the runner to see */
}

void kit_catch_crashes(void)
{
    if (KIT_SANITIZED || no_stacks_reason() != NULL)
        return;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_crash;
    sigemptyset(&action.sa_mask);
    /* Stays installed: a second crash must wait, not kill the report. On the
     * stack set aside for signals where there is one: a schedule's runner
     * has one, for a thread that ran out of its own (kit_sched_context.c). */
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    for (size_t i = 0; i < sizeof crash_signals / sizeof crash_signals[0]; i++)
        sigaction(crash_signals[i], &action, NULL);
}
