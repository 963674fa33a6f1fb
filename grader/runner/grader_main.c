/**
 * @file grader_main.c
 * @brief kit-grade: run a kit's tests chapter by chapter, one process per test, and score them.
 *
 * Modes:
 * - `test`   (make test, make tsan, make valgrind): every test must pass;
 *            exit 1 otherwise, or if the rubric and the tests disagree.
 * - `grade`  (make grade): score against tests/rubric.tsv, exit 0 with the report.
 *            Each test runs confined (--confine: kit-confine), and a chapter
 *            whose files admission refused (--gate: its findings) scores 0.
 * - `mutant` (make mutants): stop at the first test that does not pass; exit 0
 *            when the mutant was killed, 1 when every test passed (it survived).
 */
#define _POSIX_C_SOURCE 200809L
#include "grader.h"
#include "confine.h"

#include <dirent.h>
#include <stddef.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MAX_TESTS = 1024, MAX_CHAPTERS = 32 };

struct config {
    const char *rubric, *bin_dir, *mode, *report_dir, *implementation;
    const char *tsan_bin_dir, *tsan_build, *tsan_wrapper;
    const char *wakeups;       /* the reference's wake-ups per test (tests/wakeups.tsv), for feedback */
    const char *tsan_chapters[MAX_CHAPTERS]; /* whose race-free line is a ThreadSanitizer run */
    bool tsan_always;                        /* ... even when other tests failed (make tsan SUBMISSION=) */
    int tsan_chapter_count;
    const char *build, *build_log; /* the build of the submission, run once the slot is ours */
    const char *gate_dir;   /* the findings of admission, one file per chapter it refused */
    const char *debug_args; /* set: name `make debug` for each test that does not pass */
    const char *chapters[MAX_CHAPTERS];
    int chapter_count;
    bool autolab, unlimited_memory;
    bool real_threads; /* grade and mutant modes: no test on one schedule */
    bool race_line_from_tests; /* test mode (make tsan): each chapter's race-free line from its tests' own runs */
    struct run_options run;
};

static void usage(void)
{
    fprintf(stderr,
            "usage: kit-grade --rubric FILE --bin DIR [--mode test|grade|mutant] [--chapter NAME]...\n"
            "                 [--timeout SECONDS] [--wrapper 'CMD ARGS'] [--unlimited-memory]\n"
            "                 [--tsan-bin DIR [--tsan-build 'CMD'] [--tsan-wrapper 'CMD'] [--tsan-chapter NAME]... [--tsan-always]]\n"
            "                 [--report DIR] [--implementation LABEL] [--source-root DIR] [--autolab]\n"
            "                 [--confine KIT_CONFINE [--sandbox-uid UID] [--sandbox-cpus N]] [--chaos SEED]\n"
            "                 [--build 'CMD' [--build-log FILE]] [--gate DIR]\n"
            "                 [--stage DIR (the staged submission, shown where the implementation was compiled)]\n"
            "                 [--debug-args 'WORDS' (name make debug CH=NN TEST=name WORDS for each failure)]\n"
            "                 [--real-threads (grade and mutant modes: run no test on one schedule)]\n"
            "                 [--race-line (test mode: score each race-free line from the tests' own runs)]\n");
    exit(2);
}

/* An option that takes a value: its name and where the value goes. */
struct text_option {
    const char *name;
    size_t offset; /* of a const char * in struct config */
};

#define TEXT(name, field) { name, offsetof(struct config, field) }
static const struct text_option text_options[] = {
    TEXT("--rubric", rubric), TEXT("--bin", bin_dir), TEXT("--mode", mode), TEXT("--report", report_dir),
    TEXT("--implementation", implementation), TEXT("--tsan-bin", tsan_bin_dir), TEXT("--tsan-build", tsan_build),
    TEXT("--tsan-wrapper", tsan_wrapper), TEXT("--wrapper", run.wrapper), TEXT("--source-root", run.source_root),
    TEXT("--debug-args", debug_args), TEXT("--confine", run.confine), TEXT("--gate", gate_dir),
    TEXT("--build", build), TEXT("--build-log", build_log), TEXT("--wakeups", wakeups), TEXT("--stage", run.stage),
    { NULL, 0 },
};

/* Returns whether arg was one of the options with a value; sets it. */
static bool text_option(struct config *config, const char *arg, const char *value)
{
    for (int i = 0; text_options[i].name; i++)
        if (strcmp(arg, text_options[i].name) == 0) {
            /* "" is no value, but for --debug-args: the grade of exercises/ needs no words after make debug */
            bool keep_empty = strcmp(arg, "--debug-args") == 0;
            *(const char **)((char *)config + text_options[i].offset) = value[0] || keep_empty ? value : NULL;
            return true;
        }
    return false;
}

