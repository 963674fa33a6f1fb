/**
 * @file admission_object.c
 * @brief The object side of admission: which sections, which definitions,
 *        which imports a submission's object may have.
 */
#define _POSIX_C_SOURCE 200809L
#include "admission.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- sections ---------------------------------------------------------------- */

/* Code, data, the compiler's notes and debug information: nothing the
 * loader runs by itself (.init_array, .ctors, .preinit_array, ...). */
static bool allowed_section(const char *name)
{
    static const char *const patterns[] = {
        "", ".text", ".text.*", ".data", ".data.*", ".bss", ".bss.*", ".rodata", ".rodata.*", ".tdata", ".tdata.*",
        ".tbss", ".tbss.*", ".comment", ".note.GNU-stack", ".note.gnu.property", ".eh_frame", ".debug_*",
        ".symtab", ".strtab", ".shstrtab", ".group", ".llvm_addrsig", ".rela.*", NULL };
    for (int i = 0; patterns[i]; i++)
        if (fnmatch(patterns[i], name, 0) == 0)
            return true;
    return false;
}

static bool runs_at_load(const Elf64_Shdr *section, const char *name)
{
    return section->sh_type == SHT_INIT_ARRAY || section->sh_type == SHT_FINI_ARRAY ||
           section->sh_type == SHT_PREINIT_ARRAY || fnmatch(".init_array*", name, 0) == 0 ||
           fnmatch(".fini_array*", name, 0) == 0 || fnmatch(".ctors*", name, 0) == 0 ||
           fnmatch(".dtors*", name, 0) == 0 || fnmatch(".preinit_array*", name, 0) == 0;
}

/* The section a relocation section applies to, by its own name (.rela.X). */
static const char *relocated_name(const char *name)
{
    return strncmp(name, ".rela", 5) == 0 ? name + 5 : name;
}

/* What the instrumentation's constructor may call: __tsan_init; and in the
 * explorer's build (sched), whose -fsanitize-coverage=trace-pc instruments
 * that constructor too, the entry and exit and block hooks around it. */
static bool instrumentation_call(const char *name, bool sched)
{
    return strcmp(name, "__tsan_init") == 0 ||
           (sched && (strcmp(name, "__tsan_func_entry") == 0 || strcmp(name, "__tsan_func_exit") == 0 ||
                      strcmp(name, "__sanitizer_cov_trace_pc") == 0));
}

/* The code of a section from offset @p from to its end is a few bytes, and
 * every relocation in it refers to __tsan_init (and, with @p sched, the
 * hooks of instrumentation_call) alone. */
static bool calls_only_tsan_init(const struct elf_object *object, size_t target, Elf64_Addr from, bool sched)
{
    bool seen = false;
    for (size_t i = 0; i < object->section_count; i++) {
        if (object->sections[i].sh_type != SHT_RELA || object->sections[i].sh_info != target)
            continue;
        size_t count;
        const Elf64_Rela *relocations = elf_relocations(object, i, &count);
        for (size_t r = 0; r < count; r++) {
            if (relocations[r].r_offset < from)
                continue;
            const Elf64_Sym *symbol = elf_relocation_symbol(object, &relocations[r]);
            if (symbol == NULL || !instrumentation_call(elf_symbol_name(object, symbol), sched))
                return false;
            seen = seen || strcmp(elf_symbol_name(object, symbol), "__tsan_init") == 0;
        }
    }
    Elf64_Xword size = object->sections[target].sh_size;
    return seen && from <= size && size - from <= (sched ? 48 : 32);
}

/* ThreadSanitizer's instrumentation adds one constructor of its own to each
 * object: a few bytes that call __tsan_init - in a section of its own when
 * optimised, at the end of .text without optimisation (make debug). Allowed
 * in those builds, and nothing else that runs at load. */
static bool instrumentation_constructor(const struct elf_object *object, const struct admit_rules *rules, size_t index)
{
    const Elf64_Shdr *section = &object->sections[index];
    if (strcmp(rules->variant, "tsan") != 0 && strcmp(rules->variant, "sched") != 0)
        return false;
    if (section->sh_type != SHT_INIT_ARRAY || section->sh_size != 8)
        return false;
    for (size_t i = 0; i < object->section_count; i++) {
        if (object->sections[i].sh_type != SHT_RELA || object->sections[i].sh_info != index)
            continue;
        size_t count;
        const Elf64_Rela *relocations = elf_relocations(object, i, &count);
        const Elf64_Sym *symbol = count == 1 ? elf_relocation_symbol(object, &relocations[0]) : NULL;
        Elf64_Addr from = symbol && ELF64_ST_TYPE(symbol->st_info) == STT_SECTION ? (Elf64_Addr)relocations[0].r_addend
                                                                                  : 0;
        return symbol && symbol->st_shndx < object->section_count &&
               calls_only_tsan_init(object, symbol->st_shndx, from, strcmp(rules->variant, "sched") == 0);
    }
    return false;
}

