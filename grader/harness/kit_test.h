/**
 * @file kit_test.h
 * @brief What every chapter's cmocka tests share.
 *
 * - KIT_TEST_MAIN(): a main() that runs all tests, lists them (`--list`) or
 *   runs one (`--run NAME`), which is how the grading runner gives each test
 *   its own process.
 * - assert_ok() / assert_err(): check a kit return code and, on failure, say
 *   which call returned which code by name, and what ENOSYS means.
 * - kit_worker_*: a thread whose end the main thread can wait for *with a
 *   timeout*, so "this call is blocked forever" becomes a failed assertion
 *   instead of a hung test.
 * - kit_test_run_group(): N threads released together by a start gate.
 * - kit_test_seed() / kit_jitter(): seeded randomness for stress tests; the
 *   seed is printed, and SEED=N reproduces a failing run.
 *
 * - kit_dump_stacks(): every thread's stack into the log (a crash and a hang
 *   check do it by themselves), which the grading runner shows cut to the
 *   student's and the tests' frames.
 *
 * The helpers report the line of the test that called them, not their own:
 * each is a macro that passes __FILE__ and __LINE__ on.
 *
 * cmocka is not thread-safe: an assert_* on a worker thread longjmps on the
 * wrong stack and kills the whole run. Workers therefore only *record* what
 * they saw and return it; the main thread asserts.
 */
#ifndef KIT_TEST_H
#define KIT_TEST_H

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "kit_gate.h"
#include "kit_rand.h"

/** 1 in a build with ThreadSanitizer or AddressSanitizer: they print their
 *  own stacks, and ThreadSanitizer must see the threads really run at once. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define KIT_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define KIT_SANITIZED 1
#endif
#if !defined(KIT_SANITIZED)
#define KIT_SANITIZED 0
#endif
/** 1 in a build with ThreadSanitizer, whose report ends a process with
 *  status 66 (the grader's TSAN_OPTIONS): a data race, not a crash. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KIT_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define KIT_TSAN 1
#endif
#if !defined(KIT_TSAN)
#define KIT_TSAN 0
#endif

/** Generous bound for "it did not hang" (ms): long enough for a loaded
 *  2-core machine under ThreadSanitizer or valgrind, short enough that a
 *  stuck test fails before the runner's own time limit. */
#define KIT_HANG_MS 8000L

/** @brief main() for a test file: `static const struct CMUnitTest tests[] = {...}; KIT_TEST_MAIN(tests)` */
#define KIT_TEST_MAIN(tests)                                                                      \
    int main(int argc, char **argv)                                                               \
    {                                                                                             \
        return kit_test_main(argc, argv, tests, sizeof(tests) / sizeof((tests)[0]), __FILE__);    \
    }

int kit_test_main(int argc, char **argv, const struct CMUnitTest *tests, size_t count,
                  const char *file);

/* The test process ends: its data race, if a schedule saw one, is printed,
 * and the grader's tokens are passed on - the pass token if @p passed, the
 * race token if no race was seen (kit_test.c). Every way out of a test but a
 * crash calls it once. */
void kit_verdict_end(bool passed);
/* The test process ends before its end - a deadlock, a hang check, a misuse
 * the model saw: no pass token; the race token still, if no race was seen
 * (a hang is no race). */
void kit_verdict_stopped(void);
/** What a judged test's verdict rests on that only the code under test's
 *  process can say (docs/grading.md, "What stays the subject's word"). The
 *  judge notes each kind it asks for; the grader receives them with the
 *  verdict, on the pipe only the judge holds, and labels the test's line. */