static void parse_arguments(int argc, char **argv, struct config *config)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes_value = true;
        if (value && text_option(config, arg, value)) ;
        else if (strcmp(arg, "--unlimited-memory") == 0) { config->unlimited_memory = true; takes_value = false; }
        else if (strcmp(arg, "--autolab") == 0) { config->autolab = true; takes_value = false; }
        else if (strcmp(arg, "--real-threads") == 0) { config->real_threads = true; takes_value = false; }
        else if (strcmp(arg, "--tsan-always") == 0) { config->tsan_always = true; takes_value = false; }
        else if (strcmp(arg, "--race-line") == 0) { config->race_line_from_tests = true; takes_value = false; }
        else if (strcmp(arg, "--timeout") == 0 && value) config->run.limits.wall_seconds = atof(value);
        else if (strcmp(arg, "--sandbox-uid") == 0 && value) config->run.limits.sandbox_uid = atol(value);
        else if (strcmp(arg, "--sandbox-cpus") == 0 && value) config->run.limits.sandbox_cpus = atol(value);
        else if (strcmp(arg, "--chaos") == 0 && value) setenv("KIT_CHAOS", value, 1);
        else if (strcmp(arg, "--chapter") == 0 && value && config->chapter_count < MAX_CHAPTERS)
            config->chapters[config->chapter_count++] = value;
        else if (strcmp(arg, "--tsan-chapter") == 0 && value && config->tsan_chapter_count < MAX_CHAPTERS)
            config->tsan_chapters[config->tsan_chapter_count++] = value;
        else usage();
        i += takes_value;
    }
    bool known_mode = config->mode && (!strcmp(config->mode, "test") || !strcmp(config->mode, "grade") ||
                                       !strcmp(config->mode, "mutant"));
    if (!config->rubric || !config->bin_dir || config->run.limits.wall_seconds <= 0 || !known_mode)
        usage();
}

static bool selected(const struct config *config, const char *chapter)
{
    if (config->chapter_count == 0)
        return true;
    for (int i = 0; i < config->chapter_count; i++)
        if (strcmp(config->chapters[i], chapter) == 0)
            return true;
    return false;
}

static bool is_mode(const struct config *config, const char *mode)
{
    return strcmp(config->mode, mode) == 0;
}

/* Tests a binary has that the rubric does not score: a kit inconsistency. */
static int report_unscored(const struct chapter_tests *found, const struct test_case *tests, int count,
                           const char *chapter)
{
    int unscored = 0;
    for (int b = 0; b < found->binary_count; b++)
        for (int n = 0; n < found->name_counts[b]; n++) {
            bool scored = false;
            for (int i = 0; i < count && !scored; i++)
                scored = strcmp(tests[i].chapter, chapter) == 0 && strcmp(tests[i].name, found->names[b][n]) == 0;
            if (!scored) {
                printf("  warning: %s has no line in the rubric\n", found->names[b][n]);
                unscored++;
            }
        }
    return unscored;
}

/* ---- the findings of admission ------------------------------------------------------ */

/* What admission said of this chapter's files (admission.h), or false. */
static bool gate_finding(const struct config *config, const char *chapter, char *text, size_t size)
{
    if (!config->gate_dir)
        return false;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.txt", config->gate_dir, chapter);
    char *finding = read_log(path);
    bool found = finding && finding[0];
    if (found)
        textf(text, size, "%s", finding);
    free(finding);
    return found;
}

/* Every line of a refused chapter scores 0; the first says why. */
static void reject_chapter(struct test_case *tests, int count, const char *chapter, const char *finding)
{
    bool first = true;
    for (int i = 0; i < count; i++) {
        if (strcmp(tests[i].chapter, chapter) != 0)
            continue;
        tests[i].verdict = V_REJECTED;
        tests[i].integrity = true;
        if (first)
            textf(tests[i].detail, sizeof tests[i].detail,
                  "INTEGRITY: admission refused this chapter's files, and every line of it scores 0:\n%s",
                  finding);
        else
            textf(tests[i].detail, sizeof tests[i].detail, "refused at admission (the chapter's first line says why)\n");
        first = false;
    }
}

/* ---- the race-free line -----------------------------------------------------------
 * Decided from facts the grader holds itself, never from what a test printed:
 * the points the chapter's other lines earned, and each test's race token
 * (kit_sched_memory.c, kit_test.c: moved whenever the test process ends by
 * itself, passed or stopped by a failed check, a deadlock or a hang check,
 * if none of its schedules met a data race or a lock-order inversion). The
 * rule is race_free_line_earned(), alone: the line speaks of races only, and
 * the half of the other points keeps a stub or a near-stub from earning it,
 * however it fails and whatever it prints. A chapter whose tests all run on
 * real threads (on a Redis server: --tsan-chapter) takes ThreadSanitizer's
 * report for the token. */

/* THE RULE: earned when the chapter's other lines earned at least half their
 * points and no test of it saw a data race. */
static bool race_free_line_earned(int earned, int other_points, bool race_seen)
{
    return !race_seen && 2 * earned >= other_points;
}

/* The fact a test gives: it saw a race when it gave no race token although
 * it ended by itself. One the grader's clock stopped, or a signal killed,
 * could give none: that is no race (a hang costs its own line, not this one). */
static bool test_saw_race(const struct test_case *test)
{
    bool could_give_none = test->verdict == V_TIMED_OUT || test->verdict == V_CRASHED ||
                           test->verdict == V_MISSING || test->verdict == V_NOT_RUN;
    return !test->race_free && !could_give_none;
}

