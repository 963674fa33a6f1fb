/**
 * @file main.c
 * @brief Chapter 04 program: the source document's restaurant starves in one
 *        pool and is served by two; then how many threads a pool should have.
 *
 * An order is a task: a waiter takes it ("taking order 1..."), asks the
 * kitchen for the dish - a second task, returning a future - and waits for
 * that future before serving. With `--mode shared` waiters and cooks are the
 * same threads of one pool; when every thread holds an order, no thread is
 * left to cook. With `--mode split` waiters and cooks have pools of their
 * own, and every order is served. `--sizing` prints the document's formulas
 * and measures them on this machine.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "future.h"
#include "kit_cli.h"
#include "kit_errno.h"
#include "kit_gate.h"
#include "kit_log.h"
#include "kit_rand.h"
#include "kit_time.h"
#include "kit_trace.h"
#include "sizing.h"

static long orders = 2, waiters = 1, cooks = 1, cook_ms = 50, patience_ms = 0, stagger_ms = 10;
static const char *mode = "both";
static bool sizing;
static kit_run_t run;
static const char *const modes[] = { "shared", "split", "both", NULL };

static const kit_opt_t options[] = {
    { "mode", KIT_OPT_CHOICE, "MODE", "shared: one pool does everything; split: waiter pool + cook pool", &mode, 0,
      0, modes },
    { "orders", KIT_OPT_LONG, "N", "orders that arrive together", &orders, 1, 64, NULL },
    { "waiters", KIT_OPT_LONG, "N", "waiter threads (split), or the waiters' share of the one pool", &waiters, 1,
      32, NULL },
    { "cooks", KIT_OPT_LONG, "N", "cook threads (split), or the cooks' share of the one pool", &cooks, 1, 32,
      NULL },
    { "cook-ms", KIT_OPT_LONG, "MS", "time to cook one dish", &cook_ms, 0, 10000, NULL },
    { "patience-ms", KIT_OPT_LONG, "MS", "how long a waiter waits for a dish (0: orders x cook-ms + 1000)",
      &patience_ms, 0, 600000, NULL },
    { "stagger-ms", KIT_OPT_LONG, "MS",
      "the waiters holding an order at the rush ask the kitchen MS apart (0: all at once)",
      &stagger_ms, 0, 10000, NULL },
    { "sizing", KIT_OPT_FLAG, NULL, "instead: the thread-count formulas, measured on this machine", &sizing, 0, 0,
      NULL },
    KIT_RUN_OPTIONS(run),
};

static const kit_cli_t cli = {
    "ch04-starvation",
    "The restaurant: waiters take orders and wait for dishes. In one shared pool of\n"
    "  two the waiters starve (reported, not hung); with a waiter pool and a cook pool\n"
    "  every order is served. --sizing: how many threads a pool should have.",
    "examples:\n"
    "  ch04-starvation --mode shared --orders 4      # most orders starve\n"
    "  ch04-starvation --mode split --waiters 2 --cooks 1 --orders 6\n"
    "  ch04-starvation --mode shared --waiters 2 --cooks 1   # a pool of 3 serves 2 orders\n"
    "  ch04-starvation --mode shared --stagger-ms 0   # who starves is up to the scheduler\n"
    "  ch04-starvation --sizing",
    options, sizeof options / sizeof options[0],
};

static char menu[][24] = { "di san xian", "kung pao chicken", "spicy diced chicken", "grilled chicken wings" };
static uint64_t seed;

/* ---- the restaurant -------------------------------------------------------------- */

struct order {
    int id;             /* 1, 2, ... as on the bill */
    tpool_t *kitchen;   /* the pool that cooks the dish */
    kit_gate_t *rush;   /* the lunch rush: every waiter holds an order before any dish is asked for */
    long ask_after_ms;  /* once the rush begins, wait this long before asking the kitchen (--stagger-ms) */
    long patience_ms;   /* how long the waiter waits for the dish */
    /* Written by the order's task, read by main after the task's future finished: */
    int err;            /* 0 served; EDEADLK or ETIMEDOUT starved; anything else an error */
    const char *dish;   /* what was served */
    double waited_ms;   /* from asking for the dish to the answer */
};

