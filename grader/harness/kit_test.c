/**
 * @file kit_test.c
 * @brief The shared test main, assertion helpers, timed joins and stress helpers.
 */
#if defined(__linux__)
#define _GNU_SOURCE /* prctl(PR_SET_PTRACER), splice */
#include <fcntl.h>
#include <sys/prctl.h>
#else
#include <fcntl.h>
#define _POSIX_C_SOURCE 200809L
#endif
#include "kit_test.h"

#include <errno.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <limits.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kit_errno.h"
#include "kit_sched.h"
#include "kit_thread.h"
#include "kit_time.h"

/* ---- main ---------------------------------------------------------------- */

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* ---- the verdict --------------------------------------------------------------
 * Graded, a test runs as `test_x --run NAME --verdict PASS OUT RACE`: PASS
 * and RACE are pipes that each hold one of the grader's one-time tokens, OUT
 * a pipe back to the grader. When the test ends, the harness moves the PASS
 * token to OUT if cmocka says the test passed, then the RACE token if no
 * schedule of this process saw a data race (kit_sched_memory.c). It moves
 * them inside the kernel (splice): a token is never in this process's memory,
 * nor in its environment, arguments or files. The code under test may not
 * read or write descriptors (admission admits no such call), so it
 * cannot pass a verdict itself; a test process that ends early, even with
 * status 0, passes nothing. */
static int verdict_pass = -1, verdict_out = -1, verdict_race = -1;
static pid_t verdict_owner; /* the test process: a process it forks passes nothing */
/* What the verdict rests on of the code under test's own word: set by any
 * of the judge's threads, hence atomic; written after the tokens as "#N". */
static _Atomic unsigned verdict_words;

static void take_verdict_fds(int *argc, char **argv)
{
    if (*argc != 7 || strcmp(argv[3], "--verdict") != 0)
        return;
    verdict_pass = atoi(argv[4]);
    verdict_out = atoi(argv[5]);
    verdict_race = atoi(argv[6]);
    verdict_owner = getpid();
    fcntl(verdict_pass, F_SETFD, FD_CLOEXEC); /* no program the test starts (gdb, a server) inherits them */
    fcntl(verdict_out, F_SETFD, FD_CLOEXEC);
    fcntl(verdict_race, F_SETFD, FD_CLOEXEC);
    *argc = 3;
}

static void move_token(int from)
{
#if defined(__linux__)
    while (splice(from, NULL, verdict_out, NULL, 256, 0) > 0)
        ;
#else
    char token[256];
    ssize_t n = read(from, token, sizeof token);
    if (n > 0 && write(verdict_out, token, (size_t)n) != n)
        perror("verdict");
#endif
}

/* After the tokens, "#" and what the verdict rests on of the code under
 * test's word, in words the grader shows as they are ("#leaks, futile
 * wake-ups"); nothing when it rests on none. */
static void write_words(int fd, unsigned words)
{
    static const char *const names[] = { "leaks", "allocations made", "injected wake-ups", "futile wake-ups",
                                         "scenarios' checks once quiet", "threads it runs",
                                         "a schedule it gave up on", "commands it says it sent",
                                         "what its processes say they did" };
    char text[256] = "";
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
        if (words & (1u << i))
            snprintf(text + strlen(text), sizeof text - strlen(text), "%s%s", text[0] ? ", " : "#", names[i]);
    if (text[0] && write(fd, text, strlen(text)) < 0)
        perror("verdict");
}

/* The race token says one thing only: no schedule of this process met a data
 * race. A test stopped before its end - a failed check with threads still
 * running, a deadlock, a hang check, a misuse - gives it too when it saw
 * none: a hang is no race, and costs the race-free line nothing by itself. */
static bool report_run_passed(void);

static void give_verdict(bool passed)
{
    if (passed && report_run_passed())
        passed = false;
    kit_sched_print_race();
    if (verdict_out < 0 || getpid() != verdict_owner)
        return;
    if (passed) {
        kit_sched_print_wakeups();
        move_token(verdict_pass);
    }
    if (!kit_sched_saw_race())
        move_token(verdict_race);
    write_words(verdict_out, verdict_words);
    close(verdict_pass);
    close(verdict_race);
    close(verdict_out);
    verdict_out = -1;
}

void kit_verdict_rests_on(unsigned words)
{
    verdict_words |= words;
}

