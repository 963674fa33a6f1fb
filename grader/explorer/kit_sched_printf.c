/**
 * @file kit_sched_printf.c
 * @brief The printf functions that print into memory (snprintf, sprintf,
 *        their va_list and checked forms), as the code under test calls them
 *        on a schedule: the strings they read and the bytes they write reach
 *        the scheduler's detector, as kit_sched_libc.c's copies do.
 *
 * The C library's formatting is not instrumented: a byte read through
 * "%.1s" and printed into a local buffer, or a buffer of shared memory
 * printed into, would be an access nobody sees - an unlocked append made of
 * nothing else would race unseen. So the build renames these calls of the
 * code under test (LIBC_ACCESSES, LIBC_CHECKED in the Makefile), and each
 * function here walks the format as printf will: every string a %s reads (up
 * to its precision) is a read, every %n a write, then the bytes the output
 * takes are a write, all at the caller's line; then the library prints.
 * A format with numbered arguments ("%2$s", "%1$.*3$s") is walked twice:
 * once for each argument's type, from the conversions that name it, then
 * for their values, taken in the list's order - up to the 32nd argument
 * (past it, or with a number no conversion names, its reads go unreported:
 * docs/grading.md lists what the explorer cannot see).
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

/* A conversion's length modifier: which type its argument has. */
enum size_mod { MOD_NONE, MOD_HH, MOD_H, MOD_L, MOD_LL, MOD_BIG_L, MOD_J, MOD_Z, MOD_T };

static const char *read_modifier(const char *f, enum size_mod *mod)
{
    static const struct { const char *text; enum size_mod mod; } mods[] = {
        { "hh", MOD_HH }, { "h", MOD_H }, { "ll", MOD_LL }, { "l", MOD_L }, { "q", MOD_LL }, { "L", MOD_BIG_L },
        { "j", MOD_J },   { "z", MOD_Z }, { "Z", MOD_Z },   { "t", MOD_T },
    };
    for (size_t i = 0; i < sizeof mods / sizeof mods[0]; i++) {
        size_t length = strlen(mods[i].text);
        if (strncmp(f, mods[i].text, length) == 0) {
            *mod = mods[i].mod;
            return f + length;
        }
    }
    *mod = MOD_NONE;
    return f;
}

/* The bytes of the object %n stores its count in. */
static size_t count_size(enum size_mod mod)
{
    static const size_t sizes[] = { [MOD_NONE] = sizeof(int),     [MOD_HH] = sizeof(signed char),
                                    [MOD_H] = sizeof(short),      [MOD_L] = sizeof(long),
                                    [MOD_LL] = sizeof(long long), [MOD_BIG_L] = sizeof(long long),
                                    [MOD_J] = sizeof(intmax_t),   [MOD_Z] = sizeof(size_t),
                                    [MOD_T] = sizeof(ptrdiff_t) };
    return sizes[mod];
}

/* The characters %s reads of a string of `length` characters: up to the
 * precision, its terminating zero included if printf reaches it. */
static size_t characters_read(size_t length, long precision)
{
    size_t most = precision < 0 ? (size_t)-1 : (size_t)precision;
    return length < most ? length + 1 : most;
}

/* One conversion of a printf format, read by read_spec(). An argument's
 * number is 0 for the next one in the list, or its %N$ number. */
struct print_spec {
    int position;      /* the converted argument's number (none for %m) */
    int width_arg;     /* the width's argument ('*', '*N$'), or -1 */
    int precision_arg; /* the precision's argument ('.*', '.*N$'), or -1 */
    long precision;    /* the precision written in the format, or -1 */
    enum size_mod mod;
    char conversion;
};

/* The types an argument of printf is passed as. */
enum arg_type { ARG_NONE, ARG_INT, ARG_LONG, ARG_LLONG, ARG_INTMAX, ARG_SIZE, ARG_PTRDIFF,
                ARG_DOUBLE, ARG_LDOUBLE, ARG_POINTER, ARG_WINT };