static void check_sections(const struct elf_object *object, const struct admit_rules *rules,
                           const struct preprocessed *source, const char *display)
{
    int constructors = 0;
    for (size_t i = 1; i < object->section_count; i++) {
        const char *name = elf_section_name(object, i);
        const char *shown = name ? name : "(unnamed)";
        char where[512];
        const Elf64_Shdr *section = &object->sections[i];
        const char *target = section->sh_type == SHT_RELA ? elf_section_name(object, section->sh_info) : NULL;
        if (target && runs_at_load(&object->sections[section->sh_info], target))
            continue; /* the section it relocates is judged itself */
        if (name && runs_at_load(section, name)) {
            if (instrumentation_constructor(object, rules, i) && ++constructors == 1)
                continue;
            preprocessed_locate(source, "constructor", where, sizeof where);
            admit_finding("%s: has code that runs by itself when the program loads (%s: a constructor or a "
                         "destructor): a submission's code runs only when the tests call it\n",
                         where[0] ? where : display, shown);
        } else if (name == NULL || !allowed_section(relocated_name(name))) {
            admit_finding("%s: puts code or data in a section the grader does not admit (%s)\n", display, shown);
        }
    }
}

/* ---- symbols ------------------------------------------------------------------- */

static bool matches_any(const char *name, const char *patterns)
{
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", patterns ? patterns : "");
    for (char *save = NULL, *p = strtok_r(copy, " \t\n", &save); p; p = strtok_r(NULL, " \t\n", &save))
        if (fnmatch(p, name, 0) == 0)
            return true;
    return false;
}

/* imports.allow: one pattern a line, # starts a comment. */
static bool in_allow_file(const char *name, const char *path)
{
    FILE *in = path ? fopen(path, "r") : NULL;
    char line[512];
    bool found = false;
    while (in && !found && fgets(line, sizeof line, in)) {
        line[strcspn(line, "#")] = '\0';
        found = matches_any(name, line);
    }
    if (in)
        fclose(in);
    return found;
}

static bool may_import(const char *name, const struct admit_rules *rules)
{
    bool instrumented = strcmp(rules->variant, "tsan") == 0 || strcmp(rules->variant, "sched") == 0;
    if (instrumented && strncmp(name, "__tsan_", 7) == 0)
        return true;
    if (strcmp(rules->variant, "sched") == 0 && strcmp(name, "__sanitizer_cov_trace_pc") == 0)
        return true; /* the explorer's block hook (-fsanitize-coverage=trace-pc) */
    return matches_any(name, rules->defines) || matches_any(name, rules->imports) ||
           in_allow_file(name, rules->allow_file);
}

/* Why a well-known call is refused, in words; NULL for the rest. */
static const char *why_refused(const char *name)
{
    static const struct { const char *patterns, *why; } reasons[] = {
        { "read write open open64 openat creat close fopen fopen64 fdopen freopen popen pclose dup dup2 dup3 pipe "
          "pipe2 splice tee vmsplice sendfile fcntl ioctl lseek pread pwrite readv writev socket connect bind "
          "accept listen send recv sendto recvfrom fread fgets fgetc getc getchar scanf fscanf __isoc99_fscanf "
          "__isoc99_scanf gets stdin mmap mmap64 munmap mprotect memfd_create unlink remove rename chdir mkdir",
          "it reads or writes files or descriptors (print with printf, or fprintf to stderr)" },
        { "exit _exit _Exit quick_exit atexit at_quick_exit __cxa_atexit on_exit", "it ends the process" },
        { "fork vfork clone clone3 system execl execlp execle execv execvp execve execvpe posix_spawn posix_spawnp",
          "it starts other programs" },
        { "kill raise signal sigaction sigprocmask pthread_sigmask pthread_kill alarm setitimer tgkill",
          "it sends or catches signals" },
        { "setenv putenv unsetenv clearenv environ __environ", "it changes the environment (getenv reads a variable)" },
        { "dlopen dlsym dlvsym dladdr dl_iterate_phdr", "it looks up the program's symbols" },
        { "syscall ptrace process_vm_readv process_vm_writev prctl", "it calls the kernel directly" },
        { "setjmp _setjmp __sigsetjmp longjmp _longjmp siglongjmp __longjmp_chk", "it jumps across functions" },
        { NULL, NULL } };
    for (int i = 0; reasons[i].patterns; i++)
        if (matches_any(name, reasons[i].patterns))
            return reasons[i].why;
    return NULL;
}