/* The cook task: the document's cooking() - a dish from the menu, after cook_ms. */
static void *cook(void *raw)
{
    const struct order *order = raw;
    kit_rng_t rng;
    kit_rng_seed(&rng, seed, (uint64_t)order->id);
    char *dish = menu[kit_rng_below(&rng, sizeof menu / sizeof menu[0])];
    kit_log("cook", "cooking %s for order %d", dish, order->id);
    kit_trace_begin("cook", "cooking order %d", order->id);
    kit_sleep_ms(cook_ms);
    kit_trace_end("cook");
    return dish;
}

static const char *why_starved(int err)
{
    switch (err) {
    case EDEADLK:
        return "nobody is left to cook: every other worker waits for this pool's queued work";
    case ETIMEDOUT:
        return "no dish in time: every thread waits, none cooks";
    default:
        return "the kitchen did not answer";
    }
}

/* No dish: say why, and take the dish back from the kitchen if nobody has started it. */
static void give_up(const struct order *order, future_t *dish)
{
    kit_log("waiter", "order %d STARVED: %s - %s", order->id, kit_errno_name(order->err), why_starved(order->err));
    if (dish && future_cancel(dish) == 0)
        kit_log("waiter", "order %d: dish cancelled before anyone cooked it", order->id);
}

/* The order task: take the order, ask the kitchen, wait for the dish, serve it. */
static void *take_order(void *raw)
{
    struct order *order = raw;
    kit_log("waiter", "taking order %d...", order->id);
    kit_trace_begin("waiter", "order %d", order->id);
    if (order->rush)
        kit_gate_wait(order->rush);
    kit_sleep_ms(order->ask_after_ms); /* scripted: the waiters ask the kitchen one after another */
    future_t *dish = NULL;
    void *served = NULL;
    int64_t start = kit_now_ns();
    order->err = tpool_submit(order->kitchen, cook, order, &dish);
    if (order->err == 0) {
        kit_log("waiter", "order %d: waiting for the dish", order->id);
        order->err = future_get_timed(dish, &served, order->patience_ms);
    }
    order->waited_ms = kit_elapsed_ms(start);
    if (order->err == 0) {
        order->dish = served;
        kit_log("waiter", "serving: %s", order->dish);
    } else {
        give_up(order, dish);
    }
    future_release(dish);
    kit_trace_end("waiter");
    return NULL;
}

static int open_pool(tpool_t **pool, const char *name, long threads)
{
    tpool_config_t config = { .core_threads = (size_t)threads, .queue_capacity = (size_t)orders * 2 + 1,
                              .keep_alive_ms = 5000, .reject = bq_policy_block(), .name = name };
    return tpool_create(pool, &config);
}

static void explain_enosys(const char *call, int err)
{
    fprintf(stderr, "%s: %s%s\n", call, kit_errno_name(err),
            err == ENOSYS ? " - not implemented yet: write exercises/04-starvation/future.c" : "");
}

/* Hands out the orders (each one's dish is cooked on `kitchen`), lets the
 * rush begin once every waiter holds one, and waits for each order's task.
 * Returns 0, or the error of tpool_submit. */
static int serve_orders(tpool_t *front, size_t front_threads, tpool_t *kitchen, struct order *list)
{
    /* On the heap: if an order got lost, its task may still pass the gate after we return. */
    kit_gate_t *rush = malloc(sizeof *rush);
    future_t **taken = calloc((size_t)orders, sizeof *taken);
    long patience = patience_ms > 0 ? patience_ms : orders * cook_ms + 1000;
    int err = rush && taken ? kit_gate_init(rush) : ENOMEM;
    bool gate_ready = err == 0;
    long submitted = 0;
    while (err == 0 && submitted < orders) {
        /* The orders taken at the rush ask the kitchen stagger_ms apart; later ones at once. */
        long ask_after = (size_t)submitted < front_threads ? submitted * stagger_ms : 0;
        list[submitted] = (struct order){ .id = (int)submitted + 1, .kitchen = kitchen, .rush = rush,
                                          .ask_after_ms = ask_after, .patience_ms = patience, .err = -1 };
        err = tpool_submit(front, take_order, &list[submitted], &taken[submitted]);
        if (err == 0)
            submitted++;
    }
    if (gate_ready) { /* two customers arrive at the same time: every waiter takes an order first */
        kit_gate_await_arrivals(rush, (size_t)submitted < front_threads ? (size_t)submitted : front_threads,
                                patience);
        kit_gate_open(rush);
    }
    long lost = 0;
    for (long i = 0; i < submitted; i++) {
        if (future_get_timed(taken[i], NULL, patience + 5000) == ETIMEDOUT) {
            list[i].err = -1; /* still waiting: counted as lost */
            lost++;
        }
        future_release(taken[i]);
    }
    if (gate_ready && lost == 0)
        kit_gate_destroy(rush);
    if (lost == 0)
        free(rush);
    free(taken);
    return err;
}

