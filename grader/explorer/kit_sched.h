/**
 * @file kit_sched.h
 * @brief Schedule exploration: run a test's threads one at a time, under a
 *        controlled scheduler, and search the interleavings for a failure.
 *
 * A test hands kit_explore() a body. The body runs again and again, once
 * per schedule, on threads the scheduler controls: every thread the body
 * (or the code under test) starts is a user-level context, with a stack, a
 * pthread_t, an errno, thread-local variables and thread-specific values of
 * its own, and all of them run on one OS thread, one at a time. Each call to
 * a pthread mutex, condition variable, create, join, sched_yield or sleep is
 * a switch point, where the scheduler chooses who runs next: a switch is a
 * save and restore of registers, no system call. It keeps its own model of which thread owns each
 * mutex and which threads wait on each condition variable, so a thread
 * blocks in the model, never in the kernel. Which waiter a signal wakes, and
 * whether a waiter wakes up spuriously, are choices too.
 *
 * Time is virtual: clocks read by the threads return the schedule's time,
 * which moves only when no thread can run and one waits with a deadline or
 * sleeps - then it jumps to the earliest deadline. When no thread can run
 * and none has a deadline, the schedule is a deadlock (or a lost wake-up)
 * and is reported at once, with what every thread waits for and where.
 *
 * A failure prints a replay token (`KIT_SCHED=replay:...`) that reproduces
 * it exactly - its choices, and after a `~` the racing places earlier
 * schedules had made switch points - and the last steps of the
 * interleaving, numbered.
 *
 * Strategies, chosen by the test or by KIT_SCHED in the environment (several
 * may follow each other, separated by spaces):
 * - `random:SEED`          a seeded random walk;
 * - `pct:SEED:DEPTH`       probabilistic concurrency testing (random thread
 *                          priorities, DEPTH-1 priority change points);
 * - `dfs:BOUND`            every schedule with at most BOUND preemptions,
 *                          depth first;
 * - `dpor:BOUND`           the same search with partial-order reduction
 *                          (kit_sched_dpor.c): one schedule of each class of
 *                          equivalent ones; when it runs out of branches it
 *                          is complete, and says so (kit_explore_result_t);
 * - `replay:TOKEN`         one recorded schedule.
 * KIT_SCHEDULES=N overrides the number of schedules each strategy runs
 * (KIT_SLOW, set by make tsan and make valgrind, runs a twenty-fifth of
 * them, but at least 40);
 * KIT_EXPLORE_STATS prints each search's schedules and speed; a failed
 * schedule is drawn as an SVG next to the test program, or into
 * KIT_EXPLORE_SVG_DIR (empty: not drawn, as in a confined grade, whose
 * grader draws it from the log). The grader clears KIT_SCHED and KIT_SCHEDULES: graded
 * runs use the tests' own fixed seeds.
 *
 * The same scheduler runs an ordinary test on one schedule when the grader
 * asks (KIT_SCHEDULE_TESTS=SEED, see kit_test.h and kit_sched_run_test()):
 * a random walk seeded from SEED and the test's name, so that a racy
 * submission meets the same interleaving, and scores the same, every time.
 *
 * A thread that does not come back to the scheduler for 5 s (it blocks in a
 * pipe, C11 threads, or spins), or a thread the scheduler did not start
 * calling a wrapped function, stops the schedule - and so, at once, does a
 * read-write lock, barrier or spin lock that would wait, or a cancellation:
 * an exploration runs its body on real threads instead, saying why; a
 * scheduled test runs again on real threads.
 *
 * The code under test is compiled with ThreadSanitizer's instrumentation and
 * linked with kit_sched_memory.c instead of its runtime: every access it makes
 * reaches the scheduler, which keeps happens-before (vector clocks), reports
 * the first data race it sees with both places, and makes the places of a
 * race switch points from then on - a lost update is then a choice the
 * search makes, and the test's own check fails with the steps.
 */