void kit_verdict_end(bool passed)
{
    give_verdict(passed);
}

void kit_verdict_stopped(void)
{
    give_verdict(false);
}

/* ---- Graded on one schedule -------------------------------------------------
 * With KIT_SCHEDULE_TESTS=SEED (the grader sets it), a test run alone
 * (--run) runs on one schedule of the scheduler (kit_sched.h), seeded from
 * SEED and its name: the same submission then meets the same interleaving
 * in every grading, and a race it trips over costs the same points every
 * time - in the stress tests too, whose many operations make a long random
 * walk of one schedule. Explorations (_explore_) search schedules of their
 * own; tests marked kit_real_threads_test() need real threads: a plain
 * memory race, timing, a server. A test that cannot run on the model -
 * its code blocks in a call the scheduler does not control, say - runs
 * again, on real threads, in a fresh process. Sanitizer builds never
 * schedule: ThreadSanitizer must see the threads really run at once. */
int kit_real_threads;

static uint64_t schedule_seed; /* 0: every test on real threads */
static char **test_argv;

/* ---- A failing test's run for its report --------------------------------------
 * A test that fails on its one schedule runs again on it from its start, in
 * a fresh process of the same program (KIT_REPORT_RUN=1), which follows the
 * lines its threads run - the paths of kit_sched_changes.c, which its report
 * names and which a test that passes never pays for. The schedule is the
 * same, so the test fails the same way; that run prints nothing until its
 * failure begins (quiet: its output up to there is the first run's, in the
 * log already), so the log reads as one run's. */
static int quiet_out = -1, quiet_err = -1; /* the output while the run for the report is quiet */
static _Noreturn void run_again(const char *test);

static void keep_quiet(void)
{
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    quiet_out = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    quiet_err = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
    if (null < 0 || quiet_out < 0 || quiet_err < 0 || dup2(null, STDOUT_FILENO) < 0 ||
        dup2(null, STDERR_FILENO) < 0) {
        fprintf(stderr, "[ schedule ] the run for the report could not keep quiet: %s\n", strerror(errno));
        quiet_out = quiet_err = -1; /* (it says all, twice) */
    }
    if (null >= 0)
        close(null);
}

/* The output again, once the failure begins. */
static void speak(void)
{
    if (quiet_out < 0)
        return;
    fflush(stdout);
    fflush(stderr);
    dup2(quiet_out, STDOUT_FILENO);
    dup2(quiet_err, STDERR_FILENO);
    close(quiet_out);
    close(quiet_err);
    quiet_out = quiet_err = -1;
}

/* kit_sched_on_failure: before a word of a failure on the test's schedule. */
static void failure_begins(void)
{
    if (getenv("KIT_REPORT_RUN") == NULL && getenv("KIT_DEBUG") == NULL) {
        setenv("KIT_REPORT_RUN", "1", 1);
        run_again(test_argv && test_argv[1] && test_argv[2] ? test_argv[2] : "the test");
    }
    speak();
}

/* A run for the report that ended without failing (not expected: the
 * schedule is the same): the test failed all the same, and says so. */
static bool report_run_passed(void)
{
    if (quiet_out < 0)
        return false;
    speak();
    fprintf(stderr, "[  ERROR   ] --- the test failed on its schedule, and passed when it ran again on it for its "
            "report: its report is not shown\n");
    return true;
}

static bool on_a_schedule(const struct CMUnitTest *test)
{
    if (schedule_seed == 0 || test->initial_state == &kit_real_threads)
        return false;
    return strstr(test->name, "_explore_") == NULL;
}

static void schedule_from_env(void)
{
    const char *text = getenv("KIT_SCHEDULE_TESTS");
    schedule_seed = text && !KIT_SANITIZED ? strtoull(text, NULL, 10) : 0;
#if defined(__GLIBC__)
    /* One arena: which arena a thread's first malloc takes depends on which
     * threads have ended in real time, and what a use after free reads with it. */
    if (schedule_seed != 0)
        mallopt(M_ARENA_MAX, 1);
#endif
    const char *because = getenv("KIT_REAL_THREADS_BECAUSE");
    if (because)
        fprintf(stderr, "[ schedule ] on real threads, because on its schedule: %s\n", because);
    if (getenv("KIT_RUN_AGAIN_ON_ITS_WORD") != NULL)
        kit_verdict_rests_on(KIT_WORD_RERUN); /* a judged test the subject gave its schedule up on */
    if (schedule_seed != 0) {
        kit_sched_on_failure = failure_begins;
        if (getenv("KIT_REPORT_RUN") != NULL && getenv("KIT_DEBUG") == NULL)
            keep_quiet();
    }
}

