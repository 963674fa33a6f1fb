/**
 * @file test_rwl.c
 * @brief Chapter 08 tests: readers share, writers are alone, a waiting writer
 *        holds back new readers, self-deadlocks are refused, timed locks keep
 *        one deadline, and nobody is left asleep on a free lock.
 *
 * A lock belongs to the thread that took it, so each worker takes and
 * releases its own; the test's thread holds the lock itself when a test
 * needs it held. Workers never assert (cmocka is not thread-safe): a worker
 * makes its calls, records what they returned, and the test's thread checks
 * the record after joining it.
 *
 * What a test shares with the threads it starts is static, not on the
 * test's stack: a test that fails leaves through cmocka's longjmp while
 * such a thread may still run, and that thread must then find its objects
 * alive.
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_test.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "kit_errno.h"
#include "kit_sched.h"
#include "kit_time.h"
#include "rwl.h"

/* Long enough that a call which waits for it would fail the test visibly,
 * short enough that the runner's own limit does not hit first. */
enum { LONG_WAIT_MS = 20000, AT_ONCE_BOUND_MS = 5000 };

static int64_t ns_of_ms(long ms)
{
    return (int64_t)ms * 1000000;
}

static rwl_t *make_lock(void)
{
    rwl_t *l = NULL;
    assert_ok(rwl_create(&l));
    assert_non_null_or_say(l, "rwl_create returned 0 but left *out NULL");
    return l;
}

/* Resets the wake-up injection even when a test fails half-way. */
static int stop_injecting(void **state)
{
    (void)state;
    kit_spurious_wakeups(false);
    kit_wakeups_every(0);
    return 0;
}

/* ---- One lock call on a worker thread ---------------------------------------- */

enum call_kind { READ, READ_TIMED, WRITE, WRITE_TIMED, UNLOCK_READ, UNLOCK_WRITE };

struct call {
    rwl_t *l;
    enum call_kind kind;
    long timeout_ms;    /* for the timed kinds */
    int err;            /* out: what the call returned */
    int unlock_err;     /* out: what the unlock after a successful lock returned */
    int64_t elapsed_ns; /* out: how long the call took */
    long order;         /* out: 1, 2, ...: when it got the lock, among all calls */
};

static atomic_long acquisitions; /* numbers the successful lock calls, in order */

static bool is_read(enum call_kind kind)
{
    return kind == READ || kind == READ_TIMED;
}

static int make_call(struct call *call)
{
    switch (call->kind) {
    case READ:
        return rwl_read_lock(call->l);
    case READ_TIMED:
        return rwl_read_lock_timed(call->l, call->timeout_ms);
    case WRITE:
        return rwl_write_lock(call->l);
    case WRITE_TIMED:
        return rwl_write_lock_timed(call->l, call->timeout_ms);
    case UNLOCK_READ:
        return rwl_read_unlock(call->l);
    case UNLOCK_WRITE:
        return rwl_write_unlock(call->l);
    }
    return -1;
}

/* Makes the call; a lock that was granted is released at once, by this thread. */
static void *call_on_worker(void *raw)
{
    struct call *call = raw;
    int64_t start = kit_now_ns(); /* before the call computes its deadline: a strict lower bound */
    call->err = make_call(call);
    call->elapsed_ns = kit_now_ns() - start;
    if (call->err == 0 && call->kind <= WRITE_TIMED) {
        call->order = atomic_fetch_add(&acquisitions, 1) + 1;
        call->unlock_err = is_read(call->kind) ? rwl_read_unlock(call->l) : rwl_write_unlock(call->l);
    }
    return NULL;
}

static struct call call_of(rwl_t *l, enum call_kind kind, long timeout_ms)
{
    return (struct call){ .l = l, .kind = kind, .timeout_ms = timeout_ms, .err = -1, .unlock_err = -1 };
}

/* Starts @p call on @p worker and waits for it to end: for calls that must not wait. */
static void call_and_join(kit_worker_t *worker, struct call *call, const char *what)
{
    kit_worker_start(worker, what, call_on_worker, call);
    kit_worker_must_finish(worker, what);
}

/* A lock call that was granted, and released again by its own thread. */
static void assert_granted(const struct call *call)
{
    assert_code_or_say(call->err, 0,
        "the lock call (%s) that should have been granted", is_read(call->kind) ? "read" : "write");
    assert_code_or_say(call->unlock_err, 0,
        "the unlock by the thread that held the lock (%s)", is_read(call->kind) ? "read" : "write");
}

/* ---- Arguments, creation, destruction --------------------------------------- */