/* An argument's value, as far as the walk needs it: a precision, a string, a %n's object. */
union arg_value {
    long long integer;
    void *pointer;
};

/* A '*' (f at it) and its argument's number: the next one (0), or %N$'s. */
static const char *read_star(const char *f, int *arg)
{
    *arg = -1;
    if (*f != '*')
        return f;
    size_t digits = strspn(f + 1, "0123456789");
    *arg = digits > 0 && f[1 + digits] == '$' ? atoi(f + 1) : 0;
    return *arg > 0 ? f + digits + 2 : f + 1;
}

/* Reads the conversion at f (just past its '%'). Returns where the format
 * goes on, or NULL when it cannot be followed (an unknown conversion). */
static const char *read_spec(const char *f, struct print_spec *s)
{
    size_t digits = strspn(f, "0123456789");
    s->position = digits > 0 && f[digits] == '$' ? atoi(f) : 0;
    f += s->position > 0 ? digits + 1 : 0;
    f += strspn(f, "-+ #0'I");
    f = read_star(f, &s->width_arg);
    f += strspn(f, "0123456789");
    s->precision_arg = -1;
    s->precision = -1;
    if (*f == '.') {
        f = read_star(f + 1, &s->precision_arg);
        if (s->precision_arg < 0)
            s->precision = strtol(f, NULL, 10);
        f += strspn(f, "0123456789");
    }
    f = read_modifier(f, &s->mod);
    s->conversion = *f;
    if (s->conversion == '\0' || strchr("diouxXcCeEfFgGaAsSpnm%", s->conversion) == NULL)
        return NULL;
    return f + 1;
}

/* The type the converted argument of s is passed as. */
static enum arg_type value_type(const struct print_spec *s)
{
    static const enum arg_type integers[] = { [MOD_NONE] = ARG_INT, [MOD_HH] = ARG_INT,  [MOD_H] = ARG_INT,
                                              [MOD_L] = ARG_LONG,   [MOD_LL] = ARG_LLONG, [MOD_BIG_L] = ARG_LLONG,
                                              [MOD_J] = ARG_INTMAX, [MOD_Z] = ARG_SIZE,  [MOD_T] = ARG_PTRDIFF };
    char c = s->conversion;
    if (strchr("diouxX", c))
        return integers[s->mod];
    if (c == 'c' || c == 'C')
        return s->mod == MOD_L || c == 'C' ? ARG_WINT : ARG_INT;
    if (strchr("eEfFgGaA", c))
        return s->mod == MOD_BIG_L ? ARG_LDOUBLE : ARG_DOUBLE;
    return strchr("sSpn", c) ? ARG_POINTER : ARG_NONE; /* %m and %% take none */
}

/* The next argument of the list, taken as its type is passed. */
static union arg_value take(enum arg_type type, va_list *args)
{
    union arg_value v = { 0 };
    switch (type) {
    case ARG_INT: v.integer = va_arg(*args, int); break;
    case ARG_LONG: v.integer = va_arg(*args, long); break;
    case ARG_LLONG: v.integer = va_arg(*args, long long); break;
    case ARG_INTMAX: v.integer = va_arg(*args, intmax_t); break;
    case ARG_SIZE: v.integer = (long long)va_arg(*args, size_t); break;
    case ARG_PTRDIFF: v.integer = va_arg(*args, ptrdiff_t); break;
    case ARG_DOUBLE: (void)va_arg(*args, double); break;
    case ARG_LDOUBLE: (void)va_arg(*args, long double); break;
    case ARG_POINTER: v.pointer = va_arg(*args, void *); break;
    case ARG_WINT: (void)va_arg(*args, wint_t); break;
    case ARG_NONE: break;
    }
    return v;
}

