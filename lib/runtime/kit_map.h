/**
 * @file kit_map.h
 * @brief A small hash map from strings to pointers.
 *
 * Keys are C strings, copied into the map, so the caller's buffer may change
 * or go away after the call; values are `void *` the map stores and never
 * reads or frees. Lookups, insertions and removals take constant time on
 * average: the map is an array of buckets, each a short chain of entries,
 * and it doubles its bucket array whenever the chains would grow longer than
 * 3/4 of an entry on average.
 *
 * **Failure leaves it unchanged.** An insertion that cannot allocate its
 * entry returns ENOMEM and the map is exactly as before. Growing is an
 * optimisation: if the bigger bucket array cannot be allocated, the entry is
 * still inserted into the current one (chains just get a little longer).
 *
 * **Not thread-safe.** A map is plain data, like an array: whoever shares
 * one between threads guards every call with their own lock (chapter 06
 * keeps its map under the executor's mutex).
 *
 * @ingroup kit
 */
#ifndef KIT_MAP_H
#define KIT_MAP_H

#include <stddef.h>

/** @addtogroup kit
 *  @{ */

/** @brief An opaque string-keyed hash map. */
typedef struct kit_map kit_map_t;

/**
 * @brief Create an empty map.
 * @param[out] out the map; NULL on failure.
 * @return 0; EINVAL (NULL @p out); ENOMEM (nothing allocated).
 * @see kit_map_destroy
 */
int kit_map_create(kit_map_t **out);

/**
 * @brief Free the map and its copies of the keys. The values are not
 *        touched: remove and free them first if they own memory.
 *        NULL is a no-op.
 * @see kit_map_create
 */
void kit_map_destroy(kit_map_t *map);

/**
 * @brief The value stored under @p key.
 * @return the value, or NULL if @p key is absent (or @p map / @p key is
 *         NULL). A map that stores NULL values cannot tell them from absent
 *         keys: the kit's maps store only non-NULL values.
 */
void *kit_map_get(const kit_map_t *map, const char *key);

/**
 * @brief Store @p value under @p key (copied) only if the key is absent.
 * @return 0; EEXIST (the key is present; nothing changed); EINVAL; ENOMEM
 *         (the map is unchanged).
 */
int kit_map_insert(kit_map_t *map, const char *key, void *value);

/**
 * @brief Remove @p key and its copy.
 * @param[in]  map   the map.
 * @param[in]  key   the key to remove.
 * @param[out] value if not NULL: the value that was stored (written only on success).
 * @return 0; ENOENT (absent: nothing changed); EINVAL (NULL @p map or @p key).
 */
int kit_map_remove(kit_map_t *map, const char *key, void **value);

/** @brief Number of keys (0 for NULL). */
size_t kit_map_count(const kit_map_t *map);

/** @} */
#endif