static void test_rwl_calls_with_bad_arguments_give_einval(void **state)
{
    (void)state;
    assert_err(rwl_create(NULL), EINVAL);
    assert_err(rwl_read_lock(NULL), EINVAL);
    assert_err(rwl_read_lock_timed(NULL, 10), EINVAL);
    assert_err(rwl_read_unlock(NULL), EINVAL);
    assert_err(rwl_write_lock(NULL), EINVAL);
    assert_err(rwl_write_lock_timed(NULL, 10), EINVAL);
    assert_err(rwl_write_unlock(NULL), EINVAL);
    rwl_t *l = make_lock();
    assert_err(rwl_read_lock_timed(l, -1), EINVAL);
    assert_err(rwl_write_lock_timed(l, -1), EINVAL);
    /* a refused call took nothing: the lock is still free for a writer */
    assert_ok(rwl_write_lock_timed(l, 0));
    assert_ok(rwl_write_unlock(l));
    rwl_destroy(NULL);
    rwl_destroy(l);
}

static int create_use_and_destroy(void *ctx)
{
    (void)ctx;
    rwl_t *l = (rwl_t *)&l;
    int err = rwl_create(&l);
    if (err == ENOSYS) {
        kit_fail_allocation(0); /* disarmed before the test ends here */
        fail_msg("rwl_create returned ENOSYS: not implemented yet - write it in exercises/08-rwlock/");
    }
    if (err != 0 && l != NULL) {
        kit_fail_allocation(0);
        fail_msg("rwl_create returned %s but left the lock pointer set: after a failure it must be NULL",
                 kit_errno_name(err));
    }
    if (err == 0 && (err = rwl_read_lock(l)) == 0) {
        err = rwl_read_unlock(l);
        if (err == 0 && (err = rwl_write_lock(l)) == 0)
            err = rwl_write_unlock(l);
    }
    rwl_destroy(l);
    return err;
}

/* Every allocation create (and a first read and write) makes, failed in turn:
 * ENOMEM, the pointer NULL, nothing leaked. */
static void test_rwl_create_undoes_partial_work_without_memory(void **state)
{
    (void)state;
    assert_true_or_say(kit_sweep_allocation_failures("rwl_create", create_use_and_destroy, NULL) >= 1,
        "rwl_create allocated nothing: the lock must live in memory it allocates");
}

/* Readers that hold the lock together, until the test lets them go. */
enum { CROWD = 6 };

struct gathered_reader {
    rwl_t *l;
    kit_gate_t *leave; /* opened by the test once every reader is in */
    int err;
    int unlock_err;
};

static void *read_until_told(void *raw)
{
    struct gathered_reader *r = raw;
    r->err = rwl_read_lock(r->l);
    kit_gate_wait(r->leave); /* arrives holding the read lock (or having failed to take it) */
    if (r->err == 0)
        r->unlock_err = rwl_read_unlock(r->l);
    return NULL;
}

/* Six threads take the read lock and meet at a gate while they all hold it:
 * the lock is shared. Then they leave; destroy frees everything, the record
 * of six reading threads included. */
static void test_rwl_destroy_frees_everything(void **state)
{
    (void)state;
    long before = kit_live_allocations();
    rwl_t *l = make_lock();
    static kit_gate_t leave;
    static struct gathered_reader readers[CROWD];
    static kit_worker_t workers[CROWD];
    assert_ok(kit_gate_init(&leave));
    for (int i = 0; i < CROWD; i++) {
        readers[i] = (struct gathered_reader){ l, &leave, -1, -1 };
        kit_worker_start(&workers[i], "reader", read_until_told, &readers[i]);
    }
    if (kit_gate_await_arrivals(&leave, CROWD, KIT_HANG_MS) != 0)
        fail_msg("%d readers did not all hold the read lock at once within %ld ms: readers share the lock", CROWD,
                 KIT_HANG_MS);
    kit_gate_open(&leave);
    for (int i = 0; i < CROWD; i++) {
        kit_worker_must_finish(&workers[i], "a reader leaving the lock");
        assert_code_or_say(readers[i].err, 0, "reader %d's rwl_read_lock", i);
        assert_code_or_say(readers[i].unlock_err, 0, "reader %d's rwl_read_unlock", i);
    }
    kit_gate_destroy(&leave);
    rwl_destroy(l);
    assert_no_leak_since(before);
}

/* ---- Readers share, writers are alone ---------------------------------------- */

static void test_rwl_readers_share_the_lock(void **state)
{
    (void)state;
    rwl_t *l = make_lock();
    assert_ok(rwl_read_lock(l));
    static struct call read, try_read;
    static kit_worker_t reader, try_reader;
    read = call_of(l, READ, 0);
    call_and_join(&reader, &read, "rwl_read_lock while another thread reads");
    assert_granted(&read);
    try_read = call_of(l, READ_TIMED, 0); /* 0 ms: no waiting, and none is needed */
    call_and_join(&try_reader, &try_read, "rwl_read_lock_timed(0) while another thread reads");
    assert_granted(&try_read);
    assert_ok(rwl_read_unlock(l));
    rwl_destroy(l);
}

