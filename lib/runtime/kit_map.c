/**
 * @file kit_map.c
 * @brief Separate chaining over a power-of-two bucket array, FNV-1a hashing.
 *
 * Each entry is one allocation holding its chain link, the key's full hash
 * (compared before the string, and reused when the array grows) and the key
 * itself. An insertion allocates its entry *before* touching the map, so
 * running out of memory can never leave it half-changed.
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_map.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { INITIAL_BUCKETS = 8 };

struct entry {
    struct entry *next; /* the rest of this bucket's chain */
    uint64_t hash;      /* hash_of(key) */
    void *value;
    char key[];         /* the map's own copy */
};

struct kit_map {
    struct entry **buckets; /* bucket_count chains; an entry lives in buckets[hash & (bucket_count - 1)] */
    size_t bucket_count;    /* a power of two */
    size_t count;           /* entries in all chains */
};

/* FNV-1a: simple, and mixes every byte of short keys well enough for chaining.
 * (A key is a string the caller does not change while the call lasts: its
 * bytes, read one by one here, are no shared state the explorer need
 * follow when the tests link this file instrumented - Makefile,
 * WATCHED_LIB_SRCS.) */
__attribute__((no_sanitize("thread"))) static uint64_t hash_of(const char *key)
{
    uint64_t hash = 0xcbf29ce484222325ULL;
    for (const unsigned char *c = (const unsigned char *)key; *c; c++)
        hash = (hash ^ *c) * 0x100000001b3ULL;
    return hash;
}

static struct entry **bucket_of(const kit_map_t *map, uint64_t hash)
{
    return &map->buckets[hash & (map->bucket_count - 1)];
}

/* The link that points at key's entry (the bucket head or a `next`), or NULL. */
static struct entry **find_link(const kit_map_t *map, const char *key, uint64_t hash)
{
    for (struct entry **link = bucket_of(map, hash); *link; link = &(*link)->next)
        if ((*link)->hash == hash && strcmp((*link)->key, key) == 0)
            return link;
    return NULL;
}

int kit_map_create(kit_map_t **out)
{
    if (out == NULL)
        return EINVAL;
    *out = NULL;
    kit_map_t *map = malloc(sizeof *map);
    struct entry **buckets = calloc(INITIAL_BUCKETS, sizeof *buckets);
    if (map == NULL || buckets == NULL) {
        free(map);
        free(buckets);
        return ENOMEM;
    }
    *map = (kit_map_t){ buckets, INITIAL_BUCKETS, 0 };
    *out = map;
    return 0;
}

void kit_map_destroy(kit_map_t *map)
{
    if (map == NULL)
        return;
    for (size_t i = 0; i < map->bucket_count; i++)
        while (map->buckets[i]) {
            struct entry *e = map->buckets[i];
            map->buckets[i] = e->next;
            free(e);
        }
    free(map->buckets);
    free(map);
}

void *kit_map_get(const kit_map_t *map, const char *key)
{
    if (map == NULL || key == NULL)
        return NULL;
    struct entry **link = find_link(map, key, hash_of(key));
    return link ? (*link)->value : NULL;
}

/* Doubles the bucket array when the load would pass 3/4. A failed allocation
 * is not an error: the old array keeps working, with longer chains. */
static void grow_if_crowded(kit_map_t *map)
{
    if (map->count + 1 <= map->bucket_count / 4 * 3 || map->bucket_count > SIZE_MAX / 2 / sizeof(struct entry *))
        return;
    size_t bigger = map->bucket_count * 2;
    struct entry **buckets = calloc(bigger, sizeof *buckets);
    if (buckets == NULL)
        return;
    for (size_t i = 0; i < map->bucket_count; i++) {
        while (map->buckets[i]) {
            struct entry *e = map->buckets[i];
            map->buckets[i] = e->next;
            e->next = buckets[e->hash & (bigger - 1)];
            buckets[e->hash & (bigger - 1)] = e;
        }
    }
    free(map->buckets);
    map->buckets = buckets;
    map->bucket_count = bigger;
}

/* Adds a new key. The entry is allocated before anything changes. */
static int add_entry(kit_map_t *map, const char *key, uint64_t hash, void *value)
{
    size_t length = strlen(key);
    struct entry *e = malloc(sizeof *e + length + 1);
    if (e == NULL)
        return ENOMEM; /* nothing touched yet */
    e->hash = hash;
    e->value = value;
    memcpy(e->key, key, length + 1);
    grow_if_crowded(map);
    struct entry **bucket = bucket_of(map, hash);
    e->next = *bucket;
    *bucket = e;
    map->count++;
    return 0;
}

int kit_map_insert(kit_map_t *map, const char *key, void *value)
{
    if (map == NULL || key == NULL)
        return EINVAL;
    uint64_t hash = hash_of(key);
    return find_link(map, key, hash) ? EEXIST : add_entry(map, key, hash, value);
}

int kit_map_remove(kit_map_t *map, const char *key, void **value)
{
    if (map == NULL || key == NULL)
        return EINVAL;
    struct entry **link = find_link(map, key, hash_of(key));
    if (link == NULL)
        return ENOENT;
    struct entry *e = *link;
    *link = e->next; /* unlink first: the chain stays whole */
    if (value)
        *value = e->value;
    free(e);
    map->count--;
    return 0;
}

size_t kit_map_count(const kit_map_t *map)
{
    return map ? map->count : 0;
}

