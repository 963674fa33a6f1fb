/**
 * @file memaccess_code.c
 * @brief The box of memaccess_code.h: copies made by the C library, under
 *        the box's lock or after it, its parsing, searching and sorting of
 *        the box likewise, and a count read and written with
 *        atomics and plainly (under a lock, and with none), for
 *        test_memaccess.c.
 *
 * Built as a submission's code is: with the instrumentation, its calls of the
 * C library's memory and string functions handed to the kit first
 * (grader/explorer/kit_sched_libc.c). Each call is alone on its line, in a
 * helper of its own, and the line's number follows it, for the tests to find
 * in a report.
 */
#define _POSIX_C_SOURCE 200809L
#include "memaccess_code.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct box {
    pthread_mutex_t lock;
    /* Guarded by lock: */
    size_t size; /* bytes of data in use */
    char name[BOX_NAME];
    char data[BOX_DATA];
};

/* The library's calls, one a line. */
static void fill(box_t *b, const char *from, size_t size) { memcpy(b->data, from, size); }
const int box_fill_line = __LINE__ - 1;
static void rename_to(box_t *b, const char *name) { strcpy(b->name, name); }
const int box_rename_line = __LINE__ - 1;
static void copy_out(box_t *b, char *out, size_t size) { memcpy(out, b->data, size); }
const int box_copy_out_line = __LINE__ - 1;
static void clear(box_t *b, char *out, size_t size) { (void)out, memset(b->data, 0, size); }
const int box_clear_line = __LINE__ - 1;
static void shift(box_t *b, char *out, size_t size) { (void)out, memmove(b->data, b->data + 1, size - 1); }
const int box_shift_line = __LINE__ - 1;
static size_t name_length(box_t *b) { return strlen(b->name); }
const int box_name_length_line = __LINE__ - 1;
static void print_out(box_t *b, char *out, size_t size) { snprintf(out, size, "%.*s", (int)size - 1, b->data); }
const int box_print_out_line = __LINE__ - 1;
void copy_bytes(char *to, const char *from, size_t size) { memcpy(to, from, size); }
const int copy_bytes_line = __LINE__ - 1;

/* ---- The C library's parsing, searching and sorting, one call a line ------------------------- */

/* (_POSIX_C_SOURCE leaves out these two, of glibc and BSD.) */
void *memmem(const void *haystack, size_t haystack_size, const void *needle, size_t needle_size);
char *strsep(char **place, const char *delimiters);

static long scan(box_t *b, size_t size) { (void)size; char word[BOX_NAME]; return (long)sscanf(b->name, "%15s", word); }
enum { scan_line = __LINE__ - 1 };
static long scan_store(box_t *b, size_t size) { (void)size; return (long)sscanf("stored", "%15s", b->name); }
enum { scan_store_line = __LINE__ - 1 };
/* Formats with numbered arguments, which -Wpedantic refuses written in the call. */
static const char *scan_first = "%1$15s", *print_first = "%1$.*2$s";
static long scan_numbered(box_t *b, size_t size) { (void)size; return (long)sscanf("stored", scan_first, b->name); }
enum { scan_numbered_line = __LINE__ - 1 };
static long cut(box_t *b, size_t size) { (void)size; return strtok(b->name, "o") != NULL; }
enum { cut_line = __LINE__ - 1 };
static long cut_r(box_t *b, size_t size) { (void)size; char *place; return strtok_r(b->name, "o", &place) != NULL; }
enum { cut_r_line = __LINE__ - 1 };
static long separate(box_t *b, size_t size) { (void)size; char *place = b->name; return strsep(&place, "o") != NULL; }
enum { separate_line = __LINE__ - 1 };
static long span(box_t *b, size_t size) { (void)size; return (long)strspn(b->name, "abcdefghijklmnopqrstuvwxyz"); }
enum { span_line = __LINE__ - 1 };
static long span_not(box_t *b, size_t size) { (void)size; return (long)strcspn(b->name, "x"); }
enum { span_not_line = __LINE__ - 1 };
static long find_any(box_t *b, size_t size) { (void)size; return strpbrk(b->name, "xy") != NULL; }
enum { find_any_line = __LINE__ - 1 };
static long find_text(box_t *b, size_t size) { return memmem(b->data, size, "text", 4) != NULL; }
enum { find_text_line = __LINE__ - 1 };
static long to_long(box_t *b, size_t size) { (void)size; char *end; return (long)strtol(b->name, &end, 10); }
enum { to_long_line = __LINE__ - 1 };
static long to_unsigned_long(box_t *b, size_t size) { (void)size; return (long)strtoul(b->name, NULL, 0); }
enum { to_unsigned_long_line = __LINE__ - 1 };
static long to_long_long(box_t *b, size_t size) { (void)size; return (long)strtoll(b->name, NULL, 16); }
enum { to_long_long_line = __LINE__ - 1 };
static long to_unsigned_long_long(box_t *b, size_t size) { (void)size; return (long)strtoull(b->name, NULL, 36); }
enum { to_unsigned_long_long_line = __LINE__ - 1 };
static long to_intmax(box_t *b, size_t size) { (void)size; return (long)strtoimax(b->name, NULL, 10); }
enum { to_intmax_line = __LINE__ - 1 };
static long to_uintmax(box_t *b, size_t size) { (void)size; return (long)strtoumax(b->name, NULL, 10); }
enum { to_uintmax_line = __LINE__ - 1 };
static long to_double(box_t *b, size_t size) { (void)size; char *end; return (long)strtod(b->name, &end); }
enum { to_double_line = __LINE__ - 1 };
static long to_float(box_t *b, size_t size) { (void)size; return (long)strtof(b->name, NULL); }
enum { to_float_line = __LINE__ - 1 };
static long to_long_double(box_t *b, size_t size) { (void)size; return (long)strtold(b->name, NULL); }
enum { to_long_double_line = __LINE__ - 1 };
static long to_int(box_t *b, size_t size) { (void)size; return (long)atoi(b->name); }
enum { to_int_line = __LINE__ - 1 };
static long to_atol(box_t *b, size_t size) { (void)size; return (long)atol(b->name); }
enum { to_atol_line = __LINE__ - 1 };
static long to_atoll(box_t *b, size_t size) { (void)size; return (long)atoll(b->name); }
enum { to_atoll_line = __LINE__ - 1 };
static int compare_bytes(const void *a, const void *b) { return *(const char *)a - *(const char *)b; }
enum { compare_bytes_line = __LINE__ - 1 };
static long sort(box_t *b, size_t size) { qsort(b->data, size, 1, compare_bytes); return 0; }
enum { sort_line = __LINE__ - 1 };
static long search(box_t *b, size_t size) { return bsearch("x", b->data, size, 1, compare_bytes) != NULL; }
static long print_numbered(box_t *b, size_t size) { char o[BOX_DATA]; return snprintf(o, BOX_DATA, print_first, b->data, (int)size - 1); }
enum { print_numbered_line = __LINE__ - 1 };

