/**
 * @file test_memaccess.c
 * @brief Tests that the copies the C library makes for the code under test
 *        are accesses the explorer sees: a memcpy, a memset, a memmove, a
 *        string function or an snprintf made after the unlock is a data race found on a
 *        schedule, with both lines; the same calls under the lock never are;
 *        so are the library's parsing, searching and sorting (sscanf, its
 *        stores too, strtok and its kin, strspn and its kin, memmem, strtol
 *        and its kin, atoi and its kin, qsort, bsearch, a printf with
 *        numbered arguments); and a memcpy out of a freed block is a use
 *        after free. And atomics:
 *        an atomic read of a count another thread writes plainly is a data
 *        race (C11's, which ThreadSanitizer reports too); two atomics never
 *        race; a plain write published by a release store and read after an
 *        acquire load that saw it is ordered. And a write one byte past a
 *        block's end, on a schedule, is a heap overrun at its line. And a
 *        replay token of another build - its racing places name no access
 *        of this program - is found out, and the test's own search finds
 *        the failure again, with this build's token.
 *
 * The code under test is memaccess_code.c, built as a submission's code is.
 * Each search uses fixed strategies and seeds: the same result every run.
 * Under a sanitizer (make tsan, make asan) the sanitizer's runtime watches
 * these calls itself, and the races here would be its reports: the racy
 * searches are left out there.
 */
#define _GNU_SOURCE
#include "kit_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kit_sched.h"
#include "memaccess_code.h"

/* ---- Bodies under exploration ------------------------------------------------------- */

/* What the test thread does to the box while another thread writes it. */
enum copy { COPY_OUT, CLEAR, SHIFT, NAME_LENGTH, PRINT_OUT };

struct copy_case {
    enum copy copy;
    bool locked;     /* the copy under the box's lock (correct) or after it (a race) */
    const char *how; /* the call, for a failure's message */
};

struct writer {
    box_t *box;
    enum copy copy;
};

/* The other side, always under the lock: a new name for a string copy, new data for the rest. */
static void *write_box(void *raw)
{
    const struct writer *w = raw;
    static const char text[BOX_DATA] = "forty-seven bytes of text and a terminating zero";
    if (w->copy == NAME_LENGTH)
        box_rename(w->box, "renamed");
    else
        box_fill(w->box, text, sizeof text);
    return NULL;
}

static void make_copy(box_t *b, enum copy copy, bool locked)
{
    char out[BOX_DATA];
    switch (copy) {
    case COPY_OUT:
        box_copy_out(b, out, locked);
        break;
    case CLEAR:
        box_clear(b, locked);
        break;
    case SHIFT:
        box_shift(b, locked);
        break;
    case NAME_LENGTH:
        kit_explore_check(box_name_length(b, locked) > 0, "the box has no name");
        break;
    case PRINT_OUT:
        box_print_out(b, out, locked);
        break;
    }
}

static void copy_beside_a_writer(void *ctx)
{
    const struct copy_case *c = ctx;
    box_t *b = box_create();
    kit_explore_check(b != NULL, "out of memory");
    struct writer w = { b, c->copy };
    pthread_t writer;
    explore_ok(pthread_create(&writer, NULL, write_box, &w));
    make_copy(b, c->copy, c->locked);
    explore_ok(pthread_join(writer, NULL));
    box_destroy(b);
}

/* One of box_use()'s calls of the C library, beside a thread writing what it
 * reads (or writes) under the lock: after the unlock (a race) or under it. */
struct use_case {
    enum box_use use;
    bool locked;
};

static void use_beside_a_writer(void *ctx)
{
    const struct use_case *c = ctx;
    box_t *b = box_create();
    kit_explore_check(b != NULL, "out of memory");
    struct writer w = { b, box_use_of_data(c->use) ? COPY_OUT : NAME_LENGTH };
    pthread_t writer;
    explore_ok(pthread_create(&writer, NULL, write_box, &w));
    (void)box_use(b, c->use, c->locked);
    explore_ok(pthread_join(writer, NULL));
    box_destroy(b);
}

/* sscanf into the box's name after the unlock, beside a rename, with a
 * conversion that never matches: it stores nothing, and is no race. */
static void unmatched_scan_beside_a_writer(void *ctx)
{
    (void)ctx;
    box_t *b = box_create();
    kit_explore_check(b != NULL, "out of memory");
    struct writer w = { b, NAME_LENGTH };
    pthread_t writer;
    explore_ok(pthread_create(&writer, NULL, write_box, &w));
    kit_explore_check(box_scan_unmatched(b) == 0, "sscanf matched a digit in \"none\"");
    explore_ok(pthread_join(writer, NULL));
    box_destroy(b);
}

