/**
 * @file kit_sched_libc.c
 * @brief The C library's memory and string functions, as the code under test
 *        calls them on a schedule: what each reads and writes reaches the
 *        scheduler's detector (kit_sched_memory.c), then the library does it.
 *
 * The C library is not compiled with the instrumentation: a memcpy, memset or
 * strcpy the code under test calls would copy shared memory unseen, and a
 * copy made after the unlock would never be a race. So the objects of the code
 * under test - and only they, not the kit's nor the tests' - call these
 * instead: the build compiles them without the compiler's own expansion of
 * these functions (-fno-builtin-NAME, so that a memcpy of a constant size is
 * a call too) and renames each call of NAME to kit_libc_NAME (objcopy
 * --redefine-sym: LIBC_ACCESSES in the Makefile). Each function here reports
 * the bytes the library function will read, then those it will write, as one
 * range access each at the caller's line (sched_memory_range: one switch
 * point at most, not one check per byte), and calls it. On real threads,
 * and in every build with a sanitizer (whose runtime intercepts these
 * functions itself), they are the library's functions and nothing more.
 *
 * A string's length is the library's own answer, read before the call: on a
 * schedule one thread runs at a time, so it is what the call then sees.
 * (kit_sched_printf.c follows snprintf and sprintf, kit_sched_scan.c
 * sscanf, kit_sched_parse.c the tokens, numbers and sorting.)
 */
#define _GNU_SOURCE
#include "kit_sched_internal.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#define PC __builtin_return_address(0)

/* The caller's reads and writes of a block, on a schedule. */
static void reads(const void *block, size_t size, void *pc)
{
    if (kit_sched_active())
        sched_memory_range(block, size, false, pc);
}

static void writes(void *block, size_t size, void *pc)
{
    if (kit_sched_active())
        sched_memory_range(block, size, true, pc);
}

/* The bytes a string function reads of s, up to at most `most`: its
 * characters and the terminating zero. */
static size_t string_bytes(const char *s, size_t most)
{
    size_t length = strnlen(s, most);
    return length < most ? length + 1 : most;
}

/* The bytes two strings are compared over, up to at most `most`: up to the
 * first that differs (with case, or without) or ends both, included. */
static size_t compared_bytes(const char *a, const char *b, size_t most, bool fold_case)
{
    size_t i = 0;
    while (i < most) {
        unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
        bool same = fold_case ? tolower(x) == tolower(y) : x == y;
        i++;
        if (!same || x == '\0')
            break;
    }
    return i;
}

/* What comparing two strings reads of each, at the caller's line. */
static void reads_compared(const char *a, const char *b, size_t most, bool fold_case, void *pc)
{
    size_t compared = compared_bytes(a, b, most, fold_case);
    reads(a, compared, pc);
    reads(b, compared, pc);
}

/* ---- Blocks ------------------------------------------------------------------------------ */

void *kit_libc_memcpy(void *to, const void *from, size_t size);
void *kit_libc_memcpy(void *to, const void *from, size_t size)
{
    reads(from, size, PC);
    writes(to, size, PC);
    return memcpy(to, from, size);
}

void *kit_libc_mempcpy(void *to, const void *from, size_t size);
void *kit_libc_mempcpy(void *to, const void *from, size_t size)
{
    reads(from, size, PC);
    writes(to, size, PC);
    return mempcpy(to, from, size);
}

void *kit_libc_memmove(void *to, const void *from, size_t size);
void *kit_libc_memmove(void *to, const void *from, size_t size)
{
    reads(from, size, PC);
    writes(to, size, PC);
    return memmove(to, from, size);
}

void *kit_libc_memccpy(void *to, const void *from, int byte, size_t size);
void *kit_libc_memccpy(void *to, const void *from, int byte, size_t size)
{
    const char *found = memchr(from, byte, size);
    size_t copied = found != NULL ? (size_t)(found - (const char *)from) + 1 : size;
    reads(from, copied, PC);
    writes(to, copied, PC);
    return memccpy(to, from, byte, size);
}

void *kit_libc_memset(void *to, int byte, size_t size);
void *kit_libc_memset(void *to, int byte, size_t size)
{
    writes(to, size, PC);
    return memset(to, byte, size);
}

void kit_libc_explicit_bzero(void *to, size_t size);
void kit_libc_explicit_bzero(void *to, size_t size)
{
    writes(to, size, PC);
    explicit_bzero(to, size);
}

/* Every byte of both, as ThreadSanitizer counts a memcmp: which bytes the
 * library reads before it knows the answer is its own affair. */
int kit_libc_memcmp(const void *a, const void *b, size_t size);
int kit_libc_memcmp(const void *a, const void *b, size_t size)
{
    reads(a, size, PC);
    reads(b, size, PC);
    return memcmp(a, b, size);
}

