/**
 * @file kit_sched_explore.c
 * @brief The exploration around the scheduler: the strategies that make its
 *        choices, the loop that runs one schedule after another, and the
 *        replay token that writes a schedule's choices down.
 *
 * A schedule is the list of its choices: each time more than one thread can
 * go on (or a signal has more than one waiter to wake), the strategy picks
 * alternative i of n, and i is recorded. The alternatives are listed in a
 * fixed order - the running thread first, then the others by creation order
 * - so the same choices replay the same schedule exactly.
 */
#define _GNU_SOURCE
#include "kit_sched_internal.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_errno.h"
#include "kit_test.h"

void *__real_malloc(size_t size);
void __real_free(void *block);
int __real_pthread_join(pthread_t thread, void **ret);
pthread_t __real_pthread_self(void);
int __real_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
int __real_clock_gettime(clockid_t clock, struct timespec *now);
void sched_token(char *out, size_t size);
void sched_make_args(char *out, size_t size);

static long schedules_run;
static char failed_schedule[128]; /* "schedule 2 of pct:1:3" */
/* The racing places known when the last schedule began: its token names
 * these, and no more - a replay learns the others where the schedule first
 * did, at the same steps (made switch points from its start, they would add
 * choices the schedule did not have). */
static int places_at_start;

/* The replay under way: the racing places its token named (their positions
 * among those this process knows), whether its choices asked for more than
 * this test's schedule offered, and, once it ran, why it is not the
 * schedule the token was printed for ("": it is, as far as can be seen). */
static struct {
    int places_from, places_to;
    bool raced_before; /* a data race had been seen in this process before it */
    bool may_search;   /* a replay asked for by KIT_SCHED, of a test with a search of its own */
    bool following;    /* its one schedule is under way, its choices from the token */
    bool searched;     /* this search's replay did not fit, and the search ran after it */
    char overrun[160]; /* the first choice the schedule did not offer, in words; "": none */
    char misfit[256];
} replay;

/* The last failed schedule, in words, for a judge that reports it (kit_serve.c). */
const char *kit_sched_failed_schedule(void);
const char *kit_sched_failed_schedule(void)
{
    return failed_schedule;
}
static long steps_run; /* over every schedule of this search */
/* Wake-ups in the code under test over every schedule this process ran (its
 * searches and its one scheduled test), and those that found nothing to do. */
static long process_schedules, process_wakeups, process_futile;

/* ---- Choosing --------------------------------------------------------------------- */

/* PCT: the highest priority goes; a waiter wakes for nothing one time in eight. */
static int pct_choice(int n, const struct sched_thread *const *alt, const enum sched_how *how)
{
    int best = -1;
    bool spurious_ok = kit_rng_below(&sched.rng, 8) == 0;
    for (int i = 0; i < n; i++) {
        if (how[i] == SPURIOUS && !spurious_ok)
            continue;
        if (best < 0 || alt[i]->priority > alt[best]->priority)
            best = i;
    }
    return best < 0 ? 0 : best;
}

/* PCT's change points: at the k-th, the running thread drops below every other. */
static void pct_change_priorities(void)
{
    for (int k = 0; k < sched.pct_depth - 1; k++) {
        if (sched.pct_change[k] > 0 && sched.pct_change[k] <= sched.points) {
            sched.threads[sched.current]->priority = (uint64_t)k;
            sched.pct_change[k] = 0; /* done (a point with one alternative delays it to the next choice) */
        }
    }
}

/* The prefix's choice at @p index of @p n alternatives, or -1 (the schedule
 * failed) if it names one the schedule does not offer. A replay that may
 * search again notes it (replay_misfits) and goes on from here with the
 * first alternatives: its schedule runs to an end the judge of a judged test
 * expects, a search's next schedule after it or its failure. */
static int prefix_choice(long index, int n)
{
    int choice = sched.prefix[index];
    if (choice < n)
        return choice;
    if (replay.following && replay.may_search) {
        snprintf(replay.overrun, sizeof replay.overrun, "choice %ld takes alternative %d, where this test's "
                 "schedule offers %d", index + 1, choice + 1, n);
        sched.prefix_len = index; /* the token is followed no further */
        return 0;
    }
    sched_fail("the replay token does not fit this test (choice %ld is %d of %d)", index + 1, choice, n);
    return -1;
}

int sched_decide(int n, bool preemptive, const struct sched_thread *const *alt, const enum sched_how *how)
{
    long index = sched.ndecisions;
    int choice = 0;
    if (index >= 2 * sched.options.max_steps) {
        if (sched.scheduled_test && sched.strategy == STRAT_RANDOM && index >= sched.prefix_len)
            return (int)kit_rng_below(&sched.rng, (uint64_t)n); /* a long test's tail: its seed replays it */
        sched_fail("more than %ld choices in one schedule", 2 * sched.options.max_steps);
        return -1;
    }
    if (sched.strategy == STRAT_DPOR) {
        choice = sched_dpor_choose(index, n, alt, how);
        if (choice >= n) {
            sched_fail("the search's choice %ld is %d of %d: the test does not run the same way twice", index + 1,
                       choice, n);
            return -1;
        }
    } else if (index < sched.prefix_len) {
        choice = prefix_choice(index, n);
        if (choice < 0)
            return -1;
    } else if (sched.strategy == STRAT_RANDOM) {
        choice = (int)kit_rng_below(&sched.rng, (uint64_t)n);
    } else if (sched.strategy == STRAT_PCT) {
        if (how == NULL) {
            choice = (int)kit_rng_below(&sched.rng, (uint64_t)n);
        } else {
            pct_change_priorities();
            choice = pct_choice(n, alt, how);
        }
    }
    sched.decisions[index] = (struct sched_decision){ (unsigned short)n, (unsigned short)choice, preemptive };
    sched.ndecisions++;
    return choice;
}

