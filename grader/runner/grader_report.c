/**
 * @file grader_report.c
 * @brief The rubric, and the ways results are reported: the table with its closing
 *        summary and its `make debug` hints, JSON, JUnit.
 */
#define _POSIX_C_SOURCE 200809L
#include "grader.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void textf(char *dst, size_t size, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(dst, size, fmt, args);
    va_end(args);
}

/* One line of tests/rubric.tsv into test; false if it is not one. */
static bool parse_rubric_line(char *line, struct test_case *test)
{
    char *save = NULL;
    char *chapter = strtok_r(line, "\t", &save);
    char *name = strtok_r(NULL, "\t", &save);
    char *points = strtok_r(NULL, "\t", &save);
    char *description = strtok_r(NULL, "\t", &save);
    char *end = NULL;
    long value = points ? strtol(points, &end, 10) : -1;
    if (!chapter || !name || !points || *end != '\0' || value < 0 || value > 1000 || !description)
        return false;
    memset(test, 0, sizeof *test);
    snprintf(test->chapter, sizeof test->chapter, "%s", chapter);
    snprintf(test->name, sizeof test->name, "%s", name);
    snprintf(test->description, sizeof test->description, "%s", description);
    test->points = (int)value;
    test->verdict = V_NOT_RUN;
    return true;
}

/* tests/rubric.tsv: chapter <TAB> test <TAB> points <TAB> description.
 * Blank lines and lines starting with '#' are comments. */
