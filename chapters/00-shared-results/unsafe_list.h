/**
 * @file unsafe_list.h
 * @brief The results list from the story, without a lock: for the demo only.
 * @ingroup ch00
 */
#ifndef UNSAFE_LIST_H
#define UNSAFE_LIST_H

#include <stdatomic.h>
#include <stddef.h>

/** @brief A fixed-size list whose append is three separate steps, unlocked. */
struct unsafe_list {
    _Atomic long *records;   /**< capacity slots */
    atomic_size_t count;     /**< records[0 .. count) are in the list */
    size_t capacity;         /**< never exceeded: the demo sizes it for every append */
    long window;             /**< extra work between "read count" and "write count" */
};

/** @brief Allocate room for @p capacity records. @return 0 or ENOMEM. */
int unsafe_list_init(struct unsafe_list *list, size_t capacity, long window);
/** @brief Free the records. */
void unsafe_list_free(struct unsafe_list *list);
/** @brief Append without a lock: read count, write the slot, write count + 1. */
void unsafe_append(struct unsafe_list *list, long record);
/** @brief Take everything without a lock: read count, copy, write count = 0. */
size_t unsafe_drain(struct unsafe_list *list, long *dest, size_t dest_length);

#endif
