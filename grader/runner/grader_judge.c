/**
 * @file grader_judge.c
 * @brief A test's verdict from how its process ended, and its log cut to the
 *        lines that explain a failure.
 */
#define _POSIX_C_SOURCE 200809L
#include "grader.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- reading a test's log --------------------------------------------------- */

char *read_log(const char *path)
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
    /* The code under test shares the log: a zero byte it printed would end
     * the text there for every reader below, hiding what the test and the
     * judge wrote after it. */
    for (size_t i = 0; i < n; i++)
        if (text[i] == '\0')
            text[i] = ' ';
    fclose(in);
    return text;
}

void append_line(char *detail, size_t size, const char *line, size_t length)
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

/* A line cut to fit its buffer ends at a word, with "...", never mid-word. */
static void cut_at_word(char *copy, size_t size, size_t full_length)
{
    if (full_length < size - 1)
        return;
    char *space = strrchr(copy, ' ');
    if (space != NULL && space > copy + size / 2)
        *space = '\0';
    if (strlen(copy) + 5 < size)
        strcat(copy, " ...");
}

/* One line that explains a failure, its cmocka prefixes off, into @p detail:
 * "tests/x.c:19: error: Failure!" as "at tests/x.c:19". False: noise. */
static bool copy_failure_line(const char *line, size_t length, char *detail, size_t size)
{
    static const char *const prefixes[] = { "[  ERROR   ] --- ", "[   LINE   ] --- ", "[ seed     ] " };
    const char *text = line;
    for (int p = 0; p < 3; p++) /* cmocka nests them: "[ ERROR ] --- [ LINE ] --- file:7" */
        while (strncmp(text, prefixes[p], strlen(prefixes[p])) == 0)
            text += strlen(prefixes[p]);
    if (length == 0 || (text == line && line[0] == '[') || line_contains(line, length, "FAILED TEST(S)"))
        return false;
    char copy[2048]; /* an explorer's sentence with its lines fits; a longer one ends at a word */
    textf(copy, sizeof copy, "%.*s", (int)(length - (size_t)(text - line)), text);
    cut_at_word(copy, sizeof copy, length - (size_t)(text - line));
    char *failure = strstr(copy, ": error: Failure!");
    if (failure) {
        *failure = '\0';
        memmove(copy + 3, copy, strlen(copy) + 1);
        memcpy(copy, "at ", 3);
    }
    append_line(detail, size, copy, strlen(copy));
    return true;
}

/* Copies the lines that explain a failure: the seed first, then what the
 * test said and where it failed; cmocka's own RUN/OK/summary lines are left
 * out. (The seed line leads wherever the log has it: in a judged test that
 * a subject's copy ran first, its failure's words can come before the
 * judge's seed line.) */
static void failure_lines(const char *log, char *detail, size_t size, int max_lines)
{
    int kept = 0;
    for (int seeds = 1; seeds >= 0; seeds--)
        for (const char *line = log; line && *line && kept < max_lines;) {
            const char *end = strchr(line, '\n');
            size_t length = end ? (size_t)(end - line) : strlen(line);
            bool seed = strncmp(line, "[ seed     ] ", 13) == 0;
            if (seed == (seeds == 1) && copy_failure_line(line, length, detail, size))
                kept++;
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
    case SIGKILL: return "SIGKILL (killed: its processor time limit - threads that spin instead of waiting? - or out of memory)";
    case SIGXCPU: return "SIGXCPU (CPU time limit exceeded: a spinning thread?)";
    case SIGXFSZ: return "SIGXFSZ (output size limit exceeded)";
    case SIGPIPE: return "SIGPIPE";
    default: return "a signal";
    }
}

/* The stacks a test printed itself (kit_dump_stacks(), grader/subject/
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
        /* ThreadSanitizer's first report says what it found: a thread leak is no race */
        const char *report = strstr(log, "WARNING: ThreadSanitizer: ");
        bool leak = report && strncmp(report + 26, "thread leak", 11) == 0;
        test->verdict = leak ? V_THREAD_LEAK : V_RACE;
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
            failure_lines(log, test->detail, sizeof test->detail, 28);
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

/* The signal a test died of, or 0. Confined, it ran under bubblewrap,
 * whose process 1 leaves with 128 + the signal when its command dies of one
 * (a test that exits with such a code on purpose gains nothing: a crash
 * earns no points either). */
static int signal_of(int status, const struct run_options *options)
{
    if (WIFSIGNALED(status))
        return WTERMSIG(status);
    if (options->confine && WIFEXITED(status) && WEXITSTATUS(status) > 128 && WEXITSTATUS(status) < 128 + 32)
        return WEXITSTATUS(status) - 128;
    return 0;
}