/* The points a chapter's lines other than its race-free line earned, of how many. */
static void other_points(const struct test_case *line, const struct test_case *tests, int count, int *earned,
                         int *max)
{
    *earned = *max = 0;
    for (int i = 0; i < count; i++) {
        if (strcmp(tests[i].chapter, line->chapter) != 0 || strcmp(tests[i].name, "tsan") == 0)
            continue;
        *max += tests[i].points;
        *earned += tests[i].verdict == V_PASSED ? tests[i].points : 0;
    }
}

static bool race_line_by_tsan(const struct config *config, const char *chapter)
{
    for (int i = 0; i < config->tsan_chapter_count; i++)
        if (strcmp(config->tsan_chapters[i], chapter) == 0)
            return true;
    return false;
}

/* The line not earned, in words: the race a test saw (its log's report quoted
 * to explain, not to decide), or the half of the other points still missing. */
static void explain_race_line(const struct config *config, struct test_case *line, const struct test_case *racy,
                              int earned, int max)
{
    if (racy == NULL) {
        line->verdict = V_FAILED;
        textf(line->detail, sizeof line->detail,
              "earned once the chapter's other lines earn at least half their points (%d of %d so far) and no "
              "test meets a data race\n", earned, max);
        return;
    }
    line->verdict = V_RACE;
    textf(line->detail, sizeof line->detail, "%s met a data race or a lock-order inversion on its schedule:\n",
          racy->name);
    char path[1200];
    textf(path, sizeof path, "%s/%s.%s.log", config->run.log_dir, racy->chapter, racy->name);
    char *log = read_log(path);
    race_lines(log, line->detail, sizeof line->detail);
    free(log);
}

static void judge_race_line(const struct config *config, struct test_case *line, const struct test_case *tests,
                            int count)
{
    int earned, max;
    other_points(line, tests, count, &earned, &max);
    const struct test_case *racy = NULL;
    for (int i = 0; i < count && racy == NULL; i++)
        if (strcmp(tests[i].chapter, line->chapter) == 0 && &tests[i] != line && test_saw_race(&tests[i]))
            racy = &tests[i];
    if (race_free_line_earned(earned, max, racy != NULL))
        line->verdict = V_PASSED;
    else
        explain_race_line(config, line, racy, earned, max);
}

/* make tsan: every test ran under ThreadSanitizer, and a report failed it
 * (DATA RACE): the race-free line is the same rule, from those verdicts. */
static void judge_race_line_from_tests(const struct config *config, struct test_case *line,
                                       const struct test_case *tests, int count)
{
    textf(line->description, sizeof line->description,
          "race-free under ThreadSanitizer: no test met a data race on real threads");
    int earned, max;
    other_points(line, tests, count, &earned, &max);
    const struct test_case *racy = NULL;
    for (int i = 0; i < count && racy == NULL; i++)
        if (strcmp(tests[i].chapter, line->chapter) == 0 && tests[i].verdict == V_RACE)
            racy = &tests[i];
    if (race_free_line_earned(earned, max, racy != NULL)) {
        line->verdict = V_PASSED;
    } else if (racy) {
        line->verdict = V_RACE;
        textf(line->detail, sizeof line->detail, "%s met a data race: its line above shows both accesses\n",
              racy->name);
    } else {
        explain_race_line(config, line, NULL, earned, max);
    }
}

/* Why the race-freedom line is not run (set in its detail), or false. Even
 * with --tsan-always, which runs it to show each test's report, the line is
 * earned only by the rule. */
static bool tsan_line_waits(const struct config *config, struct test_case *line, const struct test_case *tests,
                            int count)
{
    if (!config->tsan_bin_dir) {
        snprintf(line->detail, sizeof line->detail, "run `make tsan` for this line\n");
        return true;
    }
    int earned, max;
    other_points(line, tests, count, &earned, &max);
    if (race_free_line_earned(earned, max, false) || config->tsan_always)
        return false;
    explain_race_line(config, line, NULL, earned, max);
    return true;
}

/* The ThreadSanitizer runs: four times the time, no address-space limit,
 * their own logs, real threads. */
static struct run_options tsan_options(const struct config *config)
{
    struct run_options run = config->run;
    run.limits.wall_seconds *= 4; /* TSan runs 5-15x slower; tests scale down under KIT_SLOW */
    run.limits.cpu_seconds *= 4;
    run.limits.address_space_mb = 0;
    run.wrapper = config->tsan_wrapper;
    static char tsan_logs[1100];
    textf(tsan_logs, sizeof tsan_logs, "%s/tsan", config->run.log_dir);
    mkdir(tsan_logs, 0755);
    run.log_dir = tsan_logs;
    return run;
}

/* Each test of the chapter again under ThreadSanitizer, but those that ran
 * out of time already (they would again, at four times the cost): a report
 * (exit status 66) is the race; any other failure is its own line's. */