static bool dfs_bound_reached; /* dfs_next() left out a schedule that needed more preemptions */

/* DFS: the next schedule changes the deepest choice that has an untried
 * alternative within the preemption bound, and takes choice 0 after it. */
static bool dfs_next(int bound)
{
    long preemptions_before[sched.ndecisions + 1];
    preemptions_before[0] = 0;
    for (long i = 0; i < sched.ndecisions; i++) {
        const struct sched_decision *d = &sched.decisions[i];
        preemptions_before[i + 1] = preemptions_before[i] + (d->preemptive && d->chosen > 0);
    }
    for (long i = sched.ndecisions - 1; i >= 0; i--) {
        const struct sched_decision *d = &sched.decisions[i];
        long cost = preemptions_before[i] + (d->preemptive ? 1 : 0);
        if (d->chosen + 1 < d->n && cost > bound)
            dfs_bound_reached = true;
        if (d->chosen + 1 < d->n && cost <= bound) {
            for (long j = 0; j < i; j++)
                sched.prefix[j] = sched.decisions[j].chosen;
            sched.prefix[i] = d->chosen + 1;
            sched.prefix_len = i + 1;
            return true;
        }
    }
    return false;
}

/* ---- The replay token ------------------------------------------------------------
 * One letter a choice (A-Z 0-25, a-z 26-51), a run of the same choice as the
 * letter and its count ("A12"), a choice above 51 as '_' and two letters. */
