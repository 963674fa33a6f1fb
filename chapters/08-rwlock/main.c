/**
 * @file main.c
 * @brief Chapter 08 program: readers and writers share a document, under a
 *        reader-preferring lock and under the chapter's writer-preferring one.
 *
 * Readers read the document again and again, each read taking --read-ms;
 * they start --stagger-ms apart, so that their reads overlap and some
 * reader nearly always holds the lock. A writer rewrites the document every
 * --pause-ms. With `--policy reader` the lock is a small reader-preferring
 * lock written here, in the program: a reader goes in whenever no writer is
 * *inside*, so a writer waits until the stream of readers stops - it
 * starves. With `--policy writer` it is the chapter's rwl: once a writer
 * waits, new readers wait behind it, and the writer gets in as soon as the
 * readers already inside have left. A bare run plays both, one after the
 * other, on the same workload.
 *
 * Every read checks that the document is whole (a writer changes it word
 * by word, over --write-ms): the closing line says whether every read saw
 * a whole document - whether the lock kept readers and writers apart.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_cli.h"
#include "kit_errno.h"
#include "kit_log.h"
#include "kit_rand.h"
#include "kit_thread.h"
#include "kit_time.h"
#include "kit_trace.h"
#include "rwl.h"

enum { MAX_THREADS = 32, WORDS = 4 };

static long readers = 3, writers = 1, read_ms = 90, write_ms = 20, stagger_ms = 30, pause_ms = 100;
static long writer_delay_ms = 50, duration_ms = 600;
static const char *policy = "both";
static kit_run_t run;
static const char *const policies[] = { "reader", "writer", "both", NULL };

static const kit_opt_t options[] = {
    { "policy", KIT_OPT_CHOICE, "POLICY",
      "reader: readers first (a lock written here); writer: writers first (rwl); both: one after the other",
      &policy, 0, 0, policies },
    { "readers", KIT_OPT_LONG, "N", "reader threads", &readers, 0, MAX_THREADS, NULL },
    { "writers", KIT_OPT_LONG, "N", "writer threads", &writers, 0, MAX_THREADS, NULL },
    { "read-ms", KIT_OPT_LONG, "MS", "how long one read holds the read lock", &read_ms, 0, 60000, NULL },
    { "write-ms", KIT_OPT_LONG, "MS", "how long one write holds the write lock", &write_ms, 0, 60000, NULL },
    { "stagger-ms", KIT_OPT_LONG, "MS", "reader i starts reading i x MS after the run starts", &stagger_ms, 0, 60000,
      NULL },
    { "writer-delay-ms", KIT_OPT_LONG, "MS", "when the writers start, after the run starts", &writer_delay_ms, 0,
      600000, NULL },
    { "pause-ms", KIT_OPT_LONG, "MS", "a writer's pause between two writes (readers never pause)", &pause_ms, 0,
      60000, NULL },
    { "duration-ms", KIT_OPT_LONG, "MS", "how long the threads keep reading and writing", &duration_ms, 1, 600000,
      NULL },
    KIT_RUN_OPTIONS(run),
};

static const kit_cli_t cli = {
    "ch08-rwlock",
    "Readers read a document in overlapping turns while a writer tries to rewrite it:\n"
    "  under a reader-preferring lock the writer starves; under rwl (writers first) it\n"
    "  gets in as soon as the readers inside have left.",
    "examples:\n"
    "  ch08-rwlock --policy reader              # the writer waits until the readers stop\n"
    "  ch08-rwlock --policy writer --writers 2 --pause-ms 0   # now the readers wait\n"
    "  ch08-rwlock --policy reader --readers 1  # even one reader, reading back to back, starves it\n"
    "  ch08-rwlock --readers 8 --writers 4 --read-ms 1 --write-ms 1 --pause-ms 1 --quiet",
    options, sizeof options / sizeof options[0],
};

/* ---- The reader-preferring lock, for --policy reader ---------------------------------
 * Kit-written, not the exercise: the same mutex and two condition variables as
 * rwl, with one difference - a reader waits only while a writer is inside. */

struct reader_first_lock {
    pthread_mutex_t lock;
    pthread_cond_t readers_may_go; /* broadcast when a writer leaves */
    pthread_cond_t writer_may_go;  /* signalled when the lock becomes free */
    /* Guarded by lock: */
    long active_readers;
    long waiting_writers;
    bool writer_active;
};

static int reader_first_init(struct reader_first_lock *l)
{
    *l = (struct reader_first_lock){ .active_readers = 0 };
    int err = pthread_mutex_init(&l->lock, NULL);
    if (err != 0)
        return err;
    if ((err = pthread_cond_init(&l->readers_may_go, NULL)) != 0)
        goto destroy_lock;
    if ((err = pthread_cond_init(&l->writer_may_go, NULL)) != 0)
        goto destroy_readers_may_go;
    return 0;

destroy_readers_may_go:
    pthread_cond_destroy(&l->readers_may_go);
destroy_lock:
    pthread_mutex_destroy(&l->lock);
    return err;
}