static void run_tsan_tests(const struct config *config, struct test_case *line, const struct test_case *tests,
                           int count, const struct chapter_tests *found)
{
    struct run_options run = tsan_options(config);
    const struct test_case *racy = NULL;
    static struct test_case copy;
    for (int i = 0; i < count && racy == NULL; i++) {
        if (strcmp(tests[i].chapter, line->chapter) != 0 || strcmp(tests[i].name, "tsan") == 0 ||
            tests[i].verdict == V_TIMED_OUT)
            continue;
        copy = tests[i];
        const char *binary = binary_for(found, copy.name);
        if (!binary) {
            line->verdict = V_MISSING;
            snprintf(line->detail, sizeof line->detail, "no ThreadSanitizer build of %s\n", copy.name);
            return;
        }
        snprintf(copy.binary, sizeof copy.binary, "%s", binary);
        run_test_case(&copy, &run);
        line->seconds += copy.seconds;
        racy = copy.verdict == V_RACE ? &copy : NULL;
    }
    int earned, max;
    other_points(line, tests, count, &earned, &max);
    if (race_free_line_earned(earned, max, racy != NULL)) {
        line->verdict = V_PASSED;
    } else if (racy) {
        line->verdict = V_RACE;
        textf(line->detail, sizeof line->detail, "%s under ThreadSanitizer: %s\n%s", racy->name,
              verdict_text(racy->verdict), racy->detail);
    } else {
        explain_race_line(config, line, NULL, earned, max);
    }
}

/* The race-freedom line: every test of the chapter again, under TSan. */
static void run_tsan_line(const struct config *config, struct test_case *line, const struct test_case *tests,
                          int count)
{
    if (tsan_line_waits(config, line, tests, count))
        return;
    if (config->tsan_build) {
        setenv("KIT_CHAPTER", line->chapter, 1);
        fflush(stdout);
        if (system(config->tsan_build) != 0) {
            line->verdict = V_FAILED;
            snprintf(line->detail, sizeof line->detail, "the ThreadSanitizer build failed\n");
            return;
        }
    }
    struct chapter_tests *found = malloc(sizeof *found);
    discover_tests(config->tsan_bin_dir, config->run.source_root, line->chapter, found);
    setenv("KIT_SLOW", "1", 1);
    char *scheduled = getenv("KIT_SCHEDULE_TESTS") ? strdup(getenv("KIT_SCHEDULE_TESTS")) : NULL;
    unsetenv("KIT_SCHEDULE_TESTS"); /* ThreadSanitizer must see the threads run at once */
    run_tsan_tests(config, line, tests, count, found);
    unsetenv("KIT_SLOW");
    if (scheduled)
        setenv("KIT_SCHEDULE_TESTS", scheduled, 1);
    free(scheduled);
    free(found);
}

/* ---- a chapter ---------------------------------------------------------------------- */

/* A failed test first says what it proves - its rubric sentence - so the
 * student learns the rule, not only the symptom. */
static void explain_failure(struct test_case *test)
{
    if (test->verdict == V_PASSED || test->verdict == V_REJECTED || test->description[0] == '\0')
        return;
    char *detail = malloc(sizeof test->detail);
    if (detail == NULL)
        return;
    textf(detail, sizeof test->detail, "what it checks: %s\n%s", test->description, test->detail);
    memcpy(test->detail, detail, sizeof test->detail);
    free(detail);
}

struct totals {
    int score, max, problems;
    bool killed;
    char killer[256];
};

/* A submission whose every test spends its whole limit (threads that spin,
 * a hang on real threads) would hold a class's machine for most of an hour
 * in one grade: once two tests of a chapter have used up their limit, the
 * rest of the chapter runs with a third of it, at least 10 s - still ten
 * times what any of them needs on correct code - and a later one that hangs
 * too is not stopped to show where its threads were (a debugger's attach
 * costs a second or two): the two before it show theirs. */
enum { SPENT_TESTS = 2, SPENT_DIVISOR = 3, SPENT_FLOOR_SECONDS = 10 };

/* A test's processor time: twice its wall time (two cores busy), and 10 s
 * for its start. */
static long cpu_seconds_for(double wall_seconds)
{
    return (long)(wall_seconds * 2) + 10;
}

static struct run_options run_for(const struct config *config, const struct test_case *test,
                                  const struct test_case *tests, bool *shortened)
{
    struct run_options run = config->run;
    int spent = 0;
    for (const struct test_case *t = tests; t < test; t++)
        if (strcmp(t->chapter, test->chapter) == 0 && t->seconds >= run.limits.wall_seconds)
            spent++;
    double shorter = run.limits.wall_seconds / SPENT_DIVISOR;
    if (shorter < SPENT_FLOOR_SECONDS)
        shorter = SPENT_FLOOR_SECONDS;
    *shortened = spent >= SPENT_TESTS && shorter < run.limits.wall_seconds;
    run.diagnose_timeouts = run.diagnose_timeouts && spent < SPENT_TESTS;
    if (*shortened) {
        run.limits.wall_seconds = shorter;
        run.limits.cpu_seconds = cpu_seconds_for(shorter);
    }
    return run;
}

/* The race-free line of a judged chapter rests on the code under test's
 * word: only its process saw its schedules' accesses, or ran under
 * ThreadSanitizer (chapter 07's; docs/grading.md). */
static void label_race_line(struct test_case *line, const struct test_case *tests, int count)
{
    for (int i = 0; i < count; i++)
        if (strcmp(tests[i].chapter, line->chapter) == 0 && tests[i].judged) {
            line->judged = true;
            snprintf(line->subject_word, sizeof line->subject_word, "data races");
            return;
        }
}