/* Shuts a pool down without waiting forever for a task that never ends. */
static void close_pool(tpool_t *pool)
{
    tpool_shutdown(pool);
    if (tpool_await_termination(pool, orders * cook_ms + 10000) == 0)
        tpool_destroy(pool);
    else
        fprintf(stderr, "a pool did not terminate: some task is stuck (left running)\n");
}

struct tally {
    long served, starved, lost;
};

static void report(const char *title, const struct order *list, struct tally *tally)
{
    printf("\n%s: %ld orders\n", title, orders);
    for (long i = 0; i < orders; i++) {
        const struct order *order = &list[i];
        if (order->err == 0) {
            tally->served++;
            printf("  order %d: served %s after %.0f ms\n", order->id, order->dish, order->waited_ms);
        } else if (order->err == EDEADLK) {
            tally->starved++;
            printf("  order %d: STARVED - future_get said EDEADLK at once: every other worker of the pool was\n"
                   "           waiting for work queued in it, and this one was the last who could cook\n",
                   order->id);
        } else if (order->err == ETIMEDOUT) {
            tally->starved++;
            printf("  order %d: STARVED - no dish after %.0f ms (ETIMEDOUT): every thread was waiting, none cooked\n",
                   order->id, order->waited_ms);
        } else {
            tally->lost++;
            printf("  order %d: LOST - %s\n", order->id, order->err < 0 ? "still waiting" : kit_errno_name(order->err));
        }
    }
}

/* One pool of waiters + cooks threads does both jobs: the document's TestDeadLock. */
static int run_shared(struct tally *tally)
{
    long threads = waiters + cooks;
    printf("\n== shared: one pool of %ld threads takes orders and cooks ==\n", threads);
    fflush(stdout);
    tpool_t *pool = NULL;
    int err = open_pool(&pool, "worker", threads);
    struct order *list = calloc((size_t)orders, sizeof *list);
    if (err == 0 && list == NULL)
        err = ENOMEM;
    if (err == 0)
        err = serve_orders(pool, (size_t)threads, pool, list);
    if (pool)
        close_pool(pool);
    if (err == 0)
        report("shared", list, tally);
    free(list);
    return err;
}

/* A waiter pool and a cook pool: the document's fix. */
static int run_split(struct tally *tally)
{
    printf("\n== split: a waiter pool of %ld and a cook pool of %ld ==\n", waiters, cooks);
    fflush(stdout);
    tpool_t *front = NULL, *kitchen = NULL;
    int err = open_pool(&front, "waiter", waiters);
    if (err == 0)
        err = open_pool(&kitchen, "cook", cooks);
    struct order *list = calloc((size_t)orders, sizeof *list);
    if (err == 0 && list == NULL)
        err = ENOMEM;
    if (err == 0)
        err = serve_orders(front, (size_t)waiters, kitchen, list);
    if (front)
        close_pool(front); /* waiters first: their dishes are cooked before the kitchen closes */
    if (kitchen)
        close_pool(kitchen);
    if (err == 0)
        report("split", list, tally);
    free(list);
    return err;
}

/* ---- --sizing: the formulas, and this machine ----------------------------------------- */

static long cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? n : 1;
}

static void print_formula(size_t cores_n, double utilization, double compute, double wait, const char *note)
{
    printf("  %5zu  %10.0f%%  %7.0f%%  %5.0f%%  %7zu   %s\n", cores_n, utilization * 100, compute, wait,
           kit_threads_for(cores_n, utilization, wait, compute), note);
}