static const char letters[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

static void put_choice(char *out, size_t size, size_t *at, int choice)
{
    if (*at + 4 >= size)
        return;
    if (choice >= 52) {
        out[(*at)++] = '_';
        out[(*at)++] = letters[(choice / 52) % 52];
        choice %= 52;
    }
    out[(*at)++] = letters[choice];
    out[*at] = '\0';
}

void sched_token(char *out, size_t size)
{
    size_t at = 0;
    out[0] = '\0';
    for (long i = 0; i < sched.ndecisions;) {
        long run = 1;
        while (i + run < sched.ndecisions && sched.decisions[i + run].chosen == sched.decisions[i].chosen)
            run++;
        put_choice(out, size, &at, sched.decisions[i].chosen);
        if (run > 2 && at + 12 < size)
            at += (size_t)snprintf(out + at, size - at, "%ld", run);
        else
            run = 1;
        i += run;
    }
    if (at == 0 && size > 1)
        snprintf(out, size, "."); /* no choice at all: one thread could go on at every point */
    intptr_t places[32];
    int n = sched_memory_racy_offsets(places, places_at_start < 32 ? places_at_start : 32);
    char first = sched_memory_anchored() ? '@' : '~';
    for (int i = 0; i < n; i++) { /* "@1a2b+1c": the racing places the schedule made switch points */
        at = strlen(out);
        if (at + 20 < size)
            snprintf(out + at, size - at, "%c%s%lx", i == 0 ? first : '+', places[i] < 0 ? "-" : "",
                     (unsigned long)(places[i] < 0 ? -places[i] : places[i]));
    }
}

static int letter_value(char c)
{
    const char *p = c ? strchr(letters, c) : NULL;
    return p ? (int)(p - letters) : -1;
}

/* The racing places a token ends with, learned first: they shape the
 * choices. "@1a2b+-1c": distances from the code's anchor (KIT_SCHED's
 * options are split at commas); "~1a2b+1c3d" (a token of an earlier kit):
 * offsets into the program. */
static bool parse_places(const char *text)
{
    replay.places_from = replay.places_to = sched_memory_racy_count();
    replay.overrun[0] = '\0';
    replay.raced_before = kit_sched_raced(NULL);
    const char *p = strpbrk(text, "~@");
    bool anchored = p && *p == '@';
    while (p != NULL && *p) {
        char *end;
        bool negative = p[1] == '-';
        unsigned long offset = strtoul(p + 1 + negative, &end, 16);
        if (end == p + 1 + negative || offset > (unsigned long)INTPTR_MAX)
            return false;
        sched_memory_learn_offset(negative ? -(intptr_t)offset : (intptr_t)offset, anchored);
        p = *end == '+' ? end : NULL;
    }
    replay.places_to = sched_memory_racy_count();
    return true;
}

/* Decode a token into the prefix; false if it is not one. */
static bool parse_token(const char *text)
{
    sched.prefix_len = 0;
    long cap = 2 * sched.options.max_steps;
    if (!parse_places(text))
        return false;
    if (strncmp(text, ".", 1) == 0 && (text[1] == '\0' || text[1] == '~' || text[1] == '@'))
        return true;
    while (*text && *text != '~' && *text != '@') {
        int high = 0;
        if (*text == '_') {
            high = letter_value(text[1]) * 52;
            text++;
        }
        int value = letter_value(*text++);
        if (value < 0 || high < 0)
            return false;
        long run = 1;
        if (*text >= '0' && *text <= '9')
            run = strtol(text, (char **)&text, 10);
        for (long i = 0; i < run && sched.prefix_len < cap; i++)
            sched.prefix[sched.prefix_len++] = (unsigned short)(high + value);
    }
    return true;
}

/* ---- Running one schedule ------------------------------------------------------------ */

struct body_call {
    void (*body)(void *ctx);
    void *ctx;
};

static void *body_main(void *raw)
{
    struct body_call *call = raw;
    call->body(call->ctx); /* on thread 0, named "test" */
    return NULL;
}

static void reset_schedule(void)
{
    sched_memory_begin();
    sched_changes_begin();
    sched_lock_order_begin();
    sched.nthreads = 0;
    sched.nlive = 0;
    sched.current = 0;
    sched_forget_objects();
    sched.serials[0] = sched.serials[1] = sched.serials[2] = 0;
    sched.wall_offset = 0;
    sched.now = 0;
    sched.wait_seq = 0;
    sched.spurious_left = sched.options.spurious;
    sched.points = 0;
    sched.wakeups = sched.futile_wakeups = 0;
    sched.futile.thread = -1;
    sched.nsteps = 0;
    sched.ndecisions = 0;
    sched.failed = false;
    sched.deadlocked = false;
    sched.deadlock_explained = false;
    sched.relocked = -1;
    sched.gave_up = false;
    sched.failer = -1;
    sched.message[0] = '\0';
}

/* ---- The runner ------------------------------------------------------------------
 * Every job - a search, or a test on its one schedule - runs on an OS thread
 * of its own, the runner, whose contexts are the schedule's threads
 * (kit_sched_context.c); the controller (cmocka's thread) waits for it to
 * end. The runner is made for the first job and waits for the next between
 * them; a fork ends it first (the child of a process with threads may not
 * make threads under ThreadSanitizer), and the next job makes another. A thread of the
 * schedule comes back to the scheduler at its next pthread call. One that
 * does not for STALL_SECONDS (real time) blocks in a call the model does not
 * cover - a read-write lock, C11 threads, a pipe - or spins on a variable
 * without ever waiting; and a thread the scheduler did not start that calls
 * a wrapped function runs beside it, uncontrolled. Either way the job cannot
 * go on, and the controller gives it up: the runner is left as it is. */
#define STALL_SECONDS 5

static atomic_bool running;        /* a job is under way */
static atomic_bool foreign_called; /* ... and a thread outside it called a wrapped function */
static char foreign_call[64];

bool kit_sched_outsider(const char *call)
{
    if (!atomic_load_explicit(&running, memory_order_relaxed))
        return false;
    if (!atomic_exchange(&foreign_called, true)) {
        snprintf(foreign_call, sizeof foreign_call, "%s", call);
        __real_sem_post(&sched.done); /* the controller looks at once */
    }
    return true;
}

void kit_sched_outside(bool blocking)
{
    atomic_store(&sched_outside, blocking);
}

/* Wait for the job to end; false if it stalled, or an outsider came. */
static bool await_job_end(void)
{
    long seen = atomic_load(&sched_progress);
    bool watch = getenv("KIT_DEBUG") == NULL; /* a debugger may hold the threads as long as it likes */
    for (;;) {
        struct timespec until;
        __real_clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += STALL_SECONDS;
        int err = __real_sem_timedwait(&sched.done, &until) == 0 ? 0 : errno;
        if (atomic_load(&foreign_called))
            return false;
        if (err == 0)
            return true;
        long now = atomic_load(&sched_progress);
        bool waiting_on_purpose = atomic_load(&sched_outside) || kit_crash_in_progress(); /* a crash ends the process */
        if (err == ETIMEDOUT && watch && now == seen && !waiting_on_purpose)
            return false;
        seen = now;
    }
}

/* Why an abandoned schedule could not go on. The controller's own text: a
 * thread of that schedule may still be running, and owns the model. */
static char stall_reason[512];

static void explain_stall(void)
{
    if (atomic_load(&foreign_called))
        snprintf(stall_reason, sizeof stall_reason,
                 "a thread the scheduler did not start called %s (threads made by thrd_create or by a library "
                 "are not controlled)", foreign_call);
    else
        snprintf(stall_reason, sizeof stall_reason,
                 "a thread did not come back to the scheduler for %d s: it blocks in a call the scheduler does "
                 "not control (a semaphore, a read-write lock, C11 threads, a pipe), or spins without ever waiting",
                 STALL_SECONDS);
}

/* Why the search's last schedule failed. */
static const char *failure_message(void)
{
    return atomic_load(&sched_abandoned) ? stall_reason : sched.message;
}

/* The job the runner runs, and what stopped it before its end (the
 * controller fails the test with it: cmocka's checks are for its thread). */
static struct {
    void (*fn)(void *);
    void *arg;
    char error[512];
} job;

static void job_error(const char *text)
{
    if (job.error[0] == '\0')
        snprintf(job.error, sizeof job.error, "%s", text);
}

/* The runner thread, between jobs waiting for the next. */
static struct {
    pthread_t thread;
    bool alive;
    bool quit;  /* set, with work posted, to end it */
    sem_t work; /* posted by the controller: a job is ready */
} runner;

static void *runner_main(void *unused)
{
    (void)unused;
    pthread_setname_np(pthread_self(), "schedule"); /* (a crash renames it after the thread of the schedule) */
    for (;;) {
        while (__real_sem_wait(&runner.work) != 0)
            ; /* EINTR */
        if (runner.quit)
            return NULL;
        char why[256];
        if (sched_contexts_begin(why, sizeof why))
            job.fn(job.arg);
        else
            job_error(why);
        __real_sem_post(&sched.done);
    }
}

/* Before a fork, from the controller between jobs: the runner ends. */
static void end_the_runner(void)
{
    if (!runner.alive || atomic_load(&sched_abandoned) || pthread_equal(__real_pthread_self(), runner.thread))
        return; /* (an abandoned runner will never listen; a fork on the runner keeps it) */
    runner.quit = true;
    __real_sem_post(&runner.work);
    __real_pthread_join(runner.thread, NULL);
    __real_sem_destroy(&runner.work);
    runner.alive = false;
}

static void start_the_runner(void)
{
    static bool watching_forks;
    if (!watching_forks)
        watching_forks = pthread_atfork(end_the_runner, NULL, NULL) == 0;
    runner.quit = false;
    sem_init(&runner.work, 0, 0);
    if (__real_pthread_create(&runner.thread, NULL, runner_main, NULL) != 0) {
        __real_sem_destroy(&runner.work);
        fail_msg("the explorer could not start the thread its schedules run on");
    }
    runner.alive = true;
}

/* Run fn(arg) on the runner; false if the controller gave it up. */
static bool run_job(void (*fn)(void *), void *arg)
{
    if (!runner.alive)
        start_the_runner();
    job.fn = fn;
    job.arg = arg;
    job.error[0] = '\0';
    atomic_store(&running, true);
    __real_sem_post(&runner.work);
    bool ended = await_job_end();
    atomic_store(&running, false);
    if (!ended) { /* the runner is left as it is, for good */
        atomic_store(&sched_abandoned, true);
        explain_stall();
        return false;
    }
    if (job.error[0] != '\0')
        fail_msg("%s", job.error);
    return true;
}

/* On the runner: run the body once under the scheduler; false if the
 * schedule failed (its threads are kept, for its report, until
 * sched_bury_threads). */
static bool run_schedule(struct body_call *call)
{
    reset_schedule();
    struct sched_thread *first = sched_new_thread(body_main, call, NULL);
    if (first == NULL) {
        job_error("the explorer could not start a thread");
        sched.failed = sched.gave_up = true;
        return false;
    }
    schedules_run++;
    sched_context_switch(sched_runner_context(), &first->context, false); /* back when the schedule is over */
    steps_run += sched.nsteps; /* a failed schedule's steps count too */
    process_schedules++;
    process_wakeups += sched.wakeups;
    process_futile += sched.futile_wakeups;
    if (sched.failed)
        return false;
    sched_release_threads();
    return true;
}

/* ---- Strategies ----------------------------------------------------------------------- */

struct plan {
    enum sched_strategy strategy;
    uint64_t seed;
    int depth;   /* PCT depth, or DFS preemption bound */
    const char *token;
};

static bool parse_plan(const char *word, struct plan *plan)
{
    memset(plan, 0, sizeof *plan);
    unsigned long long seed = 0;
    int depth = 0;
    if (strncmp(word, "replay:", 7) == 0) {
        plan->strategy = STRAT_REPLAY;
        plan->token = word + 7;
        return true;
    }
    if (sscanf(word, "random:%llu", &seed) == 1) {
        plan->strategy = STRAT_RANDOM;
    } else if (sscanf(word, "pct:%llu:%d", &seed, &depth) == 2 && depth >= 1 && depth <= 8) {
        plan->strategy = STRAT_PCT;
    } else if (sscanf(word, "dfs:%d", &depth) == 1 && depth >= 0) {
        plan->strategy = STRAT_DFS;
    } else if (sscanf(word, "dpor:%d", &depth) == 1 && depth >= 0) {
        plan->strategy = STRAT_DPOR;
    } else {
        return false;
    }
    plan->seed = seed;
    plan->depth = depth;
    return true;
}

/* Set the strategy up for schedule number `index` of its run. */
static void plan_schedule(const struct plan *plan, long index)
{
    sched.strategy = plan->strategy;
    kit_rng_seed(&sched.rng, plan->seed, (uint64_t)index);
    if (plan->strategy == STRAT_PCT) {
        sched.pct_depth = plan->depth;
        long length = sched.pct_length > 0 ? sched.pct_length : 50;
        for (int k = 0; k < plan->depth - 1; k++)
            sched.pct_change[k] = 1 + (long)kit_rng_below(&sched.rng, (uint64_t)length);
    }
    if (plan->strategy == STRAT_RANDOM || plan->strategy == STRAT_PCT)
        sched.prefix_len = 0;
    sched_dpor_begin_schedule();
}

/* What the last dpor search that ran out of branches proved. */
static struct {
    bool complete;
    long interleavings, redundant;
    bool bound_reached;
    int bound;
} proof;

static void note_complete(const char *word, int bound, long schedules)
{
    proof.complete = true;
    if (sched.strategy == STRAT_DPOR) {
        sched_dpor_figures(&proof.redundant, &proof.bound_reached);
    } else {
        proof.redundant = 0;
        proof.bound_reached = dfs_bound_reached;
    }
    proof.interleavings = schedules - proof.redundant;
    proof.bound = bound;
    if (getenv("KIT_EXPLORE_STATS") != NULL)
        fprintf(stderr, "[ explore  ] complete: %ld interleavings, all passed (%s: %s; %ld redundant schedules "
                "run to their end)\n", proof.interleavings, word,
                proof.bound_reached ? "some needed more preemptions and were left out" : "the bound was never reached",
                proof.redundant);
}

/* A failed schedule, told (its threads still stand where it left them;
 * not its steps if @p shown is false), then kept. */
static void report_failure(const char *test, const char *word, long index, bool shown)
{
    snprintf(failed_schedule, sizeof failed_schedule, "schedule %ld of %.80s", index + 1, word);
    if (atomic_load(&sched_abandoned))
        return; /* no report: the controller has given the job up */
    if (shown && !sched.gave_up && !sched.options.quiet) { /* gave up: not a bug, and kit_explore_run() says why */
        sched_collect_stacks();
        sched_report(test, word, index);
        if (sched.deadlocked) /* where each thread waits, for the runner to show */
            sched_print_stacks(sched.message);
    }
    sched_bury_threads();
}

/* The failure of the first run of a schedule, kept while it runs again. */
static struct {
    char message[sizeof sched.message];
    long ndecisions; /* its choices: sched.prefix */
} first_run;

/* A failing schedule's report follows the lines its threads ran (the paths
 * of kit_sched_changes.c), which the schedules that pass do not pay for: the
 * schedule runs again with them followed - its choices from the start, the
 * racing places it began with (it learns the rest where it first did) - and
 * that run is the one reported. The explorer is deterministic, so it fails
 * the same way; if it did not, the first run's words and token are kept,
 * without its steps (false). The run again is not counted: the search's
 * figures are the same. */
static bool first_runs_only; /* kit_sched_report_first_runs() */
static bool runs_again_here;  /* kit_sched_report_runs_again() */
static bool running_again;    /* run_again_for_report() runs its schedule */
bool (*kit_sched_drop_schedule)(unsigned long schedule);

void kit_sched_report_first_runs(void)
{
    first_runs_only = true;
}

void kit_sched_report_runs_again(bool on)
{
    runs_again_here = on;
}

bool kit_sched_running_again(void)
{
    return running_again;
}

static bool run_again_for_report(struct body_call *call, int racy_before)
{
    if ((first_runs_only && !runs_again_here) || sched.gave_up || sched_notes.paths || atomic_load(&sched_abandoned))
        return true; /* reported as it ran; gave up: no report; followed already (a replay) */
    snprintf(first_run.message, sizeof first_run.message, "%s", sched.message);
    first_run.ndecisions = sched.ndecisions;
    for (long i = 0; i < sched.ndecisions; i++)
        sched.prefix[i] = sched.decisions[i].chosen;
    long counted[5] = { schedules_run, steps_run, process_schedules, process_wakeups, process_futile };
    sched_bury_threads();
    sched_memory_forget_racy(racy_before);
    plan_schedule(&(struct plan){ .strategy = STRAT_REPLAY }, 0);
    sched.prefix_len = first_run.ndecisions;
    sched_notes.paths = running_again = true;
    bool again = !run_schedule(call) && !sched.gave_up;
    sched_notes.paths = running_again = false;
    schedules_run = counted[0], steps_run = counted[1];
    process_schedules = counted[2], process_wakeups = counted[3], process_futile = counted[4];
    if (again)
        return true;
    sched.failed = true; /* (not expected) */
    sched.gave_up = false;
    snprintf(sched.message, sizeof sched.message, "%s", first_run.message);
    sched.ndecisions = first_run.ndecisions;
    for (long i = 0; i < first_run.ndecisions; i++)
        sched.decisions[i].chosen = sched.prefix[i];
    fprintf(stderr, "[ explore  ] the failing schedule ran again for its report and did not fail again: its steps "
            "are not shown\n");
    return false;
}

/* A strategy's start: a replay's choices from its token (one schedule,
 * whose paths are followed: it is reported if it fails); false, with the
 * job's error, if it cannot start. */
static bool start_plan(const struct plan *plan, long *budget)
{
    if (plan->strategy == STRAT_REPLAY) {
        if (!parse_token(plan->token)) {
            char text[256];
            snprintf(text, sizeof text, "KIT_SCHED: \"%.200s\" is not a replay token", plan->token);
            job_error(text);
            return false;
        }
        *budget = 1;
        replay.following = true;
    } else {
        sched.prefix_len = 0;
    }
    sched.pct_length = 0;
    if (plan->strategy == STRAT_DPOR && !sched_dpor_start()) {
        job_error("the explorer is out of memory");
        return false;
    }
    dfs_bound_reached = false;
    sched_notes.paths = plan->strategy == STRAT_REPLAY;
    return true;
}

/* After a replay's one schedule: whether it is not the schedule its token
 * was printed for, as far as this program can tell, and why (replay.misfit).
 * A token of another build - an earlier kit, or other code - names racing
 * places by their distance from the code's start there: here no access is
 * made at them, its choices fall at other switch points, and the schedule
 * either needs a choice the test does not offer, or ends as another one
 * would, with no failure or another. A schedule that failed and reached a
 * place of its token is taken as the token's: a token of this build may
 * name a place that its failing schedule never ran (one a schedule before
 * it raced at). In a judged test, a failed replay that misfits is dropped
 * from what the judge is sent (kit_sched_drop_schedule); where it cannot be
 * (the judge runs the body, a schedule at a time), the judge's search ends
 * at it: it is reported as the token's, the doubt said in words. */
static bool replay_misfits(bool failed)
{
    int places = replay.places_to - replay.places_from;
    int reached = sched_memory_racy_reached(replay.places_from, replay.places_to);
    replay.misfit[0] = '\0';
    replay.following = false;
    if (!replay.may_search || sched.gave_up || atomic_load(&sched_abandoned))
        return false; /* a test's own replay is what it asks for; gave up: not a bug, and kit_explore_run() says why */
    if (replay.overrun[0] != '\0')
        snprintf(replay.misfit, sizeof replay.misfit, "its %s", replay.overrun);
    else if (places > 0 && reached == 0)
        snprintf(replay.misfit, sizeof replay.misfit, "none of its %d racing place(s) is a place where this "
                 "program accesses memory", places);
    else if (!failed)
        snprintf(replay.misfit, sizeof replay.misfit, "its schedule ran to its end without a failure%s",
                 reached < places ? ", and some of its racing places were never reached" : "");
    if (replay.misfit[0] != '\0' && failed && first_runs_only &&
        !(kit_sched_drop_schedule != NULL && kit_sched_drop_schedule(sched_memory_generation()))) { /* judged: its judge ends its search here */
        fprintf(stderr, "[ replay   ] %s: the token does not replay here: %s, so this failure may not be the one "
                "it was printed with. make explore without REPLAY= searches as make grade does.\n", sched.test,
                replay.misfit);
        replay.misfit[0] = '\0';
    }
    return replay.misfit[0] != '\0';
}

/* On the runner: run one strategy for its budget; false at the first failing
 * schedule. A replay that misfits (replay_misfits) passes, untold: the
 * search runs the test's own strategies after it (search_again). */
static bool explore_plan(const char *test, const char *word, long budget, struct body_call *call)
{
    struct plan plan;
    parse_plan(word, &plan); /* (checked by the controller) */
    if (!start_plan(&plan, &budget))
        return false;
    long first = schedules_run;
    for (long index = 0; index < budget; index++) {
        plan_schedule(&plan, index);
        int racy_before = places_at_start = sched_memory_racy_count();
        if (!run_schedule(call)) {
            if (plan.strategy == STRAT_REPLAY && replay_misfits(true)) {
                sched_bury_threads();
                schedules_run--, process_schedules--; /* no schedule of the search (a judge never saw it) */
                sched_notes.paths = false;
                return true;
            }
            report_failure(test, word, index, run_again_for_report(call, racy_before));
            sched_notes.paths = false;
            return false;
        }
        if (sched.points > sched.pct_length)
            sched.pct_length = sched.points;
        if (plan.strategy == STRAT_DFS && !dfs_next(plan.depth)) {
            note_complete(word, plan.depth, schedules_run - first);
            break; /* every schedule within the bound was run */
        }
        if (plan.strategy == STRAT_DPOR && !sched_dpor_next(plan.depth)) {
            note_complete(word, plan.depth, schedules_run - first);
            break; /* one schedule of every class within the bound was run */
        }
    }
    if (plan.strategy == STRAT_REPLAY)
        replay_misfits(false);
    sched_notes.paths = false;
    return true;
}

static long number_from_env(const char *name, long fallback)
{
    const char *text = getenv(name);
    long value = text ? atol(text) : 0;
    return value > 0 ? value : fallback;
}

/* KIT_EXPLORE_STATS (make explore sets it): how many schedules, how long, how fast. */
static void print_speed(const char *test, const struct timespec *started)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double seconds = (double)(now.tv_sec - started->tv_sec) + (double)(now.tv_nsec - started->tv_nsec) / 1e9;
    fprintf(stderr, "[ explore  ] %s: %ld schedules of %.0f steps on average in %.2f s: %.0f schedules/s\n", test,
            schedules_run, schedules_run ? (double)steps_run / (double)schedules_run : 0.0, seconds,
            seconds > 0 ? (double)schedules_run / seconds : 0.0);
}

