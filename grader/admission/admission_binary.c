/**
 * @file admission_binary.c
 * @brief A linked test program, read as untrusted data: no memory both
 *        writable and executable, no executable stack.
 *
 * Test programs and chapter programs link with `-z noexecstack -z
 * separate-code` (the Makefile), and admission has refused every object
 * whose sections could make writable or read-only data executable
 * (admission_code.c). This is the last look, at what the confined link made
 * of a submission: a program with a segment both writable and executable,
 * or an executable stack (a PT_GNU_STACK with the execute flag, or none), is
 * refused - whatever path led there.
 */
#define _POSIX_C_SOURCE 200809L
#include "admission.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MAX_HEADERS = 256 };

/* The ELF header and the program headers of `path`, read with every offset
 * checked; an error text or NULL. */
static const char *read_program_headers(const char *path, Elf64_Ehdr *header, Elf64_Phdr *headers, size_t *count)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat info;
    const char *error = NULL;
    if (fd < 0 || fstat(fd, &info) != 0 || !S_ISREG(info.st_mode))
        error = "it is missing or not a plain file";
    else if (pread(fd, header, sizeof *header, 0) != (ssize_t)sizeof *header ||
             memcmp(header->e_ident, ELFMAG, SELFMAG) != 0 || header->e_ident[EI_CLASS] != ELFCLASS64 ||
             (header->e_type != ET_EXEC && header->e_type != ET_DYN))
        error = "it is not a 64-bit program";
    else if (header->e_phentsize != sizeof(Elf64_Phdr) || header->e_phnum == 0 || header->e_phnum > MAX_HEADERS ||
             header->e_phoff > (uint64_t)info.st_size ||
             (uint64_t)header->e_phnum * sizeof(Elf64_Phdr) > (uint64_t)info.st_size - header->e_phoff)
        error = "its program headers are damaged";
    else if (pread(fd, headers, header->e_phnum * sizeof(Elf64_Phdr), (off_t)header->e_phoff) !=
             (ssize_t)(header->e_phnum * sizeof(Elf64_Phdr)))
        error = "its program headers cannot be read";
    *count = error ? 0 : header->e_phnum;
    if (fd >= 0)
        close(fd);
    return error;
}

void admit_check_binary(const char *path, const char *display)
{
    Elf64_Ehdr header;
    static Elf64_Phdr headers[MAX_HEADERS];
    size_t count;
    const char *error = read_program_headers(path, &header, headers, &count);
    if (error) {
        admit_finding("%s: the linked test program cannot be checked: %s\n", display, error);
        return;
    }
    bool stack_marked = false;
    for (size_t i = 0; i < count; i++) {
        const Elf64_Phdr *segment = &headers[i];
        if (segment->p_type == PT_LOAD && (segment->p_flags & PF_W) && (segment->p_flags & PF_X))
            admit_finding("%s: links into a program with memory both writable and executable (segment %zu, at "
                          "0x%llx): a submission's code runs from read-only memory only\n",
                          display, i, (unsigned long long)segment->p_vaddr);
        if (segment->p_type == PT_GNU_STACK) {
            stack_marked = true;
            if (segment->p_flags & PF_X)
                admit_finding("%s: links into a program whose stack is executable: a submission's code runs from "
                              "read-only memory only\n", display);
        }
    }
    if (!stack_marked)
        admit_finding("%s: links into a program whose stack is executable (it has no PT_GNU_STACK)\n", display);
}
