/**
 * @file main.c
 * @brief Chapter 06 program: tellers deposit into accounts through a keyed serial executor.
 *
 * Several teller threads submit deposits to a few accounts; the account
 * name is the key. A deposit is a read-modify-write with a pause in the
 * middle (read the balance, "work" for --deposit-ms, write balance +
 * amount), so two deposits to one account that overlap lose an update.
 * Through the keyed executor they never overlap and each teller's deposits
 * to an account land in the order it made them, while different accounts
 * are served side by side. `--no-order` sends the same deposits straight
 * to the pool, and the closing lines show what breaks.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "future.h"
#include "keyed.h"
#include "kit_cli.h"
#include "kit_errno.h"
#include "kit_log.h"
#include "kit_rand.h"
#include "kit_thread.h"
#include "kit_time.h"
#include "kit_trace.h"
#include "tpool.h"

enum { MAX_ACCOUNTS = 26, MAX_TELLERS = 16 };

static long accounts = 3, tellers = 3, deposits = 8, workers = 4, deposit_ms = 120, submit_ms = 100;
static bool no_order;
static kit_run_t run;

static const kit_opt_t options[] = {
    { "accounts", KIT_OPT_LONG, "N", "accounts (keys)", &accounts, 1, MAX_ACCOUNTS, NULL },
    { "submitters", KIT_OPT_LONG, "N", "teller threads submitting deposits", &tellers, 1, MAX_TELLERS, NULL },
    { "deposits", KIT_OPT_LONG, "N", "deposits each teller submits, to random accounts", &deposits, 1, 100000, NULL },
    { "workers", KIT_OPT_LONG, "N", "pool threads", &workers, 1, 64, NULL },
    { "deposit-ms", KIT_OPT_LONG, "MS", "time between reading and writing a balance (0.5x..1.5x)", &deposit_ms, 0,
      60000, NULL },
    { "submit-ms", KIT_OPT_LONG, "MS", "pause between two deposits of a teller", &submit_ms, 0, 60000, NULL },
    { "no-order", KIT_OPT_FLAG, NULL, "submit straight to the pool: no per-account order (see what breaks)",
      &no_order, 0, 0, NULL },
    KIT_RUN_OPTIONS(run),
};

static const kit_cli_t cli = {
    "ch06-keyed-executor",
    "Tellers deposit into accounts through a keyed serial executor (key = account):\n"
    "  one account's deposits run one at a time and in order, different accounts in parallel.",
    "examples:\n"
    "  ch06-keyed-executor --no-order               # the same deposits on the plain pool\n"
    "  ch06-keyed-executor --accounts 1 --workers 4 # one key: four threads, still one at a time\n"
    "  ch06-keyed-executor --accounts 8 --submitters 8 --deposits 500 --deposit-ms 0 --submit-ms 0 --quiet",
    options, sizeof options / sizeof options[0],
};

struct account {
    char name[16];
    atomic_long balance;            /* read, then written: a lost update if two deposits overlap */
    atomic_long expected;           /* the sum of the deposits submitted to it */
    atomic_long applied;
    atomic_int in_flight, most_in_flight;
    atomic_long last_seq[MAX_TELLERS]; /* per teller: the last deposit applied */
    atomic_long out_of_order;
};

struct deposit {                    /* owned by the task once submitted */
    struct account *account;
    int teller;
    long seq, amount, work_ms;
};

static struct account book[MAX_ACCOUNTS];
static keyed_t *executor;
static tpool_t *pool;
static uint64_t seed;
static atomic_long rejected;

static void note_in_flight(struct account *a, int now)
{
    int seen = atomic_load(&a->most_in_flight);
    while (now > seen && !atomic_compare_exchange_weak(&a->most_in_flight, &seen, now))
        ;
}

static void *deposit(void *raw)
{
    struct deposit *d = raw;
    struct account *a = d->account;
    note_in_flight(a, atomic_fetch_add(&a->in_flight, 1) + 1);
    kit_trace_begin("deposit", "deposit %s teller-%d #%ld", a->name, d->teller, d->seq);
    long before = atomic_load(&a->balance);
    kit_log(a->name, "teller-%d #%ld: read %ld, adding %ld ...", d->teller, d->seq, before, d->amount);
    kit_sleep_ms(d->work_ms);
    atomic_store(&a->balance, before + d->amount); /* the write of a read-modify-write */
    kit_log(a->name, "teller-%d #%ld: wrote %ld", d->teller, d->seq, before + d->amount);
    if (atomic_exchange(&a->last_seq[d->teller], d->seq) > d->seq)
        atomic_fetch_add(&a->out_of_order, 1); /* a later deposit of this teller got here first */
    atomic_fetch_add(&a->applied, 1);
    kit_trace_end("deposit");
    atomic_fetch_sub(&a->in_flight, 1);
    free(d);
    return NULL;
}

