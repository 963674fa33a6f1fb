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
 * A format with numbered arguments ("%1$s") is not walked: its strings'
 * reads go unreported (docs/grading.md lists what the explorer cannot see).
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

/* Skip an integer argument of this modifier. */
static void skip_integer(enum size_mod mod, va_list *args)
{
    if (mod == MOD_L)
        (void)va_arg(*args, long);
    else if (mod == MOD_LL || mod == MOD_BIG_L)
        (void)va_arg(*args, long long);
    else if (mod == MOD_J)
        (void)va_arg(*args, intmax_t);
    else if (mod == MOD_Z)
        (void)va_arg(*args, size_t);
    else if (mod == MOD_T)
        (void)va_arg(*args, ptrdiff_t);
    else
        (void)va_arg(*args, int);
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

/* What %s (or %ls: wide characters) reads of its string, reported. */
static void read_string(enum size_mod mod, long precision, va_list *args, void *pc)
{
    size_t most = precision < 0 ? (size_t)-1 : (size_t)precision;
    if (mod == MOD_L) {
        const wchar_t *wide = va_arg(*args, const wchar_t *);
        if (wide)
            sched_memory_range(wide, characters_read(wcsnlen(wide, most), precision) * sizeof(wchar_t), false, pc);
        return;
    }
    const char *text = va_arg(*args, const char *);
    size_t bytes = text ? characters_read(strnlen(text, most), precision) : 0;
    if (bytes > 0)
        sched_memory_range(text, bytes, false, pc);
}

/* One conversion from its flags on (f after the '%'): its arguments taken,
 * its reads and writes reported. Returns where the format goes on, or NULL
 * when it cannot be followed (a numbered argument, an unknown conversion). */
static const char *one_conversion(const char *f, va_list *args, void *pc)
{
    f += strspn(f, "-+ #0'I");
    if (*f == '*')
        (void)va_arg(*args, int), f++;
    f += strspn(f, "0123456789");
    long precision = -1;
    if (*f == '.') {
        f++;
        precision = *f == '*' ? (f++, va_arg(*args, int)) : strtol(f, NULL, 10);
        f += strspn(f, "0123456789");
        precision = precision < 0 ? -1 : precision;
    }
    enum size_mod mod;
    f = read_modifier(f, &mod);
    char conversion = *f;
    if (conversion == '\0' || strchr("diouxXcCeEfFgGaAsSpnm%", conversion) == NULL)
        return NULL;
    if (strchr("diouxX", conversion))
        skip_integer(mod, args);
    else if (conversion == 'c' || conversion == 'C')
        (void)(mod == MOD_L || conversion == 'C' ? (long)va_arg(*args, wint_t) : va_arg(*args, int));
    else if (strchr("eEfFgGaA", conversion))
        (void)(mod == MOD_BIG_L ? va_arg(*args, long double) : va_arg(*args, double));
    else if (conversion == 's' || conversion == 'S')
        read_string(conversion == 'S' ? MOD_L : mod, precision, args, pc);
    else if (conversion == 'p')
        (void)va_arg(*args, void *);
    else if (conversion == 'n')
        sched_memory_range(va_arg(*args, void *), count_size(mod), true, pc);
    return f + 1;
}

/* Every conversion's reads and writes, in the order printf makes them. */
static void report_arguments(const char *format, va_list args, void *pc)
{
    va_list walk;
    va_copy(walk, args);
    for (const char *f = strchr(format, '%'); f != NULL; f = strchr(f, '%')) {
        f = one_conversion(f + 1, &walk, pc);
        if (f == NULL)
            break;
    }
    va_end(walk);
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