/* The same process image, the same test, without the schedule. */
/* The same process image, the same test, with the environment as changed. */
static _Noreturn void run_again(const char *test)
{
    speak(); /* (a run for the report that gave up says so) */
    fflush(stdout);
    fflush(stderr);
    if (verdict_out >= 0) { /* the same descriptors, still unread, for the run again */
        fcntl(verdict_pass, F_SETFD, 0);
        fcntl(verdict_out, F_SETFD, 0);
        fcntl(verdict_race, F_SETFD, 0);
    }
    execv("/proc/self/exe", test_argv);
    execvp(test_argv[0], test_argv);
    fprintf(stderr, "[  ERROR   ] --- the harness could not run %s again: %s\n", test, strerror(errno));
    _exit(1);
}

static _Noreturn void run_again_on_real_threads(const char *test, const char *reason)
{
    fprintf(stderr, "[ schedule ] %s cannot run on one schedule: %s\n[ schedule ] it runs again, on real threads\n",
            test, reason);
    unsetenv("KIT_SCHEDULE_TESTS");
    setenv("KIT_REAL_THREADS_BECAUSE", reason, 1);
    run_again(test);
}

/* A racy test that could not finish on its schedule once its racing places
 * were made switch points - they took it past the model's limit, or the race
 * they let bite corrupted memory and a thread stalled in malloc: the same
 * test again on the same schedule without those points (its race is still
 * reported), so that it ends the same way in every grading instead of on
 * real threads. */
static _Noreturn void run_again_without_race_points(const char *test, const char *reason)
{
    fprintf(stderr, "[ schedule ] %s could not finish its schedule once its data races were made switch points: %s"
            "\n[ schedule ] it runs again on the same schedule without them (its race is still reported)\n", test,
            reason);
    setenv("KIT_NO_RACE_POINTS", "1", 1);
    run_again(test);
}

/* A judged test whose schedule the subject gave up on (kit_judge.c): run
 * again, as a test of one process does. */
_Noreturn void kit_test_run_again(const char *reason, bool saw_race)
{
    const char *test = test_argv && test_argv[1] && test_argv[2] ? test_argv[2] : "the test";
    setenv("KIT_RUN_AGAIN_ON_ITS_WORD", "1", 1); /* (the subject's word that it could not: labelled so) */
    if (saw_race && getenv("KIT_NO_RACE_POINTS") == NULL)
        run_again_without_race_points(test, reason);
    run_again_on_real_threads(test, reason);
}

/* Each test runs through this trampoline, which arms the crash report
 * first (cmocka installs its own signal handlers just before each test, and
 * they would only print the signal's number). Tests run in order, one after
 * another, so the n-th call is the n-th test. */
static const struct CMUnitTest *running_tests;
static size_t next_test;

static void run_with_crash_report(void **state)
{
    const struct CMUnitTest *test = &running_tests[next_test++];
    kit_catch_crashes();
    if (!on_a_schedule(test)) {
        test->test_func(state);
        return;
    }
    char reason[512];
    if (kit_sched_run_test(test->name, test->test_func, state, schedule_seed, reason, sizeof reason))
        return;
    if (kit_sched_saw_race() && getenv("KIT_NO_RACE_POINTS") == NULL)
        run_again_without_race_points(test->name, reason);
    run_again_on_real_threads(test->name, reason);
}

static int run_armed(const char *group, const struct CMUnitTest *tests, size_t count)
{
    struct CMUnitTest *armed = calloc(count, sizeof *armed);
    if (armed == NULL)
        return _cmocka_run_group_tests(group, tests, count, NULL, NULL);
    for (size_t i = 0; i < count; i++) {
        armed[i] = tests[i];
        armed[i].test_func = run_with_crash_report;
    }
    running_tests = tests;
    next_test = 0;
    int failed = _cmocka_run_group_tests(group, armed, count, NULL, NULL);
    free(armed);
    return failed;
}