int load_rubric(const char *path, struct test_case *tests, int max_tests, char *error, size_t error_size)
{
    FILE *in = fopen(path, "r");
    if (in == NULL) {
        snprintf(error, error_size, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    char line[1024];
    int count = 0, number = 0;
    while (fgets(line, sizeof line, in)) {
        number++;
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '\0' || line[0] == '#')
            continue;
        if (count == max_tests || !parse_rubric_line(line, &tests[count])) {
            snprintf(error, error_size, count == max_tests ? "%s:%d: more lines than the grader takes"
                                                            : "%s:%d: expected chapter, test, points, description "
                                                              "separated by tabs", path, number);
            fclose(in);
            return -1;
        }
        count++;
    }
    fclose(in);
    return count;
}

/* The race-free line's name on screen: "race-free", and how it is earned. */
static const char *race_label(const struct test_case *test)
{
    return strstr(test->description, "ThreadSanitizer") ? "race-free under ThreadSanitizer"
                                                          : "race-free (no data race, no lock-order inversion)";
}

void print_chapter_header(const char *chapter)
{
    printf("\n== %s ==\n", chapter);
}

/* The test `make debug` runs for a line that did not pass: the test itself
 * or, for the race-freedom line, the test ThreadSanitizer caught (its detail
 * starts "NAME under ThreadSanitizer"). NULL when no single test shows the
 * problem: the line passed, was not run, or has no test binary. */
static const char *debug_test(const struct test_case *test, char *name, size_t size)
{
    if (test->verdict == V_PASSED || test->verdict == V_NOT_RUN || test->verdict == V_MISSING ||
        test->verdict == V_REJECTED)
        return NULL;
    if (strcmp(test->name, "tsan") != 0)
        return test->name;
    size_t length = strcspn(test->detail, " \n");
    if (length == 0 || length >= size || (strncmp(test->detail + length, " under ThreadSanitizer", 22) != 0 &&
                                           strncmp(test->detail + length, " saw a ", 7) != 0))
        return NULL;
    memcpy(name, test->detail, length);
    name[length] = '\0';
    return name;
}

/* `make debug CH=NN TEST=name [SAN=tsan] [debug_args]` for a line that did
 * not pass; "" when there is nothing to debug or debug_args is NULL. */
static void debug_command(const struct test_case *test, const char *debug_args, char *out, size_t size)
{
    char raced[128];
    const char *name = debug_args ? debug_test(test, raced, sizeof raced) : NULL;
    bool race = strcmp(test->name, "tsan") == 0;
    out[0] = '\0';
    if (name != NULL && race && strstr(test->detail, " saw a ") && strstr(name, "_explore_"))
        textf(out, size, "make explore CH=%.2s TEST=%s%s%s", test->chapter, name, debug_args[0] ? " " : "",
              debug_args); /* the search that met the race meets it again, and prints both accesses */
    else if (name != NULL)
        textf(out, size, "make debug CH=%.2s TEST=%s%s%s%s", test->chapter, name,
              race && !strstr(test->detail, " saw a ") ? " SAN=tsan" : "", debug_args[0] ? " " : "", debug_args);
}

/* Where gdb stops, under `make debug`, for each way of not passing. A crash
 * cmocka caught shows as a failed test ("Test failed with exception"), but
 * under gdb it is the crash that stops the test; a thread the test waited
 * for with a bound ("still blocked after") is a hang there (KIT_DEBUG). */
static const char *debug_stop(const struct test_case *test)
{
    switch (test->verdict) {
    case V_FAILED:
        if (strstr(test->detail, "failed with exception"))
            return "gdb stops at the crash";
        if (strstr(test->name, "_explore_") && strstr(test->detail, "REPLAY="))
            return "gdb stops in the failing schedule, every thread at its line";
        if (strstr(test->detail, "its one schedule") &&
            (strstr(test->detail, "still blocked after") || strstr(test->detail, "where each thread was")))
            return "on the same schedule, gdb stops where every thread waits";
        if (strstr(test->detail, "still blocked after")) /* a bounded wait: make debug waits for ever */
            return "it hangs under gdb: press Ctrl-C";
        return "gdb stops at the failed check";
    case V_CRASHED: return "gdb stops at the crash";
    case V_TIMED_OUT: return "press Ctrl-C in gdb once it hangs";
    case V_RACE:
        if (strstr(test->detail, " saw a ") && strstr(test->detail, "_explore_"))
            return "it runs that search again and prints both places";
        return strstr(test->detail, " saw a ") ? "on the same schedule; the race is printed at its end"
                                               : "gdb stops at the race report";
    case V_THREAD_LEAK: return "gdb stops at ThreadSanitizer's report, as the test ends";
    default: return "gdb runs it to its end";
    }
}

/* The function a failure says is not written yet ("msgq_create(&q, 2)
 * returned ENOSYS: not implemented yet" -> "msgq_create"), or "". */
static void unwritten_function(const char *detail, char *name, size_t size)
{
    name[0] = '\0';
    const char *mark = strstr(detail, " returned ENOSYS");
    if (mark == NULL)
        return;
    const char *call = mark;
    while (call > detail && call[-1] != '\n' && call[-1] != ' ')
        call--; /* back over the call's last word, to its start */
    while (call > detail && call[-1] != '\n' && strncmp(call - 2, ": ", 2) != 0)
        call--; /* ... and back to the start of the call, after any "file.c:12: " */
    size_t length = strcspn(call, "( ");
    if (length > 0 && length < size)
        snprintf(name, size, "%.*s", (int)length, call);
}

/* Whether this chapter's report already showed that @p name is not written:
 * the stub of a chapter fails every test the same way, said once a function. */
static bool unwritten_already_shown(const struct test_case *test, const char *name)
{
    static char chapter[64];
    static char shown[32][64];
    static int count;
    if (strcmp(chapter, test->chapter) != 0) {
        snprintf(chapter, sizeof chapter, "%s", test->chapter);
        count = 0;
    }
    for (int i = 0; i < count; i++)
        if (strcmp(shown[i], name) == 0)
            return true;
    if (count < 32)
        snprintf(shown[count++], sizeof shown[0], "%s", name);
    return false;
}

void print_test_line(const struct test_case *test, bool show_points, const char *debug_args)
{
    const char *label = strcmp(test->name, "tsan") == 0 ? race_label(test) : test->name;
    int earned = test->verdict == V_PASSED ? test->points : 0;
    printf("  %-58s %-12s %6.2fs", label, verdict_text(test->verdict), test->seconds);
    if (show_points)
        printf("  %2d/%-2d", earned, test->points);
    printf("%s\n", test->judged && test->subject_word[0] ? " *" : ""); /* explained below the chapter's lines */
    char unwritten[64];
    unwritten_function(test->detail, unwritten, sizeof unwritten);
    if (test->verdict != V_PASSED && unwritten[0] && unwritten_already_shown(test, unwritten)) {
        printf("      %s is not written yet (it returns ENOSYS)\n", unwritten);
        return;
    }
    if (test->verdict != V_PASSED && test->detail[0]) {
        for (const char *line = test->detail; *line;) {
            const char *end = strchr(line, '\n');
            int length = end ? (int)(end - line) : (int)strlen(line);
            printf("      %.*s\n", length, line);
            line = end ? end + 1 : line + length;
        }
    }
    if (test->verdict == V_PASSED && test->feedback[0])
        printf("      feedback (no points): %s\n", test->feedback);
    char command[512];
    debug_command(test, debug_args, command, sizeof command);
    if (command[0])
        printf("      debug it: %s  (%s)\n", command, debug_stop(test));
    fflush(stdout);
}

/* ---- The test to debug first ---------------------------------------------
 * THE RULE: of a chapter's lines that did not pass and name a command that
 * debugs them, the one closest to the cause, by these facts in turn:
 *  0. whether its words hold a diagnosis that names a line of the student's
 *     code - the explorer's "why:" (a critical section split in two, a count
 *     raised too late, a path that must undo a count), a race's access to
 *     change, a signal that woke the wrong sleeper, a wait that must loop:
 *     the cause itself, told, whatever its symptom was (not for a function
 *     not written yet). A lost wake-up's story ("that change needs a signal
 *     or broadcast") or a failed check's last write ranks below those: it
 *     names the last change a sleeper or a check saw, which is only where
 *     the cause showed when a count left wrong earlier or a wait that should
 *     never have begun (a reader's second read lock) is the cause;
 *  1. what failed: a check of what the code returned or did, a crash or a
 *     race, before a hang (a deadlock, a lost wake-up, a time-out - also one
 *     in a teardown after the test's own checks passed), before a function
 *     not written yet (ENOSYS);
 *  2. whether its words name a line of the student's code (`msgq.c:95`,
 *     not a test's file, the kit's, or an earlier chapter's reference):
 *     one that does points at what to change;
 *  3. how it replays: a schedule make debug or make explore replays (an
 *     explored or generated one with its token or scenario number, or a
 *     test's one schedule)
 *     before a stress test's long schedule, before real threads;
 *  4. how soon it failed: fewer steps on its schedule first (the smallest
 *     scenario);
 *  5. the rubric's order.
 * A chapter that earned nothing and whose first line fails on a function
 * not written yet is not begun: the standing says so, and which function to
 * write first, instead of naming a test; one whose failures left are all
 * functions not written yet names them. */

enum failure_kind { FAILED_CHECK, HANG, UNWRITTEN, NOT_DEBUGGABLE };

static enum failure_kind failure_kind(const struct test_case *test)
{
    char command[512], unwritten[64];
    debug_command(test, "", command, sizeof command);
    unwritten_function(test->detail, unwritten, sizeof unwritten);
    if (command[0] == '\0')
        return NOT_DEBUGGABLE;
    if (unwritten[0])
        return UNWRITTEN;
    bool hang = test->verdict == V_TIMED_OUT ||
                (test->verdict == V_FAILED &&
                 (strstr(test->detail, "still blocked after") || strstr(test->detail, "deadlock or lost wake-up") ||
                  strstr(test->detail, "a lost wake-up") || strstr(test->detail, "still waits")));
    return hang ? HANG : FAILED_CHECK;
}

/* 0: replayed exactly, at once; 1: a stress test's long schedule; 2: real threads. */
static int replay_class(const struct test_case *test)
{
    bool scheduled = strstr(test->detail, "its one schedule") || strstr(test->detail, "REPLAY=") ||
                     strstr(test->detail, "KIT_SCENARIO=") || strstr(test->detail, " saw a ");
    if (!scheduled)
        return 2;
    return strstr(test->name, "_stress_") ? 1 : 0;
}

/* Whether a test's words name a line of the student's code: "NAME.c:N" where
 * NAME is no test's (test_*) or the kit's (kit_*), and no "(reference)" follows. */
static bool names_student_line(const struct test_case *test)
{
    for (const char *at = strstr(test->detail, ".c:"); at; at = strstr(at + 3, ".c:")) {
        const char *name = at;
        while (name > test->detail && (isalnum((unsigned char)name[-1]) || name[-1] == '_' || name[-1] == '-'))
            name--;
        const char *digits = at + 3, *after = digits + strspn(digits, "0123456789");
        if (after == digits || name == at || strncmp(name, "test_", 5) == 0 || strncmp(name, "kit_", 4) == 0)
            continue;
        if (strncmp(after + strspn(after, " "), "(reference)", 11) != 0)
            return true;
    }
    return false;
}

static bool says_any(const char *words, const char *const *phrases, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (strstr(words, phrases[i]))
            return true;
    return false;
}

/* How surely a test's words tell the cause, not only its symptom, at a line
 * of the student's code (THE RULE, 0): 3 the cause itself, or the bug's kind
 * outright (a wait that must loop); 2 the last change a lost wake-up or a
 * failed check saw, or the lines another thread's call ran on its way out
 * of a wait, which may be only where the cause showed; 1 a critical
 * section that may have changed what a sleeper waits for ("if that section
 * changed ..."): a guess where no change it read was seen; 0 a symptom. */
static int diagnosis(const struct test_case *test)
{
    static const char *const causes[] = { "the likely cause: ", "which woke another sleeper", "must undo it too",
                                          " twice: it ", "came only after it", "passes the wake-up on" };
    static const char *const last_seen[] = { "needs a signal or broadcast", "which the code last wrote at",
                                             "decided on that way out", "and lowered by no thread since" };
    static const char *const guessed[] = { "if that section changed what it waits for", "whatever changed there for it" };
    if (failure_kind(test) == UNWRITTEN || failure_kind(test) == NOT_DEBUGGABLE)
        return 0;
    if (strstr(test->detail, "a wait must loop") || strstr(test->detail, "a wait without a while loop"))
        return 3;
    if (!names_student_line(test))
        return 0;
    if (says_any(test->detail, causes, sizeof causes / sizeof causes[0]))
        return 3;
    if (!strstr(test->detail, "why: "))
        return 0; /* (a deadlock's own story may name where the threads stopped, far from the cause) */
    if (!says_any(test->detail, last_seen, sizeof last_seen / sizeof last_seen[0]))
        return 3;
    bool guess = says_any(test->detail, guessed, sizeof guessed / sizeof guessed[0]) &&
                 !strstr(test->detail, "that change needs a signal or broadcast");
    return guess ? 1 : 2;
}

/* Whether line a is closer to the cause than line b (THE RULE, 0 to 4). */
static bool closer_to_cause(const struct test_case *a, const struct test_case *b)
{
    if (diagnosis(a) != diagnosis(b))
        return diagnosis(a) > diagnosis(b);
    if (failure_kind(a) != failure_kind(b))
        return failure_kind(a) < failure_kind(b);
    if (names_student_line(a) != names_student_line(b))
        return names_student_line(a);
    if (replay_class(a) != replay_class(b))
        return replay_class(a) < replay_class(b);
    long steps_a = a->failed_steps > 0 ? a->failed_steps : LONG_MAX;
    long steps_b = b->failed_steps > 0 ? b->failed_steps : LONG_MAX;
    return steps_a < steps_b;
}

static const struct test_case *first_to_debug(const struct test_case *first, int count)
{
    const struct test_case *best = NULL;
    for (int i = 0; i < count; i++)
        if (first[i].verdict != V_PASSED && (best == NULL || closer_to_cause(&first[i], best)))
            best = &first[i];
    return best;
}

/* The functions a chapter's failures say are not written yet, in the
 * rubric's order, each once: "tpool_create, tpool_execute". */
static void unwritten_functions(const struct test_case *first, int count, char *out, size_t size)
{
    out[0] = '\0';
    for (int i = 0, named = 0; i < count && named < 4; i++) {
        char name[64], quoted[70];
        unwritten_function(first[i].detail, name, sizeof name);
        textf(quoted, sizeof quoted, "%s,", name);
        if (first[i].verdict == V_PASSED || name[0] == '\0' || strstr(out, quoted))
            continue;
        size_t used = strlen(out);
        textf(out + used, size - used, "%s%s", named++ ? " " : "", quoted);
    }
    if (out[0])
        out[strlen(out) - 1] = '\0'; /* the last comma */
}

/* The closing table's words for a race-free line that failed: the access
 * to change, where the explorer could tell it. */
static void print_race_standing(const struct test_case *line, const char *chapter)
{
    char access[400];
    race_access_to_change(line->detail, access, sizeof access);
    if (access[0])
        printf("%s: %s - change %s; its lines above name both accesses\n", race_label(line),
               verdict_text(line->verdict), access);
    else
        printf("%s: %s - its lines above name both accesses; make tsan CH=%.2s looks for it on real threads\n",
               race_label(line), verdict_text(line->verdict), chapter);
}

/* One line of the closing table: the chapter, its score, and the line to
 * debug first with the command that debugs it. */
static void print_chapter_standing(const struct test_case *first, int count, const char *debug_args)
{
    int score = 0, max = 0;
    for (int i = 0; i < count; i++) {
        max += first[i].points;
        if (first[i].verdict == V_PASSED)
            score += first[i].points;
    }
    const struct test_case *failing = first_to_debug(first, count);
    char command[512] = "", unwritten[300];
    if (failing != NULL)
        debug_command(failing, debug_args, command, sizeof command);
    unwritten_functions(first, count, unwritten, sizeof unwritten);
    printf("  %-24s %3d/%-3d  ", first->chapter, score, max);
    if (failing == NULL)
        printf("every test passes\n");
    else if (failing->integrity)
        printf("INTEGRITY: %s\n", failing->verdict == V_REJECTED ? "admission refused its files - see the chapter's "
               "first line" : "the judge caught its code at what no code needs - see the line marked INTEGRITY");
    else if (score == 0 && failure_kind(&first[0]) == UNWRITTEN)
        printf("not begun: its functions return ENOSYS - start with %.*s\n", (int)strcspn(unwritten, ","),
               unwritten);
    else if (failure_kind(failing) == UNWRITTEN)
        printf("left to write (they return ENOSYS): %s\n", unwritten);
    else if (command[0])
        printf("%s\n", command);
    else if (failing->verdict == V_MISSING)
        printf("%s: not built - see what the compiler said\n", failing->name);
    else if (strcmp(failing->name, "tsan") == 0)
        print_race_standing(failing, first->chapter);
    else
        printf("%s: %s\n", failing->name, verdict_text(failing->verdict));
}

/* The closing table of `make grade`: one line per chapter. tests holds the
 * graded lines, each chapter's together. */
void print_standing(const struct test_case *tests, int count, const char *debug_args)
{
    printf("\n== Where you stand ==\n  %-24s %6s   %s\n", "chapter", "score", "the failing test to debug first, and how");
    for (int i = 0; i < count;) {
        int end = i;
        while (end < count && strcmp(tests[end].chapter, tests[i].chapter) == 0)
            end++;
        print_chapter_standing(&tests[i], end - i, debug_args);
        i = end;
    }
}

/* How many bytes the UTF-8 sequence at c takes, or 0 if it is not valid
 * UTF-8 (a test's output may hold any byte; JSON must be Unicode). */
static int utf8_length(const unsigned char *c)
{
    int length = c[0] < 0x80 ? 1 : (c[0] & 0xE0) == 0xC0 ? 2 : (c[0] & 0xF0) == 0xE0 ? 3 : (c[0] & 0xF8) == 0xF0 ? 4 : 0;
    for (int i = 1; i < length; i++)
        if ((c[i] & 0xC0) != 0x80)
            return 0;
    bool overlong = (length == 2 && c[0] < 0xC2) || (c[0] == 0xE0 && c[1] < 0xA0) || (c[0] == 0xF0 && c[1] < 0x90);
    bool surrogate = c[0] == 0xED && c[1] >= 0xA0;
    bool beyond = c[0] > 0xF4 || (c[0] == 0xF4 && c[1] >= 0x90);
    return overlong || surrogate || beyond ? 0 : length;
}

static void json_string(FILE *out, const char *text)
{
    fputc('"', out);
    for (const unsigned char *c = (const unsigned char *)text; *c;) {
        int length = utf8_length(c);
        if (length == 0)
            fputs("\\ufffd", out); /* a byte that is not UTF-8: the replacement character */
        else if (*c == '"' || *c == '\\')
            fprintf(out, "\\%c", *c);
        else if (*c == '\n')
            fputs("\\n", out);
        else if (*c < 0x20 || *c == 0x7f)
            fprintf(out, "\\u%04x", *c);
        else
            fwrite(c, 1, (size_t)length, out);
        c += length ? length : 1;
    }
    fputc('"', out);
}

static void xml_text(FILE *out, const char *text)
{
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        switch (*c) {
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '&': fputs("&amp;", out); break;
        case '"': fputs("&quot;", out); break;
        default:
            if (*c >= 0x80 && utf8_length(c) == 0)
                fputc('?', out);
            else if (*c >= 0x20 || *c == '\n' || *c == '\t')
                fputc(*c, out);
        }
    }
}