void *kit_libc_memchr(const void *block, int byte, size_t size);
void *kit_libc_memchr(const void *block, int byte, size_t size)
{
    void *found = memchr(block, byte, size);
    reads(block, found != NULL ? (size_t)((char *)found - (const char *)block) + 1 : size, PC);
    return found;
}

void *kit_libc_memrchr(const void *block, int byte, size_t size);
void *kit_libc_memrchr(const void *block, int byte, size_t size)
{
    void *found = memrchr(block, byte, size);
    const char *from = found != NULL ? found : block;
    reads(from, size - (size_t)(from - (const char *)block), PC);
    return found;
}

/* ---- Strings: lengths, comparisons, searches ----------------------------------------------- */

size_t kit_libc_strlen(const char *s);
size_t kit_libc_strlen(const char *s)
{
    size_t length = strlen(s);
    reads(s, length + 1, PC);
    return length;
}

size_t kit_libc_strnlen(const char *s, size_t most);
size_t kit_libc_strnlen(const char *s, size_t most)
{
    reads(s, string_bytes(s, most), PC);
    return strnlen(s, most);
}

int kit_libc_strcmp(const char *a, const char *b);
int kit_libc_strcmp(const char *a, const char *b)
{
    reads_compared(a, b, SIZE_MAX, false, PC);
    return strcmp(a, b);
}

int kit_libc_strncmp(const char *a, const char *b, size_t most);
int kit_libc_strncmp(const char *a, const char *b, size_t most)
{
    reads_compared(a, b, most, false, PC);
    return strncmp(a, b, most);
}

int kit_libc_strcasecmp(const char *a, const char *b);
int kit_libc_strcasecmp(const char *a, const char *b)
{
    reads_compared(a, b, SIZE_MAX, true, PC);
    return strcasecmp(a, b);
}

int kit_libc_strncasecmp(const char *a, const char *b, size_t most);
int kit_libc_strncasecmp(const char *a, const char *b, size_t most)
{
    reads_compared(a, b, most, true, PC);
    return strncasecmp(a, b, most);
}

char *kit_libc_strchr(const char *s, int c);
char *kit_libc_strchr(const char *s, int c)
{
    char *found = strchr(s, c);
    reads(s, found != NULL ? (size_t)(found - s) + 1 : strlen(s) + 1, PC);
    return found;
}

char *kit_libc_strchrnul(const char *s, int c);
char *kit_libc_strchrnul(const char *s, int c)
{
    char *found = strchrnul(s, c);
    reads(s, (size_t)(found - s) + 1, PC);
    return found;
}

char *kit_libc_strrchr(const char *s, int c);
char *kit_libc_strrchr(const char *s, int c)
{
    reads(s, strlen(s) + 1, PC);
    return strrchr(s, c);
}

char *kit_libc_strstr(const char *haystack, const char *needle);
char *kit_libc_strstr(const char *haystack, const char *needle)
{
    char *found = strstr(haystack, needle);
    size_t length = strlen(needle);
    reads(needle, length + 1, PC);
    reads(haystack, found != NULL ? (size_t)(found - haystack) + length : strlen(haystack) + 1, PC);
    return found;
}

/* What strspn, strcspn and strpbrk read: s up to the byte that stopped them
 * (`stop`; NULL: none did, up to its terminating zero), and the whole of `set`. */
static void reads_spanned(const char *s, const char *stop, const char *set, void *pc)
{
    if (!kit_sched_active())
        return;
    if (stop == NULL)
        stop = s + strlen(s);
    reads(set, strlen(set) + 1, pc);
    reads(s, (size_t)(stop - s) + 1, pc);
}

size_t kit_libc_strspn(const char *s, const char *accept);
size_t kit_libc_strspn(const char *s, const char *accept)
{
    size_t length = strspn(s, accept);
    reads_spanned(s, s + length, accept, PC);
    return length;
}

size_t kit_libc_strcspn(const char *s, const char *reject);
size_t kit_libc_strcspn(const char *s, const char *reject)
{
    size_t length = strcspn(s, reject);
    reads_spanned(s, s + length, reject, PC);
    return length;
}

char *kit_libc_strpbrk(const char *s, const char *accept);
char *kit_libc_strpbrk(const char *s, const char *accept)
{
    char *found = strpbrk(s, accept);
    reads_spanned(s, found, accept, PC);
    return found;
}

void *kit_libc_memmem(const void *haystack, size_t haystack_size, const void *needle, size_t needle_size);
void *kit_libc_memmem(const void *haystack, size_t haystack_size, const void *needle, size_t needle_size)
{
    void *found = memmem(haystack, haystack_size, needle, needle_size);
    reads(needle, needle_size, PC);
    reads(haystack, found != NULL ? (size_t)((char *)found - (const char *)haystack) + needle_size : haystack_size,
          PC);
    return found;
}

/* ---- Strings: copies ------------------------------------------------------------------------ */

char *kit_libc_strcpy(char *to, const char *from);
char *kit_libc_strcpy(char *to, const char *from)
{
    size_t size = strlen(from) + 1;
    reads(from, size, PC);
    writes(to, size, PC);
    return strcpy(to, from);
}