#ifndef KIT_SCHED_H
#define KIT_SCHED_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/** @brief How a test explores; zero fields take the defaults shown. */
typedef struct kit_explore {
    const char *strategy; /**< default "pct:1:3 random:1"; KIT_SCHED overrides */
    long schedules;       /**< per strategy, default 500; KIT_SCHEDULES overrides */
    int spurious;         /**< spurious wake-ups each schedule may choose (default 0) */
    bool timeouts_race;   /**< time may pass while threads can still run: a
                               deadline up to 10 s ahead may expire at any
                               switch point */
    long max_steps;       /**< a schedule longer than this fails (default 20000) */
    bool quiet;           /**< kit_explore_search(): print no report of a failure */
} kit_explore_t;

/**
 * @brief Run `body(ctx)` under the scheduler, once per explored schedule,
 *        on a thread named "test". Fails the calling cmocka test, with the
 *        replay token and the interleaving, at the first schedule that fails
 *        a check, deadlocks or runs too long.
 *
 * The body must build what it tests afresh each time and free it before it
 * returns; it checks with kit_explore_check() / explore_ok(), never with
 * cmocka's asserts (it does not run on cmocka's thread).
 */
void kit_explore_run(const char *test, const char *file, int line, const kit_explore_t *options,
                     void (*body)(void *ctx), void *ctx);

/** @brief kit_explore_run() named after the calling test function, failing at its line. */
#define kit_explore(options, body, ctx) kit_explore_run(__func__, __FILE__, __LINE__, (options), (body), (ctx))

/** @brief Fail the schedule being explored (from any of its threads) and stop it. */
void kit_explore_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/**
 * @brief Inside an explored body: go on only once at least @p count threads
 *        are asleep in a condition wait (and have so given up their mutex).
 *        A schedule where that never happens is reported as a deadlock.
 */
void kit_explore_await_sleepers(int count);

/**
 * @brief Inside an explored body: go on only once every other thread is
 *        stuck for good - none can go on now, and none waits with a
 *        deadline (time moves on to each deadline first). What is asleep
 *        then stays asleep unless this thread wakes it: a scenario checks
 *        its calls here (kit_scenario.h).
 */
void kit_explore_await_quiet(void);

/**
 * @brief Inside an explored body (or a test on its schedule): the wake-ups
 *        from a condition wait in the code under test so far, and the futile
 *        ones - a thread woken that waited on the same condition again
 *        before anything else (it found nothing to do). 0 off the scheduler.
 */
long kit_sched_wakeups(void);
long kit_sched_futile_wakeups(void);
/** A passed test's last line: its wake-ups and futile ones over every
 *  schedule it ran, which the grader sets beside the reference's (feedback,
 *  worth no points). Nothing if it ran on no schedule. */
void kit_sched_print_wakeups(void);

/**
 * @brief Inside an explored body: the harness recorded an event every thread
 *        of the scenario orders itself by (a call began or returned). Two
 *        steps that both record one are never swapped by the partial-order
 *        reduction, so the order of calls a check sees is one that ran.
 */
void kit_sched_touch_history(void);

/**
 * @brief A count that tasks raise and an explored body waits on: "wait until
 *        3 tasks have run", with no time-out - a task that never runs leaves
 *        the body asleep, which the explorer reports at once.
 */
typedef struct kit_tally {
    pthread_mutex_t lock;
    pthread_cond_t changed; /**< broadcast on every add */
    int count;              /**< guarded by lock */
} kit_tally_t;

/** @brief Set @p tally to 0; fails the schedule if its mutex or condition cannot be made. */
void kit_tally_init(kit_tally_t *tally);
/** @brief Add one, and wake whoever waits. */
void kit_tally_add(kit_tally_t *tally);
/** @brief Wait until the count reaches @p count. */
void kit_tally_await(kit_tally_t *tally, int count);
/** @brief The count now. */
int kit_tally_count(kit_tally_t *tally);
/** @brief Free what kit_tally_init() made. */
void kit_tally_destroy(kit_tally_t *tally);