enum kit_subject_word {
    KIT_WORD_LEAKS = 1u << 0,       /**< blocks it says are still allocated */
    KIT_WORD_ALLOCATIONS = 1u << 1, /**< how many allocations it says a call made */
    KIT_WORD_WAKEUPS = 1u << 2,     /**< whether an injected wake-up it says happened did */
    KIT_WORD_FUTILE = 1u << 3,      /**< wake-ups it says found nothing to do */
    KIT_WORD_QUIET_CHECKS = 1u << 4, /**< a generated scenario's checks of the object once it is quiet
                                          (kit_spec_t.at_quiet: what became of each task), made beside it */
    KIT_WORD_THREADS = 1u << 5,     /**< how many of its threads it says run under a name (kit_threads_named) */
    KIT_WORD_RERUN = 1u << 6,       /**< that the test's one schedule could not run: the test ran again, on
                                         real threads or without its race's switch points (kit_test_run_again) */
    KIT_WORD_JOURNAL = 1u << 7,     /**< chapter 07: the commands and deliveries its worker processes say they made
                                         (the tests' journal, in memory they share with the test) */
    KIT_WORD_REPORTS = 1u << 8,     /**< chapter 07: what a worker or reaper process says it did (its stats, its
                                         counts), beside what the call returned */
};
/* In a judge's forked child, its descriptors placed: become the subject
 * @p program, started with @p mode ("--serve"), or @p mode "-unfiltered"
 * under a wrapper (valgrind, setarch) or KIT_SUBJECT_UNFILTERED, when the
 * subject installs no system-call filter. */
_Noreturn void kit_exec_subject(const char *program, const char *mode);
/* Notes that this test's verdict rests on @p words (enum kit_subject_word). */
void kit_verdict_rests_on(unsigned words);
/* A judged test whose one schedule could not run: this process runs it
 * again, without its race points when it raced, else on real threads. */
_Noreturn void kit_test_run_again(const char *reason, bool saw_race);

/**
 * @brief A test that needs real threads in grading too, in a test table:
 *        `kit_real_threads_test(test_x)` instead of `cmocka_unit_test(test_x)`.
 *
 * Graded (KIT_SCHEDULE_TESTS set), every other test of the kit that is not
 * an exploration (`_explore_`), stress tests included, runs on one seeded
 * schedule of the scheduler (kit_sched.h): one thread at a time, on virtual
 * time, so that the same code meets the same interleaving every time. Mark
 * the ones whose point is something a schedule cannot show - a plain memory
 * race (threads really running at once between two pthread calls), timing
 * on a loaded machine, a server, other processes.
 */
#define kit_real_threads_test(f) { #f, f, NULL, NULL, &kit_real_threads }
/** @brief kit_real_threads_test() with a teardown, as cmocka_unit_test_teardown(). */
#define kit_real_threads_test_teardown(f, teardown) { #f, f, NULL, teardown, &kit_real_threads }
/** @brief The marker kit_real_threads_test() leaves in a test's initial state. */
extern int kit_real_threads;

/** @brief Assert that @p call returned 0. */
#define assert_ok(call) kit_assert_code((call), 0, #call, __FILE__, __LINE__)
/** @brief Assert that @p call returned the error code @p code. */
#define assert_err(call, code) kit_assert_code((call), (code), #call, __FILE__, __LINE__)

void kit_assert_code(int got, int want, const char *expr, const char *file, int line);

/* cmocka's checks, redefined so that a failure names what the test looked
 * at, as the test wrote it: "s.rejected is 0, expected 1", "msgq_size(q) is
 * 4, expected 3", not a bare pair of values. */
#undef assert_true
#undef assert_false
#undef assert_null
#undef assert_non_null
#undef assert_int_equal
#undef assert_int_not_equal
#undef assert_string_equal
#undef assert_ptr_equal
/** @brief Assert that @p c holds; a failure quotes it. */
#define assert_true(c) kit_assert_truth(!!(c), true, #c, __FILE__, __LINE__)
/** @brief Assert that @p c does not hold; a failure quotes it. */
#define assert_false(c) kit_assert_truth(!!(c), false, #c, __FILE__, __LINE__)
/** @brief Assert that the pointer @p p is NULL. */
#define assert_null(p) kit_assert_pointer((p) != NULL, false, #p, __FILE__, __LINE__)
/** @brief Assert that the pointer @p p is not NULL. */
#define assert_non_null(p) kit_assert_pointer((p) != NULL, true, #p, __FILE__, __LINE__)
/** @brief Assert a == b; a failure says "<a as written> is X, expected Y". */
#define assert_int_equal(a, b)                                                                    \
    kit_assert_values(cast_to_largest_integral_type(a), cast_to_largest_integral_type(b), true, #a, #b, \
                      __FILE__, __LINE__)
