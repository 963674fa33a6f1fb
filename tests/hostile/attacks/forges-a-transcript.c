/* Attack: the reference queue, whose msgq_create, once an exploration has
 *         made it a few hundred times (only an exploration's body does),
 *         slips a forged transcript into the batches the subject sends the
 *         judge: it finds send in the C library's symbol table and writes a
 *         well-formed batch whose one entry answers the test's main thread
 *         ("created, here is the queue"). The judge replays its own copy of
 *         the body against each entry and meets a request where the forgery
 *         put an answer, or an answer of the wrong shape: the test fails,
 *         flagged - every line of the chapter scores 0, though the queue is
 *         correct.
 * Base: solution
 * Expect: flagged
 * Judged: yes
 */
#include <elf.h>
#include <stdint.h>
#include <stdlib.h>


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

static void hostile_hook(void)
{
    static int calls;
    if (++calls != 300)
        return;
    /* kit_wire_t's head: kind, op, nargs, nbytes, flags, unused; clock[2];
     * arg[10]; then the batch's one entry: its head, and one word */
    struct {
        uint32_t kind, op, nargs, nbytes, flags, unused;
        uint64_t clock[2], arg[10];
        uint32_t channel, answer, entry_kind, entry_op, entry_nargs, entry_nbytes, entry_flags, entry_unused;
        uint64_t word;
    } batch = { 37, 0, 0, 40, 0, 0, { 0, 0 }, { 0 }, 0, 1, 32, 0, 1, 0, 0, 0, 0 };
    send_fn post = (send_fn)find("send");
    if (post)
        post(40, &batch, sizeof batch, 0);
}