/* What conversion s reads and writes, its precision known and its argument taken. */
static void report_conversion(const struct print_spec *s, long precision, void *argument, void *pc)
{
    size_t most = precision < 0 ? (size_t)-1 : (size_t)precision;
    if (argument == NULL)
        return;
    if (s->conversion == 'n') {
        sched_memory_range(argument, count_size(s->mod), true, pc);
    } else if (s->conversion == 'S' || (s->conversion == 's' && s->mod == MOD_L)) {
        const wchar_t *wide = argument;
        sched_memory_range(wide, characters_read(wcsnlen(wide, most), precision) * sizeof(wchar_t), false, pc);
    } else if (s->conversion == 's') {
        sched_memory_range(argument, characters_read(strnlen(argument, most), precision), false, pc);
    }
}

/* Every conversion's reads and writes, its arguments taken in the list's
 * order. False at the first numbered one (%N$): then they all are. */
static bool report_in_order(const char *format, va_list args, void *pc)
{
    va_list walk;
    va_copy(walk, args);
    struct print_spec s;
    bool numbered = false;
    for (const char *f = strchr(format, '%'); f != NULL && !numbered; f = strchr(f, '%')) {
        if ((f = read_spec(f + 1, &s)) == NULL)
            break;
        numbered = s.position > 0;
        if (numbered)
            break;
        if (s.width_arg == 0)
            (void)va_arg(walk, int);
        long precision = s.precision_arg == 0 ? va_arg(walk, int) : s.precision;
        union arg_value v = take(value_type(&s), &walk);
        if (strchr("sSn", s.conversion))
            report_conversion(&s, precision < 0 ? -1 : precision, v.pointer, pc);
    }
    va_end(walk);
    return !numbered;
}

/* The most arguments a format with numbered ones is followed for. */
#define MOST_NUMBERED 32

/* Each numbered argument's type, from every conversion that names it; the
 * highest number, or 0 if one is past MOST_NUMBERED or not numbered. */
static int numbered_types(const char *format, enum arg_type types[MOST_NUMBERED + 1])
{
    int highest = 0;
    struct print_spec s;
    for (const char *f = strchr(format, '%'); f != NULL; f = strchr(f, '%')) {
        if ((f = read_spec(f + 1, &s)) == NULL)
            return 0;
        enum arg_type type = value_type(&s);
        if ((type != ARG_NONE && s.position <= 0) || s.position > MOST_NUMBERED || s.width_arg == 0 ||
            s.precision_arg == 0 || s.width_arg > MOST_NUMBERED || s.precision_arg > MOST_NUMBERED)
            return 0;
        if (s.width_arg > 0)
            types[s.width_arg] = ARG_INT;
        if (s.precision_arg > 0)
            types[s.precision_arg] = ARG_INT;
        if (type != ARG_NONE)
            types[s.position] = type;
        int top = s.position > s.width_arg ? s.position : s.width_arg;
        top = s.precision_arg > top ? s.precision_arg : top;
        highest = top > highest ? top : highest;
    }
    return highest;
}

/* The same for a format with numbered arguments: their types first (one
 * pass over the format), then their values, in the list's order (every
 * number up to the highest must be named), then each conversion's reads
 * and writes. */
static void report_numbered(const char *format, va_list args, void *pc)
{
    enum arg_type types[MOST_NUMBERED + 1] = { ARG_NONE };
    union arg_value values[MOST_NUMBERED + 1];
    int highest = numbered_types(format, types);
    va_list walk;
    va_copy(walk, args);
    for (int n = 1; n <= highest && types[n] != ARG_NONE; n++)
        values[n] = take(types[n], &walk);
    va_end(walk);
    for (int n = 1; n <= highest; n++)
        if (types[n] == ARG_NONE)
            return; /* an argument no conversion names: its type is unknown */
    struct print_spec s;
    for (const char *f = strchr(format, '%'); highest > 0 && f != NULL; f = strchr(f, '%')) {
        f = read_spec(f + 1, &s);
        long precision = s.precision_arg > 0 ? (long)values[s.precision_arg].integer : s.precision;
        if (strchr("sSn", s.conversion))
            report_conversion(&s, precision < 0 ? -1 : precision, values[s.position].pointer, pc);
    }
}