/** @brief Assert a != b. */
#define assert_int_not_equal(a, b)                                                                \
    kit_assert_values(cast_to_largest_integral_type(a), cast_to_largest_integral_type(b), false, #a, #b, \
                      __FILE__, __LINE__)
/** @brief Assert two pointers are equal. */
#define assert_ptr_equal(a, b)                                                                    \
    kit_assert_values(cast_ptr_to_largest_integral_type(a), cast_ptr_to_largest_integral_type(b), true, #a, #b, \
                      __FILE__, __LINE__)
/** @brief Assert two strings are equal; a failure shows both texts. */
#define assert_string_equal(a, b) kit_assert_text((a), (b), #a, __FILE__, __LINE__)

/* ---- Checks in words ---------------------------------------------------------
 * A check on a value the test computed itself - a worker's recorded result, a
 * tally, what a helper of the test returned - says what went wrong in words,
 * never the test's own expression: `assert_int_equal_or_say(seen[v], 1,
 * "record %ld came out more than once, or never", v)` fails with "record 7
 * came out more than once, or never: 2, expected 1". The words are a printf
 * format and its arguments, made only when the check fails; the check itself
 * is cmocka's (the same condition). */
/** @brief assert_true(), failing with the words. */
#define assert_true_or_say(c, ...)                                                                \
    do {                                                                                          \
        if (!(c))                                                                                 \
            kit_fail_at(__FILE__, __LINE__, __VA_ARGS__);                                         \
    } while (0)
/** @brief assert_false(), failing with the words. */
#define assert_false_or_say(c, ...) assert_true_or_say(!(c), __VA_ARGS__)
/** @brief assert_non_null(), failing with the words. */
#define assert_non_null_or_say(p, ...) assert_true_or_say((p) != NULL, __VA_ARGS__)
/** @brief assert_null(), failing with the words. */
#define assert_null_or_say(p, ...) assert_true_or_say((p) == NULL, __VA_ARGS__)
/** @brief assert_ptr_equal(), failing with the words. */
#define assert_ptr_equal_or_say(a, b, ...)                                                        \
    assert_true_or_say(cast_ptr_to_largest_integral_type(a) == cast_ptr_to_largest_integral_type(b), __VA_ARGS__)
/** @brief assert_int_equal(), failing with the words and both values: "WORDS: 271, expected 300". */
#define assert_int_equal_or_say(a, b, ...)                                                        \
    do {                                                                                          \
        LargestIntegralType kit_got_ = cast_to_largest_integral_type(a);                         \
        LargestIntegralType kit_want_ = cast_to_largest_integral_type(b);                        \
        if (kit_got_ != kit_want_) {                                                              \
            char kit_words_[600];                                                                 \
            snprintf(kit_words_, sizeof kit_words_, __VA_ARGS__);                                 \
            kit_fail_at(__FILE__, __LINE__, "%s: %lld, expected %lld", kit_words_, (long long)kit_got_, \
                        (long long)kit_want_);                                                    \
        }                                                                                         \
    } while (0)
/** @brief assert_int_not_equal(), failing with the words and the value: "WORDS: 0". */
#define assert_int_not_equal_or_say(a, b, ...)                                                    \
    do {                                                                                          \
        LargestIntegralType kit_got_ = cast_to_largest_integral_type(a);                         \
        if (kit_got_ == cast_to_largest_integral_type(b)) {                                       \
            char kit_words_[600];                                                                 \
            snprintf(kit_words_, sizeof kit_words_, __VA_ARGS__);                                 \
            kit_fail_at(__FILE__, __LINE__, "%s: %lld", kit_words_, (long long)kit_got_);        \
        }                                                                                         \
    } while (0)