static int submit_deposit(struct deposit *d)
{
    future_t *f = NULL;
    int err = no_order ? tpool_submit(pool, deposit, d, &f) : keyed_submit(executor, d->account->name, deposit, d, &f);
    future_release(f); /* fire and forget: the closing lines check the outcome */
    return err;
}

static void *teller(void *raw)
{
    int index = (int)(intptr_t)raw;
    kit_rng_t rng;
    kit_rng_seed(&rng, seed, (uint64_t)index);
    for (long seq = 1; seq <= deposits; seq++) {
        struct deposit *d = malloc(sizeof *d);
        if (d == NULL)
            break;
        *d = (struct deposit){ &book[kit_rng_below(&rng, (uint64_t)accounts)], index, seq,
                               10 * (1 + (long)kit_rng_below(&rng, 10)),
                               deposit_ms / 2 + (long)kit_rng_below(&rng, (uint64_t)deposit_ms + 1) };
        kit_log("teller", "deposit #%ld: +%ld to %s", seq, d->amount, d->account->name);
        long amount = d->amount;
        struct account *a = d->account;
        int err = submit_deposit(d);
        if (err != 0) {
            kit_log("teller", "deposit #%ld refused: %s", seq, kit_errno_name(err));
            atomic_fetch_add(&rejected, 1);
            free(d); /* not accepted: still ours */
        } else {
            atomic_fetch_add(&a->expected, amount);
        }
        kit_sleep_ms(submit_ms);
    }
    return NULL;
}

static int start_executor(void)
{
    tpool_config_t config = { (size_t)workers, 1024, 1000, bq_policy_abort(), "pool" };
    int err = tpool_create(&pool, &config);
    if (err != 0) {
        fprintf(stderr, "tpool_create: %s\n", kit_errno_name(err));
        return err;
    }
    if (no_order)
        return 0;
    if ((err = keyed_create(&executor, pool)) != 0) {
        fprintf(stderr, "keyed_create: %s%s\n", kit_errno_name(err),
                err == ENOSYS ? " - not implemented yet: write exercises/06-keyed-executor/keyed.c" : "");
        tpool_destroy(pool);
    }
    return err;
}

static void run_tellers(void)
{
    pthread_t *threads = kit_run_start_group((size_t)tellers, "teller", teller);
    kit_run_join_group(threads, (size_t)tellers);
}

/* Every accepted deposit has run once the executor (or the pool) has terminated. */
static void finish(void)
{
    if (!no_order) {
        kit_log("main", "all tellers done: closing the executor");
        keyed_close(executor);
        keyed_await_termination(executor, 600000);
        keyed_destroy(executor);
    }
    tpool_shutdown(pool);
    tpool_await_termination(pool, 600000);
    tpool_destroy(pool);
}

/* One closing line per account: the invariants, checked. */
static bool report(void)
{
    bool all_right = true;
    printf("\n");
    for (long i = 0; i < accounts; i++) {
        struct account *a = &book[i];
        long balance = atomic_load(&a->balance), expected = atomic_load(&a->expected);
        long disorder = atomic_load(&a->out_of_order);
        int most = atomic_load(&a->most_in_flight);
        bool right = balance == expected && disorder == 0 && most <= 1;
        all_right = all_right && right;
        printf("%s: balance %ld of %ld expected, %ld deposits, %ld out of order, at most %d at a time: %s%s%s%s\n",
               a->name, balance, expected, atomic_load(&a->applied), disorder, most, right ? "OK" : "",
               balance != expected ? "LOST UPDATES " : "", disorder ? "WRONG ORDER " : "",
               most > 1 ? "OVERLAPPED" : "");
    }
    printf("%s (seed %lu)\n",
           all_right ? "every account right: one at a time per account, in each teller's order"
                     : "some accounts are wrong: deposits to one account overlapped",
           (unsigned long)seed);
    return all_right;
}

int main(int argc, char **argv)
{
    kit_cli_parse(&cli, argc, argv);
    seed = kit_run_begin(&run);
    for (int i = 0; i < (int)accounts; i++)
        snprintf(book[i].name, sizeof book[i].name, "acct-%c", 'A' + i); /* letters: each account gets its own colour in the timeline */
    if (start_executor() != 0)
        return 1;
    kit_log("main", "%ld tellers x %ld deposits into %ld accounts, %ld pool threads, %s", tellers, deposits,
            accounts, workers, no_order ? "straight to the pool (--no-order)" : "through the keyed executor");
    int64_t start = kit_now_ns();
    run_tellers();
    finish();
    kit_log("main", "done in %.0f ms", kit_elapsed_ms(start));
    int failed = kit_run_end(&run);
    bool right = report();
    if (atomic_load(&rejected) > 0)
        printf("%ld deposits were refused\n", atomic_load(&rejected));
    return right && !failed ? 0 : 1;
}