static void reader_first_destroy(struct reader_first_lock *l)
{
    pthread_cond_destroy(&l->writer_may_go);
    pthread_cond_destroy(&l->readers_may_go);
    pthread_mutex_destroy(&l->lock);
}

static int reader_first_read_lock(void *raw)
{
    struct reader_first_lock *l = raw;
    pthread_mutex_lock(&l->lock);
    while (l->writer_active) { /* only a writer *inside* stops a reader */
        kit_trace_begin("lock", "waiting to read");
        pthread_cond_wait(&l->readers_may_go, &l->lock);
        kit_trace_end("lock");
    }
    l->active_readers++;
    if (l->waiting_writers > 0)
        kit_log("lock", "reader in (%ld reading), although a writer waits: readers first", l->active_readers);
    pthread_mutex_unlock(&l->lock);
    return 0;
}

static int reader_first_read_unlock(void *raw)
{
    struct reader_first_lock *l = raw;
    pthread_mutex_lock(&l->lock);
    if (--l->active_readers == 0 && l->waiting_writers > 0)
        pthread_cond_signal(&l->writer_may_go);
    pthread_mutex_unlock(&l->lock);
    return 0;
}

static int reader_first_write_lock(void *raw)
{
    struct reader_first_lock *l = raw;
    pthread_mutex_lock(&l->lock);
    l->waiting_writers++;
    while (l->writer_active || l->active_readers > 0) {
        kit_log("lock", "writer waits: %ld reading", l->active_readers);
        kit_trace_begin("lock", "waiting to write");
        pthread_cond_wait(&l->writer_may_go, &l->lock);
        kit_trace_end("lock");
    }
    l->waiting_writers--;
    l->writer_active = true;
    pthread_mutex_unlock(&l->lock);
    return 0;
}

static int reader_first_write_unlock(void *raw)
{
    struct reader_first_lock *l = raw;
    pthread_mutex_lock(&l->lock);
    l->writer_active = false;
    pthread_cond_broadcast(&l->readers_may_go);
    if (l->waiting_writers > 0)
        pthread_cond_signal(&l->writer_may_go);
    pthread_mutex_unlock(&l->lock);
    return 0;
}

/* ---- The lock a run uses -------------------------------------------------------------- */

static int rwl_read_lock_of(void *l)
{
    return rwl_read_lock(l);
}
static int rwl_read_unlock_of(void *l)
{
    return rwl_read_unlock(l);
}
static int rwl_write_lock_of(void *l)
{
    return rwl_write_lock(l);
}
static int rwl_write_unlock_of(void *l)
{
    return rwl_write_unlock(l);
}

struct lock_ops {
    const char *title;
    int (*read_lock)(void *l);
    int (*read_unlock)(void *l);
    int (*write_lock)(void *l);
    int (*write_unlock)(void *l);
};

static const struct lock_ops reader_first_ops = {
    "reader-preferring lock: a reader goes in whenever no writer is inside",
    reader_first_read_lock, reader_first_read_unlock, reader_first_write_lock, reader_first_write_unlock,
};
static const struct lock_ops rwl_ops = {
    "writer-preferring lock (rwl): once a writer waits, new readers wait behind it",
    rwl_read_lock_of, rwl_read_unlock_of, rwl_write_lock_of, rwl_write_unlock_of,
};

/* ---- One run: the document, the readers, the writers ---------------------------------- */

/* What the lock protects: a writer sets every word to the new version, one
 * word at a time, then the version; a whole document has every word equal
 * to its version. */
static struct {
    long version;
    long words[WORDS];
} document;

/* The run in progress: its lock, when it ends, and what each thread did. */
static const struct lock_ops *ops;
static void *lock;
static int64_t run_start_ns, run_end_ns;
static uint64_t seed;
/* Who is inside the lock, counted by the threads themselves: a writer must
 * find nobody else there, a reader no writer. */
static atomic_long readers_inside, writers_inside, overlaps;
/* Reads begun so far in this run: a writer that sees it grow by more than
 * there are readers while it waits was overtaken by a reader that came back. */
static atomic_long reads_begun;

struct tally {
    long done;          /* reads or writes done before the end of the run */
    long late;          /* writes that got the lock only after the run had ended */
    long most_overtaken; /* writers: the most reads begun while one write waited */
    long torn;          /* reads that found a half-written document */
    long failures;      /* lock calls that returned an error */
    double longest_ms;  /* the longest wait for the lock */
    double waited_ms;   /* all the waits together */
};