static void print_formulas(void)
{
    printf("How many threads? (the source document's rules)\n"
           "  CPU-bound work:       threads = cores + 1\n"
           "  work that also waits: threads = cores x target utilization x (wait + compute) / compute\n\n"
           "  cores  utilization  compute   wait  threads\n");
    print_formula(4, 1.0, 50, 50, "the document: 4 x 100% x 100% / 50% = 8");
    print_formula(4, 1.0, 10, 90, "the document: 4 x 100% x 100% / 10% = 40");
    print_formula(4, 1.0, 100, 0, "CPU-bound: cores + 1");
    print_formula(4, 0.5, 10, 90, "aim for half the CPU: half the threads");
    print_formula((size_t)cores(), 1.0, 100, 0, "this machine, CPU-bound batch below");
    print_formula((size_t)cores(), 1.0, 10, 90, "this machine, waiting batch below");
}

/* Many more tasks than threads, so that a batch is not just one or two
 * waves of threads starting and stopping; small tasks keep it short. */
enum { TASKS_PER_CORE = 64, CPU_TASK_US = 2000, MIXED_COMPUTE_US = 500, MIXED_WAIT_US = 4500 };

struct work {
    long compute_us; /* CPU time to burn */
    long wait_us;    /* then sleep, like an I/O call */
};