char *kit_libc_stpcpy(char *to, const char *from);
char *kit_libc_stpcpy(char *to, const char *from)
{
    size_t size = strlen(from) + 1;
    reads(from, size, PC);
    writes(to, size, PC);
    return stpcpy(to, from);
}

/* strncpy and stpncpy write all `most` bytes: the rest with zeros. */
char *kit_libc_strncpy(char *to, const char *from, size_t most);
char *kit_libc_strncpy(char *to, const char *from, size_t most)
{
    reads(from, string_bytes(from, most), PC);
    writes(to, most, PC);
    return strncpy(to, from, most);
}

char *kit_libc_stpncpy(char *to, const char *from, size_t most);
char *kit_libc_stpncpy(char *to, const char *from, size_t most)
{
    reads(from, string_bytes(from, most), PC);
    writes(to, most, PC);
    return stpncpy(to, from, most);
}

/* strcat and strncat read `to` up to its end, and write from there on. */
char *kit_libc_strcat(char *to, const char *from);
char *kit_libc_strcat(char *to, const char *from)
{
    size_t end = strlen(to), size = strlen(from) + 1;
    reads(to, end + 1, PC);
    reads(from, size, PC);
    writes(to + end, size, PC);
    return strcat(to, from);
}

char *kit_libc_strncat(char *to, const char *from, size_t most);
char *kit_libc_strncat(char *to, const char *from, size_t most)
{
    size_t end = strlen(to), length = strnlen(from, most);
    reads(to, end + 1, PC);
    reads(from, string_bytes(from, most), PC);
    writes(to + end, length + 1, PC);
    return strncat(to, from, most);
}

/* ---- The checked forms _FORTIFY_SOURCE calls ------------------------------------------------ */

void *__memcpy_chk(void *to, const void *from, size_t size, size_t room);
void *__mempcpy_chk(void *to, const void *from, size_t size, size_t room);
void *__memmove_chk(void *to, const void *from, size_t size, size_t room);
void *__memset_chk(void *to, int byte, size_t size, size_t room);
char *__strcpy_chk(char *to, const char *from, size_t room);
char *__stpcpy_chk(char *to, const char *from, size_t room);
char *__strncpy_chk(char *to, const char *from, size_t most, size_t room);
char *__strcat_chk(char *to, const char *from, size_t room);

void *kit_libc___memcpy_chk(void *to, const void *from, size_t size, size_t room);
void *kit_libc___memcpy_chk(void *to, const void *from, size_t size, size_t room)
{
    reads(from, size, PC);
    writes(to, size, PC);
    return __memcpy_chk(to, from, size, room);
}

void *kit_libc___mempcpy_chk(void *to, const void *from, size_t size, size_t room);
void *kit_libc___mempcpy_chk(void *to, const void *from, size_t size, size_t room)
{
    reads(from, size, PC);
    writes(to, size, PC);
    return __mempcpy_chk(to, from, size, room);
}

void *kit_libc___memmove_chk(void *to, const void *from, size_t size, size_t room);
void *kit_libc___memmove_chk(void *to, const void *from, size_t size, size_t room)
{
    reads(from, size, PC);
    writes(to, size, PC);
    return __memmove_chk(to, from, size, room);
}

void *kit_libc___memset_chk(void *to, int byte, size_t size, size_t room);
void *kit_libc___memset_chk(void *to, int byte, size_t size, size_t room)
{
    writes(to, size, PC);
    return __memset_chk(to, byte, size, room);
}

char *kit_libc___strcpy_chk(char *to, const char *from, size_t room);
char *kit_libc___strcpy_chk(char *to, const char *from, size_t room)
{
    size_t size = strlen(from) + 1;
    reads(from, size, PC);
    writes(to, size, PC);
    return __strcpy_chk(to, from, room);
}

char *kit_libc___stpcpy_chk(char *to, const char *from, size_t room);
char *kit_libc___stpcpy_chk(char *to, const char *from, size_t room)
{
    size_t size = strlen(from) + 1;
    reads(from, size, PC);
    writes(to, size, PC);
    return __stpcpy_chk(to, from, room);
}

char *kit_libc___strncpy_chk(char *to, const char *from, size_t most, size_t room);
char *kit_libc___strncpy_chk(char *to, const char *from, size_t most, size_t room)
{
    reads(from, string_bytes(from, most), PC);
    writes(to, most, PC);
    return __strncpy_chk(to, from, most, room);
}

char *kit_libc___strcat_chk(char *to, const char *from, size_t room);
char *kit_libc___strcat_chk(char *to, const char *from, size_t room)
{
    size_t end = strlen(to), size = strlen(from) + 1;
    reads(to, end + 1, PC);
    reads(from, size, PC);
    writes(to + end, size, PC);
    return __strcat_chk(to, from, room);
}