int kit_test_main(int argc, char **argv, const struct CMUnitTest *tests, size_t count, const char *file)
{
#if defined(__linux__) && defined(PR_SET_PTRACER)
    /* Let the runner's gdb attach to a stuck test and print its threads. */
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
#endif
    kit_thread_set_name("main");
    if (kit_chaos_from_env())
        fprintf(stderr, "[ chaos    ] KIT_CHAOS=%s\n", getenv("KIT_CHAOS"));
    test_argv = argv;
    take_verdict_fds(&argc, argv);

    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < count; i++)
            printf("%s\n", tests[i].name);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "--run") == 0) {
        size_t i = 0;
        while (i < count && strcmp(tests[i].name, argv[2]) != 0)
            i++;
        if (i == count) {
            fprintf(stderr, "%s: no test named %s\n", argv[0], argv[2]);
            return 3;
        }
        schedule_from_env();
        int failed = run_armed(argv[2], &tests[i], 1);
        kit_verdict_end(failed == 0);
        return failed == 0 ? 0 : 1;
    }
    if (argc != 1) {
        fprintf(stderr, "usage: %s [--list | --run TEST_NAME [--verdict PASS OUT RACE]]\n", argv[0]);
        return 2;
    }
    int failed = run_armed(base_name(file), tests, count);
    kit_sched_print_race();
    return failed == 0 ? 0 : 1;
}

/* ---- assertions ---------------------------------------------------------- */

static void say_where_the_value_came_from(const char *expr, const char *file, int line);

void kit_assert_code(int got, int want, const char *expr, const char *file, int line)
{
    if (got == want)
        return;
    if (got == ENOSYS) {
        /* tests/01-monitor-queue/test_msgq.c -> exercises/01-monitor-queue/ */
        const char *chapter = strstr(file, "tests/");
        int length = chapter ? (int)strcspn(chapter + 6, "/") : 0;
        print_error("%s returned ENOSYS: not implemented yet - write it in exercises/%.*s/\n", expr, length,
                    chapter ? chapter + 6 : "");
    } else {
        print_error("%s returned %s (%d), expected %s\n", expr, kit_errno_name(got), got,
                    want == 0 ? "0 (success)" : kit_errno_name(want));
    }
    if (got == ENOSYS)
        kit_skip_caller_stack(); /* "not written yet" needs no stack */
    else
        say_where_the_value_came_from(expr, file, line);
    _fail(file, line);
}

_Noreturn void kit_exec_subject(const char *program, const char *mode)
{
    char *argv[40];
    int argc = 0;
    char *wrapper = getenv("KIT_SUBJECT_WRAPPER") ? strdup(getenv("KIT_SUBJECT_WRAPPER")) : NULL;
    for (char *save = NULL, *word = wrapper ? strtok_r(wrapper, " ", &save) : NULL; word && argc < 36;
         word = strtok_r(NULL, " ", &save))
        argv[argc++] = word;
    argv[argc++] = (char *)program;
    /* Under valgrind or setarch the wrapper's own calls are not the list's: no
     * filter then; nor for make explore on the student's own machine
     * (KIT_SUBJECT_UNFILTERED, which the grader clears), whose explorer draws
     * a failing schedule into a file. */
    char unfiltered[64];
    snprintf(unfiltered, sizeof unfiltered, "%s-unfiltered", mode);
    bool filtered = wrapper == NULL && getenv("KIT_SUBJECT_UNFILTERED") == NULL;
    argv[argc++] = filtered ? (char *)mode : unfiltered;
    argv[argc] = NULL;
    execvp(argv[0], argv);
    fprintf(stderr, "[  ERROR   ] --- the test could not start the code under test (%s): %s\n", program,
            strerror(errno));
    _exit(127);
}

void kit_fail_at(const char *file, int line, const char *format, ...)
{
    char message[4096];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    print_error("%s\n", message);
    _fail(file, line);
}

/* ---- cmocka's checks, in words ----------------------------------------------
 * kit_test.h redefines cmocka's checks (assert_int_equal, assert_ptr_equal,
 * assert_true, ...) as the kit_assert_* functions below, which name the
 * expression the test wrote; the test binaries are linked with --wrap for
 * the rest (assert_in_range) and for _fail(), so every failure - ours and
 * cmocka's - goes through one _fail(), which first prints the failing
 * thread's stack: when the check sits in a test's helper, the stack names
 * the test's own line that called it. */