void kit_sched_print_wakeups(void)
{
    if (process_schedules > 0)
        fprintf(stderr, "[ wake-ups ] %ld wake-ups in the code under test, %ld futile, over %ld schedules\n",
                process_wakeups, process_futile, process_schedules);
}

/* The search's memory, sized by its options, and a clean slate. */
/* The record of a schedule's steps and choices, for up to max_steps steps:
 * kept from one search to the next (a test of generated scenarios runs a
 * hundred), and grown when a search needs more. */
static bool size_the_record(long max_steps)
{
    static long sized;
    if (max_steps <= sized)
        return true;
    __real_free(sched.steps);
    __real_free(sched.decisions);
    __real_free(sched.prefix);
    sched.steps = __real_malloc((size_t)max_steps * sizeof *sched.steps);
    sched.decisions = __real_malloc((size_t)(2 * max_steps) * sizeof *sched.decisions);
    sched.prefix = __real_malloc((size_t)(2 * max_steps) * sizeof *sched.prefix);
    sized = sched.steps && sched.decisions && sched.prefix ? max_steps : 0;
    return sized > 0;
}

static void begin_search(const kit_explore_t *options)
{
    static const kit_explore_t defaults = { 0 };
    if (atomic_load(&sched_abandoned)) /* its threads may still run: this process cannot schedule again */
        fail_msg("an earlier schedule in this test process was given up; run each test on its own (--run NAME)");
    sched.options = options ? *options : defaults;
    if (sched.options.max_steps <= 0)
        sched.options.max_steps = 20000;
    if (!size_the_record(sched.options.max_steps))
        fail_msg("the explorer is out of memory");
    sem_init(&sched.done, 0, 0);
    atomic_store(&foreign_called, false);
    schedules_run = 0;
    steps_run = 0;
    memset(&proof, 0, sizeof proof);
}

