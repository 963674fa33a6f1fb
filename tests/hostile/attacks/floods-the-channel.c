/* Attack: finds send in the C library's symbol table (from the address of
 *         qsort) and floods the judge's channels with packets that are no
 *         message, then goes on as a stub. The judge reads a private copy of
 *         each packet and bounds it: the test fails, flagged; the grader
 *         goes on.
 * Expect: flagged
 * Judged: yes
 */
#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>


static int same(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

/* The C library's first byte: the page below qsort that starts with \177ELF. */
static const unsigned char *library_base(void)
{
    uintptr_t page = (uintptr_t)(void *)qsort & ~(uintptr_t)4095;
    for (;; page -= 4096) {
        const unsigned char *p = (const unsigned char *)page;
        if (p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F')
            return p;
    }
}

static uintptr_t absolute(const unsigned char *base, uintptr_t value)
{
    return value < (uintptr_t)base ? (uintptr_t)base + value : value;
}

static void *find(const char *name)
{
    const unsigned char *base = library_base();
    const Elf64_Ehdr *elf = (const Elf64_Ehdr *)base;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + elf->e_phoff);
    const Elf64_Dyn *dyn = NULL;
    for (int i = 0; i < elf->e_phnum; i++)
        if (ph[i].p_type == PT_DYNAMIC)
            dyn = (const Elf64_Dyn *)(base + ph[i].p_vaddr);
    const Elf64_Sym *symbols = NULL;
    const char *names = NULL;
    for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
        if (dyn->d_tag == DT_SYMTAB)
            symbols = (const Elf64_Sym *)absolute(base, dyn->d_un.d_ptr);
        if (dyn->d_tag == DT_STRTAB)
            names = (const char *)absolute(base, dyn->d_un.d_ptr);
    }
    for (const Elf64_Sym *s = symbols; s && (const char *)s < names; s++)
        if (s->st_value != 0 && same(names + s->st_name, name))
            return (void *)(base + s->st_value);
    return NULL;
}

typedef long (*send_fn)(int, const void *, size_t, int);

int msgq_create(msgq_t **out, size_t capacity)
{
    send_fn post = (send_fn)find("send");
    static char junk[70000];
    memset(junk, 0x41, sizeof junk);
    for (int round = 0; post && round < 64; round++)
        for (int fd = 30; fd < 100; fd++)
            post(fd, junk, (size_t)(round * 997 % (int)sizeof junk), 0x40 /* MSG_DONTWAIT */);
    (void)out, (void)capacity;
    return ENOSYS;
}