static int64_t cpu_ns(clockid_t clock)
{
    struct timespec now;
    clock_gettime(clock, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/* Simulated computation: burn this thread's CPU for compute_us (CPU time, not wall time). */
static void batch_task(void *raw)
{
    const struct work *work = raw;
    int64_t until = cpu_ns(CLOCK_THREAD_CPUTIME_ID) + work->compute_us * 1000;
    volatile uint64_t x = 1;
    while (cpu_ns(CLOCK_THREAD_CPUTIME_ID) < until)
        for (int i = 0; i < 1000; i++)
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    if (work->wait_us > 0)
        kit_sleep_us(work->wait_us);
}

/* Runs `tasks` tasks on a new pool of `threads`; wall ms, and how busy the CPUs were. */
static double run_batch(long threads, long tasks, struct work *work, double *busy)
{
    tpool_t *pool = NULL;
    tpool_config_t config = { .core_threads = (size_t)threads, .queue_capacity = (size_t)tasks,
                              .keep_alive_ms = 1000, .reject = bq_policy_block(), .name = "batch" };
    if (tpool_create(&pool, &config) != 0)
        return -1;
    int64_t start = kit_now_ns(), cpu_start = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
    for (long i = 0; i < tasks; i++)
        tpool_execute(pool, batch_task, work);
    tpool_destroy(pool); /* waits for every task */
    double wall = kit_elapsed_ms(start);
    *busy = (double)(cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu_start) / 1e6 / (wall * (double)cores());
    return wall;
}

/* The fewest threads within 10% of the fastest time: "enough threads". */
static long enough(const long *sizes, const double *ms, int count)
{
    double best = ms[0];
    for (int i = 1; i < count; i++)
        best = ms[i] < best ? ms[i] : best;
    for (int i = 0; i < count; i++)
        if (ms[i] <= best * 1.10)
            return sizes[i];
    return sizes[count - 1];
}

/* Adds `value` to the sorted list unless it is there; returns the new count. */
static int insert_sorted(long *list, int count, long value)
{
    int at = 0;
    while (at < count && list[at] < value)
        at++;
    if (at < count && list[at] == value)
        return count;
    memmove(&list[at + 1], &list[at], (size_t)(count - at) * sizeof list[0]);
    list[at] = value;
    return count + 1;
}

/* The two formulas for this machine's batches. */
struct plan {
    long tasks, cpu_formula, mixed_formula;
    long sizes[12];
    int count;
};

static void plan_batches(struct plan *plan)
{
    size_t n = (size_t)cores();
    *plan = (struct plan){ .tasks = TASKS_PER_CORE * (long)n, .sizes = { 1, 2, 3, 4, 8, 16, 32 }, .count = 7 };
    plan->cpu_formula = (long)kit_threads_for(n, 1.0, 0, CPU_TASK_US);
    plan->mixed_formula = (long)kit_threads_for(n, 1.0, MIXED_WAIT_US, MIXED_COMPUTE_US);
    plan->count = insert_sorted(plan->sizes, plan->count, plan->cpu_formula);
    plan->count = insert_sorted(plan->sizes, plan->count, plan->mixed_formula);
    printf("\nMeasured on this machine (%zu cores): %ld tasks per batch\n"
           "  CPU-bound batch: each task computes %.1f ms                formula: %ld threads\n"
           "  waiting batch:   each task computes %.1f ms, waits %.1f ms  formula: %ld threads\n\n"
           "  threads | CPU-bound  speed-up  CPUs busy | waiting  speed-up  CPUs busy\n",
           n, plan->tasks, CPU_TASK_US / 1000.0, plan->cpu_formula, MIXED_COMPUTE_US / 1000.0,
           MIXED_WAIT_US / 1000.0, plan->mixed_formula);
}

static int run_sizing(void)
{
    if (kit_threads_for(4, 1.0, 50, 50) == 0) {
        fprintf(stderr, "kit_threads_for returned 0 - not implemented yet: write exercises/04-starvation/sizing.c\n");
        return 1;
    }
    print_formulas();
    struct plan plan;
    plan_batches(&plan);
    struct work cpu = { CPU_TASK_US, 0 }, mixed = { MIXED_COMPUTE_US, MIXED_WAIT_US };
    double cpu_ms[12], mixed_ms[12];
    for (int i = 0; i < plan.count; i++) {
        long size = plan.sizes[i];
        const char *note = "";
        if (size == plan.cpu_formula)
            note = "<- cores + 1";
        else if (size == plan.mixed_formula)
            note = "<- the formula";
        double cpu_busy = 0, mixed_busy = 0;
        cpu_ms[i] = run_batch(size, plan.tasks, &cpu, &cpu_busy);
        mixed_ms[i] = run_batch(size, plan.tasks, &mixed, &mixed_busy);
        printf("  %7ld | %6.0f ms  %7.1fx  %8.0f%% | %4.0f ms  %7.1fx  %8.0f%%  %s\n", size, cpu_ms[i],
               cpu_ms[0] / cpu_ms[i], cpu_busy * 100, mixed_ms[i], mixed_ms[0] / mixed_ms[i], mixed_busy * 100,
               note);
        fflush(stdout);
    }
    printf("\nenough threads (within 10%% of the fastest): CPU-bound %ld (formula %ld), waiting %ld (formula %ld)\n",
           enough(plan.sizes, cpu_ms, plan.count), plan.cpu_formula, enough(plan.sizes, mixed_ms, plan.count),
           plan.mixed_formula);
    return 0;
}

/* ---- main -------------------------------------------------------------------------- */

/* The closing line: each mode's orders all accounted for; with separate pools, all served. */
static bool closing_line(bool ran_shared, const struct tally *shared, bool ran_split, const struct tally *split)
{
    bool ok = shared->lost == 0 && split->lost == 0 && split->starved == 0;
    printf("\n%s:", ok ? "every order served or reported starved" : "ORDERS LOST (or starved with separate pools)");
    if (ran_shared)
        printf(" shared pool %ld served + %ld starved of %ld;", shared->served, shared->starved, orders);
    if (ran_split)
        printf(" split pools %ld served of %ld;", split->served, orders);
    printf(" seed %lu\n", (unsigned long)seed);
    return ok;
}

int main(int argc, char **argv)
{
    kit_cli_parse(&cli, argc, argv);
    seed = kit_run_begin(&run);
    if (sizing) {
        kit_log_to(NULL); /* thirty-two workers starting and retiring would drown the table */
        int failed = run_sizing();
        return kit_run_end(&run) || failed;
    }
    struct tally shared = { 0 }, split = { 0 };
    bool ran_shared = strcmp(mode, "split") != 0, ran_split = strcmp(mode, "shared") != 0;
    int err = ran_shared ? run_shared(&shared) : 0;
    if (err == 0 && ran_split)
        err = run_split(&split);
    int failed = kit_run_end(&run);
    if (err != 0) {
        explain_enosys("tpool_submit", err);
        return 1;
    }
    bool ok = closing_line(ran_shared, &shared, ran_split, &split);
    return ok && !failed ? 0 : 1;
}