/* (A failed schedule's threads stay parked for good: they touch nothing here again.) */
static void end_search(void)
{
    if (atomic_load(&sched_abandoned))
        return; /* a thread of the abandoned schedule may still be on its way to a switch point */
    __real_sem_destroy(&sched.done);
}

static void fill_result(kit_explore_result_t *result, bool passed)
{
    memset(result, 0, sizeof *result);
    result->failed = !passed;
    result->deadlocked = !passed && sched.deadlocked;
    result->gave_up = !passed && (atomic_load(&sched_abandoned) || sched.gave_up);
    result->schedules = schedules_run;
    result->complete = passed && proof.complete;
    result->interleavings = proof.interleavings;
    result->redundant = proof.redundant;
    result->bound_reached = proof.bound_reached;
    result->bound = proof.bound;
    result->virtual_ns = sched.now;
    result->searched_again = replay.searched;
    snprintf(result->message, sizeof result->message, "%s", passed ? "" : failure_message());
    if (!passed && !atomic_load(&sched_abandoned))
        sched_token(result->token, sizeof result->token);
}

/* A search: its strategies run one after the other on the runner. */
struct search {
    const char *test;
    struct body_call call;
    long budget;          /* schedules per strategy */
    char words[1024];     /* the strategies */
    char own[1024];       /* the test's own strategies, as make grade runs them */
    bool passed;
};