static void test_rwl_writer_waits_until_the_last_reader_leaves(void **state)
{
    (void)state;
    rwl_t *l = make_lock();
    assert_ok(rwl_read_lock(l));
    static struct call write;
    static kit_worker_t writer;
    write = call_of(l, WRITE, 0);
    kit_worker_start(&writer, "writer", call_on_worker, &write);
    kit_worker_must_block(&writer, 200, "rwl_write_lock while another thread reads");
    assert_ok(rwl_read_unlock(l));
    kit_worker_must_finish(&writer, "rwl_write_lock after the last reader left");
    assert_granted(&write);
    rwl_destroy(l);
}

static void test_rwl_writer_excludes_readers_and_writers(void **state)
{
    (void)state;
    rwl_t *l = make_lock();
    assert_ok(rwl_write_lock(l));
    static struct call read, write, try_read, try_write;
    static kit_worker_t reader, writer, try_reader, try_writer;
    try_read = call_of(l, READ_TIMED, 0);
    call_and_join(&try_reader, &try_read, "rwl_read_lock_timed(0) while a writer holds the lock");
    assert_code_or_say(try_read.err, ETIMEDOUT, "rwl_read_lock_timed(0) while a writer holds the lock");
    try_write = call_of(l, WRITE_TIMED, 0);
    call_and_join(&try_writer, &try_write, "rwl_write_lock_timed(0) while a writer holds the lock");
    assert_code_or_say(try_write.err, ETIMEDOUT, "rwl_write_lock_timed(0) while a writer holds the lock");
    read = call_of(l, READ, 0);
    write = call_of(l, WRITE, 0);
    kit_worker_start(&reader, "reader", call_on_worker, &read);
    kit_worker_start(&writer, "writer", call_on_worker, &write);
    kit_worker_must_block(&reader, 200, "rwl_read_lock while a writer holds the lock");
    if (kit_worker_done(&writer))
        fail_msg("rwl_write_lock returned while another writer held the lock: it should still be waiting");
    assert_ok(rwl_write_unlock(l));
    kit_worker_must_finish(&reader, "rwl_read_lock after the writer left");
    kit_worker_must_finish(&writer, "rwl_write_lock after the writer left");
    assert_granted(&read);
    assert_granted(&write);
    rwl_destroy(l);
}

/* ---- Writers first ------------------------------------------------------------------ */

/* The test's thread reads; a writer comes and waits; then a new reader
 * comes. With writers first, the new reader waits too, although the lock
 * is only read-held, and gets in after the writer. */
static void test_rwl_waiting_writer_holds_back_new_readers(void **state)
{
    (void)state;
    rwl_t *l = make_lock();
    assert_ok(rwl_read_lock(l));
    static struct call write, read;
    static kit_worker_t writer, reader;
    write = call_of(l, WRITE, 0);
    read = call_of(l, READ, 0);
    kit_worker_start(&writer, "writer", call_on_worker, &write);
    kit_await_waiting_threads(1, "a writer waiting for the reader to leave");
    kit_worker_start(&reader, "reader", call_on_worker, &read);
    kit_worker_must_block(&reader, 200, "a new rwl_read_lock while a writer waits (writers go first)");
    kit_await_waiting_threads(2, "a writer and a reader waiting");
    assert_ok(rwl_read_unlock(l));
    kit_worker_must_finish(&writer, "the waiting writer, once the reader left");
    kit_worker_must_finish(&reader, "the new reader, once the writer left");
    assert_granted(&write);
    assert_granted(&read);
    if (read.order < write.order)
        fail_msg("the reader that came while a writer waited got the lock before that writer: writers go first");
    rwl_destroy(l);
}

/* A thread that holds the read lock takes it again although a writer waits:
 * waiting would deadlock, since the writer waits for this very thread. It
 * holds it twice, and the writer gets in only after both unlocks. */
static void test_rwl_reader_takes_the_lock_again_while_a_writer_waits(void **state)
{
    (void)state;
    rwl_t *l = make_lock();
    assert_ok(rwl_read_lock(l));
    static struct call write;
    static kit_worker_t writer;
    write = call_of(l, WRITE, 0);
    kit_worker_start(&writer, "writer", call_on_worker, &write);
    kit_await_waiting_threads(1, "a writer waiting for the reader to leave");
    int err = rwl_read_lock_timed(l, 1000);
    if (err != 0)
        fail_msg("a thread that holds the read lock asked for it again while a writer waited, and got %s: it must "
                 "get it at once (the writer waits for this very thread)", kit_errno_name(err));
    assert_ok(rwl_read_unlock(l));
    kit_worker_must_block(&writer, 100, "rwl_write_lock while the reader still holds the lock once");
    assert_ok(rwl_read_unlock(l));
    kit_worker_must_finish(&writer, "rwl_write_lock after the reader's last unlock");
    assert_granted(&write);
    rwl_destroy(l);
}

/* ---- Writers first, against a stream of readers ------------------------------------ */