static int close_report(FILE *out)
{
    int err = ferror(out) ? EIO : 0;
    if (fclose(out) != 0 && err == 0)
        err = errno;
    return err;
}

/* report.json's "integrity": each chapter once, if any test of it was flagged. */
static void write_flagged_chapters(FILE *out, const struct test_case *tests, int count)
{
    for (int i = 0, listed = 0, end; i < count; i = end) {
        bool flagged = false;
        for (end = i; end < count && strcmp(tests[end].chapter, tests[i].chapter) == 0; end++)
            flagged = flagged || tests[end].integrity;
        if (flagged) {
            fputs(listed++ ? ", " : "", out);
            json_string(out, tests[i].chapter);
        }
    }
}

int write_json_report(const char *path, const char *mode, const char *implementation,
                      const struct test_case *tests, int count, const char *debug_args)
{
    FILE *out = fopen(path, "w");
    if (out == NULL)
        return errno;
    int score = 0, max = 0;
    for (int i = 0; i < count; i++) {
        max += tests[i].points;
        score += tests[i].verdict == V_PASSED ? tests[i].points : 0;
    }
    fprintf(out, "{\n  \"mode\": ");
    json_string(out, mode);
    fprintf(out, ",\n  \"implementation\": ");
    json_string(out, implementation);
    fprintf(out, ",\n  \"score\": %d,\n  \"max\": %d,\n  \"integrity\": [", score, max);
    write_flagged_chapters(out, tests, count);
    fprintf(out, "],\n  \"tests\": [");
    for (int i = 0; i < count; i++) {
        const struct test_case *t = &tests[i];
        fprintf(out, "%s\n    {\"chapter\": ", i ? "," : "");
        json_string(out, t->chapter);
        fputs(", \"name\": ", out);
        json_string(out, t->name);
        fprintf(out, ", \"points\": %d, \"earned\": %d, \"verdict\": ", t->points,
                t->verdict == V_PASSED ? t->points : 0);
        json_string(out, verdict_text(t->verdict));
        fprintf(out, ", \"seconds\": %.3f, \"description\": ", t->seconds);
        json_string(out, t->description);
        fputs(", \"detail\": ", out);
        json_string(out, t->detail);
        char command[512];
        debug_command(t, debug_args, command, sizeof command);
        fputs(", \"debug\": ", out);
        json_string(out, command);
        fputs(", \"feedback\": ", out);
        json_string(out, t->feedback);
        if (t->schedules > 0)
            fprintf(out, ", \"schedules\": %ld, \"wakeups\": %ld, \"futile_wakeups\": %ld", t->schedules,
                    t->wakeups, t->futile);
        fprintf(out, ", \"judged\": %s, \"subject_word\": ", t->judged ? "true" : "false");
        json_string(out, t->judged ? t->subject_word : "");
        fprintf(out, ", \"integrity\": %s}", t->integrity ? "true" : "false");
    }
    fputs("\n  ]\n}\n", out);
    return close_report(out);
}

