/**
 * @file kit_sched_parse.c
 * @brief The C library's functions that cut strings into tokens, read
 *        numbers out of them and sort arrays, as the code under test calls
 *        them on a schedule: what each reads and writes of the caller's
 *        memory reaches the scheduler's detector, as kit_sched_libc.c's
 *        copies do.
 *
 * strtok, strtok_r and strsep read a string up to the end of its next token
 * and write the zero that ends it (and strtok_r and strsep their caller's
 * place pointer); strtol and its kin, and atoi and its kin, read a number's
 * characters and the one that stopped them, and write the end pointer they
 * are given; qsort reads and writes the whole array (its moves: the
 * comparisons are the caller's own function, instrumented like the rest of
 * the code under test). bsearch is not here: it reads nothing itself, only
 * through the caller's comparison, which is seen at its own lines. Each
 * function reports, then the library does it, as kit_sched_libc.c's do: on
 * real threads, and in every build with a sanitizer, nothing but the library.
 *
 * What a function will read is measured before it runs: a token's length
 * with strspn and strcspn over the same delimiters, a number's end with a
 * first call of the same function (errno kept as it was).
 */
#define _GNU_SOURCE
#include "kit_sched_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define PC __builtin_return_address(0)

static void reads(const void *block, size_t size, void *pc) { sched_memory_range(block, size, false, pc); }
static void writes(void *block, size_t size, void *pc) { sched_memory_range(block, size, true, pc); }

/* ---- Tokens -------------------------------------------------------------------------------- */

/* What cutting the next token out of `from` reads and writes: the bytes up
 * to the token's end (past the delimiters before it, for strtok and
 * strtok_r: `skip`), the delimiters themselves, and the zero written over
 * the delimiter that ends it, if one does. */
static void report_token(char *from, const char *delimiters, bool skip, void *pc)
{
    size_t start = skip ? strspn(from, delimiters) : 0;
    size_t end = start + (from[start] != '\0' ? strcspn(from + start, delimiters) : 0);
    reads(delimiters, strlen(delimiters) + 1, pc);
    reads(from, end + 1, pc);
    if (from[start] != '\0' && from[end] != '\0')
        writes(from + end, 1, pc);
}

/* strtok's place in its string: the library's strtok keeps it in a static
 * pointer of its own, and so does this one - every strtok of the code under
 * test is this function, so the library's is never used by it. */
static char *strtok_place;

char *kit_libc_strtok_r(char *s, const char *delimiters, char **place);
char *kit_libc_strtok_r(char *s, const char *delimiters, char **place)
{
    if (kit_sched_active()) {
        if (s == NULL)
            reads(place, sizeof *place, PC);
        char *from = s != NULL ? s : *place;
        if (from != NULL)
            report_token(from, delimiters, true, PC);
        writes(place, sizeof *place, PC);
    }
    return strtok_r(s, delimiters, place);
}

char *kit_libc_strtok(char *s, const char *delimiters);
char *kit_libc_strtok(char *s, const char *delimiters)
{
    char *from = s != NULL ? s : strtok_place;
    if (kit_sched_active() && from != NULL)
        report_token(from, delimiters, true, PC);
    return strtok_r(s, delimiters, &strtok_place);
}

char *kit_libc_strsep(char **place, const char *delimiters);
char *kit_libc_strsep(char **place, const char *delimiters)
{
    if (kit_sched_active()) {
        reads(place, sizeof *place, PC);
        if (*place != NULL) {
            report_token(*place, delimiters, false, PC);
            writes(place, sizeof *place, PC);
        }
    }
    return strsep(place, delimiters);
}

/* ---- Numbers ------------------------------------------------------------------------------- */

/* What reading a number from s reads, the number having ended at `end`:
 * up to the character that stopped it, included; when nothing was read,
 * the spaces and the sign the library skipped and the character after them.
 * And the end pointer it stores, if it is given one. */
static void report_number(const char *s, const char *end, char **end_out, void *pc)
{
    size_t bytes = (size_t)(end - s) + 1;
    if (end == s) {
        bytes = strspn(s, " \t\n\v\f\r");
        bytes += s[bytes] == '+' || s[bytes] == '-';
        bytes++;
    }
    reads(s, bytes, pc);
    if (end_out != NULL)
        writes(end_out, sizeof *end_out, pc);
}