/* The race-freedom line: from the tests' race tokens, or from a
 * ThreadSanitizer build of a chapter whose tests run on real threads. */
static void grade_race_line(const struct config *config, struct test_case *test, struct test_case *tests, int count,
                            int *max)
{
    if (!is_mode(config, "grade")) {
        judge_race_line_from_tests(config, test, tests, count);
    } else if (!race_line_by_tsan(config, test->chapter)) {
        judge_race_line(config, test, tests, count);
    } else {
        textf(test->description, sizeof test->description,
              "race-free under ThreadSanitizer: no test met a data race on real threads");
        run_tsan_line(config, test, tests, count);
        *max += config->tsan_bin_dir ? test->points : 0;
        label_race_line(test, tests, count); /* (judged, ThreadSanitizer's report is the subject's too) */
        return;
    }
    *max += test->points;
    label_race_line(test, tests, count);
}

/* What the rule on spent limits (run_for) changed for a test that failed. */
static void note_spent_limit(struct test_case *test, const struct run_options *run, bool shortened)
{
    char note[200] = "";
    if (shortened && test->verdict != V_PASSED)
        textf(note, sizeof note, "(it ran with a %.0f s limit: two tests of the chapter before it used up theirs)",
              run->limits.wall_seconds);
    else if (!run->diagnose_timeouts && test->verdict == V_TIMED_OUT)
        textf(note, sizeof note, "(where its threads were is not shown: two tests of the chapter before it used up "
              "their limit, and show theirs)");
    if (note[0])
        append_line(test->detail, sizeof test->detail, note, strlen(note));
}

/* One line of the rubric: its test run, or the race-freedom line. */
static void grade_line(const struct config *config, struct test_case *test, struct test_case *tests, int count,
                       const struct chapter_tests *found, int *max)
{
    if (strcmp(test->name, "tsan") == 0) {
        grade_race_line(config, test, tests, count, max);
        return;
    }
    const char *binary = binary_for(found, test->name);
    *max += test->points;
    if (binary == NULL) {
        test->verdict = V_MISSING;
        textf(test->detail, sizeof test->detail,
              "not built: no test program in %s/%s has this test - if the chapter did not compile, what the "
              "compiler said is printed above\n",
              config->bin_dir, test->chapter);
        return;
    }
    snprintf(test->binary, sizeof test->binary, "%s", binary);
    bool shortened = false;
    struct run_options run = run_for(config, test, tests, &shortened);
    run_test_case(test, &run);
    explain_failure(test);
    note_spent_limit(test, &run, shortened);
    if (is_mode(config, "grade"))
        compare_wakeups(test);
}

/* The lines of a chapter whose files admission refused, before and after
 * the ThreadSanitizer build (admission sees that build's objects too). */
static bool chapter_refused(const struct config *config, const char *chapter, struct test_case *tests, int count)
{
    char finding[3000];
    if (!gate_finding(config, chapter, finding, sizeof finding))
        return false;
    reject_chapter(tests, count, chapter, finding);
    return true;
}

/* A judged test whose judge caught the code under test at what no code
 * needs (grader_judge.c) flags its chapter: as one admission refused, every
 * line of it scores 0. True if it did. */
static bool flagged_by_judge(struct test_case *tests, int count, const char *chapter)
{
    bool flagged = false;
    for (int i = 0; i < count; i++)
        flagged = flagged || (strcmp(tests[i].chapter, chapter) == 0 && tests[i].integrity);
    for (int i = 0; flagged && i < count; i++) {
        if (strcmp(tests[i].chapter, chapter) != 0 || tests[i].verdict != V_PASSED)
            continue;
        tests[i].verdict = V_REJECTED;
        tests[i].integrity = true;
        textf(tests[i].detail, sizeof tests[i].detail, "the judge flagged this chapter: see its line marked "
              "INTEGRITY\n");
    }
    return flagged;
}

/* Whether a line counts: a ThreadSanitizer line counts only with its build. */
static bool line_scored(const struct config *config, const struct test_case *test)
{
    return config->tsan_bin_dir || strcmp(test->name, "tsan") != 0 || !race_line_by_tsan(config, test->chapter);
}

static void count_line(const struct config *config, const struct test_case *test, struct totals *totals)
{
    bool tsan_scored = line_scored(config, test);
    if (test->verdict == V_PASSED || !tsan_scored)
        return;
    totals->problems++;
    if (is_mode(config, "mutant") && !totals->killed) {
        totals->killed = true;
        snprintf(totals->killer, sizeof totals->killer, "%s (%s)", test->name, verdict_text(test->verdict));
    }
}

/* Whether the list @p words ("leaks, data races") holds @p word. */
static bool list_has(const char *words, const char *word)
{
    size_t length = strlen(word);
    for (const char *at = strstr(words, word); at; at = strstr(at + 1, word))
        if ((at == words || at[-1] == ' ') && (at[length] == ',' || at[length] == '\0'))
            return true;
    return false;
}

/* Adds to the list @p words ("leaks, data races") each of @p more's that
 * it does not hold yet. */