/** @brief assert_string_equal(), failing with the words and both texts: "WORDS: \"a\", expected \"b\"". */
#define assert_string_equal_or_say(a, b, ...)                                                     \
    do {                                                                                          \
        const char *kit_got_ = (a), *kit_want_ = (b);                                             \
        if (!(kit_got_ && kit_want_ && strcmp(kit_got_, kit_want_) == 0)) {                       \
            char kit_words_[600];                                                                 \
            snprintf(kit_words_, sizeof kit_words_, __VA_ARGS__);                                 \
            kit_fail_at(__FILE__, __LINE__, "%s: \"%s\", expected \"%s\"", kit_words_,          \
                        kit_got_ ? kit_got_ : "(NULL)", kit_want_ ? kit_want_ : "(NULL)");        \
        }                                                                                         \
    } while (0)
/** @brief assert_int_equal() on an error code a call returned (on a worker, say):
 *         "WORDS returned EBUSY, expected ECANCELED", with codes by their names. */
#define assert_code_or_say(got, want, ...)                                                        \
    do {                                                                                          \
        int kit_code_ = (got);                                                                    \
        if (kit_code_ != (want)) {                                                                \
            char kit_words_[600];                                                                 \
            snprintf(kit_words_, sizeof kit_words_, __VA_ARGS__);                                 \
            kit_assert_code(kit_code_, (want), kit_words_, __FILE__, __LINE__);                   \
        }                                                                                         \
    } while (0)

void kit_assert_truth(bool value, bool want, const char *expr, const char *file, int line);
void kit_assert_pointer(bool set, bool want_set, const char *expr, const char *file, int line);
void kit_assert_values(LargestIntegralType a, LargestIntegralType b, bool want_equal, const char *expr_a,
                       const char *expr_b, const char *file, int line);
void kit_assert_text(const char *a, const char *b, const char *expr, const char *file, int line);

