/**
 * @file kit_cli.h
 * @brief Command-line options for the chapter programs, declared as a table.
 *
 * Every chapter program takes `--name VALUE` (or `--name=VALUE`) options in
 * the style of OSTEP's homework simulators. A program lists its options in a
 * kit_opt_t table whose targets already hold the defaults; kit_cli_parse()
 * fills them in, prints `--help`, and turns every bad argument into one
 * line on stderr, the usage, and exit status 2. Numbers are checked whole
 * and against their range, so `--items 12abc`, `--items -1` and
 * `--items 99999999999999999999` are refused rather than misread.
 *
 * The options every program shares (`--seed`, `--trace`, `--quiet`) come from
 * KIT_RUN_OPTIONS() and are acted on by kit_run_begin() / kit_run_end().
 *
 * @ingroup kit
 */
#ifndef KIT_CLI_H
#define KIT_CLI_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/** @addtogroup kit
 *  @{ */

/** @brief What an option's value is, and so what its target points to. */
typedef enum kit_opt_kind {
    KIT_OPT_FLAG,   /**< no value; target is `bool *`, set to true */
    KIT_OPT_LONG,   /**< an integer in [min, max]; target is `long *` */
    KIT_OPT_STRING, /**< any text; target is `const char **` (points into argv) */
    KIT_OPT_CHOICE, /**< one of `choices`; target is `const char **` */
    KIT_OPT_LIST    /**< comma-separated integers in [min, max]; target is `kit_list_t *` */
} kit_opt_kind_t;

/** Most values a KIT_OPT_LIST option takes. */
#define KIT_LIST_MAX 64

/** @brief The value of a KIT_OPT_LIST option, e.g. `--delays 3000,0,500`. */
typedef struct kit_list {
    long values[KIT_LIST_MAX]; /**< the values, in order */
    size_t count;              /**< how many were given (0 = option absent) */
} kit_list_t;

/** @brief One option of a program. */
typedef struct kit_opt {
    const char *name;    /**< long name without the dashes: "producers" */
    kit_opt_kind_t kind; /**< the value's kind */
    const char *metavar; /**< placeholder in the usage: "N", "MS", "FILE" */
    const char *help;    /**< one line for the usage */
    void *target;        /**< where the value goes; holds the default before parsing */
    long min;            /**< smallest accepted value (LONG, LIST) */
    long max;            /**< largest accepted value (LONG, LIST) */
    const char *const *choices; /**< NULL-terminated list (CHOICE) */
} kit_opt_t;

/** @brief A program's command line: its name, a summary and its options. */
typedef struct kit_cli {
    const char *program;     /**< the program's name, e.g. "ch01-monitor-queue" */
    const char *summary;     /**< what a bare run shows, one or two lines */
    const char *examples;    /**< extra usage text (may be NULL) */
    const kit_opt_t *options;/**< the option table */
    size_t option_count;     /**< its length */
} kit_cli_t;

/**
 * @brief Parse @p argv into the option targets.
 *
 * Prints the usage and exits 0 on `--help`; on any bad argument prints
 * `PROGRAM: error: WHAT` and the usage to stderr and exits 2. Returns only
 * when every argument was valid.
 */
void kit_cli_parse(const kit_cli_t *cli, int argc, char **argv);

/**
 * @brief Refuse the command line for a reason only the program can judge
 *        (say, two options that contradict each other): one-line error,
 *        usage, exit 2.
 */
void kit_cli_fail(const kit_cli_t *cli, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3), noreturn))
#endif
    ;

/** @brief The options every chapter program shares. */
typedef struct kit_run {
    long seed;              /**< `--seed`; 0 = choose one from the clock (and print it) */
    const char *trace_path; /**< `--trace FILE`: Chrome trace-event JSON of the run */
    const char *timeline_path; /**< `--timeline FILE`: the run drawn as an SVG timeline */
    bool quiet;             /**< `--quiet`: no log lines, only the summary */
} kit_run_t;

/** @brief Option table entries for a kit_run_t named @p run (put them last). */
#define KIT_RUN_OPTIONS(run)                                                                  \
    { "seed", KIT_OPT_LONG, "N", "random seed (0 = pick one and print it)", &(run).seed, 0,  \
      2147483647L, NULL },                                                                    \
    { "trace", KIT_OPT_STRING, "FILE", "write the run's thread timeline as Chrome trace JSON", \
      &(run).trace_path, 0, 0, NULL },                                                        \
    { "timeline", KIT_OPT_STRING, "FILE", "draw the run's thread timeline as an SVG picture",  \
      &(run).timeline_path, 0, 0, NULL },                                                     \
    { "quiet", KIT_OPT_FLAG, NULL, "print only the summary, not the trace lines",             \
      &(run).quiet, 0, 0, NULL }

/**
 * @brief For programs: start @p count threads named `<role>-0`, `<role>-1`,
 *        ..., thread i running `fn((void *)(intptr_t)i)`. A demo cannot go
 *        on without its threads: on failure this prints why and exits 1.
 * @return the threads' handles, for kit_run_join_group().
 */
pthread_t *kit_run_start_group(size_t count, const char *role, void *(*fn)(void *));

/** @brief Join the threads of kit_run_start_group() and free their handles. */
void kit_run_join_group(pthread_t *threads, size_t count);

/**
 * @brief Start a program run: name the main thread "main", switch the log
 *        on (unless --quiet), start the trace recorder if a trace or
 *        timeline was asked for, and settle the seed.
 * @return the seed to use (never 0).
 */
uint64_t kit_run_begin(kit_run_t *run);

/**
 * @brief Finish a run: write the trace files that were asked for.
 * @return 0, or 1 after printing why a file could not be written.
 */
int kit_run_end(const kit_run_t *run);

/** @} */
#endif