/** @brief Inside an explored body: fail the schedule unless @p cond holds. */
#define kit_explore_check(cond, ...)                                                          \
    do {                                                                                      \
        if (!(cond))                                                                          \
            kit_explore_fail(__FILE__, __LINE__, __VA_ARGS__);                                \
    } while (0)

/** @brief Inside an explored body: fail the schedule unless @p call returns 0. */
#define explore_ok(call) kit_explore_code((call), 0, #call, __FILE__, __LINE__)
/** @brief Inside an explored body: fail the schedule unless @p call returns @p code. */
#define explore_err(call, code) kit_explore_code((call), (code), #call, __FILE__, __LINE__)
void kit_explore_code(int got, int want, const char *expr, const char *file, int line);

/** @brief What kit_explore_search() found. */
typedef struct kit_explore_result {
    bool failed;          /**< some schedule failed */
    bool deadlocked;      /**< ... because no thread could go on */
    bool gave_up;         /**< ... because the code did what the scheduler does
                               not model (a semaphore, a robust mutex, a thread
                               it did not start): no bug of the code */
    long schedules;       /**< schedules run */
    bool complete;        /**< a dpor:BOUND strategy ran out of branches: every
                               interleaving, up to equivalence, within the bound */
    long interleavings;   /**< ... how many classes of equivalent schedules that was */
    long redundant;       /**< ... and schedules found equivalent to one already run */
    bool bound_reached;   /**< ... some schedules needed more preemptions than the
                               bound: complete within it only */
    int bound;            /**< ... the bound */
    long long virtual_ns; /**< the last schedule's virtual time at its end */
    bool searched_again;  /**< a replay's token did not fit this program (one of
                               another build: its places name no access here, its
                               choices are not this test's, or its schedule did
                               not fail): the search ran after it */
    char message[4096];   /**< why it failed */
    char token[8192];     /**< the failing schedule's replay token (without "replay:") */
} kit_explore_result_t;

/**
 * @brief kit_explore_run() that reports instead of failing the test: true if
 *        every schedule passed. The report of a failure is still printed.
 */
bool kit_explore_search(const char *test, const kit_explore_t *options, void (*body)(void *ctx), void *ctx,
                        kit_explore_result_t *result);

/* A generated scenario's number (kit_scenario.c), printed in every replay
 * command until called again with NULL: SCENARIO=N for make, KIT_SCENARIO=N
 * for the test program. */
void kit_sched_replay_scenario(const char *number);
/** The last call a thread made into the code under test and that returned:
 *  where it was called from (a return address in the caller), a place in
 *  the function called, and the last place in that call that read or wrote
 *  memory (NULL if none). Recorded by the code's instrumentation, so never
 *  in a ThreadSanitizer or AddressSanitizer build. */
typedef struct {
    void *site;     /**< the return address in the caller */
    void *function; /**< a place in the function called */
    void *touched;  /**< the last place of the call that read or wrote memory, or NULL */
} kit_code_call_t;
/** Whether this thread made such a call; if so, *call is the last one. */
bool kit_last_call(kit_code_call_t *call);
/** The calling scheduled thread's wake-up that a time-out took, since it
 *  last asked: a timed wait of the code under test that a signal chose
 *  timed out at once (POSIX allows both) - what it waited for had changed,
 *  nobody else took the mutex in between - and the thread then let the
 *  mutex go without passing the wake-up on. Its places into @p places (at
 *  most @p most): the wait, the places it read or wrote after it, and last
 *  where it let the mutex go; their number, or 0 (none, or no schedule).
 *  Asked after a call that returned ETIMEDOUT: the call gave the wake-up up. */
int kit_sched_wakeup_given_up(void **places, int most);
/** The same for another timed wait of the running thread that returned
 *  ETIMEDOUT, and let the mutex go after it without waiting again:
 *  the wait, the lines it ran after it, where it let the mutex go. Asked
 *  after a call that returned ETIMEDOUT, as the one above. */
