/**
 * @file kit_sched_scan.c
 * @brief sscanf and vsscanf (and the names the C library's headers give
 *        them), as the code under test calls them on a schedule: the string
 *        they read and every argument they store into reach the scheduler's
 *        detector, as kit_sched_printf.c's printing does.
 *
 * sscanf reads its whole string (the library measures it first) and its
 * format, then stores into one argument for each conversion that matched.
 * Which ones match, and how many characters a %s, %c or %[ stores, depends
 * on the string: so before the call each conversion is tried on its own,
 * where the one before it stopped - the format's text up to it, then the
 * conversion with its assignment suppressed ("%*"), between two %n that
 * count what it took - the way the library goes through the format, one
 * directive after the other. The first that does not match ends the walk,
 * as it ends the library's. Each stored argument is then reported as a
 * write of its bytes at the caller's line, numbered ones ("%2$d") too: every
 * argument of sscanf is a pointer. Then the library does it.
 *
 * Not walked: "%as" and its kin, glibc's old spelling of "%ms" (the
 * arguments after it go unreported), and a format's text of more than
 * TRY_BYTES between two conversions.
 */
#define _GNU_SOURCE
#include "kit_sched_internal.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#define PC __builtin_return_address(0)

/* The longest piece of a format tried on its own. */
#define TRY_BYTES 256

/* One conversion of a scanf format, read by read_conversion(). */
struct scan_conversion {
    const char *spec;  /* its text after the '%' and the argument's number */
    const char *end;   /* just past it */
    int position;      /* its argument's number (%N$), or 0: the next one */
    bool assigns;      /* false for "%*d": it stores nothing */
    char conversion;   /* 'd', 's', '[', 'n', ... */
    size_t bytes;      /* what it stores into a number's argument */
    bool allocates;    /* %ms: it stores a pointer to a block the library allocates */
    bool wide;         /* %ls, %lc, %l[, %S, %C: wide characters */
};

/* The bytes of the number a conversion of this length modifier stores into. */
static size_t number_bytes(char conversion, const char *modifier, size_t length)
{
    bool floating = strchr("aAeEfFgG", conversion) != NULL;
    if (conversion == 'p')
        return sizeof(void *);
    if (length == 2 && modifier[0] == 'h' && modifier[1] == 'h')
        return sizeof(char);
    if (length == 2 || modifier[0] == 'q' || modifier[0] == 'L')
        return floating ? sizeof(long double) : sizeof(long long);
    if (length == 0)
        return floating ? sizeof(float) : sizeof(int);
    switch (modifier[0]) {
    case 'h':
        return sizeof(short);
    case 'l':
        return floating ? sizeof(double) : sizeof(long);
    case 'j':
        return sizeof(intmax_t);
    case 'z':
        return sizeof(size_t);
    default: /* 't' */
        return sizeof(ptrdiff_t);
    }
}

/* Past a %[ set's closing bracket (f just past the '['); NULL if none. */
static const char *past_set(const char *f)
{
    if (*f == '^')
        f++;
    if (*f == ']')
        f++;
    const char *close = strchr(f, ']');
    return close != NULL ? close + 1 : NULL;
}

/* Reads the conversion at f (just past its '%'). False if it cannot be
 * followed: one this walk does not know, or "%as". */
static bool read_conversion(const char *f, struct scan_conversion *c)
{
    size_t digits = strspn(f, "0123456789");
    c->position = digits > 0 && f[digits] == '$' ? atoi(f) : 0;
    c->spec = f = c->position > 0 ? f + digits + 1 : f;
    c->assigns = *f != '*';
    f += !c->assigns;
    f += strspn(f, "0123456789");
    c->allocates = *f == 'm';
    f += c->allocates;
    const char *modifier = f;
    f += strspn(f, "hlqLjzt");
    size_t length = (size_t)(f - modifier);
    c->conversion = *f;
    if (length > 2 || c->conversion == '\0' || strchr("diouxXaAeEfFgGpnscSC[", c->conversion) == NULL)
        return false;
    if (c->conversion == 'a' && f[1] != '\0' && strchr("sS[", f[1]) != NULL)
        return false;
    c->wide = strchr("SC", c->conversion) != NULL || (length == 1 && modifier[0] == 'l');
    c->bytes = number_bytes(c->conversion, modifier, length);
    c->end = c->conversion == '[' ? past_set(f + 1) : f + 1;
    return c->end != NULL;
}

/* The piece of format from `text` to conversion c's end, tried on its own:
 * the text, then %n, the conversion suppressed (its 'm' left out), %n. A
 * %s skips spaces itself: a space before the first %n leaves them out of
 * its count. False if it does not fit in `piece`. */