/* A replay whose token does not fit this program (replay_misfits) is said
 * so, in words, and the test searches again: with the strategies given
 * after the token (@p rest: KIT_SCHED="replay:TOKEN pct:7:3", which the
 * search goes on to), or else as make grade did - the test's own
 * strategies, seeds and budget - so that the failure the token was printed
 * for is found again, and printed with a token of this build. */
static bool search_again(struct search *search, const char *rest)
{
    bool given = rest != NULL && rest[strspn(rest, " ,")] != '\0';
    replay.searched = true;
    if (!sched.options.quiet) {
        fprintf(stderr, "[ replay   ] %s: the token does not replay here: %s. It was printed by another build "
            "(an earlier version of the kit, or other code), whose racing places and switch points are not "
                "this one's.\n", search->test, replay.misfit);
        fprintf(stderr, "[ replay   ] %s: searching again %s (%s, %ld schedules each): the failure it finds is "
                "printed with a token of this build\n", search->test, given ? "with the strategies after the token" :
                "as make grade does", given ? rest : search->own, search->budget);
    }
    replay.misfit[0] = '\0';
    /* As the grade began: without the token's places, or any learned or race seen on its schedule. */
    sched_memory_forget_racy(replay.places_from);
    if (!replay.raced_before)
        kit_sched_take_race();
    if (given)
        return true; /* search_job() goes on to them */
    char words[sizeof search->own];
    snprintf(words, sizeof words, "%s", search->own);
    char *save = NULL;
    bool passed = true;
    for (char *word = strtok_r(words, " ,", &save); word && passed; word = strtok_r(NULL, " ,", &save))
        passed = explore_plan(search->test, word, search->budget, &search->call);
    if (passed && !sched.options.quiet)
        fprintf(stderr, "[ replay   ] %s: the search found no failure: the code the token was printed for is "
                "not the code here, or its failure needs other seeds (make explore STRATEGY=...)\n", search->test);
    return passed;
}