int kit_sched_timeout_path(void **places, int most);
/** On a failing schedule's run for its report, after a call of the code
 *  under test returned: a change its thread's last critical section read
 *  that a time-out left in place - the latest write of that memory, after
 *  which its writer waited, and that wait timed out and let the mutex go
 *  without writing it again. Into @p places: the write, the wait its writer
 *  went to next, then the time-out's path (the timed wait, the lines after
 *  it, where it let the mutex go). Their number; 0 if there is none. */
int kit_sched_left_by_timeout(void **places, int most);
/** A message built piece by piece in a fixed buffer (a failure's words);
 *  what does not fit is cut, never overflowed. */
typedef struct {
    char *out;
    size_t size, at;
} kit_text_t;
void kit_text_put(kit_text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** Whether a lock-order inversion was seen in this process, and forgets it:
 *  for a test of the kit that makes one on purpose. */
bool kit_sched_take_lock_inversion(void);
/** Whether a data race was seen in this process, and forgets it: for a test
 *  of the kit that makes one on purpose. */
bool kit_sched_take_race(void);
/** Whether the calling thread, on a schedule, last left a wait through a
 *  spurious wake-up: a check can then name a wait that does not loop. */
bool kit_sched_woken_spuriously(void);
/** The calling thread's last wait, which timed out at a deadline the
 *  wrappers set early (kit_wakeups_every), returns 0: its step says it woke
 *  for nothing, not that it timed out (kit_sched_report.c). */
void kit_sched_woke_early(void);
/** On a schedule whose wall clock was set forward (a wait on CLOCK_REALTIME):
 *  a sentence saying when, and for whom, for a failed check's message. */
bool kit_sched_clock_note(char *out, size_t size);
/* "bq.c:40 in bq_create" for each of @p n return addresses (addr2line). */
void kit_describe_places(void *const *pcs, int n, char (*out)[160]);
/* ", called from keyed.c:178 in run_lane": the calls an optimised build
 * inlined at return address @p pc (its place names the innermost), or "". */
void kit_describe_inlined_calls(void *pc, char *out, size_t size);
/* ", called from wait_for (future.c:256)": the function the compiler inlined the code at @p pc
 * into, and the line of that call; "" if it was not inlined. */
void kit_describe_caller(void *pc, char *out, size_t size);
/* The make words that run this test again on the same code: "CH=03 SUBMISSION=...". */
void sched_make_args(char *out, size_t size);

/* ---- Ordinary tests on one schedule (kit_test.c) -----------------------------
 * In grading, kit_test_main() runs a test function on one schedule, seeded
 * from @p seed and the test's name, on virtual time. A failed check or a
 * hang check ends the test process from the thread that saw it (with the
 * schedule's steps and every thread's stack in the log), as on real
 * threads; a deadlock or a misuse the model sees ends it from here. Returns
 * true if the test passed; false if it could not run on the model (a limit,
 * a call the model does not control), with why in @p reason: then the
 * test process must run it again on real threads. */
bool kit_sched_run_test(const char *test, void (*fn)(void **state), void **state, uint64_t seed, char *reason,
                        size_t size);
/** A failure of a test on its one schedule is about to be told - a failed
 *  check, a hang check, a misuse, the model's deadlock: the harness's hook
 *  (kit_sched_on_failure) runs first, before a word of it is printed. The
 *  test's paths (the lines its threads ran, kit_sched_changes.c) are
 *  followed only in a run of it for its report, KIT_REPORT_RUN (or
 *  KIT_DEBUG) set: the hook runs the test again so, and does not return. */
void kit_sched_failure_begins(void);
extern void (*kit_sched_on_failure)(void);
/** Set by a judged test's subject while it runs an exploration's body on
 *  the schedules and sends the judge what they did (kit_transcript.c: the
 *  test's copy, written down; kit_serve_scenario.c: a generated scenario's
 *  histories): drops what would be sent of schedule @p schedule (as
 *  kit_sched_schedule() numbers it), which failed and is not reported (a
 *  replay whose token does not fit this program: the search goes on), so
 *  that the judge never sees it; false if it cannot. */
extern bool (*kit_sched_drop_schedule)(unsigned long schedule);
/* Until called again with NULL, this thread's steps name @p where instead of
 * the pthread call's caller: a helper of the harness names its own caller. */
void kit_sched_name_steps(void *where);
/* kit_dump_stacks() on a scheduled thread: the steps and the model's stacks. */
void kit_sched_dump_stacks(const char *why, const char *message);
/* The next kit_sched_dump_stacks() on this thread shows @p frames (at most
 * KIT_SCHED_STAND_IN_FRAMES, places kit_sched_foreign_place() made) as its
 * stack instead of its own: a judged test's stand-in shows the stack of the
 * judge's thread it stands for, whose check failed. */
enum { KIT_SCHED_STAND_IN_FRAMES = 24 };
void kit_sched_stand_in_frames(void *const *frames, int n);
/* Called by a wrapper on a thread the scheduler does not run: true if a
 * schedule is under way, which that thread would now run beside. */
bool kit_sched_outsider(const char *call);

/* ---- The code under test's memory (kit_sched_memory.c) -----------------------
 * Memory just handed out by an allocator: what was done to it before is no
 * race with what is done to it now. */
void kit_sched_forget_memory(const void *block, size_t size);
/* A block freed by the calling thread of a schedule, from @p where: a write
 * to every byte of it, after which any access is a use after free and a
 * second free a double free (the schedule fails there, naming both lines). */
void kit_sched_freed(const void *block, size_t size, void *where);
/* A block of @p size bytes just allocated on a schedule, by the call at
 * @p where, with KIT_SCHED_GUARD_BYTES more behind it: an access of the code
 * under test there is a heap overrun (the schedule fails there, naming the
 * line and the allocation). */
enum { KIT_SCHED_GUARD_BYTES = 32 };
void kit_sched_guard(const void *block, size_t size, void *where);
/* Who freed the block that holds @p addr on this schedule, and where, in
 * words ("main at bq.c:310 in bq_destroy"); false if none did. */
bool kit_sched_who_freed(const void *addr, char *out, size_t size);
/* "keyed.c:400 in keyed_active_keys, called from keyed.c:178 in run_lane":
 * the calling thread's call at @p where and the calls of the code under test
 * that led to it, up to the kit's plumbing. */
void kit_sched_call_chain(void *where, char *out, size_t size);
/* The schedule under way, as a number that changes from one to the next;
 * 0 off a schedule. */
unsigned long kit_sched_schedule(void);
/* Whether a schedule of this test process saw a data race (its first one
 * is printed by kit_sched_print_race()). */
bool kit_sched_saw_race(void);
/* Prints the first data race this test process saw, with both places. */
void kit_sched_print_race(void);

/* ---- Hooks for the link-time wrappers (kit_wrap.c) --------------------------
 * True on a thread the scheduler runs; then the wrapper hands the call over. */
bool kit_sched_active(void);
int kit_sched_mutex_lock(pthread_mutex_t *mutex, void *where);
int kit_sched_mutex_unlock(pthread_mutex_t *mutex, void *where);
/* clock: pthread_cond_clockwait's, or (clockid_t)-1 for the condition variable's own. */
int kit_sched_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex, const struct timespec *deadline, clockid_t clock,
                        bool harness, void *where);