enum { STREAM_READERS = 3, HOLD_US = 200 };

/* How long the readers stream before they give up: on a schedule, where time
 * is virtual and exact, 200 holds prove the writer was let in while they
 * streamed; on real threads, a generous 4 s. */
static long stream_ms(void)
{
    return kit_sched_active() ? 40 : 4000;
}

struct stream {
    rwl_t *l;
    atomic_bool writer_done;   /* the writer got in and left: the readers stop */
    atomic_bool stream_over;   /* a reader stopped on its time limit */
    atomic_int readers_inside;
    atomic_int writers_inside;
    atomic_long reads;
    atomic_int overlaps;       /* a writer and anyone else inside together */
    atomic_int failures;       /* a lock call that returned an error */
};

static struct stream stream;

/* Reads again and again, holding the lock a little each time, until the
 * writer has been in or stream_ms() have passed. Reader i starts i thirds of a
 * hold late, so that the readers' holds overlap in turns and, once the stream
 * runs, some reader always holds the lock - even on virtual time, where three
 * readers started together would all leave at the same instant and let a
 * readers-first writer in by chance. */
static void *read_in_a_stream(void *raw)
{
    long index = (long)(intptr_t)raw;
    kit_sleep_us(index * HOLD_US / STREAM_READERS);
    int64_t start = kit_now_ns();
    while (!atomic_load(&stream.writer_done)) {
        if (kit_now_ns() - start > ns_of_ms(stream_ms())) {
            atomic_store(&stream.stream_over, true);
            break;
        }
        if (rwl_read_lock(stream.l) != 0) {
            atomic_fetch_add(&stream.failures, 1);
            break;
        }
        atomic_fetch_add(&stream.readers_inside, 1);
        if (atomic_load(&stream.writers_inside) != 0)
            atomic_fetch_add(&stream.overlaps, 1);
        atomic_fetch_add(&stream.reads, 1);
        kit_sleep_us(HOLD_US);
        atomic_fetch_sub(&stream.readers_inside, 1);
        if (rwl_read_unlock(stream.l) != 0)
            atomic_fetch_add(&stream.failures, 1);
    }
    return NULL;
}

struct writer_record {
    int err;
    bool while_streaming; /* got in before any reader stopped on its time limit */
    long reads_before;    /* reads done when it asked */
};

static void *write_into_the_stream(void *raw)
{
    struct writer_record *w = raw;
    w->reads_before = atomic_load(&stream.reads);
    w->err = rwl_write_lock(stream.l);
    if (w->err == 0) {
        w->while_streaming = !atomic_load(&stream.stream_over);
        atomic_fetch_add(&stream.writers_inside, 1);
        if (atomic_load(&stream.readers_inside) != 0)
            atomic_fetch_add(&stream.overlaps, 1);
        atomic_fetch_sub(&stream.writers_inside, 1);
        if (rwl_write_unlock(stream.l) != 0)
            atomic_fetch_add(&stream.failures, 1);
    }
    atomic_store(&stream.writer_done, true);
    return NULL;
}

/* Three readers read in overlapping turns, so that some reader always holds
 * the lock; a writer comes. With writers first, the readers that come after
 * it wait, the ones inside leave, and the writer gets in while the readers
 * are still streaming. With readers first it would wait until they stop. */
static void test_rwl_writer_is_not_starved_by_a_stream_of_readers(void **state)
{
    (void)state;
    stream = (struct stream){ .l = make_lock() };
    static kit_worker_t readers[STREAM_READERS], writer;
    static struct writer_record record;
    record = (struct writer_record){ .err = -1 };
    for (int i = 0; i < STREAM_READERS; i++)
        kit_worker_start(&readers[i], "reader", read_in_a_stream, (void *)(intptr_t)i);
    kit_sleep_ms(20); /* let the stream start (no check depends on how far it got) */
    kit_worker_start(&writer, "writer", write_into_the_stream, &record);
    kit_worker_must_finish(&writer, "a writer against a stream of readers");
    for (int i = 0; i < STREAM_READERS; i++)
        kit_worker_must_finish(&readers[i], "a reader of the stream");
    rwl_destroy(stream.l);
    assert_code_or_say(record.err, 0, "the writer's rwl_write_lock against the stream of readers");
    assert_int_equal_or_say(atomic_load(&stream.failures), 0, "lock calls of the stream that returned an error");
    assert_int_equal_or_say(atomic_load(&stream.overlaps), 0, "times a writer was inside together with someone else");
    if (!record.while_streaming)
        fail_msg("the writer got the lock only after the readers had streamed for %ld ms and stopped (%ld reads "
                 "after it asked): once a writer waits, new readers must wait behind it", stream_ms(),
                 atomic_load(&stream.reads) - record.reads_before);
}

/* ---- Self-deadlocks and stray unlocks ------------------------------------------------- */