static void add_words(char *words, size_t size, const char *more)
{
    for (const char *word = more; *word;) {
        size_t length = strcspn(word, ",");
        char one[96];
        snprintf(one, sizeof one, "%.*s", (int)length, word);
        if (!list_has(words, one))
            textf(words + strlen(words), size - strlen(words), "%s%s", words[0] ? ", " : "", one);
        word += length;
        word += strspn(word, ", ");
    }
}

/* A judged chapter's lines whose verdict rests in part on what the code
 * under test's process says of itself are marked "*" (print_test_line):
 * what it says, and how many points, in a line below them. */
static void print_subject_word(const char *chapter, const struct test_case *tests, int count, int max)
{
    char words[256] = "";
    int points = 0;
    for (int i = 0; i < count; i++) {
        if (strcmp(tests[i].chapter, chapter) != 0 || !tests[i].judged || !tests[i].subject_word[0])
            continue;
        points += tests[i].points;
        add_words(words, sizeof words, tests[i].subject_word);
    }
    if (points > 0)
        printf("  * in part what the submission's own process reports (%s): %d of %d points\n",
               words, points, max);
}

/* A chapter's last lines: the functions its tests do not cover, its score. */
static void end_chapter(const struct config *config, const char *chapter, const struct test_case *tests, int count,
                        int max, struct chapter_tests *found, struct totals *totals)
{
    bool mutant = is_mode(config, "mutant");
    int score = 0;
    for (int i = 0; i < count; i++)
        if (strcmp(tests[i].chapter, chapter) == 0 && tests[i].verdict == V_PASSED)
            score += tests[i].points;
    if (!mutant) {
        totals->problems += report_unscored(found, tests, count, chapter) +
                            (is_mode(config, "test") ? check_listing(found) : 0);
        print_subject_word(chapter, tests, count, max);
        printf("  Chapter score: %d/%d\n", score, max);
    }
    totals->score += score;
    totals->max += max;
}

/* Streams each line as it is graded; a chapter admission refused (before, or
 * in its ThreadSanitizer build) scores 0 on every line. */
static void grade_chapter(const struct config *config, const char *chapter, struct test_case *tests, int count,
                          struct totals *totals)
{
    bool mutant = is_mode(config, "mutant");
    struct chapter_tests *found = malloc(sizeof *found);
    discover_tests(config->bin_dir, config->run.source_root, chapter, found);
    print_chapter_header(chapter);
    bool refused = chapter_refused(config, chapter, tests, count);
    int max = 0;
    for (int i = 0; i < count && !(mutant && totals->killed); i++) {
        struct test_case *test = &tests[i];
        bool tsan = strcmp(test->name, "tsan") == 0;
        if (strcmp(test->chapter, chapter) != 0 || (!is_mode(config, "grade") && tsan && !config->race_line_from_tests))
            continue; /* make test checks races directly: each fails its test */
        if (refused)
            max += line_scored(config, test) ? test->points : 0;
        else
            grade_line(config, test, tests, count, found, &max);
        if (!refused && chapter_refused(config, chapter, tests, count)) {
            refused = true;
            printf("  INTEGRITY: admission refused a file of this chapter in its ThreadSanitizer build: every line "
                   "scores 0\n");
        }
        count_line(config, test, totals);
        print_test_line(test, !mutant, config->debug_args);
    }
    if (!refused && flagged_by_judge(tests, count, chapter))
        printf("  INTEGRITY: the judge flagged a test of this chapter (its line says why): every line scores 0\n");
    end_chapter(config, chapter, tests, count, max, found, totals);
    free(found);
}

/* ---- reports ------------------------------------------------------------------------ */

/* The lines graded: those of the selected chapters, without the race-freedom
 * lines when there is no ThreadSanitizer build. Returns how many. */
static int graded_lines(const struct config *config, const struct test_case *tests, int count,
                        struct test_case *kept)
{
    int n = 0;
    for (int i = 0; i < count; i++)
        if (selected(config, tests[i].chapter) && line_scored(config, &tests[i]))
            kept[n++] = tests[i];
    return n;
}

static void write_reports(const struct config *config, const struct test_case *kept, int n)
{
    if (!config->report_dir)
        return;
    char path[1024];
    snprintf(path, sizeof path, "%s/report.json", config->report_dir);
    int err = write_json_report(path, config->mode, config->implementation, kept, n, config->debug_args);
    snprintf(path, sizeof path, "%s/junit.xml", config->report_dir);
    err = err ? err : write_junit_report(path, kept, n);
    snprintf(path, sizeof path, "%s/scores.tsv", config->report_dir);
    err = err ? err : write_scores(path, kept, n);
    if (err)
        fprintf(stderr, "kit-grade: cannot write the reports in %s: %s\n", config->report_dir, strerror(err));
    else
        printf("Reports: %s/report.json, %s/junit.xml\n", config->report_dir, config->report_dir);
}

/* Autolab's score line, the grader's last: printed once every test's
 * confinement is gone, by the only process that holds this output. */