/* kit_await_waiting_threads() on a scheduled thread: 0, or ETIMEDOUT after
 * timeout_ms of virtual time (< 0: no time-out). */
int kit_sched_await_sleepers(int count, long timeout_ms, void *where);
int kit_sched_cond_signal(pthread_cond_t *cond, bool all, void *where);
int kit_sched_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg,
                     void *where);
/* On a thread of the schedule: the buffer that keeps its last failed check's
 * words (kit_test.c's print_error); NULL off a schedule. */
char *kit_sched_error_text(size_t *size);
/* In a crash handler: whether the fault at @p addr is the running thread of
 * a schedule out of stack (its guard page). Safe in a signal handler. */
bool kit_sched_stack_overflow(const void *addr);
/* After a crash on a thread of a schedule, whose OS thread gdb showed: the
 * schedule's other threads, gdb's way, numbered from @p first_number. Not
 * safe in a signal handler: the crash report calls it last, guarded. */
void kit_sched_print_parked_threads(int first_number);

/* Where the reports' tools run: NULL members run them here (popen, fopen).
 * A judged test's subject, behind its system-call filter, sets them to a
 * helper started before it (grader/subject/kit_symbolize.c). */
typedef struct {
    FILE *(*popen)(const char *command);
    int (*pclose)(FILE *stream);
    FILE *(*fopen)(const char *path);
    FILE *(*folder)(const char *path); /* the names in a folder, a line each */
    const char *foreign; /* the program kit_sched_foreign_place()'s offsets are in, or NULL */
} kit_sched_symbolizer_t;
extern kit_sched_symbolizer_t kit_sched_symbolizer;
/* The names in folder @p path, a line each, into @p out: their length
 * (what kit_sched_symbolizer.folder answers). */