struct self_calls {
    rwl_t *l;
    int read, upgrade, upgrade_timed, read_unlock;   /* as a reader */
    int write, write_again, read_as_writer, read_as_writer_timed, write_unlock; /* as the writer */
};

/* On a worker, so that an implementation that hangs fails the test instead of hanging it. */
static void *try_to_deadlock_oneself(void *raw)
{
    struct self_calls *c = raw;
    c->read = rwl_read_lock(c->l);
    c->upgrade = rwl_write_lock(c->l);
    c->upgrade_timed = rwl_write_lock_timed(c->l, 100);
    c->read_unlock = rwl_read_unlock(c->l);
    c->write = rwl_write_lock(c->l);
    c->write_again = rwl_write_lock(c->l);
    c->read_as_writer = rwl_read_lock(c->l);
    c->read_as_writer_timed = rwl_read_lock_timed(c->l, 100);
    c->write_unlock = rwl_write_unlock(c->l);
    return NULL;
}

static void test_rwl_upgrade_gives_edeadlk_instead_of_hanging(void **state)
{
    (void)state;
    rwl_t *l = make_lock();
    static struct self_calls calls;
    static kit_worker_t worker;
    calls = (struct self_calls){ .l = l };
    kit_worker_start(&worker, "upgrader", try_to_deadlock_oneself, &calls);
    kit_worker_must_finish(&worker, "a reader asking for the write lock (the upgrade deadlock)");
    assert_code_or_say(calls.read, 0, "rwl_read_lock on a free lock");
    assert_code_or_say(calls.upgrade, EDEADLK, "rwl_write_lock by a thread that reads (the upgrade deadlock)");
    assert_code_or_say(calls.upgrade_timed, EDEADLK,
        "rwl_write_lock_timed by a thread that reads (refused at once, not timed out)");
    assert_code_or_say(calls.read_unlock, 0, "rwl_read_unlock after the refused upgrades");
    assert_code_or_say(calls.write, 0, "rwl_write_lock on a free lock");
    assert_code_or_say(calls.write_again, EDEADLK, "rwl_write_lock by the thread that writes");
    assert_code_or_say(calls.read_as_writer, EDEADLK, "rwl_read_lock by the thread that writes");
    assert_code_or_say(calls.read_as_writer_timed, EDEADLK, "rwl_read_lock_timed by the thread that writes");
    assert_code_or_say(calls.write_unlock, 0, "rwl_write_unlock after the refused calls");
    assert_ok(rwl_write_lock_timed(l, 0)); /* nothing was left held */
    assert_ok(rwl_write_unlock(l));
    rwl_destroy(l);
}

static void test_rwl_unlock_by_a_thread_that_does_not_hold_it_gives_eperm(void **state)
{
    (void)state;
    rwl_t *l = make_lock();
    assert_err(rwl_read_unlock(l), EPERM);
    assert_err(rwl_write_unlock(l), EPERM);
    static struct call stray_read, stray_write;
    static kit_worker_t other_reader, other_writer;

    assert_ok(rwl_read_lock(l));
    assert_err(rwl_write_unlock(l), EPERM); /* it holds the read lock, not the write lock */
    stray_read = call_of(l, UNLOCK_READ, 0);
    call_and_join(&other_reader, &stray_read, "rwl_read_unlock by a thread that holds nothing");
    assert_code_or_say(stray_read.err, EPERM, "rwl_read_unlock by a thread that holds nothing");
    assert_ok(rwl_read_unlock(l)); /* the test's own hold was not taken away */
    assert_err(rwl_read_unlock(l), EPERM);

    assert_ok(rwl_write_lock(l));
    assert_err(rwl_read_unlock(l), EPERM);
    stray_write = call_of(l, UNLOCK_WRITE, 0);
    call_and_join(&other_writer, &stray_write, "rwl_write_unlock by a thread that holds nothing");
    assert_code_or_say(stray_write.err, EPERM, "rwl_write_unlock by a thread that holds nothing");
    assert_ok(rwl_write_unlock(l));
    assert_err(rwl_write_unlock(l), EPERM);
    rwl_destroy(l);
}

/* ---- Timed locks ------------------------------------------------------------------------- */

static void check_waited_its_timeout(const struct call *call, long timeout_ms, const char *what)
{
    assert_code_or_say(call->err, ETIMEDOUT, "%s(%ld ms)", what, timeout_ms);
    if (call->elapsed_ns < ns_of_ms(timeout_ms))
        fail_msg("%s(%ld ms) gave up after %.1f ms", what, timeout_ms, (double)call->elapsed_ns / 1e6);
}

