/**
 * @file grader.h
 * @brief The grading runner's shared types: tests, verdicts, limits.
 *
 * The runner executes every test case of every selected chapter in its own
 * process (`test_binary --run NAME --verdict 3 4`), confined when graded
 * (kit-confine: confine.h), with a wall-clock limit and resource limits, and
 * decides each verdict from the exit status plus a one-time token the test
 * main moves from one pipe to another after cmocka reports success
 * (grader_proc.c). Nothing the code under test prints can change a verdict;
 * a submission the gate rejected (admission.h) scores 0 without running.
 */
#ifndef GRADER_H
#define GRADER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum verdict {
    V_PASSED,
    V_FAILED,       /* an assertion failed (exit status 1) */
    V_CRASHED,      /* killed by a signal */
    V_TIMED_OUT,    /* wall-clock limit: likely deadlock */
    V_RACE,         /* ThreadSanitizer reported (exit status 66) */
    V_THREAD_LEAK,  /* ... and what it reported is a thread never joined nor detached */
    V_MEMORY,       /* valgrind / sanitizer memory error or leak (exit status 99) */
    V_NO_RESULT,    /* exited 0 without the success token: left the test early */
    V_MISSING,      /* in the rubric, but no test binary has it */
    V_NOT_RUN,      /* skipped (race-freedom line when tests fail) */
    V_REJECTED,     /* admission refused the submission's chapter: an integrity finding */
};

struct test_case {
    char chapter[64];      /* "01-monitor-queue" */
    char name[128];        /* cmocka test name, or "tsan" for the race-freedom line */
    char description[640]; /* from the rubric */
    char binary[512];      /* test executable that has it ("" if none) */
    int points;
    enum verdict verdict;
    bool integrity;        /* admission refused the chapter's files: an attempt on the grader, or a mistake */
    bool race_free;        /* the test delivered its race token: none of its schedules saw a data race */
    bool judged;           /* decided by a judge that links none of the submission (docs/grading.md) */
    char subject_word[128]; /* judged: what its verdict rests on of the code under test's word, in words ("leaks") */
    double seconds;
    char detail[8192];     /* why it did not pass, a few lines */
    long schedules;        /* schedules it ran on (0: real threads only), its wake-ups in the code */
    long wakeups, futile;  /* under test, and those that found nothing to do (when it passed) */
    char feedback[384];    /* a passed test's note beside the reference, worth no points */
    long failed_steps;     /* the steps of the schedule it failed on, as its log says (0: none) */
};

struct limits {
    double wall_seconds;   /* per test */
    long cpu_seconds;      /* RLIMIT_CPU */
    long address_space_mb; /* RLIMIT_AS; 0 = unlimited (sanitizers need huge mappings) */
    long file_size_mb;     /* RLIMIT_FSIZE: output and files written */
    long processes;        /* RLIMIT_NPROC */
    long sandbox_uid;      /* > 0: when root, run the test sandboxed as this uid */
    long sandbox_cpus;     /* CPUs the sandbox slot may use (its cgroup's quota) */
    long memory_mb;        /* the sandbox slot's memory (a cgroup, as root), or its address space */
};

struct run_options {
    struct limits limits;
    const char *wrapper;     /* command prefix, e.g. "valgrind --error-exitcode=99 ..." */
    const char *log_dir;     /* one log file per test */
    const char *source_root; /* for cutting backtraces to the kit's own frames */
    const char *student_root; /* a submission graded from outside the kit: its frames are the student's */
    bool diagnose_timeouts;  /* attach gdb to a stuck test */
    const char *confine;     /* kit-confine's path: run each test confined; NULL: unconfined (make test) */
    const char *kit_root;    /* the kit, whose headers the confinement shows */
    const char *stage, *stage_at; /* the submission's staged files, shown read-only where they were compiled:
                                     a failed schedule names objects from their lines (kit_sched_report.c) */
    long *log_budget;        /* bytes of logs this grade may still keep (shared by every test) */
    bool race_fails_test;    /* make test, mutants: a data race fails its test (graded: the race-free line) */
};

/* How a process ended. */
struct process_end {
    int status;      /* from waitpid */
    bool timed_out;
    double seconds;
};

typedef void (*on_timeout_fn)(pid_t pid, void *ctx);

/* grader_report.c: snprintf that truncates on purpose (long paths, long
 * details are cut, not errors), without gcc's format-truncation warning. */
void textf(char *dst, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* grader_proc.c */
void run_test_case(struct test_case *test, const struct run_options *options);
int run_tool(char *const argv[], const char *log_path, double timeout_seconds, struct process_end *end);
const char *verdict_text(enum verdict verdict);

/* grader_judge.c: a verdict from how the process ended and what it logged */
void judge_test(struct test_case *test, const struct process_end *end, bool token_ok, const char *log_path,
                const char *stuck_threads, const struct run_options *options);
char *read_log(const char *path);
void append_line(char *detail, size_t size, const char *line, size_t length);
void cap_log(const char *path, long *budget);
void race_lines(const char *log, char *detail, size_t size);
/* The access a race report says to change, from the explorer's words: "the
 * write by main at bq.c:198 (in dequeue), made with no mutex held", or "". */
void race_access_to_change(const char *text, char *out, size_t size);

/* grader_drawing.c: the last failing schedule a test's log reports, drawn
 * by the grader as an SVG at path; 0, or -1 when the log reports none. */
int draw_failed_schedule(const char *log, const char *title, const char *path);

/* grader_feedback.c: a passed test's wake-ups beside the reference's
 * (tests/wakeups.tsv), as feedback that is worth no points. */
int load_reference_wakeups(const char *path);
void compare_wakeups(struct test_case *test);

/* grader_tests.c: which binary has which test, and the race-freedom line */
enum { MAX_BINARIES = 16, MAX_NAMES = 256 };
struct chapter_tests {
    char binaries[MAX_BINARIES][512];
    char names[MAX_BINARIES][MAX_NAMES][128];
    int name_counts[MAX_BINARIES];
    int binary_count;
};
void discover_tests(const char *bin_dir, const char *source_root, const char *chapter, struct chapter_tests *found);
const char *binary_for(const struct chapter_tests *found, const char *name);
int check_listing(const struct chapter_tests *found);

/* grader_stacks.c */
enum stacks_view {
    ALL_THREADS,      /* a hang: where every thread waits */
    CRASHED_THREAD,   /* a crash: the faulting thread, from the fault down */
    REPORTING_THREAD, /* a failed check: the line of the test that called it */
};
void summarise_threads(const char *gdb_output, const struct run_options *options, enum stacks_view view,
                       char *detail, size_t size);
void summarise_race(const char *log, const struct run_options *options, char *detail, size_t size);

/* grader_report.c */
int load_rubric(const char *path, struct test_case *tests, int max_tests, char *error, size_t error_size);
void print_chapter_header(const char *chapter);
/* debug_args: NULL prints no debugging hints; otherwise each test that did
 * not pass names `make debug CH=NN TEST=name` followed by these words (say,
 * "SUBMISSION=dir"), and so does the report.json line of the test. */
void print_test_line(const struct test_case *test, bool show_points, const char *debug_args);
void print_standing(const struct test_case *tests, int count, const char *debug_args);
int write_json_report(const char *path, const char *mode, const char *implementation,
                      const struct test_case *tests, int count, const char *debug_args);
int write_junit_report(const char *path, const struct test_case *tests, int count);
int write_scores(const char *path, const struct test_case *tests, int count);

#endif