static void judge(struct test_case *test, const struct process_end *outcome, bool token_ok, char *log,
                  const struct run_options *options)
{
    int status = outcome->status;
    char *stacks = cut_stacks(log);
    if (outcome->timed_out)
        test->verdict = V_TIMED_OUT; /* the diagnosis is already in detail */
    else if (signal_of(status, options) != 0) {
        test->verdict = V_CRASHED;
        judge_crash(test, signal_of(status, options), log, stacks, options);
    } else {
        judge_exit(test, WEXITSTATUS(status), token_ok, log, stacks, options);
    }
    free(stacks);
}

/* Where the whole story is: the log, and the failing schedule, drawn from it (grader_drawing.c). */
static void point_at_logs(struct test_case *test, const char *log, const char *log_path,
                          const struct run_options *options)
{
    char where[1100];
    snprintf(where, sizeof where, "full log: %s", log_path);
    append_line(test->detail, sizeof test->detail, where, strlen(where));
    if (log && strstr(log, "[ schedule ] ") && strstr(log, ": its schedule (")) {
        const char *note = "it failed on its one schedule, the same in every grading: the steps are in the log";
        append_line(test->detail, sizeof test->detail, note, strlen(note));
    }
    char drawn[1000];
    snprintf(drawn, sizeof drawn, "%s/schedules", options->log_dir);
    mkdir(drawn, 0755);
    snprintf(drawn, sizeof drawn, "%s/schedules/%s.%s.svg", options->log_dir, test->chapter, test->name);
    if (draw_failed_schedule(log, test->name, drawn) == 0) {
        snprintf(where, sizeof where, "the failing schedule, drawn: %s", drawn);
        append_line(test->detail, sizeof test->detail, where, strlen(where));
    }
}

/* The race report a test printed ("[ race     ] ..." lines), cut to its words. */
void race_lines(const char *log, char *detail, size_t size)
{
    static const char tag[] = "[ race     ] ";
    for (const char *line = log ? strstr(log, tag) : NULL; line; line = strstr(line + 1, tag)) {
        const char *text = line + strlen(tag);
        append_line(detail, size, text, strcspn(text, "\n"));
    }
}

/* A passed test's wake-ups, from the harness's last "[ wake-ups ]" line
 * (kit_sched_print_wakeups). Code under test could print one too: it is
 * feedback worth no points, so a forged one only misleads its author. */
static void read_wakeups(struct test_case *test, const char *log)
{
    static const char tag[] = "[ wake-ups ] ";
    const char *last = NULL;
    for (const char *line = log ? strstr(log, tag) : NULL; line; line = strstr(line + 1, tag))
        last = line;
    long wakeups, futile, schedules;
    if (last && sscanf(last + strlen(tag), "%ld wake-ups in the code under test, %ld futile, over %ld schedules",
                       &wakeups, &futile, &schedules) == 3 && schedules > 0) {
        test->wakeups = wakeups;
        test->futile = futile;
        test->schedules = schedules;
    }
}

/* The steps of the last schedule the log says failed ("... failed after 18
 * steps"): how far from its start the failure came, for choosing the test
 * to debug first. The log is the test's: a forged line only reorders the
 * hints of its own author. */
static void read_failed_steps(struct test_case *test, const char *log)
{
    const char *last = NULL;
    for (const char *at = log ? strstr(log, " failed after ") : NULL; at; at = strstr(at + 1, " failed after "))
        last = at;
    long steps;
    if (last && sscanf(last, " failed after %ld steps", &steps) == 1 && steps > 0)
        test->failed_steps = steps;
}

/* The access a race report says to change ("the write by main at bq.c:198
 * (in dequeue), made with no mutex held"), from the explorer's line that
 * names it, or "". */
void race_access_to_change(const char *text, char *out, size_t size)
{
    static const char mark[] = "the access to change: ";
    out[0] = '\0';
    const char *access = text ? strstr(text, mark) : NULL;
    if (access != NULL) {
        access += strlen(mark);
        textf(out, size, "%.*s", (int)strcspn(access, "\n"), access);
    }
}

/* A failed test that met a data race on its schedules says so first, with
 * the access to change: a lost update there may well be what its own check
 * saw. The race is the test's own fact (no race token), its words the
 * explorer's report in the test's log. */
static void lead_with_race(struct test_case *test, const char *log)
{
    char access[400];
    if (test->verdict == V_PASSED || test->verdict == V_RACE || test->race_free)
        return;
    race_access_to_change(log, access, sizeof access);
    if (access[0] == '\0')
        return;
    char *rest = malloc(sizeof test->detail);
    if (rest == NULL)
        return;
    memcpy(rest, test->detail, sizeof test->detail);
    textf(test->detail, sizeof test->detail, "a data race on its schedules, the likely cause: change %s "
          "(the race-free line names both accesses)\n%s", access, rest);
    free(rest);
}