static struct tally reader_tally[MAX_THREADS], writer_tally[MAX_THREADS];

static bool running(void)
{
    return kit_now_ns() < run_end_ns;
}

/* Sleeps until @p ms after the run's start. */
static void sleep_until(long ms)
{
    double left = (double)ms - kit_elapsed_ms(run_start_ns);
    if (left > 0)
        kit_sleep_ms((long)left);
}

/* Counts the wait for the lock that began at @p asked_ns; returns it in ms. */
static double note_wait(struct tally *t, int64_t asked_ns)
{
    double waited = kit_elapsed_ms(asked_ns);
    t->waited_ms += waited;
    if (waited > t->longest_ms)
        t->longest_ms = waited;
    return waited;
}

/* One read: the lock, the words one after the other over read_ms, the unlock. */
static void read_document(struct tally *t)
{
    int64_t asked = kit_now_ns();
    int err = ops->read_lock(lock);
    if (err != 0) {
        kit_log("reader", "read lock: %s", kit_errno_name(err));
        t->failures++;
        return;
    }
    note_wait(t, asked);
    atomic_fetch_add(&readers_inside, 1);
    atomic_fetch_add(&reads_begun, 1);
    if (atomic_load(&writers_inside) > 0)
        atomic_fetch_add(&overlaps, 1);
    long version = document.version;
    kit_trace_begin("reader", "reading v%ld", version);
    bool whole = true;
    for (int w = 0; w < WORDS; w++) {
        kit_sleep_us(read_ms * 1000 / WORDS);
        whole = whole && document.words[w] == version;
    }
    whole = whole && document.version == version;
    kit_trace_end("reader");
    if (!whole)
        t->torn++;
    kit_log("reader", "read version %ld%s", version, whole ? "" : ": HALF-WRITTEN");
    t->done++;
    atomic_fetch_sub(&readers_inside, 1);
    if ((err = ops->read_unlock(lock)) != 0)
        t->failures++;
}

static void *reader(void *raw)
{
    struct tally *t = &reader_tally[(intptr_t)raw];
    sleep_until((long)(intptr_t)raw * stagger_ms);
    while (running())
        read_document(t);
    return NULL;
}

/* One write: the lock, the words one after the other over write_ms, the version, the unlock. */
static void write_document(struct tally *t, kit_rng_t *rng)
{
    int64_t asked = kit_now_ns();
    long reads_before = atomic_load(&reads_begun);
    kit_log("writer", "wants to write");
    int err = ops->write_lock(lock);
    if (err != 0) {
        kit_log("writer", "write lock: %s", kit_errno_name(err));
        t->failures++;
        return;
    }
    double waited = note_wait(t, asked);
    long overtaken = atomic_load(&reads_begun) - reads_before;
    if (overtaken > t->most_overtaken)
        t->most_overtaken = overtaken;
    if (atomic_fetch_add(&writers_inside, 1) > 0 || atomic_load(&readers_inside) > 0)
        atomic_fetch_add(&overlaps, 1);
    long version = document.version + 1;
    bool late = !running();
    kit_trace_begin("writer", "writing v%ld", version);
    for (int w = 0; w < WORDS; w++) {
        document.words[w] = version;
        kit_sleep_us(write_ms * 1000 / WORDS + (long)kit_rng_below(rng, 100)); /* up to 0.1 ms of seeded jitter */
    }
    document.version = version;
    kit_trace_end("writer");
    kit_log("writer", "wrote version %ld after waiting %.0f ms for the lock, while %ld read(s) began%s", version,
            waited, overtaken, late ? " - after the run had ended" : "");
    if (late)
        t->late++;
    else
        t->done++;
    atomic_fetch_sub(&writers_inside, 1);
    if ((err = ops->write_unlock(lock)) != 0)
        t->failures++;
}

static void *writer(void *raw)
{
    int index = (int)(intptr_t)raw;
    struct tally *t = &writer_tally[index];
    kit_rng_t rng;
    kit_rng_seed(&rng, seed, (uint64_t)index);
    sleep_until(writer_delay_ms + index * stagger_ms);
    while (running()) {
        write_document(t, &rng);
        kit_sleep_ms(pause_ms);
    }
    return NULL;
}

static void sum(const struct tally *list, long count, struct tally *total)
{
    *total = (struct tally){ 0 };
    for (long i = 0; i < count; i++) {
        total->done += list[i].done;
        total->late += list[i].late;
        total->torn += list[i].torn;
        total->failures += list[i].failures;
        total->waited_ms += list[i].waited_ms;
        if (list[i].longest_ms > total->longest_ms)
            total->longest_ms = list[i].longest_ms;
        if (list[i].most_overtaken > total->most_overtaken)
            total->most_overtaken = list[i].most_overtaken;
    }
}