static void test_rwl_read_lock_timed_waits_its_timeout_while_a_writer_holds(void **state)
{
    (void)state;
    rwl_t *l = make_lock();
    assert_ok(rwl_write_lock(l));
    static struct call read, try_read;
    static kit_worker_t reader, try_reader;
    read = call_of(l, READ_TIMED, 200);
    call_and_join(&reader, &read, "rwl_read_lock_timed(200 ms) while a writer holds the lock");
    check_waited_its_timeout(&read, 200, "rwl_read_lock_timed");
    try_read = call_of(l, READ_TIMED, 0);
    call_and_join(&try_reader, &try_read, "rwl_read_lock_timed(0) while a writer holds the lock");
    assert_code_or_say(try_read.err, ETIMEDOUT, "rwl_read_lock_timed(0) while a writer holds the lock");
    assert_ok(rwl_write_unlock(l));
    assert_ok(rwl_write_lock_timed(l, 0)); /* the timed-out readers hold nothing */
    assert_ok(rwl_write_unlock(l));
    rwl_destroy(l);
}

static void test_rwl_write_lock_timed_waits_its_timeout_while_a_reader_holds(void **state)
{
    (void)state;
    rwl_t *l = make_lock();
    assert_ok(rwl_read_lock(l));
    static struct call write, try_write;
    static kit_worker_t writer, try_writer;
    write = call_of(l, WRITE_TIMED, 200);
    call_and_join(&writer, &write, "rwl_write_lock_timed(200 ms) while a reader holds the lock");
    check_waited_its_timeout(&write, 200, "rwl_write_lock_timed");
    try_write = call_of(l, WRITE_TIMED, 0);
    call_and_join(&try_writer, &try_write, "rwl_write_lock_timed(0) while a reader holds the lock");
    assert_code_or_say(try_write.err, ETIMEDOUT, "rwl_write_lock_timed(0) while a reader holds the lock");
    /* the writers that gave up hold nothing back: a new reader comes in at once */
    assert_ok(rwl_read_unlock(l));
    assert_ok(rwl_read_lock_timed(l, 0));
    assert_ok(rwl_read_unlock(l));
    rwl_destroy(l);
}

static void test_rwl_timed_locks_proceed_as_soon_as_the_lock_is_free(void **state)
{
    (void)state;
    rwl_t *l = make_lock();
    int64_t start = kit_now_ns();
    assert_ok(rwl_read_lock_timed(l, LONG_WAIT_MS)); /* free: no waiting */
    if (kit_elapsed_ms(start) > AT_ONCE_BOUND_MS)
        fail_msg("rwl_read_lock_timed waited %.0f ms although the lock was free", kit_elapsed_ms(start));

    static struct call write, read;
    static kit_worker_t writer, reader;
    write = call_of(l, WRITE_TIMED, LONG_WAIT_MS);
    kit_worker_start(&writer, "writer", call_on_worker, &write);
    kit_worker_must_block(&writer, 200, "rwl_write_lock_timed while a reader holds the lock");
    assert_ok(rwl_read_unlock(l));
    kit_worker_must_finish(&writer, "rwl_write_lock_timed after the reader left");
    assert_granted(&write); /* let in by the unlock, long before its deadline */

    assert_ok(rwl_write_lock(l));
    read = call_of(l, READ_TIMED, LONG_WAIT_MS);
    kit_worker_start(&reader, "reader", call_on_worker, &read);
    kit_worker_must_block(&reader, 200, "rwl_read_lock_timed while a writer holds the lock");
    assert_ok(rwl_write_unlock(l));
    kit_worker_must_finish(&reader, "rwl_read_lock_timed after the writer left");
    assert_granted(&read);
    rwl_destroy(l);
}

/* Every 20 ms the waiting thread is woken with nothing for it. One deadline,
 * kept across those wake-ups, still expires at 300 ms; a wait that restarts
 * "now + 300 ms" after each wake-up never does. */
static void check_times_out_despite_wakeups(struct call *call, const char *what)
{
    long injected_before = kit_spurious_count();
    kit_wakeups_every(20);
    static kit_worker_t waiter;
    kit_worker_start(&waiter, what, call_on_worker, call);
    int joined = kit_worker_join(&waiter, AT_ONCE_BOUND_MS, NULL);
    kit_wakeups_every(0);
    if (joined != 0)
        fail_msg("%s(300 ms) still waiting after %d ms of early wake-ups: its deadline restarts at every "
                 "wake-up", what, AT_ONCE_BOUND_MS);
    check_waited_its_timeout(call, 300, what);
    assert_true_or_say(kit_spurious_count() > injected_before,
        "%s(300 ms) was never woken early: it does not wait on a condition variable", what);
}

static void test_rwl_timed_locks_time_out_despite_stolen_wakeups(void **state)
{
    (void)state;
    rwl_t *l = make_lock();
    static struct call read, write;
    assert_ok(rwl_write_lock(l));
    read = call_of(l, READ_TIMED, 300);
    check_times_out_despite_wakeups(&read, "rwl_read_lock_timed");
    assert_ok(rwl_write_unlock(l));
    assert_ok(rwl_read_lock(l));
    write = call_of(l, WRITE_TIMED, 300);
    check_times_out_despite_wakeups(&write, "rwl_write_lock_timed");
    assert_ok(rwl_read_unlock(l));
    rwl_destroy(l);
}

