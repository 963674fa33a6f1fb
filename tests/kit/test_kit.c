/**
 * @file test_kit.c
 * @brief Tests of the kit runtime itself (lib/): deadlines, gates, latches, traces.
 *
 * These run in `make test` like the chapters' tests but carry no points: lib/
 * is not something students write.
 */
#define _GNU_SOURCE /* asprintf */
#include "kit_test.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kit_thread.h"
#include "kit_time.h"
#include "kit_trace.h"

static void test_kit_deadline_rejects_negative_and_null(void **state)
{
    (void)state;
    struct timespec deadline;
    assert_err(kit_deadline_after(-1, &deadline), EINVAL);
    assert_err(kit_deadline_after(10, NULL), EINVAL);
}

static void test_kit_deadline_is_in_the_future_and_clamped(void **state)
{
    (void)state;
    struct timespec now, soon, forever;
    clock_gettime(CLOCK_MONOTONIC, &now);
    assert_ok(kit_deadline_after(1500, &soon));
    long long delta_ms = (long long)(soon.tv_sec - now.tv_sec) * 1000 + (soon.tv_nsec - now.tv_nsec) / 1000000;
    assert_true(delta_ms >= 1500 && delta_ms < 1500 + 1000);
    assert_true(soon.tv_nsec >= 0 && soon.tv_nsec < 1000000000L);
    assert_ok(kit_deadline_after(LONG_MAX, &forever)); /* no overflow, far in the future */
    assert_true(forever.tv_sec > now.tv_sec + 365L * 24 * 3600);
}

static void test_kit_timed_wait_waits_at_least_its_timeout(void **state)
{
    (void)state;
    kit_latch_t latch;
    assert_ok(kit_latch_init(&latch, 1));
    int64_t start = kit_now_ns();
    assert_err(kit_latch_wait(&latch, 120), ETIMEDOUT);
    assert_true(kit_elapsed_ms(start) >= 120.0); /* a lower bound, never an upper one */
    kit_latch_count_down(&latch);
    assert_ok(kit_latch_wait(&latch, 0));
    kit_latch_destroy(&latch);
}

struct gate_job {
    kit_gate_t *gate;
    kit_latch_t *passed;
};

static void *pass_gate(void *raw)
{
    struct gate_job *job = raw;
    kit_gate_wait(job->gate);
    kit_latch_count_down(job->passed);
    return NULL;
}

static void test_kit_gate_holds_threads_until_opened(void **state)
{
    (void)state;
    kit_gate_t gate;
    kit_latch_t passed;
    assert_ok(kit_gate_init(&gate));
    assert_ok(kit_latch_init(&passed, 3));
    struct gate_job job = { &gate, &passed };
    kit_worker_t workers[3];
    for (int i = 0; i < 3; i++)
        kit_worker_start(&workers[i], "gated", pass_gate, &job);
    assert_ok(kit_gate_await_arrivals(&gate, 3, KIT_HANG_MS));
    assert_err(kit_latch_wait(&passed, 100), ETIMEDOUT); /* nobody passes a closed gate */
    kit_gate_open(&gate);
    assert_ok(kit_latch_wait(&passed, KIT_HANG_MS));
    for (int i = 0; i < 3; i++)
        kit_worker_must_finish(&workers[i], "gated thread");
    kit_latch_destroy(&passed);
    kit_gate_destroy(&gate);
}

/* The thread's own name, as it sees it, into the buffer it was given. */
static void *copy_own_name(void *raw)
{
    snprintf(raw, KIT_THREAD_NAME_MAX, "%s", kit_thread_name());
    return NULL;
}

/* Name of the thread kit_thread_start_numbered starts as role and index; joined. */
static void name_of_numbered(const char *role, size_t index, char *name)
{
    pthread_t thread;
    assert_ok(kit_thread_start_numbered(&thread, role, index, copy_own_name, name));
    assert_ok(pthread_join(thread, NULL));
}

/* "<role>-<index>", cut to KIT_THREAD_NAME_MAX - 1 characters as snprintf cuts it. */
static void test_kit_thread_start_numbered_names_role_and_index(void **state)
{
    (void)state;
    char name[KIT_THREAD_NAME_MAX];
    name_of_numbered("consumer", 12, name);
    assert_string_equal(name, "consumer-12");
    name_of_numbered("worker", 0, name);
    assert_string_equal(name, "worker-0");
    name_of_numbered("a-role-of-twenty-eight-chars", 12345, name);
    assert_string_equal(name, "a-role-of-twenty-eight-chars-12");
    pthread_t thread;
    assert_err(kit_thread_start_numbered(&thread, NULL, 1, copy_own_name, name), EINVAL);
}

static void *record_spans(void *raw)
{
    (void)raw;
    for (int i = 0; i < 50; i++) {
        kit_trace_begin("test", "outer %d", i);
        kit_trace_begin("test", "inner");
        kit_trace_instant("test", "tick %d", i);
        kit_trace_end("test");
        kit_trace_end("test");
    }
    return NULL;
}