static void *free_block(void *raw)
{
    free(raw);
    return NULL;
}

/* Copies out of a block a joined thread freed: a use after free, on every schedule. */
static void copy_after_free(void *ctx)
{
    (void)ctx;
    char *block = calloc(1, 32), out[32];
    kit_explore_check(block != NULL, "out of memory");
    pthread_t freer;
    explore_ok(pthread_create(&freer, NULL, free_block, block));
    explore_ok(pthread_join(freer, NULL));
    copy_bytes(out, block, sizeof out);
}

/* The count's two sides, on two threads. */
struct count_case {
    long count, data, flag;
    pthread_mutex_t lock;
    bool peek_atomically; /* the test thread reads with an atomic load (else: both sides add atomically) */
};

static void *count_other_side(void *raw)
{
    struct count_case *c = raw;
    if (c->peek_atomically)
        count_under_lock(&c->count, &c->lock);
    else
        count_atomically(&c->count);
    return NULL;
}

static void count_beside_another(void *ctx)
{
    struct count_case *c = ctx;
    c->count = 0;
    explore_ok(pthread_mutex_init(&c->lock, NULL));
    pthread_t other;
    explore_ok(pthread_create(&other, NULL, count_other_side, c));
    if (c->peek_atomically)
        (void)count_peek(&c->count);
    else
        count_atomically(&c->count);
    explore_ok(pthread_join(other, NULL));
    explore_ok(pthread_mutex_destroy(&c->lock));
}

static void *publish_side(void *raw)
{
    struct count_case *c = raw;
    publish(&c->data, &c->flag);
    return NULL;
}

static void publish_beside_consume(void *ctx)
{
    struct count_case *c = ctx;
    c->data = c->flag = 0;
    pthread_t publisher;
    explore_ok(pthread_create(&publisher, NULL, publish_side, c));
    long seen = consume(&c->data, &c->flag);
    kit_explore_check(seen == -1 || seen == 42, "consume saw %ld", seen);
    explore_ok(pthread_join(publisher, NULL));
}

/* Writes the byte at ctx (24: one past the end; 23: the last) of a block of 24. */
static void write_into_a_block(void *ctx)
{
    size_t at = *(const size_t *)ctx;
    char *block = malloc(24);
    kit_explore_check(block != NULL, "out of memory");
    write_byte(block, at);
    free(block);
}

/* ---- What the explorer says ------------------------------------------------------------- */

/* kit_sched_print_race()'s words, caught from standard error. */
static void race_report(char *out, size_t size)
{
    FILE *caught = tmpfile();
    assert_non_null(caught);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    assert_true(saved >= 0);
    assert_true(dup2(fileno(caught), STDERR_FILENO) >= 0);
    kit_sched_print_race();
    fflush(stderr);
    assert_true(dup2(saved, STDERR_FILENO) >= 0);
    close(saved);
    rewind(caught);
    size_t n = fread(out, 1, size - 1, caught);
    out[n] = '\0';
    fclose(caught);
}

/* The report names @p thread's access at memaccess_code.c:@p line. */
static void must_name(const char *report, const char *how, const char *thread, int line)
{
    char place[96];
    snprintf(place, sizeof place, "by %s at memaccess_code.c:%d", thread, line);
    if (strstr(report, place) == NULL)
        fail_msg("%s: the race report does not say \"%s\"; it said:\n%s", how, place, report);
}

static int copy_line(enum copy copy)
{
    switch (copy) {
    case COPY_OUT:
        return box_copy_out_line;
    case CLEAR:
        return box_clear_line;
    case SHIFT:
        return box_shift_line;
    case NAME_LENGTH:
        return box_name_length_line;
    case PRINT_OUT:
        return box_print_out_line;
    }
    return 0;
}

/* Two threads add one to a count no lock guards: a data race, found on the
 * first schedule; its places are switch points from then on, and a later
 * schedule that switches between one side's read and write loses an update. */
static void *add_plainly(void *raw)
{
    count_plainly(raw);
    return NULL;
}

