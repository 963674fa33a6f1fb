/**
 * @file buggy_copy.h
 * @brief A tally of a few slots whose snapshot is copied out with memcpy
 *        after the unlock: a race the C library makes, for `make feedback`.
 */
#ifndef BUGGY_COPY_H
#define BUGGY_COPY_H

#include <stddef.h>

typedef struct tally tally_t;

#define TALLY_SLOTS 4

/** @brief A tally of zeros; NULL if out of memory. */
tally_t *tally_create(void);
/** @brief Frees the tally (NULL: nothing). */
void tally_destroy(tally_t *t);
/** @brief Adds one to @p slot (below TALLY_SLOTS), under the lock. */
void tally_add(tally_t *t, int slot);
/** @brief Copies the first @p slots counts out - with memcpy, after the unlock: a data race. */
void tally_snapshot(tally_t *t, long *out, size_t slots);

#endif
