/* Attack: rewrites the test program's table of library addresses from
 *         plain C, with no call admission refuses: the table's first word
 *         is where the program's dynamic section lies; from there the
 *         relocations of the library calls name each slot, and the one of
 *         cmocka's _fail (and print_error) is pointed at a function that
 *         does nothing - so that a failed check, an explored schedule's
 *         above all, would pass. Full RELRO makes the table read-only
 *         before main: the write crashes.
 * Expect: zero
 */
#include <elf.h>
#include <stddef.h>
#include <stdint.h>

extern char _GLOBAL_OFFSET_TABLE_[];

static void nothing(void)
{
}

static int same(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

/* The dynamic section lies below the table, and its DT_PLTGOT entry holds
 * the table's own address (the loader relocated it): search back for it;
 * the entries that matter here sit among the plain tags around it. */
static const Elf64_Dyn *find_dynamic(void)
{
    const uintptr_t got = (uintptr_t)_GLOBAL_OFFSET_TABLE_;
    for (const uintptr_t *word = (const uintptr_t *)got - 2; (uintptr_t)word > got - 8192; word--)
        if (word[0] == DT_PLTGOT && word[1] == got) {
            const Elf64_Dyn *d = (const Elf64_Dyn *)word;
            while (d[-1].d_tag > 0 && d[-1].d_tag < 64) /* back over the entries with plain tags */
                d--;
            return d;
        }
    return NULL;
}

static uintptr_t entry(const Elf64_Dyn *d, Elf64_Sxword tag)
{
    for (; d->d_tag != DT_NULL; d++)
        if (d->d_tag == tag)
            return d->d_un.d_val;
    return 0;
}

static void point_elsewhere(void)
{
    const Elf64_Dyn *dyn = find_dynamic();
    if (dyn == NULL)
        return;
    const Elf64_Rela *rel = (const Elf64_Rela *)entry(dyn, DT_JMPREL);
    const Elf64_Sym *sym = (const Elf64_Sym *)entry(dyn, DT_SYMTAB);
    const char *str = (const char *)entry(dyn, DT_STRTAB);
    if (rel == NULL || sym == NULL || str == NULL)
        return;
    /* The first call's slot is the table's fourth word: where the program was loaded follows. */
    uintptr_t base = (uintptr_t)_GLOBAL_OFFSET_TABLE_ + 3 * sizeof(void *) - rel[0].r_offset;
    for (size_t i = 0; i < entry(dyn, DT_PLTRELSZ) / sizeof *rel; i++) {
        const char *name = str + sym[ELF64_R_SYM(rel[i].r_info)].st_name;
        if (same(name, "_fail") || same(name, "print_error"))
            *(void (**)(void))(base + rel[i].r_offset) = nothing;
    }
}

int msgq_create(msgq_t **out, size_t capacity)
{
    point_elsewhere();
    (void)out, (void)capacity;
    return ENOSYS;
}