static void print_autolab(const struct test_case *kept, int count)
{
    printf("{\"scores\": {");
    for (int i = 0, printed = 0; i < count; i++) {
        if (i > 0 && strcmp(kept[i].chapter, kept[i - 1].chapter) == 0)
            continue;
        int score = 0;
        for (int j = i; j < count && strcmp(kept[j].chapter, kept[i].chapter) == 0; j++)
            score += kept[j].verdict == V_PASSED ? kept[j].points : 0;
        printf("%s\"%s\": %d", printed++ ? ", " : "", kept[i].chapter, score);
    }
    printf("}}\n");
    fflush(stdout);
}

/* ---- setting up -------------------------------------------------------------------- */

/* Deletes the .svg files a previous run drew in @p dir. */
/* The files of @p dir whose names end in @p suffix: an earlier grade's. */
static void remove_files(const char *dir, const char *suffix)
{
    DIR *folder = opendir(dir);
    size_t tail = strlen(suffix);
    for (struct dirent *entry; folder && (entry = readdir(folder));) {
        size_t length = strlen(entry->d_name);
        char path[1400];
        if (length > tail && strcmp(entry->d_name + length - tail, suffix) == 0) {
            snprintf(path, sizeof path, "%s/%s", dir, entry->d_name);
            unlink(path);
        }
    }
    if (folder)
        closedir(folder);
}

/* The logs' folder, and the one the grader draws failed schedules in
 * (grader_drawing.c). The explorer's own pictures go elsewhere: confined,
 * into the confinement's /tmp (grader_proc.c); unconfined - the kit's own
 * code, make test - into a folder of the logs no report links. */
static void prepare_logs(struct config *config)
{
    static char log_dir[1024], schedule_dir[1100], explorer_dir[1100];
    const char *root = config->report_dir ? config->report_dir : "/tmp";
    snprintf(log_dir, sizeof log_dir, "%s/logs", root);
    mkdir(root, 0755);
    mkdir(log_dir, 0755);
    remove_files(log_dir, ".log"); /* a test this grade does not run (a chapter that did not build) shows no old log */
    config->run.log_dir = log_dir;
    snprintf(schedule_dir, sizeof schedule_dir, "%s/schedules", log_dir);
    mkdir(schedule_dir, 0755);
    remove_files(schedule_dir, ".svg"); /* an earlier grade's must not pass for this one's */
    snprintf(explorer_dir, sizeof explorer_dir, "%s/explorer", log_dir);
    mkdir(explorer_dir, 0755);
    remove_files(explorer_dir, ".svg");
    setenv("KIT_EXPLORE_SVG_DIR", explorer_dir, 1);
}

/* What every test's environment holds: the sanitizers' exit codes, the seed
 * and the schedule of a grade, what its make hints name. */
static void prepare_environment(const struct config *config)
{
    setenv("TSAN_OPTIONS", "exitcode=66 halt_on_error=1 second_deadlock_stack=1", 0);
    setenv("ASAN_OPTIONS", "exitcode=99 detect_leaks=1 abort_on_error=0", 0);
    setenv("UBSAN_OPTIONS", "exitcode=99 halt_on_error=1 print_stacktrace=1", 0);
    setenv("LSAN_OPTIONS", "exitcode=99", 0);
    if (!is_mode(config, "test"))
        setenv("SEED", "20261130", 0); /* same submission, same stress schedule, same score */
    /* ... and every test that can run on one schedule of the scheduler runs on
     * one, seeded from SEED (kit_test.h): the same interleaving every time. */
    if (!is_mode(config, "test") && !config->real_threads)
        setenv("KIT_SCHEDULE_TESTS", getenv("SEED"), 1);
    else
        unsetenv("KIT_SCHEDULE_TESTS");
    if (config->debug_args && config->debug_args[0])
        setenv("KIT_MAKE_ARGS", config->debug_args, 1);
    else
        unsetenv("KIT_MAKE_ARGS");
    unsetenv("KIT_SUBJECT_UNFILTERED"); /* a graded subject is always filtered */
    unsetenv("KIT_SCHED");     /* the exploration tests' own fixed seeds and budgets, */
    unsetenv("KIT_SCHEDULES"); /* whatever the environment says (make explore sets them) */
}

/* Root: this grade's own sandbox uid, for every confined step it runs. */
static void claim_slot(struct config *config)
{
    struct limits *limits = &config->run.limits;
    if (limits->sandbox_uid > 0 && geteuid() == 0)
        limits->sandbox_uid = confine_claim_uid(limits->sandbox_uid);
    char text[32];
    snprintf(text, sizeof text, "%ld", limits->sandbox_uid);
    setenv("KIT_SANDBOX_UID", text, 1);
    snprintf(text, sizeof text, "%ld", limits->sandbox_cpus);
    setenv("KIT_SANDBOX_CPUS", text, 1);
}

/* Deletes the test programs an earlier build left in bin/chapter/. */
static void remove_test_programs(const char *bin, const char *chapter)
{
    char dir[1200];
    textf(dir, sizeof dir, "%s/%s", bin, chapter);
    DIR *folder = opendir(dir);
    for (struct dirent *entry; folder && (entry = readdir(folder));) {
        char path[1400];
        if (strncmp(entry->d_name, "test_", 5) == 0) {
            textf(path, sizeof path, "%s/%s", dir, entry->d_name);
            unlink(path);
        }
    }
    if (folder)
        closedir(folder);
}