int write_junit_report(const char *path, const struct test_case *tests, int count)
{
    FILE *out = fopen(path, "w");
    if (out == NULL)
        return errno;
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n", out);
    for (int i = 0; i < count;) {
        int end = i, failures = 0;
        while (end < count && strcmp(tests[end].chapter, tests[i].chapter) == 0)
            failures += tests[end++].verdict != V_PASSED;
        fprintf(out, "  <testsuite name=\"%s\" tests=\"%d\" failures=\"%d\">\n", tests[i].chapter, end - i, failures);
        for (; i < end; i++) {
            fprintf(out, "    <testcase classname=\"%s\" name=\"%s\" time=\"%.3f\">", tests[i].chapter, tests[i].name,
                    tests[i].seconds);
            if (tests[i].verdict != V_PASSED) {
                fprintf(out, "<failure message=\"%s\">", verdict_text(tests[i].verdict));
                xml_text(out, tests[i].detail);
                fputs("</failure>", out);
            }
            fputs("</testcase>\n", out);
        }
        fputs("  </testsuite>\n", out);
    }
    fputs("</testsuites>\n", out);
    return close_report(out);
}

/* scores.tsv: chapter, points earned, points in all, and "refused" when the
 * gate refused its files - the one line a chapter that grade-all reads. */
int write_scores(const char *path, const struct test_case *tests, int count)
{
    FILE *out = fopen(path, "w");
    if (out == NULL)
        return errno;
    for (int i = 0; i < count;) {
        int end = i, earned = 0, max = 0;
        bool refused = false;
        for (; end < count && strcmp(tests[end].chapter, tests[i].chapter) == 0; end++) {
            max += tests[end].points;
            earned += tests[end].verdict == V_PASSED ? tests[end].points : 0;
            refused = refused || tests[end].integrity;
        }
        fprintf(out, "%s\t%d\t%d\t%s\n", tests[i].chapter, earned, max, refused ? "refused" : "ok");
        i = end;
    }
    return close_report(out);
}