/* Every thread's spans nest properly and time never runs backwards. */
static void test_kit_trace_records_balanced_ordered_events(void **state)
{
    (void)state;
    assert_ok(kit_trace_start());
    kit_test_run_group(4, "tracer", record_spans, NULL, 0);
    kit_trace_stop();
    kit_trace_event_t *events;
    size_t count;
    assert_ok(kit_trace_snapshot(&events, &count));
    assert_int_equal(count, 4 * 50 * 5);
    int depth[16] = { 0 };
    for (size_t i = 0; i < count; i++) {
        assert_true(events[i].lane < 16);
        if (i > 0)
            assert_true(events[i].ts_ns >= events[i - 1].ts_ns);
        depth[events[i].lane] += events[i].phase == 'B' ? 1 : events[i].phase == 'E' ? -1 : 0;
        assert_true(depth[events[i].lane] >= 0 && depth[events[i].lane] <= 2);
    }
    for (unsigned lane = 0; lane < kit_trace_lane_count(); lane++)
        assert_int_equal(depth[lane], 0);
    free(events);
    kit_trace_reset();
}

static void test_kit_trace_is_silent_when_off(void **state)
{
    (void)state;
    kit_trace_reset();
    kit_trace_begin("test", "nobody records this");
    kit_trace_end("test");
    kit_trace_event_t *events;
    size_t count;
    assert_ok(kit_trace_snapshot(&events, &count));
    assert_int_equal(count, 0);
    assert_null(events);
}

static void test_kit_trace_writes_json(void **state)
{
    (void)state;
    char path[] = "/tmp/kit-trace-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_ok(kit_trace_start());
    kit_trace_begin("test", "a \"quoted\" state");
    kit_trace_end("test");
    assert_ok(kit_trace_write_json(path));
    kit_trace_reset();
    FILE *in = fdopen(fd, "r");
    char text[4096] = "";
    size_t n = fread(text, 1, sizeof text - 1, in);
    fclose(in);
    unlink(path);
    text[n] = '\0';
    assert_non_null(strstr(text, "\"traceEvents\""));
    assert_non_null(strstr(text, "a \\\"quoted\\\" state")); /* escaped, so the JSON stays valid */
    assert_non_null(strstr(text, "\"thread_name\""));
}

/* The harness counts what the code under test allocates through any libc
 * allocator it may call, so a create that copies a name with strdup and a
 * destroy that frees it balance out, and a failed allocation is injected in
 * all of them alike. */
static char *volatile refused;

/* Each block is kept in a volatile slot: a compiler may drop an allocation
 * whose pointer never leaves the function (clang does), and then there would
 * be nothing for the harness to count. */
static void *volatile blocks[5];

static void test_kit_counts_every_libc_allocator(void **state)
{
    (void)state;
    long before = kit_live_allocations();
    void *memaligned = NULL;
    char *printed = NULL;
    blocks[0] = strdup("pool");
    blocks[1] = strndup("pool-name", 4);
    blocks[2] = aligned_alloc(16, 32);
    assert_int_equal(posix_memalign(&memaligned, 16, 32), 0);
    blocks[3] = memaligned;
    assert_int_equal(asprintf(&printed, "pool-%d", 7), 6); /* freeing it must not cancel a leaked block */
    blocks[4] = printed;
    for (int i = 0; i < 5; i++)
        assert_non_null(blocks[i]);
    assert_string_equal((char *)blocks[1], "pool");
    assert_string_equal((char *)blocks[4], "pool-7");
    if (kit_live_allocations() != before + 5)
        fail_msg("five blocks from strdup, strndup, aligned_alloc, posix_memalign and asprintf; the harness "
                 "counted %ld", kit_live_allocations() - before);
    for (int i = 0; i < 5; i++)
        free(blocks[i]);
    if (kit_live_allocations() != before)
        fail_msg("after freeing them all the harness still counts %ld block(s)", kit_live_allocations() - before);
    kit_fail_allocation(1);
    refused = strdup("pool"); /* kept in a volatile: the compiler may not assume it succeeds */
    kit_fail_allocation(0);
    if (refused != NULL)
        fail_msg("the first allocation was set to fail, yet strdup returned a copy");
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_kit_deadline_rejects_negative_and_null),
    cmocka_unit_test(test_kit_deadline_is_in_the_future_and_clamped),
    cmocka_unit_test(test_kit_timed_wait_waits_at_least_its_timeout),
    cmocka_unit_test(test_kit_gate_holds_threads_until_opened),
    cmocka_unit_test(test_kit_thread_start_numbered_names_role_and_index),
    cmocka_unit_test(test_kit_trace_records_balanced_ordered_events),
    cmocka_unit_test(test_kit_trace_is_silent_when_off),
    cmocka_unit_test(test_kit_trace_writes_json),
    cmocka_unit_test(test_kit_counts_every_libc_allocator),
};

KIT_TEST_MAIN(tests)
