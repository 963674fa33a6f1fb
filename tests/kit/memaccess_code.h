/**
 * @file memaccess_code.h
 * @brief A shared box whose bytes are copied with the C library's memory and
 *        string functions, and a count read and written with atomics and
 *        plainly: the code under test of test_memaccess.c, built as a
 *        submission's code is (tests/kit/memaccess_code.c).
 *
 * Every function but box_create and box_destroy takes the box's lock around
 * what it does when @p locked is true; when it is false, it takes the lock
 * only to read the box's sizes, and does its copy after the unlock - a data
 * race with any call that changes the same bytes.
 */
#ifndef MEMACCESS_CODE_H
#define MEMACCESS_CODE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct box box_t;

/** Bytes of a box's data, and of its name with its terminating zero. */
#define BOX_DATA 48
#define BOX_NAME 16

/** A box whose data is zeros and whose name is "box"; NULL if out of memory. */
box_t *box_create(void);
/** Frees @p b (NULL: nothing). */
void box_destroy(box_t *b);

/** Copies @p size bytes (at most BOX_DATA) into the box's data: memcpy, under the lock. */
void box_fill(box_t *b, const char *from, size_t size);
/** Names the box (fewer than BOX_NAME characters): strcpy, under the lock. */
void box_rename(box_t *b, const char *name);

/** Copies the box's data out: memcpy. */
void box_copy_out(box_t *b, char *out, bool locked);

/** As box_copy_out(), through snprintf("%.*s"): a read the C library makes. */
void box_print_out(box_t *b, char *out, bool locked);
/** Zeros the box's data: memset. */
void box_clear(box_t *b, bool locked);
/** Moves the box's data down one byte: memmove. */
void box_shift(box_t *b, bool locked);
/** The length of the box's name: strlen. */
size_t box_name_length(box_t *b, bool locked);

/** What box_use() hands the C library: the box's name (which box_rename()
 * writes) or its data (which box_fill() writes), through one function. */
enum box_use {
    USE_SSCANF,          /**< sscanf("%15s") reads the name */
    USE_SSCANF_STORE,    /**< sscanf("%15s") stores a word into the name */
    USE_SSCANF_NUMBERED, /**< sscanf("%1$15s") stores a word into the name */
    USE_STRTOK,          /**< strtok cuts the name at its 'o' */
    USE_STRTOK_R,        /**< strtok_r, likewise */
    USE_STRSEP,          /**< strsep, likewise */
    USE_STRSPN,          /**< strspn of the name's letters */
    USE_STRCSPN,         /**< strcspn of the name up to an 'x' */
    USE_STRPBRK,         /**< strpbrk of the name for an 'x' or a 'y' */
    USE_MEMMEM,          /**< memmem of the data for "text" */
    USE_STRTOL,          /**< strtol of the name, and the kin below */
    USE_STRTOUL,
    USE_STRTOLL,
    USE_STRTOULL,
    USE_STRTOIMAX,
    USE_STRTOUMAX,
    USE_STRTOD,
    USE_STRTOF,
    USE_STRTOLD,
    USE_ATOI,
    USE_ATOL,
    USE_ATOLL,
    USE_QSORT,           /**< qsort of the data's bytes */
    USE_BSEARCH,         /**< bsearch of the data's bytes: its comparisons read them */
    USE_PRINT_NUMBERED,  /**< snprintf("%1$.*2$s") of the data */
    USE_COUNT
};

/** Does @p use to the box: under its lock if @p locked, else after it (the
 * lock taken only to read the box's size). Returns what the call returned. */
long box_use(box_t *b, enum box_use use, bool locked);
/** True if @p use reads or writes the box's data (else its name). */
bool box_use_of_data(enum box_use use);
/** Each use's library call, in words, and its line in memaccess_code.c
 * (bsearch's: the comparison's, which makes its reads). */
extern const char *const box_use_words[USE_COUNT];
extern const int box_use_line[USE_COUNT];

/** sscanf("%15[0-9]") of a word with no digit into the box's name, after the
 * unlock: the conversion does not match, and nothing is stored - no race. */
int box_scan_unmatched(box_t *b);

/** Copies @p size bytes from @p from to @p to: memcpy, of blocks nobody else may use. */
void copy_bytes(char *to, const char *from, size_t size);

/** Adds one to @p count, plainly, under @p lock. */
void count_under_lock(long *count, pthread_mutex_t *lock);
/** Reads @p count with a relaxed atomic load, no lock: a data race with a plain write (C11). */
long count_peek(long *count);
/** Adds one to @p count with a relaxed atomic, no lock: no race with another atomic. */
void count_atomically(long *count);
/** Adds one to @p count, plainly, with no lock: two threads doing it race, and may lose an update. */
void count_plainly(long *count);
/** Writes 42 to @p data plainly, then 1 to @p flag with a release store. */
void publish(long *data, long *flag);
/** @p data if an acquire load of @p flag sees 1 (ordered after publish's write: no race), else -1. */
long consume(long *data, long *flag);

/** Writes 1 to @p block[@p at], whatever its size. */
void write_byte(char *block, size_t at);

/** The lines of the library calls above, in memaccess_code.c, for the reports' places. */
extern const int box_fill_line, box_rename_line, box_copy_out_line, box_clear_line, box_shift_line,
    box_name_length_line, box_print_out_line, copy_bytes_line, count_under_lock_line, count_peek_line, write_byte_line;

#endif
