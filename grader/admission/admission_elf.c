/**
 * @file admission_elf.c
 * @brief Reading a submission's object file as untrusted data: every offset,
 *        size and name is checked before it is used.
 */
#define _POSIX_C_SOURCE 200809L
#include "admission.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MAX_OBJECT = 64 << 20 };

static bool inside(const struct elf_object *object, uint64_t offset, uint64_t size)
{
    return offset <= object->size && size <= object->size - offset;
}

static const char *read_whole(struct elf_object *object, const char *path)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat info;
    if (fd < 0 || fstat(fd, &info) != 0 || !S_ISREG(info.st_mode) || info.st_size > MAX_OBJECT) {
        if (fd >= 0)
            close(fd);
        return "the object file is missing, not a plain file, or too large";
    }
    object->size = (size_t)info.st_size;
    object->data = malloc(object->size + 1);
    size_t got = 0;
    for (ssize_t n = 1; object->data && got < object->size && n > 0; got += n > 0 ? (size_t)n : 0)
        n = read(fd, object->data + got, object->size - got);
    close(fd);
    return object->data && got == object->size ? NULL : "the object file could not be read";
}

static const char *check_header(struct elf_object *object)
{
    const Elf64_Ehdr *h = (const Elf64_Ehdr *)object->data;
    if (object->size < sizeof *h || memcmp(h->e_ident, ELFMAG, SELFMAG) != 0 || h->e_ident[EI_CLASS] != ELFCLASS64 ||
        h->e_ident[EI_DATA] != ELFDATA2LSB || h->e_type != ET_REL)
        return "not a 64-bit little-endian relocatable object";
    if (h->e_shentsize != sizeof(Elf64_Shdr) || h->e_shnum == 0 || h->e_shstrndx >= h->e_shnum ||
        !inside(object, h->e_shoff, (uint64_t)h->e_shnum * sizeof(Elf64_Shdr)) || h->e_shoff % 8 != 0)
        return "its section table is damaged";
    object->sections = (const Elf64_Shdr *)(object->data + h->e_shoff);
    object->section_count = h->e_shnum;
    for (size_t i = 0; i < object->section_count; i++) {
        const Elf64_Shdr *s = &object->sections[i];
        if (s->sh_type != SHT_NOBITS && !inside(object, s->sh_offset, s->sh_size))
            return "a section lies outside the file";
    }
    return NULL;
}

static const char *find_symbols(struct elf_object *object)
{
    for (size_t i = 0; i < object->section_count; i++) {
        const Elf64_Shdr *s = &object->sections[i];
        if (s->sh_type != SHT_SYMTAB)
            continue;
        if (object->symbols != NULL || s->sh_entsize != sizeof(Elf64_Sym) || s->sh_offset % 8 != 0 ||
            s->sh_link >= object->section_count || object->sections[s->sh_link].sh_type != SHT_STRTAB)
            return "its symbol table is damaged";
        object->symbols = (const Elf64_Sym *)(object->data + s->sh_offset);
        object->symbol_count = s->sh_size / sizeof(Elf64_Sym);
        object->symbol_section = i;
    }
    return object->symbols ? NULL : "it has no symbol table";
}

const char *elf_load(struct elf_object *object, const char *path)
{
    memset(object, 0, sizeof *object);
    const char *error = read_whole(object, path);
    error = error ? error : check_header(object);
    return error ? error : find_symbols(object);
}

void elf_free(struct elf_object *object)
{
    free(object->data);
    memset(object, 0, sizeof *object);
}

/* A NUL-terminated name at `offset` of string table `table`, or NULL. */
static const char *string_at(const struct elf_object *object, size_t table, uint64_t offset)
{
    if (table >= object->section_count || object->sections[table].sh_type != SHT_STRTAB)
        return NULL;
    const Elf64_Shdr *s = &object->sections[table];
    if (offset >= s->sh_size)
        return NULL;
    const char *text = (const char *)object->data + s->sh_offset + offset;
    return memchr(text, '\0', s->sh_size - offset) ? text : NULL;
}

const char *elf_section_name(const struct elf_object *object, size_t index)
{
    const Elf64_Ehdr *h = (const Elf64_Ehdr *)object->data;
    return index < object->section_count ? string_at(object, h->e_shstrndx, object->sections[index].sh_name) : NULL;
}

const char *elf_symbol_name(const struct elf_object *object, const Elf64_Sym *symbol)
{
    const char *name = string_at(object, object->sections[object->symbol_section].sh_link, symbol->st_name);
    return name ? name : "";
}

const Elf64_Rela *elf_relocations(const struct elf_object *object, size_t section, size_t *count)
{
    *count = 0;
    const Elf64_Shdr *s = section < object->section_count ? &object->sections[section] : NULL;
    if (s == NULL || s->sh_type != SHT_RELA || s->sh_entsize != sizeof(Elf64_Rela) || s->sh_offset % 8 != 0)
        return NULL;
    *count = s->sh_size / sizeof(Elf64_Rela);
    return (const Elf64_Rela *)(object->data + s->sh_offset);
}

const Elf64_Sym *elf_relocation_symbol(const struct elf_object *object, const Elf64_Rela *relocation)
{
    size_t index = ELF64_R_SYM(relocation->r_info);
    return index > 0 && index < object->symbol_count ? &object->symbols[index] : NULL;
}

const char *elf_function_at(const struct elf_object *object, size_t section, Elf64_Addr at)
{
    for (size_t i = 1; i < object->symbol_count; i++) {
        const Elf64_Sym *symbol = &object->symbols[i];
        if (ELF64_ST_TYPE(symbol->st_info) == STT_FUNC && symbol->st_shndx == section && at >= symbol->st_value &&
            at < symbol->st_value + symbol->st_size)
            return elf_symbol_name(object, symbol);
    }
    return NULL;
}