/** @brief Fail the test at @p file:@p line (the caller's) with a printf-style message. */
void kit_fail_at(const char *file, int line, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/**
 * @brief Print every thread's stack to stderr (the test's log) between the
 *        lines `[ stacks   ] begin: WHY` and `[ stacks   ] end`, by attaching
 *        gdb to this process. Safe in a signal handler. Under valgrind or a
 *        debugger it prints one line saying why there are no stacks.
 */
void kit_dump_stacks(const char *why);
/**
 * @brief End the test process now, failed: print @p message, every thread's
 *        stack, and the failing line (@p file may be NULL: the stacks show it).
 *        For failures cmocka cannot unwind: a thread still runs on the test's memory.
 */
_Noreturn void kit_stop_test(const char *message, const char *file, int line);
/** @brief True once kit_dump_stacks() ran in this process. */
bool kit_stacks_dumped(void);
/* Whether a crash is being reported (kit_stacks.c): its stacks take gdb a
 * while, and a schedule waiting on the crashed thread must not take that for
 * a stall. */
bool kit_crash_in_progress(void);
/** @brief The stacks are in the log already (printed some other way): kit_dump_stacks() need not run. */
void kit_note_stacks_dumped(void);
/** @brief On a thread of a schedule, the text of its last print_error() (a failed check's message); else "". */
const char *kit_last_error_text(void);
/** @brief The next failure needs no stack (say, ENOSYS: the function is not written yet). */
void kit_skip_caller_stack(void);
/** @brief On SIGSEGV, SIGBUS, SIGFPE, SIGILL or SIGABRT: say so in words,
 *         dump the stacks, and die of the signal. Called before each test. */
void kit_catch_crashes(void);
/** @brief What the test is running now, said by a crash report ("scenario 17
 *         of 100 ..."), or NULL once it is over. The text is copied. */
void kit_crash_context(const char *text);
/* Behind a system-call filter (a judged test's subject): prints every
 * thread's stack through a helper started before it; false if it could not. */
extern bool (*kit_stacks_helper)(void);

/** @brief A thread the main thread can wait for with a timeout. */
typedef struct kit_worker {
    pthread_t thread;
    kit_latch_t finished; /**< counted down when fn returns */
    void *(*fn)(void *);
    void *arg;
    void *result;         /**< fn's return value, valid once finished */
    bool joined;
} kit_worker_t;

/** @brief Start `fn(arg)` on a thread named @p name. Fails the test on error. */
#define kit_worker_start(worker, name, fn, arg) kit_worker_start_at((worker), (name), (fn), (arg), __FILE__, __LINE__)
void kit_worker_start_at(kit_worker_t *worker, const char *name, void *(*fn)(void *), void *arg, const char *file,
                         int line);
/** @brief True once fn has returned (does not block). */
bool kit_worker_done(kit_worker_t *worker);
/**
 * @brief Wait up to @p timeout_ms for fn to return, then join it.
 * @return 0, or ETIMEDOUT: the thread is still running (and is left running).
 */
int kit_worker_join(kit_worker_t *worker, long timeout_ms, void **result);
/**
 * @brief kit_worker_join() that fails the test, naming @p what, after
 *        KIT_HANG_MS: it prints where every thread waits, then ends the test
 *        process at once (the stuck thread still uses the worker's memory).
 */
#define kit_worker_must_finish(worker, what) kit_worker_must_finish_at((worker), (what), __FILE__, __LINE__)
void *kit_worker_must_finish_at(kit_worker_t *worker, const char *what, const char *file, int line);
/** @brief Assert that the worker is still blocked after @p ms (a lower bound: it really waits). */
#define kit_worker_must_block(worker, ms, what) kit_worker_must_block_at((worker), (ms), (what), __FILE__, __LINE__)
void kit_worker_must_block_at(kit_worker_t *worker, long ms, const char *what, const char *file, int line);

/**
 * @brief Run `fn(args + i * arg_size)` on @p count threads named
 *        `<name>-<i>`, all released at once by a start gate, and join them
 *        all. Fails the test if any thread is still running after
 *        KIT_HANG_MS once released.
 */
#define kit_test_run_group(count, name, fn, args, arg_size)                                          \
    kit_test_run_group_at((count), (name), (fn), (args), (arg_size), __FILE__, __LINE__)
void kit_test_run_group_at(size_t count, const char *name, void *(*fn)(void *), void *args, size_t arg_size,
                           const char *file, int line);

/** @brief The run's seed: $SEED if set, else from the clock; printed to stderr once. */
uint64_t kit_test_seed(void);
/** @brief Repetitions for a stress loop: @p base times $KIT_REPEAT_SCALE (default 1). */
long kit_test_repeat(long base);
/** @brief Whether the test runs judged (docs/grading.md): each call of the
 *  code under test is then a round trip to another process, and a stress
 *  loop sized for one process may run its smaller size, as under KIT_SLOW. */
bool kit_test_judged(void);
/** @brief Whether a stress loop should run its smaller size: under
 *  ThreadSanitizer and valgrind (KIT_SLOW=1) everything runs 10-50x slower,
 *  and judged on real threads every call and task is a round trip between
 *  two processes. Never on a graded schedule: there the sizes are the same
 *  both ways (the same schedule, the same score); timing bounds never change. */
bool kit_test_slow(void);
/** @brief A short random pause: nothing, a yield, or a sleep of up to @p max_us. */
void kit_jitter(kit_rng_t *rng, unsigned max_us);

/* ---- Instrumented waits (grader/subject/kit_wrap.c) ------------------------
 * Test binaries are linked with -Wl,--wrap for pthread_cond_wait,
 * pthread_cond_timedwait and pthread_cond_clockwait, so every wait in the
 * code under test goes through these counters and switches. */

/** @brief Threads inside pthread_cond_wait / timedwait / clockwait right now. */
int kit_waiting_threads(void);
/**
 * @brief Wait (sleep-polling, test side only) until at least @p count threads
 *        are inside a condition wait. Once this returns and the caller then
 *        takes the structure's lock, those threads have really released it and
 *        are asleep. Fails the test after KIT_HANG_MS.
 */
#define kit_await_waiting_threads(count, what) kit_await_waiting_threads_at((count), (what), __FILE__, __LINE__)
void kit_await_waiting_threads_at(int count, const char *what, const char *file, int line);
/**
 * @brief Inject spurious wake-ups: while on, every other call to a condition
 *        wait on each thread returns 0 at once (after letting other threads
 *        run), without any signal. POSIX allows this; correct code re-checks
 *        its condition in a `while` loop and waits again.
 */
void kit_spurious_wakeups(bool on);
/**
 * @brief While @p ms > 0, every timed wait that would sleep longer than @p ms
 *        returns 0 after @p ms instead, without any signal: a stream of
 *        stolen wake-ups. A timed wait must still end at its original
 *        deadline (one absolute deadline, reused by every wait of the loop).
 */
void kit_wakeups_every(long ms);
/**
 * @brief While @p max_us > 0, every pthread_mutex_lock in the code under test
 *        first sleeps a random 0..max_us microseconds (seeded from @p seed, per
 *        thread). Stretches sub-microsecond windows between two critical
 *        sections so that a test sweeping across them hits them reliably.
 */
void kit_lock_delays(long max_us, uint64_t seed);
/**
 * @brief Chaos scheduling with @p seed (0: off): around every lock, unlock,
 *        wait, signal, broadcast and thread creation, sometimes yield and
 *        sometimes sleep up to 200 us. Same seed, same schedule of perturbations.
 */
void kit_chaos(uint64_t seed);
/** @brief kit_chaos($KIT_CHAOS); true if it is on. Called by KIT_TEST_MAIN. */
bool kit_chaos_from_env(void);
/** @brief Make the @p nth pthread_create from now, and every one after it,
 *         fail with EAGAIN, as on a system out of threads; 0 switches it
 *         off. A design that retries a failed creation sees it fail again. */
void kit_fail_thread_create(long nth);
/** @brief Threads started through pthread_create (in this binary) that have not ended yet. */
int kit_threads_alive(void);
/** @brief Threads running now whose name (pthread_setname_np, as
 *         kit_thread_start gives it) starts with @p prefix. In a judged
 *         test, the code under test's process says: its word. */
long kit_threads_named(const char *prefix);
/** @brief Spurious wake-ups injected so far (by either switch). */
long kit_spurious_count(void);

/* ---- Counted allocations (also kit_wrap.c) --------------------------------- */

/** @brief Blocks allocated by the test binary's code and not yet freed. */
long kit_live_allocations(void);
/** @brief Allocation calls made so far (malloc, calloc, realloc). */
long kit_allocation_calls(void);
/** @brief Make the @p nth allocation call from now fail (return NULL); 0 switches it off. */
void kit_fail_allocation(long nth);

/**
 * @brief The allocation-failure sweep: run `attempt(ctx)` once for each
 *        allocation it makes, with that one allocation failing. Every such
 *        run must return ENOMEM - or 0 when the code coped without that
 *        allocation, which `attempt` must then have verified (nothing lost) -
 *        and leave nothing allocated; the sweep ends with a run whose
 *        allocations all succeed, which must return 0. `attempt` undoes its
 *        own success (say, destroys what it created).
 * @return the number of allocations one successful attempt makes.
 */
#define kit_sweep_allocation_failures(what, attempt, ctx)                                             \
    kit_sweep_allocation_failures_at((what), (attempt), (ctx), __FILE__, __LINE__)
long kit_sweep_allocation_failures_at(const char *what, int (*attempt)(void *ctx), void *ctx, const char *file,
                                      int line);

/** @brief Fail at @p file : @p line unless the live blocks are @p before again,
 *         naming the lines that allocated the last blocks still live. */
void kit_fail_on_leak(long before, const char *file, int line);
/* " - allocated at msgq.c:36 in msgq_create, ..." for the @p leaked blocks
 * allocated last and still live (up to four places), or "" (kit_wrap.c). */
void kit_leak_places(long leaked, char *out, size_t size);
/** @brief Assert that everything allocated since @p before (kit_live_allocations()) was freed. */
#define assert_no_leak_since(before) kit_fail_on_leak((before), __FILE__, __LINE__)

#endif
