/**
 * @file test_rwl_explore.c
 * @brief Chapter 08 under the schedule explorer: a few readers and writers,
 *        and every interleaving the strategies reach - with fixed seeds, so
 *        the same lock gets the same verdict every run.
 *
 * What each body checks is what rwl.h promises under *any* interleaving: a
 * writer is alone in the lock, a waiting writer holds back new readers, an
 * upgrade is refused, and nobody is left asleep while the lock would let
 * them in (the explorer reports that at once, naming where each thread
 * waits: a lost wake-up).
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_test.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_errno.h"
#include "kit_scenario.h"
#include "kit_sched.h"
#include "kit_thread.h"
#include "kit_time.h"
#include "rwl.h"

/* One thread's part: what it is, what its calls returned. */
struct part {
    rwl_t *l;
    long timeout_ms;  /* for the timed parts */
    int lock_err;     /* the lock call's result */
    int unlock_err;   /* the unlock's, when the lock was granted */
    int upgrade_err;  /* upgrade: write lock asked while reading */
    int write_err;    /* upgrade: write lock asked after the read unlock */
};

/* Who is inside, counted by the threads themselves. */
static atomic_int readers_inside, writers_inside;

/* Starts @p fn on a thread named @p name; @p timeout_ms > 0 makes its lock call a timed one. */
static void start(pthread_t *thread, const char *name, void *(*fn)(void *), struct part *p, rwl_t *l,
                  long timeout_ms)
{
    memset(p, 0, sizeof *p);
    p->l = l;
    p->timeout_ms = timeout_ms;
    p->lock_err = p->unlock_err = p->upgrade_err = p->write_err = -1;
    explore_ok(kit_thread_start(thread, name, fn, p));
}

static void *read_once(void *raw)
{
    struct part *p = raw;
    p->lock_err = p->timeout_ms > 0 ? rwl_read_lock_timed(p->l, p->timeout_ms) : rwl_read_lock(p->l);
    if (p->lock_err == 0)
        p->unlock_err = rwl_read_unlock(p->l);
    return NULL;
}

static void *write_once(void *raw)
{
    struct part *p = raw;
    p->lock_err = p->timeout_ms > 0 ? rwl_write_lock_timed(p->l, p->timeout_ms) : rwl_write_lock(p->l);
    if (p->lock_err == 0)
        p->unlock_err = rwl_write_unlock(p->l);
    return NULL;
}

/* A reader that stays inside across a switch point, checking that no writer is in. */
static void *read_and_check(void *raw)
{
    struct part *p = raw;
    p->lock_err = rwl_read_lock(p->l);
    if (p->lock_err != 0)
        return NULL;
    atomic_fetch_add(&readers_inside, 1);
    kit_explore_check(atomic_load(&writers_inside) == 0, "a reader got in while a writer held the lock");
    sched_yield(); /* others may run while it reads */
    kit_explore_check(atomic_load(&writers_inside) == 0, "a writer got in while a reader held the lock");
    atomic_fetch_sub(&readers_inside, 1);
    p->unlock_err = rwl_read_unlock(p->l);
    return NULL;
}

/* A writer that stays inside across a switch point, checking that it is alone. */
static void *write_and_check(void *raw)
{
    struct part *p = raw;
    p->lock_err = rwl_write_lock(p->l);
    if (p->lock_err != 0)
        return NULL;
    atomic_fetch_add(&writers_inside, 1);
    kit_explore_check(atomic_load(&readers_inside) == 0, "a writer got in while %d reader(s) held the lock",
                      atomic_load(&readers_inside));
    kit_explore_check(atomic_load(&writers_inside) == 1, "two writers held the lock together");
    sched_yield();
    kit_explore_check(atomic_load(&readers_inside) == 0, "a reader got in while a writer held the lock");
    atomic_fetch_sub(&writers_inside, 1);
    p->unlock_err = rwl_write_unlock(p->l);
    return NULL;
}