void __real__fail(const char *const file, const int line);
void __wrap__fail(const char *const file, const int line);
void __wrap__assert_in_range(const LargestIntegralType value, const LargestIntegralType minimum,
                             const LargestIntegralType maximum, const char *const file, const int line);

static bool skip_caller_stack;

void kit_skip_caller_stack(void)
{
    skip_caller_stack = true;
}

/* cmocka leaves a failed test by a jump out of its function. While threads
 * the test started still run, they may be using its local variables - a
 * struct on its stack, a queue it was about to destroy - and the jump would
 * hand that memory to whatever runs next ("stack smashing detected", blamed
 * on the student). The test process then ends here instead, failed. */
void __wrap__fail(const char *const file, const int line)
{
    char note[800];
    if (kit_sched_active() && kit_sched_clock_note(note, sizeof note))
        fprintf(stderr, "note: %s\n", note);
    if (!skip_caller_stack && !kit_stacks_dumped())
        kit_dump_stacks("the failed check");
    skip_caller_stack = false;
    kit_verdict_end(false); /* a failed check is a failed test, whatever cmocka is later made to say */
    int alive = kit_threads_alive();
    if (alive > 0 || kit_sched_active()) { /* (a scheduled thread is not cmocka's: it cannot jump there) */
        fprintf(stderr, "[   LINE   ] --- %s:%d: error: Failure!\n", file, line);
        fprintf(stderr, "[  FAILED  ] the test stopped here: %d of its threads still run\n", alive);
        fflush(stdout);
        fflush(stderr);
        _exit(1);
    }
    __real__fail(file, line);
}

/* cmocka's print_error, which every failed check calls with its words: on
 * a schedule the text is kept, by the thread of the schedule that failed
 * (kit_sched_error_text), for the schedule's report to name what failed. */
void __wrap_print_error(const char *const format, ...);
/* The judge's (kit_judge_explore.c), replaying a written-down test: the
 * subject's copy printed the words of the same failed check already. */
bool kit_check_words_printed(void) __attribute__((weak));

void __wrap_print_error(const char *const format, ...)
{
    kit_sched_failure_begins(); /* (on a test's schedule: it may run again for its report, kit_sched.h) */
    va_list args;
    size_t size;
    char *kept = kit_sched_error_text(&size);
    if (kept != NULL) {
        char text[1024];
        va_start(args, format);
        vsnprintf(text, sizeof text, format, args);
        va_end(args);
        const char *words = strncmp(text, "ERROR: ", 7) == 0 ? text + 7 : text; /* fail_msg's prefix */
        size_t used = strncmp(words, "  ", 2) == 0 ? strlen(kept) : 0; /* a line more of the same failure */
        if (used > 0 && used + 1 < size)
            kept[used++] = '\n';
        snprintf(kept + used, size - used, "%.*s", (int)strcspn(words, "\n"), words);
    }
    if (kit_check_words_printed != NULL && kit_check_words_printed())
        return;
    va_start(args, format);
    vfprintf(stderr, format, args); /* whole: cmocka's own print cuts a message at 1024 bytes */
    va_end(args);
}

const char *kit_last_error_text(void)
{
    size_t size;
    const char *kept = kit_sched_error_text(&size);
    return kept != NULL ? kept : "";
}

/* A value as a student reads it: a number, NULL, or "a pointer" (an address
 * in decimal or hex tells nothing). */
static void describe(LargestIntegralType value, char *out, size_t size)
{
    long long number = (long long)value;
    if (value == 0)
        snprintf(out, size, "0 (or NULL)");
    else if (number > -(1LL << 40) && number < (1LL << 40))
        snprintf(out, size, "%lld", number);
    else
        snprintf(out, size, "a pointer");
}

/* The expected side as the test wrote it, with its value where the text is
 * not the value itself ("3 (FEW)", but "1", "0 (or NULL)"). */
static void describe_expected(LargestIntegralType value, const char *text, char *out, size_t size)
{
    char number[64];
    describe(value, number, sizeof number);
    if (value == 0)
        snprintf(number, sizeof number, "%s", strcmp(text, "NULL") == 0 ? "NULL" : "0");
    bool plain = strcmp(number, text) == 0 || (value == 0 && (strcmp(text, "0") == 0 || strcmp(text, "NULL") == 0));
    if (plain)
        snprintf(out, size, "%s", number);
    else
        snprintf(out, size, "%s (%s)", number, text);
}