static const struct {
    long (*call)(box_t *b, size_t size);
    bool of_data;
} uses[USE_COUNT] = {
    [USE_SSCANF] = { scan, false },          [USE_SSCANF_STORE] = { scan_store, false },
    [USE_SSCANF_NUMBERED] = { scan_numbered, false },
    [USE_STRTOK] = { cut, false },           [USE_STRTOK_R] = { cut_r, false },
    [USE_STRSEP] = { separate, false },      [USE_STRSPN] = { span, false },
    [USE_STRCSPN] = { span_not, false },     [USE_STRPBRK] = { find_any, false },
    [USE_MEMMEM] = { find_text, true },      [USE_STRTOL] = { to_long, false },
    [USE_STRTOUL] = { to_unsigned_long, false }, [USE_STRTOLL] = { to_long_long, false },
    [USE_STRTOULL] = { to_unsigned_long_long, false }, [USE_STRTOIMAX] = { to_intmax, false },
    [USE_STRTOUMAX] = { to_uintmax, false }, [USE_STRTOD] = { to_double, false },
    [USE_STRTOF] = { to_float, false },      [USE_STRTOLD] = { to_long_double, false },
    [USE_ATOI] = { to_int, false },          [USE_ATOL] = { to_atol, false },
    [USE_ATOLL] = { to_atoll, false },       [USE_QSORT] = { sort, true },
    [USE_BSEARCH] = { search, true },        [USE_PRINT_NUMBERED] = { print_numbered, true },
};

const int box_use_line[USE_COUNT] = {
    [USE_SSCANF] = scan_line,          [USE_SSCANF_STORE] = scan_store_line,
    [USE_SSCANF_NUMBERED] = scan_numbered_line,
    [USE_STRTOK] = cut_line,           [USE_STRTOK_R] = cut_r_line,
    [USE_STRSEP] = separate_line,      [USE_STRSPN] = span_line,
    [USE_STRCSPN] = span_not_line,     [USE_STRPBRK] = find_any_line,
    [USE_MEMMEM] = find_text_line,     [USE_STRTOL] = to_long_line,
    [USE_STRTOUL] = to_unsigned_long_line, [USE_STRTOLL] = to_long_long_line,
    [USE_STRTOULL] = to_unsigned_long_long_line, [USE_STRTOIMAX] = to_intmax_line,
    [USE_STRTOUMAX] = to_uintmax_line, [USE_STRTOD] = to_double_line,
    [USE_STRTOF] = to_float_line,      [USE_STRTOLD] = to_long_double_line,
    [USE_ATOI] = to_int_line,          [USE_ATOL] = to_atol_line,
    [USE_ATOLL] = to_atoll_line,       [USE_QSORT] = sort_line,
    [USE_BSEARCH] = compare_bytes_line, [USE_PRINT_NUMBERED] = print_numbered_line,
};