static void check_granted(const struct part *p, const char *who)
{
    kit_explore_check(p->lock_err == 0, "%s's lock returned %s", who, kit_errno_name(p->lock_err));
    kit_explore_check(p->unlock_err == 0, "%s's unlock returned %s", who, kit_errno_name(p->unlock_err));
}

/* ---- A writer is alone --------------------------------------------------------------------- */

/* Two readers and two writers, each in once, staying inside across a switch. */
static void readers_and_writers(void *ctx)
{
    (void)ctx;
    rwl_t *l = NULL;
    pthread_t readers[2], writers[2];
    struct part read[2], write[2];
    atomic_store(&readers_inside, 0);
    atomic_store(&writers_inside, 0);
    explore_ok(rwl_create(&l));
    start(&readers[0], "reader-0", read_and_check, &read[0], l, 0);
    start(&writers[0], "writer-0", write_and_check, &write[0], l, 0);
    start(&readers[1], "reader-1", read_and_check, &read[1], l, 0);
    start(&writers[1], "writer-1", write_and_check, &write[1], l, 0);
    for (int i = 0; i < 2; i++) {
        explore_ok(pthread_join(readers[i], NULL));
        explore_ok(pthread_join(writers[i], NULL));
        check_granted(&read[i], "a reader");
        check_granted(&write[i], "a writer");
    }
    rwl_destroy(l);
}

static void test_rwl_explore_readers_and_writers_exclude_each_other(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:2 pct:1:3 random:1", .schedules = 750, .spurious = 1 };
    kit_explore(&options, readers_and_writers, NULL);
}

/* ---- Writers first --------------------------------------------------------------------------- */

/* The body reads; a writer comes and waits; then a reader comes with a
 * 50 ms timed lock. The body lets go of its read lock only after that
 * reader has returned, so the writer waits throughout: writers first
 * means the reader waits too, and times out. */
static void waiting_writer_against_a_new_reader(void *ctx)
{
    (void)ctx;
    rwl_t *l = NULL;
    pthread_t writer, reader;
    struct part write, read;
    explore_ok(rwl_create(&l));
    explore_ok(rwl_read_lock(l));
    start(&writer, "writer", write_once, &write, l, 0);
    kit_explore_await_sleepers(1);
    start(&reader, "reader", read_once, &read, l, 50);
    explore_ok(pthread_join(reader, NULL));
    explore_ok(rwl_read_unlock(l));
    explore_ok(pthread_join(writer, NULL));
    check_granted(&write, "the writer");
    kit_explore_check(read.lock_err != 0,
                      "a new reader got the read lock while a writer waited: once a writer waits, new readers "
                      "wait behind it (writers first)");
    explore_err(read.lock_err, ETIMEDOUT);
    rwl_destroy(l);
}

static void test_rwl_explore_waiting_writer_holds_back_new_readers(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:2 random:2", .schedules = 750, .spurious = 1 };
    kit_explore(&options, waiting_writer_against_a_new_reader, NULL);
}

/* ---- Wake-ups ------------------------------------------------------------------------------------ */

/* The body writes; two readers come and sleep; the body unlocks: both must get in. */
static void write_unlock_against_sleeping_readers(void *ctx)
{
    (void)ctx;
    rwl_t *l = NULL;
    pthread_t readers[2];
    struct part read[2];
    explore_ok(rwl_create(&l));
    explore_ok(rwl_write_lock(l));
    start(&readers[0], "reader-0", read_once, &read[0], l, 0);
    start(&readers[1], "reader-1", read_once, &read[1], l, 0);
    kit_explore_await_sleepers(2);
    explore_ok(rwl_write_unlock(l));
    for (int i = 0; i < 2; i++) {
        explore_ok(pthread_join(readers[i], NULL));
        check_granted(&read[i], "a reader");
    }
    rwl_destroy(l);
}

static void test_rwl_explore_write_unlock_wakes_every_reader(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:2 random:3", .schedules = 750, .spurious = 1 };
    kit_explore(&options, write_unlock_against_sleeping_readers, NULL);
}

/* Two readers, each inside across a switch point, and a writer, in any
 * order: whenever the writer waits for readers, the last one out must let
 * it in, and the readers that came after it get in when it leaves. */
