/**
 * @file test_kit_map.c
 * @brief Tests of lib/runtime/kit_map: many keys, collisions, growth, removal, running out of memory.
 *
 * Part of the kit's own tests (chapter `kit` in the rubric, 0 points).
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_test.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_map.h"

static kit_map_t *make_map(void)
{
    kit_map_t *map = NULL;
    assert_ok(kit_map_create(&map));
    assert_non_null(map);
    return map;
}

/* Values are small integers disguised as pointers: 0 is never used, so a
 * NULL from kit_map_get always means "absent". */
static void *value_for(long i)
{
    return (void *)(intptr_t)(i + 1);
}

static void key_for(long i, char *key, size_t size)
{
    snprintf(key, size, "key-%ld", i);
}

static void test_kit_map_bad_arguments(void **state)
{
    (void)state;
    kit_map_t *map = make_map();
    assert_err(kit_map_create(NULL), EINVAL);
    assert_err(kit_map_insert(NULL, "a", NULL), EINVAL);
    assert_err(kit_map_insert(map, NULL, NULL), EINVAL);
    assert_err(kit_map_remove(map, NULL, NULL), EINVAL);
    assert_err(kit_map_remove(map, "absent", NULL), ENOENT);
    assert_null(kit_map_get(NULL, "a"));
    assert_null(kit_map_get(map, NULL));
    assert_int_equal(kit_map_count(NULL), 0);
    kit_map_destroy(NULL);
    kit_map_destroy(map);
}

static void test_kit_map_insert_copies_keys_and_refuses_existing_ones(void **state)
{
    (void)state;
    kit_map_t *map = make_map();
    char key[] = "alpha";
    assert_ok(kit_map_insert(map, key, value_for(1)));
    key[0] = 'X'; /* the map kept its own copy */
    assert_ptr_equal(kit_map_get(map, "alpha"), value_for(1));
    assert_null(kit_map_get(map, "Xlpha"));
    assert_err(kit_map_insert(map, "alpha", value_for(3)), EEXIST);
    assert_ptr_equal(kit_map_get(map, "alpha"), value_for(1));
    assert_ok(kit_map_insert(map, "", NULL)); /* the empty key and a NULL value are fine */
    assert_err(kit_map_insert(map, "", value_for(5)), EEXIST);
    assert_ok(kit_map_insert(map, "alph", value_for(4))); /* a prefix is another key */
    assert_int_equal(kit_map_count(map), 3);
    kit_map_destroy(map);
}

/* Thousands of keys land in a few buckets at first: chains form (collisions),
 * the map grows through many doublings, and every key stays findable. */
static void test_kit_map_many_keys_collide_and_grow(void **state)
{
    (void)state;
    enum { KEYS = 5000 };
    kit_map_t *map = make_map();
    char key[32];
    for (long i = 0; i < KEYS; i++) {
        key_for(i, key, sizeof key);
        assert_ok(kit_map_insert(map, key, value_for(i)));
    }
    assert_int_equal(kit_map_count(map), KEYS);
    for (long i = 0; i < KEYS; i++) {
        key_for(i, key, sizeof key);
        assert_ptr_equal(kit_map_get(map, key), value_for(i));
    }
    assert_null(kit_map_get(map, "key-5000"));
    kit_map_destroy(map);
}

/* Removing from the middle of chains keeps the rest reachable, and a removed
 * key can come back with a new value. */
static void test_kit_map_remove_then_reinsert(void **state)
{
    (void)state;
    enum { KEYS = 600 };
    kit_map_t *map = make_map();
    char key[32];
    for (long i = 0; i < KEYS; i++) {
        key_for(i, key, sizeof key);
        assert_ok(kit_map_insert(map, key, value_for(i)));
    }
    for (long i = 0; i < KEYS; i += 3) {
        void *value = NULL;
        key_for(i, key, sizeof key);
        assert_ok(kit_map_remove(map, key, &value));
        assert_ptr_equal(value, value_for(i));
        assert_err(kit_map_remove(map, key, &value), ENOENT);
    }
    assert_int_equal(kit_map_count(map), KEYS - KEYS / 3);
    for (long i = 0; i < KEYS; i++) {
        key_for(i, key, sizeof key);
        assert_int_equal(kit_map_get(map, key) != NULL, i % 3 != 0);
    }
    for (long i = 0; i < KEYS; i += 3) {
        key_for(i, key, sizeof key);
        assert_ok(kit_map_insert(map, key, value_for(i + 1000)));
    }
    assert_int_equal(kit_map_count(map), KEYS);
    for (long i = 0; i < KEYS; i++) {
        key_for(i, key, sizeof key);
        assert_ptr_equal(kit_map_get(map, key), value_for(i % 3 == 0 ? i + 1000 : i));
    }
    kit_map_destroy(map);
}

/* Fail one allocation of an insertion: mostly the second one - the bigger
 * bucket array, when the map is crowded enough to grow: the key must still be
 * inserted, into the old buckets - and every fifth time the first one, the
 * entry (ENOMEM, map unchanged; the retry then works). */
static void test_kit_map_allocation_failure_leaves_map_consistent(void **state)
{
    (void)state;
    kit_map_t *map = make_map();
    char key[32];
    long i = 0, refused = 0;
    for (; i < 200; i++) {
        key_for(i, key, sizeof key);
        size_t count = kit_map_count(map);
        kit_fail_allocation(i % 5 == 0 ? 1 : 2); /* the entry, or the bigger bucket array */
        int err = kit_map_insert(map, key, value_for(i));
        kit_fail_allocation(0);
        if (err == ENOMEM) {
            refused++;
            assert_int_equal(kit_map_count(map), count);
            assert_null(kit_map_get(map, key));
            assert_ok(kit_map_insert(map, key, value_for(i))); /* works once memory is back */
        } else {
            assert_ok(err); /* a failed growth is no reason to refuse the key */
        }
        assert_int_equal(kit_map_count(map), (size_t)i + 1);
    }
    assert_int_equal(refused, 40);
    kit_fail_allocation(1);
    assert_err(kit_map_insert(map, "one more", value_for(1)), ENOMEM);
    kit_fail_allocation(0);
    for (long j = 0; j < i; j++) {
        key_for(j, key, sizeof key);
        assert_ptr_equal(kit_map_get(map, key), value_for(j));
    }
    long before = kit_live_allocations();
    kit_map_destroy(map);
    assert_true(kit_live_allocations() == before - i - 2); /* entries, buckets and the map itself */
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_kit_map_bad_arguments),
    cmocka_unit_test(test_kit_map_insert_copies_keys_and_refuses_existing_ones),
    cmocka_unit_test(test_kit_map_many_keys_collide_and_grow),
    cmocka_unit_test(test_kit_map_remove_then_reinsert),
    cmocka_unit_test(test_kit_map_allocation_failure_leaves_map_consistent),
};

KIT_TEST_MAIN(tests)