/* A line of the build's log worth showing, shown; false for the others.
 * make's "not remade because of errors" is left out (the lines that say
 * why are shown), and a missing rule is the kit's, not the submission's. */
static bool show_build_line(const char *line)
{
    const char *missing = strstr(line, "No rule to make target ");
    if (missing)
        printf("  the kit cannot build %.*s: a file or a rule of the kit is missing (not your code)\n",
               (int)strcspn(missing + 23, ","), missing + 23);
    else if (strstr(line, "not remade because of errors"))
        return false;
    else if (strstr(line, "error") || strstr(line, "undefined reference") || strstr(line, "kit-admit"))
        printf("  %s\n", line);
    else
        return false;
    return true;
}

/* The submission's build, confined by make's own rules; what the compiler
 * said of a file that did not compile is shown, and its chapter scores 0.
 * The test programs of an earlier grade of the same folder go first: a
 * chapter that no longer compiles must meet no test, never the tests
 * linked with the code it had before. */
static void build_submission(const struct config *config, const struct test_case *tests, int count)
{
    if (!config->build)
        return;
    for (int i = 0; i < count; i++)
        if (selected(config, tests[i].chapter))
            remove_test_programs(config->bin_dir, tests[i].chapter);
    fflush(stdout);
    if (system(config->build) == 0)
        return;
    printf("Some files did not compile, and their chapters score 0. The compiler said:\n");
    char *log = config->build_log ? read_log(config->build_log) : NULL;
    int shown = 0;
    for (char *line = log ? strtok(log, "\n") : NULL; line && shown < 30; line = strtok(NULL, "\n"))
        shown += show_build_line(line);
    printf("(all of it: %s)\n", config->build_log ? config->build_log : "the build's log");
    free(log);
}

static void configure(struct config *config)
{
    umask(022); /* what the grade builds, the sandbox uid must read */
    struct limits *limits = &config->run.limits;
    limits->cpu_seconds = cpu_seconds_for(limits->wall_seconds);
    if (config->run.wrapper || config->unlimited_memory) /* valgrind and sanitizers map far more than they use */
        limits->address_space_mb = 0;
    if (config->implementation[0] == '/') /* graded from outside the kit: its files are the student's */
        config->run.student_root = config->implementation;
    static char kit[4096];
    snprintf(kit, sizeof kit, "%s", config->run.source_root ? config->run.source_root : ".");
    if (strlen(kit) > 1 && kit[strlen(kit) - 1] == '/')
        kit[strlen(kit) - 1] = '\0';
    config->run.kit_root = kit;
    static char stage_at[4200]; /* where the implementation was compiled: its path, from the kit if relative */
    snprintf(stage_at, sizeof stage_at, "%s%s%s", config->implementation[0] == '/' ? "" : kit,
             config->implementation[0] == '/' ? "" : "/", config->implementation);
    config->run.stage_at = stage_at;
    static long log_budget = 64L << 20;
    config->run.log_budget = &log_budget;
    config->run.race_fails_test = !is_mode(config, "grade");
    claim_slot(config);
    prepare_logs(config);
    prepare_environment(config);
}

static int finish(const struct config *config, struct test_case *tests, int count, const struct totals *totals)
{
    if (is_mode(config, "mutant")) {
        printf(totals->killed ? "killed by %s\n" : "SURVIVED: every test passed\n", totals->killer);
        return totals->killed ? 0 : 1;
    }
    static struct test_case kept[MAX_TESTS];
    int graded = graded_lines(config, tests, count, kept);
    if (is_mode(config, "grade"))
        print_standing(kept, graded, config->debug_args);
    else
        printf("\n");
    printf("Score: %d/%d\n", totals->score, totals->max);
    write_reports(config, kept, graded);
    if (config->autolab)
        print_autolab(kept, graded);
    if (is_mode(config, "test") && totals->problems > 0) {
        printf("%d problem(s): every test must pass against the reference solutions\n", totals->problems);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static struct config config = {
        .mode = "grade", .implementation = "solutions",
        .run = { .limits = { .wall_seconds = 30, .address_space_mb = 4096, .file_size_mb = 16, .processes = 256,
                             .sandbox_cpus = 1, .memory_mb = 2048 },
                 .diagnose_timeouts = true } };
    parse_arguments(argc, argv, &config);
    configure(&config);
    static struct test_case tests[MAX_TESTS];
    char error[512];
    int count = load_rubric(config.rubric, tests, MAX_TESTS, error, sizeof error);
    if (count < 0) {
        fprintf(stderr, "kit-grade: %s\n", error);
        return 2;
    }
    if (config.wakeups && load_reference_wakeups(config.wakeups) < 0)
        fprintf(stderr, "kit-grade: %s: %s (no wake-up feedback)\n", config.wakeups, strerror(errno));
    build_submission(&config, tests, count);
    struct totals totals = { 0 };
    for (int i = 0; i < count && !totals.killed; i++)
        if ((i == 0 || strcmp(tests[i].chapter, tests[i - 1].chapter) != 0) && selected(&config, tests[i].chapter))
            grade_chapter(&config, tests[i].chapter, tests, count, &totals);
    return finish(&config, tests, count, &totals);
}