/* What a run shows, in one paragraph; true if nobody shared the lock with a writer. */
static bool report(const char *name, const struct tally *reads, const struct tally *writes)
{
    printf("\n%s: %ld reader(s) read %ld times, %ld writer(s) wrote %ld times in %ld ms\n", name, readers,
           reads->done, writers, writes->done, duration_ms);
    if (writes->done + writes->late > 0) {
        /* While a writer waits, each reader can begin at most one read - the
         * one it asked for before the writer came - unless readers overtake. */
        bool overtaken = writes->most_overtaken > readers;
        printf("  a writer waited up to %.0f ms for the lock, and up to %ld read(s) began while one waited%s\n",
               writes->longest_ms, writes->most_overtaken,
               overtaken ? ": readers overtook a waiting writer" : " (no more than there are readers)");
        if (writes->done == 0)
            printf("  STARVED: no writer got the lock until the readers had stopped\n");
    }
    if (readers > 0 && writers > 0)
        printf("  a reader waited up to %.0f ms for the lock\n", reads->longest_ms);
    long shared = atomic_load(&overlaps);
    if (reads->torn > 0 || shared > 0 || reads->failures + writes->failures > 0)
        printf("  %ld read(s) saw a half-written document; a writer shared the lock %ld time(s); %ld lock call(s) "
               "failed\n", reads->torn, shared, reads->failures + writes->failures);
    return reads->torn == 0 && shared == 0 && reads->failures + writes->failures == 0;
}

/* The same workload on one lock; fills in what the readers and writers did. */
static bool run_policy(const struct lock_ops *with, void *on, const char *name, struct tally *reads,
                       struct tally *writes)
{
    printf("\n== %s ==\n", with->title);
    fflush(stdout);
    ops = with;
    lock = on;
    memset(&document, 0, sizeof document);
    memset(reader_tally, 0, sizeof reader_tally);
    memset(writer_tally, 0, sizeof writer_tally);
    atomic_store(&overlaps, 0);
    atomic_store(&reads_begun, 0);
    run_start_ns = kit_now_ns();
    run_end_ns = run_start_ns + (int64_t)duration_ms * 1000000;
    pthread_t *reader_threads = kit_run_start_group((size_t)readers, "reader", reader);
    pthread_t *writer_threads = kit_run_start_group((size_t)writers, "writer", writer);
    kit_run_join_group(reader_threads, (size_t)readers);
    kit_run_join_group(writer_threads, (size_t)writers);
    sum(reader_tally, readers, reads);
    sum(writer_tally, writers, writes);
    return report(name, reads, writes);
}

static bool run_reader_first(struct tally *reads, struct tally *writes)
{
    struct reader_first_lock reader_first;
    int err = reader_first_init(&reader_first);
    if (err != 0) {
        fprintf(stderr, "the reader-preferring lock: %s\n", kit_errno_name(err));
        return false;
    }
    bool ok = run_policy(&reader_first_ops, &reader_first, "readers first", reads, writes);
    reader_first_destroy(&reader_first);
    return ok;
}

static bool run_writer_first(rwl_t *l, struct tally *reads, struct tally *writes)
{
    return run_policy(&rwl_ops, l, "writers first", reads, writes);
}

int main(int argc, char **argv)
{
    kit_cli_parse(&cli, argc, argv);
    seed = kit_run_begin(&run);
    bool reader_first = strcmp(policy, "writer") != 0, writer_first = strcmp(policy, "reader") != 0;
    rwl_t *l = NULL;
    int err = writer_first ? rwl_create(&l) : 0;
    if (err != 0) {
        fprintf(stderr, "rwl_create: %s%s\n", kit_errno_name(err),
                err == ENOSYS ? " - not implemented yet: write exercises/08-rwlock/rwl.c" : "");
        return 1;
    }
    kit_log("main", "%ld readers (reads of %ld ms, %ld ms apart), %ld writer(s) (writes of %ld ms, every %ld ms)",
            readers, read_ms, stagger_ms, writers, write_ms, pause_ms);
    struct tally reads[2] = { { 0 } }, writes[2] = { { 0 } };
    bool ok = true;
    if (reader_first)
        ok = run_reader_first(&reads[0], &writes[0]) && ok;
    if (writer_first)
        ok = run_writer_first(l, &reads[1], &writes[1]) && ok;
    rwl_destroy(l);
    int failed = kit_run_end(&run);
    long total_reads = reads[0].done + reads[1].done;
    printf("\n%s: %ld reads, each of a whole document; no writer ever shared the lock (seed %lu)\n",
           ok ? "invariant held" : "INVARIANT BROKEN", total_reads, (unsigned long)seed);
    return ok && !failed ? 0 : 1;
}