/* kit_libc_NAME for a function reading an integer of `type` in a base:
 * the number's end found by a first call (errno as it was), reported, then
 * the call itself. */
#define INTEGER_READER(type, name)                                                                  \
    type kit_libc_##name(const char *s, char **end_out, int base);                                   \
    type kit_libc_##name(const char *s, char **end_out, int base)                                    \
    {                                                                                                \
        if (kit_sched_active()) {                                                                    \
            int saved = errno;                                                                       \
            char *end;                                                                               \
            (void)name(s, &end, base);                                                               \
            errno = saved;                                                                           \
            report_number(s, end, end_out, PC);                                                      \
        }                                                                                            \
        return name(s, end_out, base);                                                               \
    }

/* And for a floating-point number (no base). */
#define FLOAT_READER(type, name)                                                                    \
    type kit_libc_##name(const char *s, char **end_out);                                             \
    type kit_libc_##name(const char *s, char **end_out)                                              \
    {                                                                                                \
        if (kit_sched_active()) {                                                                    \
            int saved = errno;                                                                       \
            char *end;                                                                               \
            (void)name(s, &end);                                                                     \
            errno = saved;                                                                           \
            report_number(s, end, end_out, PC);                                                      \
        }                                                                                            \
        return name(s, end_out);                                                                     \
    }

/* And atoi's kind: strtol's reading of s in base 10, without an end pointer. */
#define DECIMAL_READER(type, name)                                                                  \
    type kit_libc_##name(const char *s);                                                             \
    type kit_libc_##name(const char *s)                                                              \
    {                                                                                                \
        if (kit_sched_active()) {                                                                    \
            int saved = errno;                                                                       \
            char *end;                                                                               \
            (void)strtoll(s, &end, 10);                                                              \
            errno = saved;                                                                           \
            report_number(s, end, NULL, PC);                                                         \
        }                                                                                            \
        return name(s);                                                                              \
    }

INTEGER_READER(long, strtol)
INTEGER_READER(unsigned long, strtoul)
INTEGER_READER(long long, strtoll)
INTEGER_READER(unsigned long long, strtoull)
INTEGER_READER(intmax_t, strtoimax)
INTEGER_READER(uintmax_t, strtoumax)
FLOAT_READER(double, strtod)
FLOAT_READER(float, strtof)
FLOAT_READER(long double, strtold)
DECIMAL_READER(int, atoi)
DECIMAL_READER(long, atol)
DECIMAL_READER(long long, atoll)

/* The C library of 2.38 and later reads "0b" numbers too: under C23, or
 * _GNU_SOURCE, the headers name these instead. */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 38))
long __isoc23_strtol(const char *s, char **end_out, int base);
unsigned long __isoc23_strtoul(const char *s, char **end_out, int base);
long long __isoc23_strtoll(const char *s, char **end_out, int base);
unsigned long long __isoc23_strtoull(const char *s, char **end_out, int base);
intmax_t __isoc23_strtoimax(const char *s, char **end_out, int base);
uintmax_t __isoc23_strtoumax(const char *s, char **end_out, int base);
INTEGER_READER(long, __isoc23_strtol)
INTEGER_READER(unsigned long, __isoc23_strtoul)
INTEGER_READER(long long, __isoc23_strtoll)
INTEGER_READER(unsigned long long, __isoc23_strtoull)
INTEGER_READER(intmax_t, __isoc23_strtoimax)
INTEGER_READER(uintmax_t, __isoc23_strtoumax)
#endif

/* ---- Sorting ------------------------------------------------------------------------------- */

/* qsort's moves read and write the whole array: one read of it before the
 * sort, one write after it, whatever order the library moves its elements
 * in - around the comparisons, so that the array's last access is the
 * sort's, at the caller's line, not the comparison's, at its own. */
void kit_libc_qsort(void *base, size_t count, size_t size, int (*compare)(const void *, const void *));
void kit_libc_qsort(void *base, size_t count, size_t size, int (*compare)(const void *, const void *))
{
    bool active = kit_sched_active() && count > 1;
    if (active)
        reads(base, count * size, PC);
    qsort(base, count, size, compare);
    if (active)
        writes(base, count * size, PC);
}