/* The test's thread reads; a timed writer waits, and two readers wait
 * behind it. When the writer gives up, nothing holds those readers back any
 * more: both must get in while the test's thread still reads. */
static void test_rwl_writer_that_times_out_lets_the_waiting_readers_in(void **state)
{
    (void)state;
    rwl_t *l = make_lock();
    assert_ok(rwl_read_lock(l));
    static struct call write, reads[2];
    static kit_worker_t writer, readers[2];
    write = call_of(l, WRITE_TIMED, 300);
    kit_worker_start(&writer, "writer", call_on_worker, &write);
    kit_await_waiting_threads(1, "a timed writer waiting for the reader to leave");
    for (int i = 0; i < 2; i++) {
        reads[i] = call_of(l, READ, 0);
        kit_worker_start(&readers[i], "reader", call_on_worker, &reads[i]);
    }
    kit_worker_must_finish(&writer, "rwl_write_lock_timed(300 ms) while a reader holds the lock");
    assert_code_or_say(write.err, ETIMEDOUT, "rwl_write_lock_timed(300 ms) while a reader holds the lock");
    for (int i = 0; i < 2; i++) {
        kit_worker_must_finish(&readers[i],
                               "a reader held back by a writer that then gave up (the lock is read-held only)");
        assert_granted(&reads[i]);
    }
    assert_ok(rwl_read_unlock(l));
    rwl_destroy(l);
}

/* ---- Wake-ups ------------------------------------------------------------------------------- */

enum { WAITING_READERS = 3 };

static void test_rwl_write_unlock_lets_every_waiting_reader_in(void **state)
{
    (void)state;
    rwl_t *l = make_lock();
    assert_ok(rwl_write_lock(l));
    static struct call reads[WAITING_READERS];
    static kit_worker_t readers[WAITING_READERS];
    for (int i = 0; i < WAITING_READERS; i++) {
        reads[i] = call_of(l, READ, 0);
        kit_worker_start(&readers[i], "reader", call_on_worker, &reads[i]);
    }
    kit_await_waiting_threads(WAITING_READERS, "readers waiting for the writer to leave");
    assert_ok(rwl_write_unlock(l));
    for (int i = 0; i < WAITING_READERS; i++) {
        kit_worker_must_finish(&readers[i], "a reader asleep when the writer unlocked (wake every reader)");
        assert_granted(&reads[i]);
    }
    rwl_destroy(l);
}

/* With wake-ups injected, every first wait returns at once with nothing
 * changed: an `if` around the wait would let a reader or a writer in while
 * the writer still holds the lock. */
static void test_rwl_spurious_wakeups_do_not_let_waiters_in(void **state)
{
    (void)state;
    rwl_t *l = make_lock();
    assert_ok(rwl_write_lock(l));
    kit_spurious_wakeups(true);
    static struct call read, write;
    static kit_worker_t reader, writer;
    read = call_of(l, READ, 0);
    write = call_of(l, WRITE, 0);
    kit_worker_start(&reader, "reader", call_on_worker, &read);
    kit_worker_start(&writer, "writer", call_on_worker, &write);
    kit_worker_must_block(&reader, 200, "rwl_read_lock woken spuriously while a writer holds the lock");
    if (kit_worker_done(&writer))
        fail_msg("rwl_write_lock woken spuriously returned while another writer held the lock: it should still "
                 "be waiting");
    kit_spurious_wakeups(false);
    assert_true_or_say(kit_spurious_count() >= 2,
        "fewer than two waits were woken spuriously: readers and writers must wait on a condition variable");
    assert_ok(rwl_write_unlock(l));
    kit_worker_must_finish(&reader, "rwl_read_lock after the writer left");
    kit_worker_must_finish(&writer, "rwl_write_lock after the writer left");
    assert_granted(&read);
    assert_granted(&write);
    rwl_destroy(l);
}

/* ---- Many readers, many writers --------------------------------------------------------- */

enum { STRESS_READERS = 3, STRESS_WRITERS = 2, STRESS_OPS = 1500 };

/* What the lock protects: a writer changes both fields, one after the other;
 * a reader must always find them equal. */
static struct {
    long first, second;
} shared;

struct stress_thread {
    rwl_t *l;
    int index;
    uint64_t seed;
    long ops;
    long writes;   /* out: writes done */
    long torn;     /* out: reads that found the fields different */
    long failures; /* out: lock calls that failed (ETIMEDOUT from a timed one excepted) */
};