static void count_on_two_threads(void *ctx)
{
    (void)ctx;
    long *count = calloc(1, sizeof *count);
    kit_explore_check(count != NULL, "out of memory");
    pthread_t other;
    explore_ok(pthread_create(&other, NULL, add_plainly, count));
    count_plainly(count);
    explore_ok(pthread_join(other, NULL));
    long counted = *count;
    free(count);
    kit_explore_check(counted == 2, "two threads added one each, and the count is %ld: an update was lost", counted);
}

/* ---- Tests ------------------------------------------------------------------------- */

static const struct copy_case late_copies[] = {
    { COPY_OUT, false, "memcpy out of the box after the unlock" },
    { CLEAR, false, "memset of the box after the unlock" },
    { SHIFT, false, "memmove in the box after the unlock" },
    { NAME_LENGTH, false, "strlen of the box's name after the unlock" },
    { PRINT_OUT, false, "snprintf(\"%.*s\") of the box after the unlock" },
};

static void test_memaccess_late_library_copy_is_a_race_with_both_lines(void **state)
{
    (void)state;
    if (KIT_SANITIZED)
        return;
    static kit_explore_result_t result;
    static char report[8192];
    for (size_t i = 0; i < sizeof late_copies / sizeof late_copies[0]; i++) {
        const struct copy_case *c = &late_copies[i];
        kit_sched_take_race(); /* (none yet: each case starts from none) */
        kit_explore_t options = { .strategy = "random:3 pct:3:2", .schedules = 100, .quiet = true };
        if (!kit_explore_search(__func__, &options, copy_beside_a_writer, (void *)c, &result))
            fail_msg("%s: a schedule failed: %s", c->how, result.message);
        race_report(report, sizeof report);
        if (!kit_sched_take_race() || strstr(report, "DATA RACE") == NULL)
            fail_msg("%s: no data race was seen on %ld schedules", c->how, result.schedules);
        must_name(report, c->how, "test", copy_line(c->copy));
        must_name(report, c->how, "thread-1", c->copy == NAME_LENGTH ? box_rename_line : box_fill_line);
    }
}

static void test_memaccess_library_copy_under_the_lock_is_never_a_race(void **state)
{
    (void)state;
    static kit_explore_result_t result;
    static const struct copy_case locked[] = {
        { COPY_OUT, true, "memcpy out of the box under the lock" },
        { CLEAR, true, "memset of the box under the lock" },
        { SHIFT, true, "memmove in the box under the lock" },
        { NAME_LENGTH, true, "strlen of the box's name under the lock" },
        { PRINT_OUT, true, "snprintf(\"%.*s\") of the box under the lock" },
    };
    for (size_t i = 0; i < sizeof locked / sizeof locked[0]; i++) {
        kit_sched_take_race();
        kit_explore_t every = { .strategy = "dfs:3", .schedules = 100000, .quiet = true };
        if (!kit_explore_search(__func__, &every, copy_beside_a_writer, (void *)&locked[i], &result))
            fail_msg("%s: a schedule failed: %s", locked[i].how, result.message);
        kit_explore_t walks = { .strategy = "random:1 pct:1:3", .schedules = 200, .quiet = true };
        if (!kit_explore_search(__func__, &walks, copy_beside_a_writer, (void *)&locked[i], &result))
            fail_msg("%s: a schedule failed: %s", locked[i].how, result.message);
        if (kit_sched_take_race())
            fail_msg("%s: reported as a data race, though the lock orders it", locked[i].how);
    }
}

static void test_memaccess_late_library_parse_is_a_race_with_both_lines(void **state)
{
    (void)state;
    if (KIT_SANITIZED)
        return;
    static kit_explore_result_t result;
    static char report[8192], how[128];
    for (int use = 0; use < USE_COUNT; use++) {
        struct use_case c = { (enum box_use)use, false };
        snprintf(how, sizeof how, "%s after the unlock", box_use_words[use]);
        kit_sched_take_race(); /* (none yet: each case starts from none) */
        kit_explore_t options = { .strategy = "random:3 pct:3:2", .schedules = 100, .quiet = true };
        if (!kit_explore_search(__func__, &options, use_beside_a_writer, &c, &result))
            fail_msg("%s: a schedule failed: %s", how, result.message);
        race_report(report, sizeof report);
        if (!kit_sched_take_race() || strstr(report, "DATA RACE") == NULL)
            fail_msg("%s: no data race was seen on %ld schedules", how, result.schedules);
        must_name(report, how, "test", box_use_line[use]); /* (atoi's too: not the header it was inlined from) */
        must_name(report, how, "thread-1", box_use_of_data(c.use) ? box_fill_line : box_rename_line);
    }
}