const char *const box_use_words[USE_COUNT] = {
    [USE_SSCANF] = "sscanf(\"%15s\") of the box's name",
    [USE_SSCANF_STORE] = "sscanf(\"%15s\") into the box's name",
    [USE_SSCANF_NUMBERED] = "sscanf(\"%1$15s\") into the box's name",
    [USE_STRTOK] = "strtok of the box's name",
    [USE_STRTOK_R] = "strtok_r of the box's name",
    [USE_STRSEP] = "strsep of the box's name",
    [USE_STRSPN] = "strspn of the box's name",
    [USE_STRCSPN] = "strcspn of the box's name",
    [USE_STRPBRK] = "strpbrk of the box's name",
    [USE_MEMMEM] = "memmem of the box's data",
    [USE_STRTOL] = "strtol of the box's name",
    [USE_STRTOUL] = "strtoul of the box's name",
    [USE_STRTOLL] = "strtoll of the box's name",
    [USE_STRTOULL] = "strtoull of the box's name",
    [USE_STRTOIMAX] = "strtoimax of the box's name",
    [USE_STRTOUMAX] = "strtoumax of the box's name",
    [USE_STRTOD] = "strtod of the box's name",
    [USE_STRTOF] = "strtof of the box's name",
    [USE_STRTOLD] = "strtold of the box's name",
    [USE_ATOI] = "atoi of the box's name",
    [USE_ATOL] = "atol of the box's name",
    [USE_ATOLL] = "atoll of the box's name",
    [USE_QSORT] = "qsort of the box's data",
    [USE_BSEARCH] = "bsearch in the box's data",
    [USE_PRINT_NUMBERED] = "snprintf(\"%1$.*2$s\") of the box's data",
};

box_t *box_create(void)
{
    box_t *b = calloc(1, sizeof *b);
    if (b == NULL)
        return NULL;
    if (pthread_mutex_init(&b->lock, NULL) != 0) {
        free(b);
        return NULL;
    }
    b->size = BOX_DATA;
    strcpy(b->name, "box");
    return b;
}

void box_destroy(box_t *b)
{
    if (b == NULL)
        return;
    pthread_mutex_destroy(&b->lock);
    free(b);
}

void box_fill(box_t *b, const char *from, size_t size)
{
    pthread_mutex_lock(&b->lock);
    fill(b, from, size);
    pthread_mutex_unlock(&b->lock);
}

void box_rename(box_t *b, const char *name)
{
    pthread_mutex_lock(&b->lock);
    rename_to(b, name);
    pthread_mutex_unlock(&b->lock);
}

/* Each copy below takes the lock to read the box's size; when not @p locked,
 * it gives the lock up at once, and the copy after it is the race. */
static void with_size(box_t *b, bool locked, void (*copy)(box_t *, char *, size_t), char *out)
{
    pthread_mutex_lock(&b->lock);
    size_t size = b->size;
    if (!locked)
        pthread_mutex_unlock(&b->lock);
    copy(b, out, size);
    if (locked)
        pthread_mutex_unlock(&b->lock);
}

void box_copy_out(box_t *b, char *out, bool locked) { with_size(b, locked, copy_out, out); }
void box_print_out(box_t *b, char *out, bool locked) { with_size(b, locked, print_out, out); }
void box_clear(box_t *b, bool locked) { with_size(b, locked, clear, NULL); }
void box_shift(box_t *b, bool locked) { with_size(b, locked, shift, NULL); }

/* As with_size(), for a use of the box: what its call returned (for the
 * compiler, which leaves out a call of a pure function whose result is unused). */
long box_use(box_t *b, enum box_use use, bool locked)
{
    pthread_mutex_lock(&b->lock);
    size_t size = b->size;
    if (!locked)
        pthread_mutex_unlock(&b->lock);
    long result = uses[use].call(b, size);
    if (locked)
        pthread_mutex_unlock(&b->lock);
    return result;
}

bool box_use_of_data(enum box_use use) { return uses[use].of_data; }

int box_scan_unmatched(box_t *b)
{
    pthread_mutex_lock(&b->lock);
    pthread_mutex_unlock(&b->lock);
    return sscanf("none", "%15[0-9]", b->name);
}

size_t box_name_length(box_t *b, bool locked)
{
    pthread_mutex_lock(&b->lock);
    if (!locked)
        pthread_mutex_unlock(&b->lock);
    size_t length = name_length(b);
    if (locked)
        pthread_mutex_unlock(&b->lock);
    return length;
}

/* ---- A count, atomic and plain ------------------------------------------------------- */

void count_under_lock(long *count, pthread_mutex_t *lock)
{
    pthread_mutex_lock(lock);
    (*count)++;
    pthread_mutex_unlock(lock);
}
const int count_under_lock_line = __LINE__ - 3;
long count_peek(long *count) { return __atomic_load_n(count, __ATOMIC_RELAXED); }
const int count_peek_line = __LINE__ - 1;
void count_atomically(long *count) { __atomic_fetch_add(count, 1, __ATOMIC_RELAXED); }

void count_plainly(long *count)
{
    long seen = *count;
    *count = seen + 1;
}

void publish(long *data, long *flag)
{
    *data = 42;
    __atomic_store_n(flag, 1, __ATOMIC_RELEASE);
}

long consume(long *data, long *flag)
{
    return __atomic_load_n(flag, __ATOMIC_ACQUIRE) ? *data : -1;
}

void write_byte(char *block, size_t at) { block[at] = 1; }
const int write_byte_line = __LINE__ - 1;