static void last_reader_out_against_a_waiting_writer(void *ctx)
{
    (void)ctx;
    rwl_t *l = NULL;
    pthread_t writer, readers[2];
    struct part write, read[2];
    atomic_store(&readers_inside, 0);
    atomic_store(&writers_inside, 0);
    explore_ok(rwl_create(&l));
    start(&readers[0], "reader-0", read_and_check, &read[0], l, 0);
    start(&writer, "writer", write_and_check, &write, l, 0);
    start(&readers[1], "reader-1", read_and_check, &read[1], l, 0);
    explore_ok(pthread_join(writer, NULL));
    check_granted(&write, "the writer");
    for (int i = 0; i < 2; i++) {
        explore_ok(pthread_join(readers[i], NULL));
        check_granted(&read[i], "a reader");
    }
    rwl_destroy(l);
}

static void test_rwl_explore_last_reader_out_lets_the_writer_in(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:2 random:4", .schedules = 750, .spurious = 1 };
    kit_explore(&options, last_reader_out_against_a_waiting_writer, NULL);
}

/* The body reads; a writer waits with a 100 ms timeout; two readers wait
 * behind it. The writer gives up: both readers must then get in, although
 * the body still reads - on virtual time, the time-out comes at once. */
static void timed_writer_gives_up_against_waiting_readers(void *ctx)
{
    (void)ctx;
    rwl_t *l = NULL;
    pthread_t writer, readers[2];
    struct part write, read[2];
    explore_ok(rwl_create(&l));
    explore_ok(rwl_read_lock(l));
    start(&writer, "writer", write_once, &write, l, 100);
    kit_explore_await_sleepers(1);
    start(&readers[0], "reader-0", read_once, &read[0], l, 0);
    start(&readers[1], "reader-1", read_once, &read[1], l, 0);
    explore_ok(pthread_join(writer, NULL));
    explore_err(write.lock_err, ETIMEDOUT);
    for (int i = 0; i < 2; i++) {
        explore_ok(pthread_join(readers[i], NULL));
        check_granted(&read[i], "a reader");
    }
    explore_ok(rwl_read_unlock(l));
    rwl_destroy(l);
}

static void test_rwl_explore_writer_giving_up_lets_readers_in(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:2 random:5", .schedules = 750, .spurious = 1 };
    kit_explore(&options, timed_writer_gives_up_against_waiting_readers, NULL);
}

/* ---- A writer is woken alone --------------------------------------------------------------
 * rwl.h: an unlock wakes only threads that can now go in, and one writer at
 * a time - as chapter 02's queue wakes only the side that can proceed. The
 * scheduler counts the futile wake-ups: a thread woken that finds the lock
 * taken and waits again at once. Three writers asleep, and one unlock that
 * lets one of them in: the other two must sleep on, unwoken, and so on down
 * the line, each writer's unlock waking the next. */

#define WRITERS_ASLEEP 3

static void check_writers_woken_alone(long before, const char *change)
{
    long futile = kit_sched_futile_wakeups() - before;
    kit_explore_check(futile == 0,
                      "%s and the writers' own unlocks woke sleeping writers %ld time%s for nothing (a futile "
                      "wake-up: each found the lock taken and slept again): with only writers asleep, an unlock "
                      "wakes one writer, the one that can go in (rwl.h: a writer is woken alone)",
                      change, futile, futile == 1 ? "" : "s");
}