/* Every conversion's reads and writes, in the order printf makes them. */
static void report_arguments(const char *format, va_list args, void *pc)
{
    if (!report_in_order(format, args, pc))
        report_numbered(format, args, pc);
}

/* What printing format into `to` (at most `room` bytes: SIZE_MAX for none)
 * reads and writes, reported before the library prints it. */
static void report_print(char *to, size_t room, const char *format, va_list args, void *pc)
{
    if (!kit_sched_active() || format == NULL)
        return;
    sched_memory_range(format, strlen(format) + 1, false, pc);
    report_arguments(format, args, pc);
    va_list measure;
    va_copy(measure, args);
    int length = vsnprintf(NULL, 0, format, measure);
    va_end(measure);
    size_t written = length < 0 ? 0 : (size_t)length + 1;
    if (written > room)
        written = room;
    if (to != NULL && written > 0)
        sched_memory_range(to, written, true, pc);
}

int kit_libc_vsnprintf(char *to, size_t room, const char *format, va_list args);
int kit_libc_vsnprintf(char *to, size_t room, const char *format, va_list args)
{
    report_print(to, room, format, args, PC);
    return vsnprintf(to, room, format, args);
}

int kit_libc_snprintf(char *to, size_t room, const char *format, ...);
int kit_libc_snprintf(char *to, size_t room, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    report_print(to, room, format, args, PC);
    int length = vsnprintf(to, room, format, args);
    va_end(args);
    return length;
}

int kit_libc_vsprintf(char *to, const char *format, va_list args);
int kit_libc_vsprintf(char *to, const char *format, va_list args)
{
    report_print(to, SIZE_MAX, format, args, PC);
    return vsprintf(to, format, args);
}

int kit_libc_sprintf(char *to, const char *format, ...);
int kit_libc_sprintf(char *to, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    report_print(to, SIZE_MAX, format, args, PC);
    int length = vsprintf(to, format, args);
    va_end(args);
    return length;
}

/* ---- The checked forms _FORTIFY_SOURCE calls ------------------------------------------------ */

int __vsnprintf_chk(char *to, size_t room, int flag, size_t size, const char *format, va_list args);
int __vsprintf_chk(char *to, int flag, size_t size, const char *format, va_list args);

int kit_libc___vsnprintf_chk(char *to, size_t room, int flag, size_t size, const char *format, va_list args);
int kit_libc___vsnprintf_chk(char *to, size_t room, int flag, size_t size, const char *format, va_list args)
{
    report_print(to, room, format, args, PC);
    return __vsnprintf_chk(to, room, flag, size, format, args);
}

int kit_libc___snprintf_chk(char *to, size_t room, int flag, size_t size, const char *format, ...);
int kit_libc___snprintf_chk(char *to, size_t room, int flag, size_t size, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    report_print(to, room, format, args, PC);
    int length = __vsnprintf_chk(to, room, flag, size, format, args);
    va_end(args);
    return length;
}

int kit_libc___vsprintf_chk(char *to, int flag, size_t size, const char *format, va_list args);
int kit_libc___vsprintf_chk(char *to, int flag, size_t size, const char *format, va_list args)
{
    report_print(to, SIZE_MAX, format, args, PC);
    return __vsprintf_chk(to, flag, size, format, args);
}

int kit_libc___sprintf_chk(char *to, int flag, size_t size, const char *format, ...);
int kit_libc___sprintf_chk(char *to, int flag, size_t size, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    report_print(to, SIZE_MAX, format, args, PC);
    int length = __vsprintf_chk(to, flag, size, format, args);
    va_end(args);
    return length;
}