static void search_job(void *raw)
{
    struct search *search = raw;
    char *save = NULL;
    search->passed = true;
    for (char *word = strtok_r(search->words, " ,", &save); word && search->passed;
         word = strtok_r(NULL, " ,", &save)) {
        search->passed = explore_plan(search->test, word, search->budget, &search->call);
        if (search->passed && replay.misfit[0] != '\0')
            search->passed = search_again(search, save);
    }
}

/* Every strategy a search is asked for is one (on the controller: cmocka fails the test). */
static void check_strategies(const char *strategies)
{
    char words[1024];
    snprintf(words, sizeof words, "%s", strategies);
    char *save = NULL;
    struct plan plan;
    for (char *word = strtok_r(words, " ,", &save); word; word = strtok_r(NULL, " ,", &save))
        if (!parse_plan(word, &plan))
            fail_msg("KIT_SCHED: \"%s\" is not random:SEED, pct:SEED:DEPTH (1-8), dfs:BOUND, dpor:BOUND or "
                     "replay:TOKEN", word);
}

/* A search's strategies: KIT_SCHED's, or else the test's own - which a
 * replay of KIT_SCHED's whose token does not fit this program falls back
 * to (search_again), unless the test's own are a replay. */
static void choose_strategies(struct search *search)
{
    const char *own = sched.options.strategy ? sched.options.strategy : "pct:1:3 random:1";
    const char *strategies = getenv("KIT_SCHED");
    if (strategies == NULL || strategies[0] == '\0')
        strategies = own;
    replay.may_search = strategies != own && strstr(own, "replay:") == NULL;
    replay.searched = false;
    check_strategies(strategies);
    snprintf(search->words, sizeof search->words, "%s", strategies);
    snprintf(search->own, sizeof search->own, "%s", own);
}

bool kit_explore_search(const char *test, const kit_explore_t *options, void (*body)(void *ctx), void *ctx,
                        kit_explore_result_t *result)
{
    /* A test graded on one schedule that explores: it runs again on real
     * threads, where its explorations run as they do in make test. */
    if (kit_sched_active())
        sched_give_up("the test explores schedules of its own");
    if (atomic_load(&sched_abandoned)) { /* an earlier search gave up: its threads may still run */
        if (result) {
            memset(result, 0, sizeof *result);
            result->failed = result->gave_up = true;
            snprintf(result->message, sizeof result->message, "an earlier schedule in this test process was given up");
        }
        return false;
    }
    begin_search(options);
    sched.scheduled_test = false;
    snprintf(sched.test, sizeof sched.test, "%s", test); /* a race report names it */
    static struct search search;
    search.test = test;
    search.call = (struct body_call){ body, ctx };
    search.budget = number_from_env("KIT_SCHEDULES", sched.options.schedules > 0 ? sched.options.schedules : 500);
    /* Under ThreadSanitizer or valgrind (make tsan, make valgrind) the point is
     * memory and race errors on the explored paths, not more paths - and a
     * schedule there costs twenty to fifty times its plain time: a
     * twenty-fifth, but at least 40 (a small search keeps its budget). */
    if (getenv("KIT_SLOW") != NULL && getenv("KIT_SCHEDULES") == NULL)
        search.budget = search.budget / 25 > 40 ? search.budget / 25 : search.budget < 40 ? search.budget : 40;
    choose_strategies(&search);
    struct timespec started;
    clock_gettime(CLOCK_MONOTONIC, &started);
    bool passed = run_job(search_job, &search) && search.passed;
    if (getenv("KIT_EXPLORE_STATS") != NULL)
        print_speed(test, &started);
    if (result)
        fill_result(result, passed);
    end_search();
    return passed;
}

/* ---- An ordinary test on one schedule ----------------------------------------------
 * The grader runs each test that is neither an exploration nor a stress
 * test on one seeded schedule of the scheduler (see kit_test.h), so that a
 * racy submission is scored the same every time: the same seed, the same
 * interleaving, the same verdict. */