/* Where a symbol is used: the student's line, else the function that uses it. */
static void where_used(const struct elf_object *object, const struct preprocessed *source, const char *name,
                       const char *display, char *where, size_t size)
{
    preprocessed_locate(source, name, where, size);
    if (where[0])
        return;
    for (size_t i = 0; i < object->section_count; i++) {
        size_t count;
        const Elf64_Rela *relocations = elf_relocations(object, i, &count);
        for (size_t r = 0; r < count; r++) {
            const Elf64_Sym *symbol = elf_relocation_symbol(object, &relocations[r]);
            const char *function = symbol && strcmp(elf_symbol_name(object, symbol), name) == 0
                                       ? elf_function_at(object, object->sections[i].sh_info, relocations[r].r_offset)
                                       : NULL;
            if (function) {
                snprintf(where, size, "%s, in %s()", display, function);
                return;
            }
        }
    }
    snprintf(where, size, "%s", display);
}

static void check_import(const struct elf_object *object, const struct admit_rules *rules,
                         const struct preprocessed *source, const char *display, const char *name)
{
    bool forbidden = matches_any(name, rules->forbids);
    if (may_import(name, rules) && strchr(name, '@') == NULL && !forbidden)
        return;
    char where[600];
    where_used(object, source, name, display, where, sizeof where);
    if (forbidden) { /* chNN_forbids: the chapter's lesson is to build what this call does */
        admit_finding("%s: uses %s, which chapter %.2s forbids: the chapter asks you to build it from a mutex and "
                      "condition variables, not to take the library's own\n", where, name, rules->chapter);
        return;
    }
    const char *why = why_refused(name);
    if (why)
        admit_finding("%s: uses %s, which a submission may not use: %s\n", where, name, why);
    else
        admit_finding("%s: uses %s, which is not on the list of what a submission may call "
                     "(grader/admission/imports.allow); if a correct solution needs it, tell your instructor\n",
                     where, name);
}

static void check_definition(const struct admit_rules *rules, const struct preprocessed *source, const char *display,
                             const Elf64_Sym *symbol, const char *name)
{
    char where[600];
    preprocessed_locate(source, name, where, sizeof where);
    if (ELF64_ST_TYPE(symbol->st_info) == STT_GNU_IFUNC)
        admit_finding("%s: makes %s an indirect function, whose resolver runs when the program loads: a submission's "
                     "code runs only when the tests call it\n", where[0] ? where : display, name);
    else if (symbol->st_shndx == SHN_COMMON || !matches_any(name, rules->defines))
        admit_finding("%s: defines %s outside the chapter's functions (%s): make it static - a submission may define "
                     "only what its header declares\n",
                     where[0] ? where : display, name, rules->defines);
}

static void check_symbols(const struct elf_object *object, const struct admit_rules *rules,
                          const struct preprocessed *source, const char *display)
{
    for (size_t i = 1; i < object->symbol_count; i++) {
        const Elf64_Sym *symbol = &object->symbols[i];
        const char *name = elf_symbol_name(object, symbol);
        int bind = ELF64_ST_BIND(symbol->st_info), type = ELF64_ST_TYPE(symbol->st_info);
        if (type == STT_SECTION || type == STT_FILE || name[0] == '\0')
            continue;
        if (symbol->st_shndx == SHN_UNDEF)
            check_import(object, rules, source, display, name);
        else if (bind != STB_LOCAL || type == STT_GNU_IFUNC)
            check_definition(rules, source, display, symbol, name);
    }
}

void admit_check_object(const struct elf_object *object, const struct admit_rules *rules,
                       const struct preprocessed *source)
{
    check_sections(object, rules, source, rules->display);
    if (!admit_sections_unchecked)
        admit_check_code(object, source, rules->display);
    check_symbols(object, rules, source, rules->display);
}