/* "file.c:12 in fn" -> its line, when its file is @p file's (by base name); else 0. */
static int line_in_file(const char *place, const char *file)
{
    const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
    size_t length = strlen(base);
    if (strncmp(place, base, length) != 0 || place[length] != ':')
        return 0;
    return atoi(place + length + 1);
}

/* Whether the check's words name another function of @p function's module
 * ("msgq_put" where the last call was msgq_close): the value then came from
 * that call, on another thread, not from the checking thread's last one. */
static bool names_another_call(const char *words, const char *function)
{
    static const char identifier[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_";
    size_t prefix = strcspn(function, "_") + 1, length = strspn(function, identifier);
    if (prefix > length)
        return false; /* no module prefix ("msgq_") to look for */
    for (const char *at = words; *at; at++) {
        if (strncmp(at, function, prefix) != 0 || (at > words && strchr(identifier, at[-1]) != NULL && at[-1]))
            continue;
        size_t name = strspn(at, identifier);
        if (name > prefix && (name != length || strncmp(at, function, length) != 0))
            return true;
    }
    return false;
}

/* A failed check at file:line whose value came from a call into the student's
 * code on that line: name the function, and the last line of it that read or
 * wrote memory before it returned (where a wrong value is usually made). The
 * call must be on the check's line or just above it (a check written over a
 * few lines), and the check's words (@p expr) must not name another call of
 * the module, or nothing is said: a guess that points the wrong way is worse
 * than none. */
static void say_where_the_value_came_from(const char *expr, const char *file, int line)
{
    kit_code_call_t call;
    if (!kit_last_call(&call) || call.touched == NULL)
        return;
    void *pcs[3] = { call.site, call.function, call.touched };
    char places[3][160];
    kit_describe_places(pcs, 3, places);
    int call_line = line_in_file(places[0], file);
    const char *function = strstr(places[1], " in ");
    if (call_line == 0 || call_line > line || call_line < line - 3 || function == NULL ||
        names_another_call(expr, function + 4))
        return;
    char touched[160];
    snprintf(touched, sizeof touched, "%.*s", (int)strcspn(places[2], " "), places[2]);
    if (strchr(touched, ':') == NULL)
        return; /* the earlier chapters' reference has no lines to name */
    print_error("  %s returned it; the last line of that call to read or write memory was %s\n", function + 4, touched);
}

void kit_assert_truth(bool value, bool want, const char *expr, const char *file, int line)
{
    if (value == want)
        return;
    if (want)
        print_error("this should hold, and does not: %s\n", expr);
    else
        print_error("this should not hold, and does: %s\n", expr);
    say_where_the_value_came_from(expr, file, line);
    _fail(file, line);
}

void kit_assert_pointer(bool set, bool want_set, const char *expr, const char *file, int line)
{
    if (set == want_set)
        return;
    if (want_set)
        print_error("%s is NULL, expected a pointer\n", expr);
    else
        print_error("%s is a pointer, expected NULL\n", expr);
    say_where_the_value_came_from(expr, file, line);
    _fail(file, line);
}

void kit_assert_values(LargestIntegralType a, LargestIntegralType b, bool want_equal, const char *expr_a,
                       const char *expr_b, const char *file, int line)
{
    if ((a == b) == want_equal)
        return;
    char got[64], expected[192];
    describe(a, got, sizeof got);
    describe_expected(b, expr_b, expected, sizeof expected);
    if (a == 0 && b != 0 && strncmp(expected, "a pointer", 9) != 0)
        snprintf(got, sizeof got, "0"); /* a count, not a pointer: no "(or NULL)" */
    if (!want_equal)
        print_error("%s is %s, which the test expected it not to be\n", expr_a, got);
    else if (strcmp(got, "a pointer") == 0 && strncmp(expected, "a pointer", 9) == 0)
        print_error("%s is one pointer, expected another (%s)\n", expr_a, expr_b);
    else
        print_error("%s is %s, expected %s\n", expr_a, got, expected);
    say_where_the_value_came_from(expr_a, file, line);
    _fail(file, line);
}

void kit_assert_text(const char *a, const char *b, const char *expr, const char *file, int line)
{
    if (a && b && strcmp(a, b) == 0)
        return;
    print_error("%s is the text \"%s\", expected \"%s\"\n", expr, a ? a : "(NULL)", b ? b : "(NULL)");
    _fail(file, line);
}

void __wrap__assert_in_range(const LargestIntegralType value, const LargestIntegralType minimum,
                             const LargestIntegralType maximum, const char *const file, const int line)
{
    if (value >= minimum && value <= maximum)
        return;
    print_error("got %lld, expected a value from %lld to %lld\n", (long long)value, (long long)minimum,
                (long long)maximum);
    _fail(file, line);
}

/* ---- workers ------------------------------------------------------------- */

static void *worker_body(void *raw)
{
    kit_worker_t *worker = raw;
    worker->result = worker->fn(worker->arg);
    kit_latch_count_down(&worker->finished);
    return NULL;
}

void kit_worker_start_at(kit_worker_t *worker, const char *name, void *(*fn)(void *), void *arg, const char *file,
                         int line)
{
    memset(worker, 0, sizeof *worker);
    worker->fn = fn;
    worker->arg = arg;
    int err = kit_latch_init(&worker->finished, 1);
    if (err != 0)
        kit_fail_at(file, line, "the test could not set up thread %s: %s", name, kit_errno_name(err));
    err = kit_thread_start(&worker->thread, name, worker_body, worker);
    if (err != 0)
        kit_fail_at(file, line, "the test could not start thread %s: %s", name, kit_errno_name(err));
}

bool kit_worker_done(kit_worker_t *worker)
{
    return kit_latch_wait(&worker->finished, 0) == 0;
}

int kit_worker_join(kit_worker_t *worker, long timeout_ms, void **result)
{
    if (worker->joined) {
        if (result)
            *result = worker->result;
        return 0;
    }
    if (kit_latch_wait(&worker->finished, timeout_ms) != 0)
        return ETIMEDOUT;
    pthread_join(worker->thread, NULL);
    kit_latch_destroy(&worker->finished);
    worker->joined = true;
    if (result)
        *result = worker->result;
    return 0;
}

/* KIT_DEBUG=1 (make debug): a hang stays a hang, for the debugger to see.
 * KIT_SLOW=1 (make valgrind, make tsan): eight times as long - there a judged
 * test's every call crosses between two instrumented processes. */
static long hang_limit_ms(void)
{
    return getenv("KIT_DEBUG") ? LONG_MAX / 4 : getenv("KIT_SLOW") ? 8 * KIT_HANG_MS : KIT_HANG_MS;
}

void *kit_worker_must_finish_at(kit_worker_t *worker, const char *what, const char *file, int line)
{
    void *result = NULL;
    if (getenv("KIT_DEBUG") && kit_sched_active()) {
        /* make debug, on a schedule: no bound, so that a thread that never
         * finishes is the scheduler's deadlock, reported (and stopped at) at once. */
        kit_latch_wait(&worker->finished, LONG_MAX);
        kit_worker_join(worker, 0, &result);
        return result;
    }
    long limit = hang_limit_ms();
    for (long waited = 0; kit_worker_join(worker, KIT_HANG_MS, &result) != 0;) {
        waited += KIT_HANG_MS;
        if (waited >= limit) {
            char message[512];
            snprintf(message, sizeof message, "%s: still blocked after %ld ms%s - a lost wake-up or a deadlock",
                     what, KIT_HANG_MS, kit_sched_active() ? " of the schedule's virtual time" : "");
            kit_stop_test(message, file, line);
        }
    }
    return result;
}

void kit_worker_must_block_at(kit_worker_t *worker, long ms, const char *what, const char *file, int line)
{
    kit_sleep_ms(ms);
    if (kit_worker_done(worker))
        kit_fail_at(file, line, "%s: returned within %ld ms, but it should still be waiting", what, ms);
}

/* ---- groups of threads --------------------------------------------------- */

struct gated {
    kit_gate_t *gate;
    void *(*fn)(void *);
    void *arg;
};

static void *gated_body(void *raw)
{
    struct gated *gated = raw;
    kit_gate_wait(gated->gate);
    return gated->fn(gated->arg);
}

void kit_test_run_group_at(size_t count, const char *name, void *(*fn)(void *), void *args, size_t arg_size,
                           const char *file, int line)
{
    /* On the heap, not on this frame: after a failure the threads may go on using them. */
    kit_gate_t *gate = calloc(1, sizeof *gate);
    kit_worker_t *workers = calloc(count, sizeof *workers);
    struct gated *gated = calloc(count, sizeof *gated);
    if (gate == NULL || workers == NULL || gated == NULL || kit_gate_init(gate) != 0)
        kit_fail_at(file, line, "the test could not set up %zu %s threads", count, name);
    for (size_t i = 0; i < count; i++) {
        char thread_name[KIT_THREAD_NAME_MAX];
        snprintf(thread_name, sizeof thread_name, "%s-%zu", name, i);
        gated[i] = (struct gated){ gate, fn, (char *)args + i * arg_size };
        kit_worker_start_at(&workers[i], thread_name, gated_body, &gated[i], file, line);
    }
    if (kit_gate_await_arrivals(gate, count, KIT_HANG_MS) != 0)
        kit_stop_test("threads did not reach the start gate", file, line);
    kit_gate_open(gate);
    for (size_t i = 0; i < count; i++)
        kit_worker_must_finish_at(&workers[i], name, file, line);
    kit_gate_destroy(gate);
    free(gated);
    free(workers);
    free(gate);
}

/* ---- stress helpers -------------------------------------------------------- */

uint64_t kit_test_seed(void)
{
    static uint64_t seed;
    if (seed == 0) {
        const char *text = getenv("SEED");
        seed = text ? strtoull(text, NULL, 10) : 0;
        if (seed == 0)
            seed = (uint64_t)kit_now_ns() % 1000000007ULL + 1;
        /* Printed so that a failing run says how to replay it (by the judge
         * alone, when the subject runs a copy of the test: kit_transcript.c). */
#if !defined(KIT_TRANSCRIPT_COPY)
        fprintf(stderr, "[ seed     ] SEED=%llu reproduces this run\n", (unsigned long long)seed);
#endif
    }
    return seed;
}

long kit_test_repeat(long base)
{
    const char *text = getenv("KIT_REPEAT_SCALE");
    long scale = text ? atol(text) : 1;
    return base * (scale > 0 ? scale : 1);
}

/* Defined by the judge's engine (grader/judge/kit_judge.c) and by the
 * subject's copy of a judged test (grader/subject/kit_transcript.c), so
 * that both copies of a test size their loops alike; not in one process. */
extern const bool kit_judged_program __attribute__((weak));

bool kit_test_judged(void)
{
    return &kit_judged_program != NULL && kit_judged_program;
}

bool kit_test_slow(void)
{
    return getenv("KIT_SLOW") != NULL || (kit_test_judged() && !kit_sched_active());
}

void kit_jitter(kit_rng_t *rng, unsigned max_us)
{
    uint64_t roll = kit_rng_below(rng, 8);
    if (roll < 5)
        return; /* mostly: no pause at all, so the fast path is exercised too */
    if (roll < 7)
        sched_yield();
    else
        kit_sleep_us((long)kit_rng_below(rng, max_us + 1));
}

/* ---- allocation failures ------------------------------------------------------ */

long kit_sweep_allocation_failures_at(const char *what, int (*attempt)(void *ctx), void *ctx, const char *file,
                                      int line)
{
    for (long nth = 1;; nth++) {
        long before = kit_live_allocations();
        long calls_before = kit_allocation_calls();
        kit_fail_allocation(nth);
        int err = attempt(ctx);
        kit_fail_allocation(0); /* disarmed before any assert can leave it armed */
        long made = kit_allocation_calls() - calls_before;
        if (made < nth) { /* no allocation failed: this was a normal run */
            if (err != 0)
                kit_fail_at(file, line, "%s returned %s with every allocation succeeding", what, kit_errno_name(err));
            return made;
        }
        if (err != ENOMEM && err != 0) /* 0: it coped (attempt checked nothing was lost) */
            kit_fail_at(file, line, "%s with allocation %ld of %ld failing returned %s, expected ENOMEM", what, nth,
                        made, kit_errno_name(err));
        long leaked = kit_live_allocations() - before;
        if (leaked > 0) {
            char places[800];
            kit_leak_places(leaked, places, sizeof places);
            kit_fail_at(file, line, "%s with allocation %ld failing leaked %ld block(s)%s", what, nth, leaked, places);
        }
        if (leaked < 0)
            kit_fail_at(file, line, "%s with allocation %ld failing freed %ld block(s) more than it allocated: a "
                        "block freed twice, or one it did not allocate", what, nth, -leaked);
    }
}