static void test_memaccess_library_parse_under_the_lock_is_never_a_race(void **state)
{
    (void)state;
    static kit_explore_result_t result;
    for (int use = 0; use < USE_COUNT; use++) {
        struct use_case c = { (enum box_use)use, true };
        kit_sched_take_race();
        kit_explore_t every = { .strategy = "dfs:3", .schedules = 100000, .quiet = true };
        if (!kit_explore_search(__func__, &every, use_beside_a_writer, &c, &result))
            fail_msg("%s under the lock: a schedule failed: %s", box_use_words[use], result.message);
        kit_explore_t walks = { .strategy = "random:1 pct:1:3", .schedules = 200, .quiet = true };
        if (!kit_explore_search(__func__, &walks, use_beside_a_writer, &c, &result))
            fail_msg("%s under the lock: a schedule failed: %s", box_use_words[use], result.message);
        if (kit_sched_take_race())
            fail_msg("%s under the lock: reported as a data race, though the lock orders it", box_use_words[use]);
    }
    kit_explore_t every = { .strategy = "dfs:3", .schedules = 100000, .quiet = true };
    if (!kit_explore_search(__func__, &every, unmatched_scan_beside_a_writer, NULL, &result))
        fail_msg("an sscanf that matches nothing: a schedule failed: %s", result.message);
    if (kit_sched_take_race())
        fail_msg("an sscanf whose conversion matched nothing was reported as storing into its argument");
}

static void test_memaccess_library_copy_of_freed_memory_is_a_use_after_free(void **state)
{
    (void)state;
    if (KIT_SANITIZED) /* the sanitizer's runtime has its own words for this */
        return;
    static kit_explore_result_t result;
    kit_explore_t options = { .strategy = "random:5", .schedules = 20, .quiet = true };
    assert_false(kit_explore_search(__func__, &options, copy_after_free, NULL, &result));
    char words[96];
    snprintf(words, sizeof words, "USE AFTER FREE: test reads memory at memaccess_code.c:%d", copy_bytes_line);
    if (strstr(result.message, words) == NULL || strstr(result.message, "by thread-1 at test_memaccess.c:") == NULL)
        fail_msg("the report does not say \"%s\", freed by thread-1 at test_memaccess.c: %s", words, result.message);
}

static void test_memaccess_atomic_read_of_a_plain_write_is_a_race(void **state)
{
    (void)state;
    if (KIT_SANITIZED)
        return;
    static kit_explore_result_t result;
    static char report[8192];
    static struct count_case c = { .peek_atomically = true };
    kit_sched_take_race();
    kit_explore_t options = { .strategy = "random:3 pct:3:2", .schedules = 100, .quiet = true };
    if (!kit_explore_search(__func__, &options, count_beside_another, &c, &result))
        fail_msg("a schedule failed: %s", result.message);
    race_report(report, sizeof report);
    if (!kit_sched_take_race() || strstr(report, "DATA RACE") == NULL)
        fail_msg("a relaxed atomic load of a count another thread writes plainly was no data race on %ld schedules",
                 result.schedules);
    must_name(report, "an atomic load beside a plain write", "test", count_peek_line);
    must_name(report, "an atomic load beside a plain write", "thread-1", count_under_lock_line);
}

static void test_memaccess_atomics_alone_and_published_writes_are_never_races(void **state)
{
    (void)state;
    static kit_explore_result_t result;
    static struct count_case both_atomic = { .peek_atomically = false }, published;
    kit_sched_take_race();
    kit_explore_t every = { .strategy = "dfs:3", .schedules = 100000, .quiet = true };
    if (!kit_explore_search(__func__, &every, count_beside_another, &both_atomic, &result))
        fail_msg("two atomic adds: a schedule failed: %s", result.message);
    if (kit_sched_take_race())
        fail_msg("two relaxed atomic adds of one count were reported as a data race; atomics never race each other");
    if (!kit_explore_search(__func__, &every, publish_beside_consume, &published, &result))
        fail_msg("publish and consume: a schedule failed: %s", result.message);
    if (kit_sched_take_race())
        fail_msg("a plain write read after an acquire load saw its release store was reported as a data race");
}