static int read_once(struct stress_thread *t, kit_rng_t *rng)
{
    int err = kit_rng_below(rng, 4) == 0 ? rwl_read_lock_timed(t->l, 1 + (long)kit_rng_below(rng, 3))
                                         : rwl_read_lock(t->l);
    if (err != 0)
        return err;
    bool again = kit_rng_below(rng, 8) == 0 && rwl_read_lock(t->l) == 0; /* a second hold, now and then */
    long first = shared.first;
    kit_jitter(rng, 30);
    if (shared.second != first)
        t->torn++;
    if (again && rwl_read_unlock(t->l) != 0)
        t->failures++;
    return rwl_read_unlock(t->l);
}

static int write_once(struct stress_thread *t, kit_rng_t *rng)
{
    int err = kit_rng_below(rng, 4) == 0 ? rwl_write_lock_timed(t->l, 1 + (long)kit_rng_below(rng, 3))
                                         : rwl_write_lock(t->l);
    if (err != 0)
        return err;
    shared.first++;
    kit_jitter(rng, 30);
    shared.second++;
    t->writes++;
    return rwl_write_unlock(t->l);
}

static void *stress_body(void *raw)
{
    struct stress_thread *t = raw;
    kit_rng_t rng;
    kit_rng_seed(&rng, t->seed, (uint64_t)t->index);
    bool writer = t->index < STRESS_WRITERS;
    for (long i = 0; i < t->ops; i++) {
        int err = writer ? write_once(t, &rng) : read_once(t, &rng);
        if (err != 0 && err != ETIMEDOUT)
            t->failures++;
        if (i % 16 == 0)
            kit_jitter(&rng, 50);
    }
    return NULL;
}

/* Readers and writers, plain and timed, with second read holds, at random
 * moments: no reader ever sees a half-done write, and every write counts. */
static void test_rwl_stress_readers_and_writers(void **state)
{
    (void)state;
    rwl_t *l = make_lock();
    shared.first = shared.second = 0;
    uint64_t seed = kit_test_seed();
    long ops = kit_test_repeat(STRESS_OPS);
    static struct stress_thread threads[STRESS_READERS + STRESS_WRITERS];
    for (int i = 0; i < STRESS_READERS + STRESS_WRITERS; i++)
        threads[i] = (struct stress_thread){ .l = l, .index = i, .seed = seed, .ops = ops };
    kit_test_run_group(STRESS_READERS + STRESS_WRITERS, "rw", stress_body, threads, sizeof threads[0]);
    long writes = 0, torn = 0, failures = 0;
    for (int i = 0; i < STRESS_READERS + STRESS_WRITERS; i++) {
        writes += threads[i].writes;
        torn += threads[i].torn;
        failures += threads[i].failures;
    }
    rwl_destroy(l);
    if (failures != 0)
        fail_msg("%ld lock or unlock calls failed (other than a timed lock's ETIMEDOUT)", failures);
    if (torn != 0)
        fail_msg("%ld reads saw a write half done: a reader and a writer held the lock together", torn);
    if (shared.first != writes || shared.second != writes)
        fail_msg("%ld writes were made, but the data counts %ld and %ld: two writers held the lock together",
                 writes, shared.first, shared.second);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_rwl_calls_with_bad_arguments_give_einval),
    cmocka_unit_test(test_rwl_create_undoes_partial_work_without_memory),
    cmocka_unit_test(test_rwl_destroy_frees_everything),
    cmocka_unit_test(test_rwl_readers_share_the_lock),
    cmocka_unit_test(test_rwl_writer_waits_until_the_last_reader_leaves),
    cmocka_unit_test(test_rwl_writer_excludes_readers_and_writers),
    cmocka_unit_test(test_rwl_waiting_writer_holds_back_new_readers),
    cmocka_unit_test(test_rwl_reader_takes_the_lock_again_while_a_writer_waits),
    cmocka_unit_test(test_rwl_writer_is_not_starved_by_a_stream_of_readers),
    cmocka_unit_test(test_rwl_upgrade_gives_edeadlk_instead_of_hanging),
    cmocka_unit_test(test_rwl_unlock_by_a_thread_that_does_not_hold_it_gives_eperm),
    cmocka_unit_test(test_rwl_read_lock_timed_waits_its_timeout_while_a_writer_holds),
    cmocka_unit_test(test_rwl_write_lock_timed_waits_its_timeout_while_a_reader_holds),
    cmocka_unit_test(test_rwl_timed_locks_proceed_as_soon_as_the_lock_is_free),
    cmocka_unit_test_teardown(test_rwl_timed_locks_time_out_despite_stolen_wakeups, stop_injecting),
    cmocka_unit_test(test_rwl_writer_that_times_out_lets_the_waiting_readers_in),
    cmocka_unit_test(test_rwl_write_unlock_lets_every_waiting_reader_in),
    cmocka_unit_test_teardown(test_rwl_spurious_wakeups_do_not_let_waiters_in, stop_injecting),
    cmocka_unit_test(test_rwl_stress_readers_and_writers),
};

KIT_TEST_MAIN(tests)