/* The body holds the lock (@p write: for writing), three writers sleep, and the body lets go. */
static void writers_asleep_behind(bool write)
{
    rwl_t *l = NULL;
    pthread_t writers[WRITERS_ASLEEP];
    struct part parts[WRITERS_ASLEEP];
    explore_ok(rwl_create(&l));
    explore_ok(write ? rwl_write_lock(l) : rwl_read_lock(l));
    for (int i = 0; i < WRITERS_ASLEEP; i++) {
        char name[16];
        snprintf(name, sizeof name, "writer-%d", i);
        start(&writers[i], name, write_once, &parts[i], l, 0);
    }
    kit_explore_await_sleepers(WRITERS_ASLEEP);
    long before = kit_sched_futile_wakeups();
    explore_ok(write ? rwl_write_unlock(l) : rwl_read_unlock(l));
    for (int i = 0; i < WRITERS_ASLEEP; i++) {
        explore_ok(pthread_join(writers[i], NULL));
        check_granted(&parts[i], "a writer");
    }
    check_writers_woken_alone(before, write ? "the writer's unlock" : "the last reader's unlock");
    rwl_destroy(l);
}

static void last_reader_out_before_sleeping_writers(void *ctx)
{
    (void)ctx;
    writers_asleep_behind(false);
}

static void test_rwl_explore_last_reader_out_wakes_one_writer(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dpor:2", .schedules = 200 };
    kit_explore(&options, last_reader_out_before_sleeping_writers, NULL);
}

static void write_unlock_before_sleeping_writers(void *ctx)
{
    (void)ctx;
    writers_asleep_behind(true);
}

static void test_rwl_explore_write_unlock_wakes_one_writer(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dpor:2", .schedules = 200 };
    kit_explore(&options, write_unlock_before_sleeping_writers, NULL);
}

/* The test's own hand-over between the body and a second reader. */
struct second_reader {
    struct part part;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    bool inside, may_leave; /* guarded by lock */
};

/* Reads, says so, and stays inside until the body lets it leave. */
static void *read_until_told(void *raw)
{
    struct second_reader *r = raw;
    r->part.lock_err = rwl_read_lock(r->part.l);
    explore_ok(pthread_mutex_lock(&r->lock));
    r->inside = true;
    explore_ok(pthread_cond_signal(&r->changed));
    while (!r->may_leave) /* while, not if: a wake-up may be spurious */
        explore_ok(pthread_cond_wait(&r->changed, &r->lock));
    explore_ok(pthread_mutex_unlock(&r->lock));
    if (r->part.lock_err == 0)
        r->part.unlock_err = rwl_read_unlock(r->part.l);
    return NULL;
}

/* Two readers inside, three writers asleep: the body, the first reader out,
 * is not the last, so its unlock lets no one in and must wake no one; the
 * second reader's, the last, wakes one writer. */
static void reader_not_last_before_sleeping_writers(void *ctx)
{
    (void)ctx;
    rwl_t *l = NULL;
    pthread_t other, writers[WRITERS_ASLEEP];
    struct part parts[WRITERS_ASLEEP];
    static struct second_reader r;
    explore_ok(rwl_create(&l));
    explore_ok(pthread_mutex_init(&r.lock, NULL));
    explore_ok(pthread_cond_init(&r.changed, NULL));
    r.inside = r.may_leave = false;
    explore_ok(rwl_read_lock(l));
    start(&other, "reader", read_until_told, &r.part, l, 0);
    explore_ok(pthread_mutex_lock(&r.lock));
    while (!r.inside) /* while, not if: a wake-up may be spurious */
        explore_ok(pthread_cond_wait(&r.changed, &r.lock));
    explore_ok(pthread_mutex_unlock(&r.lock));
    for (int i = 0; i < WRITERS_ASLEEP; i++) {
        char name[16];
        snprintf(name, sizeof name, "writer-%d", i);
        start(&writers[i], name, write_once, &parts[i], l, 0);
    }
    kit_explore_await_sleepers(WRITERS_ASLEEP + 1); /* (and the second reader, in its own wait) */
    long before = kit_sched_futile_wakeups();
    explore_ok(rwl_read_unlock(l)); /* not the last */
    explore_ok(pthread_mutex_lock(&r.lock));
    r.may_leave = true;
    explore_ok(pthread_cond_signal(&r.changed));
    explore_ok(pthread_mutex_unlock(&r.lock));
    explore_ok(pthread_join(other, NULL));
    check_granted(&r.part, "the second reader");
    for (int i = 0; i < WRITERS_ASLEEP; i++) {
        explore_ok(pthread_join(writers[i], NULL));
        check_granted(&parts[i], "a writer");
    }
    check_writers_woken_alone(before, "a reader's unlock that left another reader inside, then the last reader's,");
    explore_ok(pthread_cond_destroy(&r.changed));
    explore_ok(pthread_mutex_destroy(&r.lock));
    rwl_destroy(l);
}