static void test_memaccess_write_past_a_block_is_a_heap_overrun(void **state)
{
    (void)state;
    if (KIT_SANITIZED) /* the sanitizer's runtime has its own words for this */
        return;
    static kit_explore_result_t result;
    static const size_t last = 23, past = 24;
    kit_explore_t options = { .strategy = "random:1", .schedules = 5, .quiet = true };
    if (!kit_explore_search(__func__, &options, write_into_a_block, (void *)&last, &result))
        fail_msg("a write of a block's last byte failed its schedule: %s", result.message);
    assert_false(kit_explore_search(__func__, &options, write_into_a_block, (void *)&past, &result));
    char words[128];
    snprintf(words, sizeof words, "HEAP OVERRUN: test writes memory at memaccess_code.c:%d", write_byte_line);
    if (strstr(result.message, words) == NULL ||
        strstr(result.message, "0 bytes past the end of a block of 24 allocated at test_memaccess.c:") == NULL)
        fail_msg("the report does not say \"%s\", 0 bytes past a block of 24 allocated at test_memaccess.c: %s",
                 words, result.message);
}

/* A search with KIT_SCHED=@p strategies in the environment, as make explore REPLAY=token runs it. */
static bool search_under(const char *strategies, const kit_explore_t *options, kit_explore_result_t *result)
{
    assert_int_equal(setenv("KIT_SCHED", strategies, 1), 0);
    bool passed = kit_explore_search("count_on_two_threads", options, count_on_two_threads, NULL, result);
    assert_int_equal(unsetenv("KIT_SCHED"), 0);
    return passed;
}

/* A replay of @p token is found out as another build's, the search after it
 * fails with @p message, and the token it prints replays that failure. */
static void must_find_again(const char *token, const kit_explore_t *options, const char *message)
{
    static kit_explore_result_t again, replayed;
    static char replay[sizeof again.token + 16];
    assert_false(search_under(token, options, &again));
    assert_true(again.searched_again);
    assert_string_equal(again.message, message);
    snprintf(replay, sizeof replay, "replay:%s", again.token);
    assert_false(search_under(replay, options, &replayed));
    assert_false(replayed.searched_again);
    assert_int_equal(replayed.schedules, 1);
    assert_string_equal(replayed.message, message);
}

static void test_memaccess_token_of_another_build_finds_the_failure_again(void **state)
{
    (void)state;
    if (KIT_SANITIZED)
        return;
    static kit_explore_result_t found, again;
    static char replay[sizeof found.token + 16];
    kit_explore_t options = { .strategy = "random:5", .schedules = 200, .quiet = true };
    if (kit_explore_search(__func__, &options, count_on_two_threads, NULL, &found))
        fail_msg("no schedule of 200 lost an update of a count no lock guards");
    char *places = strpbrk(found.token, "@~");
    if (places == NULL || strchr(places, '+') == NULL)
        fail_msg("the lost update's token names fewer than two racing places: %s", found.token);
    /* This build's token replays its one schedule. */
    snprintf(replay, sizeof replay, "replay:%s", found.token);
    assert_false(search_under(replay, &options, &again));
    assert_int_equal(again.schedules, 1);
    assert_false(again.searched_again);
    assert_string_equal(again.message, found.message);
    /* The same choices with places of another build (here, a few bytes past
     * the code's start: no access is made there) are found out, and the
     * test's own search finds the failure again, with a token that replays
     * it. (Not the first search's token, letter for letter: this process
     * knows the racing places since, and the search makes them switch
     * points from its first schedule; make explore runs a test alone.) */
    snprintf(replay, sizeof replay, "replay:%.*s%c1+2+3", (int)(places - found.token), found.token, places[0]);
    must_find_again(replay, &options, found.message);
    /* Choices this test's schedule does not offer, too (alternative 51 at the first choice). */
    must_find_again("replay:z5", &options, found.message);
    kit_sched_take_race();
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_memaccess_late_library_copy_is_a_race_with_both_lines),
    cmocka_unit_test(test_memaccess_library_copy_under_the_lock_is_never_a_race),
    cmocka_unit_test(test_memaccess_late_library_parse_is_a_race_with_both_lines),
    cmocka_unit_test(test_memaccess_library_parse_under_the_lock_is_never_a_race),
    cmocka_unit_test(test_memaccess_library_copy_of_freed_memory_is_a_use_after_free),
    cmocka_unit_test(test_memaccess_atomic_read_of_a_plain_write_is_a_race),
    cmocka_unit_test(test_memaccess_atomics_alone_and_published_writes_are_never_races),
    cmocka_unit_test(test_memaccess_write_past_a_block_is_a_heap_overrun),
    cmocka_unit_test(test_memaccess_token_of_another_build_finds_the_failure_again),
};

KIT_TEST_MAIN(tests)