/* A limit that grew with the machine's load (grader_proc.c) says so. */
static const char *load_note(const struct process_end *end, const struct run_options *options, char *note,
                             size_t size)
{
    note[0] = '\0';
    if (end->seconds > options->limits.wall_seconds + 1)
        textf(note, size, "(%.0f s on the clock: the machine was busy, so the limit grew by the time its work "
              "waited for a CPU)\n", end->seconds);
    return note;
}

/* A judged test whose judge caught the code under test's process at what no
 * code needs - a message off the protocol, a system call its filter kills,
 * an exit in the middle of the test - says so ("[ integrity ] ..."): the
 * test failed, and is flagged. The marker is looked for anywhere, not only
 * at a line's start: the subject shares the log and may leave a line
 * unfinished just before the judge writes. (The subject can print the
 * marker too: it only flags itself.) */
static void read_integrity(struct test_case *test, const char *log)
{
    const char *marker = "[ integrity ] ";
    const char *line = strstr(log, marker);
    if (line == NULL || test->verdict == V_PASSED)
        return;
    test->integrity = true;
    line += strlen(marker);
    textf(test->detail, sizeof test->detail, "INTEGRITY: %.*s\n", (int)strcspn(line, "\n"), line);
}

/* Why a test that ran out of time had left its one schedule, as its log
 * says - often the clue (code the scheduler cannot follow, such as a spin on
 * a flag with no wait in it) - or "". */
static const char *schedule_note(const char *log, char *out, size_t size)
{
    static const char marker[] = "[ schedule ] on real threads, because on its schedule: ";
    const char *at = log != NULL ? strstr(log, marker) : NULL;
    out[0] = '\0';
    if (at != NULL) {
        at += strlen(marker);
        textf(out, size, "it ran on real threads because on its one schedule: %.*s\n", (int)strcspn(at, "\n"), at);
    }
    return out;
}

void judge_test(struct test_case *test, const struct process_end *end, bool token_ok, const char *log_path,
                const char *stuck_threads, const struct run_options *options)
{
    char note[160], why[400];
    test->seconds = end->seconds;
    char *log = read_log(log_path);
    judge(test, end, token_ok, log, options);
    if (test->verdict == V_PASSED)
        read_wakeups(test, log);
    if (test->verdict == V_PASSED && !test->race_free && options->race_fails_test) {
        test->verdict = V_RACE; /* the reference, a mutant: a race is a failure of its own */
        race_lines(log, test->detail, sizeof test->detail);
    }
    if (end->timed_out)
        textf(test->detail, sizeof test->detail, "timed out after %.0f s - likely a deadlock or a lost wake-up\n%s%s%s",
              options->limits.wall_seconds, load_note(end, options, note, sizeof note),
              schedule_note(log, why, sizeof why), stuck_threads);
    if (log)
        read_integrity(test, log);
    lead_with_race(test, log);
    if (test->verdict != V_PASSED) {
        read_failed_steps(test, log);
        point_at_logs(test, log, log_path, options);
    }
    free(log);
}

/* A test's log is kept whole up to 256 KB; a longer one keeps its first
 * 32 KB and its last 224 KB, where the failure is. Once a grade has kept
 * 64 MB of logs (the caller's budget), each later log keeps 16 KB: a
 * submission that prints in a loop cannot fill the grading machine's disk. */
void cap_log(const char *path, long *budget)
{
    struct stat info;
    if (stat(path, &info) != 0)
        return;
    long keep = budget && *budget <= 0 ? 16 << 10 : 256 << 10;
    if (budget)
        *budget -= info.st_size < keep ? (long)info.st_size : keep;
    if (info.st_size <= keep)
        return;
    long head = keep / 8, tail = keep - head;
    char *text = malloc((size_t)keep);
    FILE *in = fopen(path, "r");
    size_t got = 0;
    if (text && in && fread(text, 1, (size_t)head, in) == (size_t)head && fseek(in, -tail, SEEK_END) == 0)
        got = fread(text + head, 1, (size_t)tail, in);
    if (in)
        fclose(in);
    FILE *out = got == (size_t)tail ? fopen(path, "w") : NULL;
    if (out) {
        fwrite(text, 1, (size_t)head, out);
        fprintf(out, "\n[... %lld bytes of this log were cut here ...]\n", (long long)(info.st_size - keep));
        fwrite(text + head, 1, (size_t)tail, out);
        fclose(out);
    }
    free(text);
}