/* A test's own seed: the grade's seed mixed with the test's name (FNV-1a). */
static uint64_t test_seed(const char *test, uint64_t seed)
{
    uint64_t h = 1469598103934665603ULL ^ seed;
    for (const char *c = test; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ULL;
    return h % 1000000007ULL + 1;
}

static struct test_call {
    void (*fn)(void **state);
    void **state;
} test_call; /* the test kit_sched_run_test() runs */

static void test_body(void *raw)
{
    struct test_call *call = raw;
    call->fn(call->state);
}

/* Steps one scheduled test may take before it gives up on the model. */
#define TEST_MAX_STEPS 300000

/* On the runner: the test's one schedule. A failure the model saw - a
 * deadlock, a misuse - ends the test process here, with its report. */
static void test_job(void *raw)
{
    bool *passed = raw;
    *passed = run_schedule(&(struct body_call){ test_body, &test_call });
    if (*passed || atomic_load(&sched_abandoned))
        return;
    if (!sched.gave_up) {
        kit_sched_failure_begins();
        sched_collect_stacks();
        sched_report(sched.test, sched.strategy_word, -1);
        sched_end_failed_test();
    }
    sched_bury_threads();
}

void (*kit_sched_on_failure)(void);
static bool test_on_schedule; /* kit_sched_run_test's schedule is under way */
static bool test_paths_always; /* kit_sched_follow_test_paths() */

void kit_sched_follow_test_paths(void)
{
    test_paths_always = true;
}

void kit_sched_failure_begins(void)
{
    if (test_on_schedule && kit_sched_on_failure != NULL)
        kit_sched_on_failure();
}

bool kit_sched_run_test(const char *test, void (*fn)(void **state), void **state, uint64_t seed, char *reason,
                        size_t size)
{
    kit_explore_t options = { .max_steps = TEST_MAX_STEPS };
    sched_handle_forks();
    begin_search(&options);
    sched.scheduled_test = true;
    struct plan plan = { .strategy = STRAT_RANDOM, .seed = test_seed(test, seed) };
    snprintf(sched.test, sizeof sched.test, "%s", test);
    snprintf(sched.strategy_word, sizeof sched.strategy_word, "random:%llu", (unsigned long long)plan.seed);
    test_call = (struct test_call){ fn, state };
    sched.prefix_len = 0;
    plan_schedule(&plan, 0);
    kit_thread_set_name("scheduler"); /* the test's own "main" is the schedule's first thread */
    static bool passed;
    passed = false;
    /* Its paths are followed in a run for its report: a failure in another
     * runs the test again so (kit_sched_failure_begins); in a subject, which
     * cannot run it again, always (kit_sched_follow_test_paths). */
    sched_notes.paths = test_paths_always || getenv("KIT_REPORT_RUN") != NULL || getenv("KIT_DEBUG") != NULL;
    test_on_schedule = true;
    bool ended = run_job(test_job, &passed);
    test_on_schedule = false;
    sched_notes.paths = false;
    kit_thread_set_name("main");
    if (!ended || !passed)
        snprintf(reason, size, "%s", failure_message());
    end_search();
    return ended && passed;
}

/* Runs of the body on real threads when its code cannot be explored. */
#define REAL_THREAD_RUNS 20

/* Code the scheduler cannot follow (it blocks in a semaphore, spins, uses a
 * robust mutex) is no bug: it is tested as it was before exploration, on
 * real threads, where a check that fails fails the test as usual. */
static void run_on_real_threads(const char *test, const char *why, void (*body)(void *ctx), void *ctx)
{
    fprintf(stderr, "[ explore  ] %s cannot be explored: %s\n[ explore  ] it runs %d times on real threads instead\n",
            test, why, REAL_THREAD_RUNS);
    for (int run = 0; run < REAL_THREAD_RUNS; run++)
        body(ctx);
}

void kit_explore_run(const char *test, const char *file, int line, const kit_explore_t *options,
                     void (*body)(void *ctx), void *ctx)
{
    static kit_explore_result_t result;
    if (kit_explore_search(test, options, body, ctx, &result))
        return;
    if (result.gave_up) {
        run_on_real_threads(test, result.message, body, ctx);
        return;
    }
    char make_args[1200];
    sched_make_args(make_args, sizeof make_args);
    kit_note_stacks_dumped(); /* the report above told where every thread was: no gdb */
    /* The first line is what a grade report shows: what failed, and how to see it again. */
    if (strcmp(result.token, ".") == 0) /* no thread had a choice yet: nothing to replay but the test */
        print_error("%s\n    in %s, before any thread had a choice\n", result.message, failed_schedule);
    else
        print_error("%s\n    in %s; its steps are printed with the test's output (under make grade: in its log);"
                    " replay it with\n"
                    "    make explore %s TEST=%s REPLAY=%s\n",
                    result.message, failed_schedule, make_args, test, result.token);
    _fail(file, line);
}

void kit_explore_code(int got, int want, const char *expr, const char *file, int line)
{
    if (got == want)
        return;
    if (got == ENOSYS)
        kit_explore_fail(file, line, "%s returned ENOSYS: not implemented yet", expr);
    kit_explore_fail(file, line, "%s returned %s (%d), expected %s", expr, kit_errno_name(got), got,
                     want == 0 ? "0 (success)" : kit_errno_name(want));
}

/* ---- Tallies ---------------------------------------------------------------------- */

void kit_tally_init(kit_tally_t *tally)
{
    tally->count = 0;
    explore_ok(pthread_mutex_init(&tally->lock, NULL));
    explore_ok(pthread_cond_init(&tally->changed, NULL));
}

void kit_tally_add(kit_tally_t *tally)
{
    kit_sched_name_steps(__builtin_return_address(0));
    pthread_mutex_lock(&tally->lock);
    tally->count++;
    pthread_cond_broadcast(&tally->changed); /* waiters may want different counts */
    pthread_mutex_unlock(&tally->lock);
    kit_sched_name_steps(NULL);
}

void kit_tally_await(kit_tally_t *tally, int count)
{
    kit_sched_name_steps(__builtin_return_address(0));
    pthread_mutex_lock(&tally->lock);
    while (tally->count < count) /* while: a broadcast for a smaller count, or a spurious wake-up */
        pthread_cond_wait(&tally->changed, &tally->lock);
    pthread_mutex_unlock(&tally->lock);
    kit_sched_name_steps(NULL);
}

int kit_tally_count(kit_tally_t *tally)
{
    kit_sched_name_steps(__builtin_return_address(0));
    pthread_mutex_lock(&tally->lock);
    int count = tally->count;
    pthread_mutex_unlock(&tally->lock);
    kit_sched_name_steps(NULL);
    return count;
}

void kit_tally_destroy(kit_tally_t *tally)
{
    pthread_cond_destroy(&tally->changed);
    pthread_mutex_destroy(&tally->lock);
}