size_t kit_sched_folder_names(const char *path, char *out, size_t size);
/* A place in the program kit_sched_symbolizer.foreign names (a judged
 * test's judge: where the test made a call its stand-in makes here), given
 * as its offset in that program's file: an address that the reports name as
 * that program's line. NULL if no more places fit. */
void *kit_sched_foreign_place(uint64_t offset);
/* The place the next operation of this thread on the schedule (a thread
 * start, join or detach, a lock, a wait, a wake-up, a sleep) is made at, if
 * not its caller's (@p where NULL: its caller's). */
void kit_sched_call_site(void *where);
/* A judged test's recorder of an API call (grader/judge/kit-proxies, record):
 * the test's line that made it, for the next call of the code under test on
 * this thread to be placed at (a report's "called from"), instead of the
 * subject's server that passes it on. NULL: the call has no place this
 * process can name (the server's calls: the test's line is in the judge),
 * and a report names no caller for it. */
void kit_sched_api_site(void *where);
/* A subject process (grader/subject/kit_serve.c): a failing schedule of a
 * search is reported as it first ran, not run once more to follow its
 * threads' lines - a run more would be a schedule the judge did not ask for
 * (its body runs in the judge), or one more in a transcript - but while
 * kit_sched_report_runs_again() says so (below). */
void kit_sched_report_first_runs(void);
/* A subject's generated scenarios (grader/subject/kit_serve_scenario.c) run
 * whole in the subject, body and check: while @p on, a failing schedule is
 * run again for its report there, as in one process (its history, sent
 * already, is not sent again: kit_sched_running_again). */
void kit_sched_report_runs_again(bool on);
/* Whether the schedule running is a failing one run again for its report. */
bool kit_sched_running_again(void);
/* A subject process: a test on its one schedule (kit_sched_run_test) follows
 * its threads' lines from its start, as a run for its report does - the
 * subject cannot run it again when it fails (its test runs in the judge), so
 * the lines a failure's report names are followed on every such run. */
void kit_sched_follow_test_paths(void);
/* kit_sched_call_site()'s place, taken (it holds for one operation), or @p where if none. */
void *kit_sched_site_or(void *where);

/* ---- For a runtime that drives the code under test from the schedule --------
 * Start a thread of the schedule running fn(arg), named @p name, from a
 * thread of the schedule: a switch point, as pthread_create. EPERM off a
 * schedule; otherwise 0 or pthread_create's error. */
int kit_sched_start_thread(pthread_t *thread, const char *name, void *(*fn)(void *), void *arg);
/* Around a call that blocks the whole schedule on purpose, outside the
 * model - a thread that waits on a socket for its next request: true
 * before, false after. The watchdog does not take that time for a stall. */
void kit_sched_outside(bool blocking);

#endif