static void test_rwl_explore_reader_not_last_out_wakes_no_writer(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dpor:2", .schedules = 200 };
    kit_explore(&options, reader_not_last_before_sleeping_writers, NULL);
}

/* ---- The upgrade deadlock ------------------------------------------------------------------------ */

static void *read_then_upgrade(void *raw)
{
    struct part *p = raw;
    p->lock_err = rwl_read_lock(p->l);
    if (p->lock_err != 0)
        return NULL;
    p->upgrade_err = rwl_write_lock(p->l);
    if (p->upgrade_err == 0)
        (void)rwl_write_unlock(p->l);
    p->unlock_err = rwl_read_unlock(p->l);
    p->write_err = rwl_write_lock(p->l);
    if (p->write_err == 0)
        (void)rwl_write_unlock(p->l);
    return NULL;
}

/* Two readers each ask for the write lock while reading: each would wait
 * for the other's read lock, and its own. Both are refused at once, and
 * both get the write lock once they have let go of their read lock. */
static void two_readers_upgrade(void *ctx)
{
    (void)ctx;
    rwl_t *l = NULL;
    pthread_t threads[2];
    struct part parts[2];
    explore_ok(rwl_create(&l));
    start(&threads[0], "reader-0", read_then_upgrade, &parts[0], l, 0);
    start(&threads[1], "reader-1", read_then_upgrade, &parts[1], l, 0);
    for (int i = 0; i < 2; i++) {
        explore_ok(pthread_join(threads[i], NULL));
        explore_ok(parts[i].lock_err);
        kit_explore_check(parts[i].upgrade_err == EDEADLK, "a reader asking for the write lock got %s, not EDEADLK",
                          kit_errno_name(parts[i].upgrade_err));
        explore_ok(parts[i].unlock_err);
        explore_ok(parts[i].write_err);
    }
    rwl_destroy(l);
}

static void test_rwl_explore_upgrade_is_refused_not_hung(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:2 random:6", .schedules = 750 };
    kit_explore(&options, two_readers_upgrade, NULL);
}


/* The scenarios' spec: the sequential model, the calls and their printing (rwl_scenarios.c). */
extern const kit_spec_t lock_spec;

/* Scenarios nobody wrote: read and write locks, timed or not, nested where
 * the header allows it, unlocks by threads that hold nothing, on two to four
 * threads, each thread giving back what it took; every interleaving of each
 * searched up to equivalence, with timeouts that may run out as an unlock's
 * wake-up reaches them. Some order of the calls must explain each history,
 * and a lock call still asleep at the end must be one the lock keeps out. */
static void test_rwl_explore_generated_scenarios(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dpor:2", .schedules = 150, .spurious = 1, .timeouts_race = true };
    kit_scenarios(&lock_spec, 100, &options);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_rwl_explore_readers_and_writers_exclude_each_other),
    cmocka_unit_test(test_rwl_explore_waiting_writer_holds_back_new_readers),
    cmocka_unit_test(test_rwl_explore_write_unlock_wakes_every_reader),
    cmocka_unit_test(test_rwl_explore_last_reader_out_lets_the_writer_in),
    cmocka_unit_test(test_rwl_explore_writer_giving_up_lets_readers_in),
    cmocka_unit_test(test_rwl_explore_last_reader_out_wakes_one_writer),
    cmocka_unit_test(test_rwl_explore_write_unlock_wakes_one_writer),
    cmocka_unit_test(test_rwl_explore_reader_not_last_out_wakes_no_writer),
    cmocka_unit_test(test_rwl_explore_upgrade_is_refused_not_hung),
    cmocka_unit_test(test_rwl_explore_generated_scenarios),
};

KIT_TEST_MAIN(tests)