static bool build_piece(const char *text, const char *percent, const struct scan_conversion *c, char *piece)
{
    size_t before = (size_t)(percent - text);
    const char *spec = c->spec + !c->assigns;
    size_t width = strspn(spec, "0123456789");
    const char *rest = spec + width + (spec[width] == 'm');
    size_t rest_length = (size_t)(c->end - rest);
    if (before + width + rest_length + 8 > TRY_BYTES)
        return false;
    memcpy(piece, text, before);
    char *p = piece + before;
    p += sprintf(p, "%s%%n", strchr("sS", c->conversion) != NULL ? " " : "");
    if (c->conversion != 'n')
        p += sprintf(p, "%%*%.*s%.*s", (int)width, spec, (int)rest_length, rest);
    strcpy(p, "%n");
    return true;
}

/* What conversion c stores, having taken `taken` characters of the string. */
static size_t stored_bytes(const struct scan_conversion *c, int taken)
{
    if (c->allocates)
        return sizeof(void *); /* the pointer to the block the library allocated */
    if (strchr("sSc[C", c->conversion) == NULL)
        return c->bytes;
    size_t characters = (size_t)taken;
    if (strchr("cC", c->conversion) == NULL)
        characters++; /* the terminating zero */
    return characters * (c->wide ? sizeof(wchar_t) : 1);
}

/* The argument numbered `position` (from 1) of a list of pointers. */
static void *argument_at(va_list args, int position)
{
    va_list walk;
    va_copy(walk, args);
    void *argument = NULL;
    for (int i = 0; i < position; i++)
        argument = va_arg(walk, void *);
    va_end(walk);
    return argument;
}

/* The next conversion of the format at or after f (a "%%" is text); NULL if none. */
static const char *next_percent(const char *f)
{
    for (f = strchr(f, '%'); f != NULL && f[1] == '%'; f = strchr(f + 2, '%'))
        ;
    return f != NULL && f[1] != '\0' ? f : NULL;
}

/* Tries each conversion of the format in turn from where the last one
 * stopped, and reports the write of each argument one stores into. */
static void report_stores(const char *input, const char *format, va_list args, void *pc)
{
    va_list next;
    va_copy(next, args);
    char piece[TRY_BYTES];
    size_t at = 0; /* the characters of input taken so far */
    struct scan_conversion c;
    for (const char *text = format, *percent; (percent = next_percent(text)) != NULL; text = c.end) {
        if (!read_conversion(percent + 1, &c) || !build_piece(text, percent, &c, piece))
            break;
        int before = -1, after = -1;
        (void)sscanf(input + at, piece, &before, &after);
        if (after < 0)
            break; /* it does not match: nor does the library's, which stops there */
        if (c.assigns) {
            void *argument = c.position > 0 ? argument_at(args, c.position) : va_arg(next, void *);
            sched_memory_range(argument, stored_bytes(&c, after - before), true, pc);
        }
        at += (size_t)after;
    }
    va_end(next);
}

/* What scanning input with format reads and writes, reported before the library scans it. */
static void report_scan(const char *input, const char *format, va_list args, void *pc)
{
    if (!kit_sched_active() || input == NULL || format == NULL)
        return;
    sched_memory_range(format, strlen(format) + 1, false, pc);
    sched_memory_range(input, strlen(input) + 1, false, pc);
    report_stores(input, format, args, pc);
}

int kit_libc_vsscanf(const char *input, const char *format, va_list args);
int kit_libc_vsscanf(const char *input, const char *format, va_list args)
{
    report_scan(input, format, args, PC);
    return vsscanf(input, format, args);
}

int kit_libc_sscanf(const char *input, const char *format, ...);
int kit_libc_sscanf(const char *input, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    report_scan(input, format, args, PC);
    int matched = vsscanf(input, format, args);
    va_end(args);
    return matched;
}

/* ---- The names the C library's headers give them under C99 and C23 ------------------------- */

int __isoc99_vsscanf(const char *input, const char *format, va_list args);

int kit_libc___isoc99_vsscanf(const char *input, const char *format, va_list args);
int kit_libc___isoc99_vsscanf(const char *input, const char *format, va_list args)
{
    report_scan(input, format, args, PC);
    return __isoc99_vsscanf(input, format, args);
}

int kit_libc___isoc99_sscanf(const char *input, const char *format, ...);
int kit_libc___isoc99_sscanf(const char *input, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    report_scan(input, format, args, PC);
    int matched = __isoc99_vsscanf(input, format, args);
    va_end(args);
    return matched;
}

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 38))
int __isoc23_vsscanf(const char *input, const char *format, va_list args);

int kit_libc___isoc23_vsscanf(const char *input, const char *format, va_list args);
int kit_libc___isoc23_vsscanf(const char *input, const char *format, va_list args)
{
    report_scan(input, format, args, PC);
    return __isoc23_vsscanf(input, format, args);
}

int kit_libc___isoc23_sscanf(const char *input, const char *format, ...);
int kit_libc___isoc23_sscanf(const char *input, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    report_scan(input, format, args, PC);
    int matched = __isoc23_vsscanf(input, format, args);
    va_end(args);
    return matched;
}
#endif
