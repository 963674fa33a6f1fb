/**
 * @file admission_code.c
 * @brief Executable bytes: in a submission's object, only its functions'.
 *
 * What the linker places in executable memory comes from the sections an
 * object marks executable, and from those it names `.text` or `.text.*`
 * whatever their flags (the default linker script gathers them into the
 * program's .text). So, in each object:
 * - a section is executable only if it is named `.text` or `.text.*`, and
 *   every section so named is exactly allocated and executable - not
 *   writable, nothing else;
 * - every byte of such a section lies inside a function symbol defined there,
 *   but alignment padding between and after functions: at most 15 bytes of
 *   no-operation instructions, int3 or zero;
 * - no data symbol (an object, or a symbol without type) points into one, and
 *   every function lies in one.
 * A byte array placed in `.text.x`, a function placed in `.data.x` or
 * `.rodata.x` (which would make writable or read-only data executable) are
 * refused here, whatever the source looked like.
 */
#define _POSIX_C_SOURCE 200809L
#include "admission.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_PADDING = 15 };

static bool named_code(const char *name)
{
    return name && (strcmp(name, ".text") == 0 || fnmatch(".text.*", name, 0) == 0);
}

/* Flags a code section must have, exactly. (SHF_GNU_RETAIN asks a linker
 * that collects unused sections to keep this one - clang sets it on
 * ThreadSanitizer's constructor - and says nothing of the memory.) */
enum { GNU_RETAIN = 1 << 21 };

static bool code_flags(Elf64_Xword flags)
{
    return (flags & ~(Elf64_Xword)GNU_RETAIN) == (SHF_ALLOC | SHF_EXECINSTR);
}

/* The length of the no-operation instruction at bytes[0..length), or 0:
 * nop, the multi-byte nops (0f 1f /0 with a zero displacement), any of them
 * after operand-size (66) and cs (2e) prefixes, as compilers pad; int3; a
 * zero byte. */
static size_t padding_at(const unsigned char *bytes, size_t length)
{
    if (bytes[0] == 0x90 || bytes[0] == 0xcc || bytes[0] == 0x00)
        return 1;
    size_t i = 0;
    while (i < length && bytes[i] == 0x66)
        i++;
    if (i < length && bytes[i] == 0x2e)
        i++;
    if (i < length && bytes[i] == 0x90 && i > 0)
        return i + 1;
    if (i + 2 >= length || bytes[i] != 0x0f || bytes[i + 1] != 0x1f)
        return 0;
    static const struct { unsigned char modrm; size_t zeros; } forms[] = {
        { 0x00, 0 }, { 0x40, 1 }, { 0x44, 2 }, { 0x80, 4 }, { 0x84, 5 } };
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        if (bytes[i + 2] != forms[f].modrm || i + 3 + forms[f].zeros > length)
            continue;
        for (size_t z = 0; z < forms[f].zeros; z++)
            if (bytes[i + 3 + z] != 0x00)
                return 0;
        return i + 3 + forms[f].zeros;
    }
    return 0;
}

static bool only_padding(const unsigned char *bytes, size_t length)
{
    if (length > MAX_PADDING)
        return false;
    for (size_t at = 0, n; at < length; at += n)
        if ((n = padding_at(bytes + at, length - at)) == 0)
            return false;
    return true;
}

struct span {
    Elf64_Addr from, to;
};

static int by_start(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    return x->from < y->from ? -1 : x->from > y->from;
}

/* The first byte of code section `index` outside its functions and padding,
 * or the section's size when there is none. */
static Elf64_Addr first_stray_byte(const struct elf_object *object, size_t index)
{
    const Elf64_Shdr *section = &object->sections[index];
    struct span *spans = calloc(object->symbol_count + 1, sizeof *spans);
    size_t count = 0;
    for (size_t s = 1; spans && s < object->symbol_count; s++) {
        const Elf64_Sym *symbol = &object->symbols[s];
        if (symbol->st_shndx == index && ELF64_ST_TYPE(symbol->st_info) == STT_FUNC && symbol->st_size > 0)
            spans[count++] = (struct span){ symbol->st_value, symbol->st_value + symbol->st_size };
    }
    if (spans == NULL)
        return 0;
    qsort(spans, count, sizeof *spans, by_start);
    const unsigned char *bytes = object->data + section->sh_offset;
    Elf64_Addr covered = 0, stray = section->sh_size;
    for (size_t i = 0; i <= count && stray == section->sh_size; i++) {
        Elf64_Addr next = i < count && spans[i].from < section->sh_size ? spans[i].from : section->sh_size;
        if (next > covered && !only_padding(bytes + covered, next - covered))
            stray = covered;
        if (i < count && spans[i].to > covered)
            covered = spans[i].to;
    }
    free(spans);
    return stray;
}

/* Where to point the student: the source line that named the section, if
 * the text shows one, else the object's section. */
static void report(const struct preprocessed *source, const char *display, const char *name, const char *what)
{
    char where[512];
    preprocessed_locate(source, "section", where, sizeof where);
    if (where[0] == '\0')
        preprocessed_locate(source, "__section__", where, sizeof where);
    admit_finding("%s: %s (section %s): a submission's executable code is its functions, compiled from C\n",
                  where[0] ? where : display, what, name ? name : "(unnamed)");
}

static void check_code_section(const struct elf_object *object, size_t index, const struct preprocessed *source,
                               const char *display)
{
    const Elf64_Shdr *section = &object->sections[index];
    const char *name = elf_section_name(object, index);
    if (!named_code(name) && !(section->sh_flags & SHF_EXECINSTR))
        return;
    if (!named_code(name)) {
        report(source, display, name, "makes a section executable that is not code");
    } else if (!code_flags(section->sh_flags) || section->sh_type != SHT_PROGBITS) {
        report(source, display, name, "names a section as code that is not plain code (writable, not executable, "
                                      "or not in the file)");
    } else {
        Elf64_Addr stray = first_stray_byte(object, index);
        if (stray < section->sh_size) {
            char what[160];
            snprintf(what, sizeof what, "puts bytes in executable memory outside its functions (at offset %llu)",
                     (unsigned long long)stray);
            report(source, display, name, what);
        }
    }
}

/* Symbols: a function lies in code, and nothing but a function points into code. */
static void check_code_symbols(const struct elf_object *object, const struct preprocessed *source,
                               const char *display)
{
    for (size_t s = 1; s < object->symbol_count; s++) {
        const Elf64_Sym *symbol = &object->symbols[s];
        int type = ELF64_ST_TYPE(symbol->st_info);
        if (symbol->st_shndx == SHN_UNDEF || symbol->st_shndx >= object->section_count)
            continue;
        const Elf64_Shdr *section = &object->sections[symbol->st_shndx];
        const char *name = elf_section_name(object, symbol->st_shndx);
        bool code = named_code(name) && code_flags(section->sh_flags);
        char what[300];
        if (type == STT_FUNC && !code) {
            snprintf(what, sizeof what, "puts its function %s outside the code", elf_symbol_name(object, symbol));
            report(source, display, name, what);
        } else if ((type == STT_OBJECT || type == STT_NOTYPE || type == STT_TLS || type == STT_COMMON) && code &&
                   elf_symbol_name(object, symbol)[0] != '\0') {
            snprintf(what, sizeof what, "puts its data %s in executable memory", elf_symbol_name(object, symbol));
            report(source, display, name, what);
        }
    }
}

void admit_check_code(const struct elf_object *object, const struct preprocessed *source, const char *display)
{
    for (size_t i = 1; i < object->section_count; i++)
        check_code_section(object, i, source, display);
    check_code_symbols(object, source, display);
}
