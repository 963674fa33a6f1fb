/**
 * @file admission.h
 * @brief kit-admit: what a submission may be, checked before anything of it is linked.
 *
 * An allow-list, in the spirit of PrairieLearn's C grader and of contest
 * judges, with a finding for anything else:
 * - staging: only regular files with the exercise's names, of sane size,
 *   without #line directives (which could pass student code off as the
 *   system's);
 * - the preprocessed source: no asm, no section attribute or pragma in the
 *   student's own lines;
 * - the object: sections of code and data only (no constructors or
 *   destructors, no indirect functions); executable bytes only in `.text`
 *   sections, inside functions; defined symbols from the chapter's list (its
 *   API; everything else static); undefined symbols from the allowed imports
 *   (imports.allow, what the kit's runtime defines, the earlier chapters'
 *   APIs), less what the chapter forbids (chNN_forbids);
 * - the linked test program: no memory both writable and executable, no
 *   executable stack.
 * A finding names the student's file and line. kit-admit writes it to the
 * chapter's findings file, which the grader turns into a 0 for the chapter
 * and an integrity flag in every report.
 */
#ifndef GATE_H
#define GATE_H

#include <elf.h>
#include <stdbool.h>
#include <stddef.h>

/* ---- findings (admission_main.c) ---- */
void admit_finding(const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
int admit_finding_count(void);
/** The chapter the next findings are about. */
void admit_set_chapter(const char *chapter);

/* ---- the object file (admission_elf.c) ---- */
struct elf_object {
    unsigned char *data;
    size_t size;
    const Elf64_Shdr *sections;
    size_t section_count;
    const Elf64_Sym *symbols;
    size_t symbol_count;
    size_t symbol_section; /* the index of .symtab */
};

/** Reads a relocatable ELF64 object, checking every offset; returns an error text or NULL. */
const char *elf_load(struct elf_object *object, const char *path);
void elf_free(struct elf_object *object);
const char *elf_section_name(const struct elf_object *object, size_t index);
const char *elf_symbol_name(const struct elf_object *object, const Elf64_Sym *symbol);
/** The relocations of a SHT_RELA section, or NULL (count 0). */
const Elf64_Rela *elf_relocations(const struct elf_object *object, size_t section, size_t *count);
/** The symbol a relocation refers to, or NULL. */
const Elf64_Sym *elf_relocation_symbol(const struct elf_object *object, const Elf64_Rela *relocation);
/** The function that holds offset `at` of section `section`, or NULL. */
const char *elf_function_at(const struct elf_object *object, size_t section, Elf64_Addr at);

/* ---- the source (admission_source.c) ---- */
/** The first line of a raw source that holds a #line or line-marker directive, or 0. */
int admit_line_directive(const char *text, size_t size);
/** The preprocessed text, with which lines are the student's. */
struct preprocessed;
struct preprocessed *preprocessed_load(const char *path, const char *const trusted[]);
void preprocessed_free(struct preprocessed *source);
/** Reports each asm in the student's lines. */
void admit_check_asm(const struct preprocessed *source);
/** Reports each section attribute or section pragma in the student's lines. */
void admit_check_sections(const struct preprocessed *source);
/** Reports each attribute or pragma in the student's lines that switches the instrumentation off (no_sanitize
 *  and its kin): code it does not see is neither explored nor checked for races. */
void admit_check_instrumentation(const struct preprocessed *source);
/** "file:line" of the first student line that names `identifier`, or "" if none does. */
void preprocessed_locate(const struct preprocessed *source, const char *identifier, char *where, size_t size);

/* ---- the object's checks (admission_object.c) ---- */
struct admit_rules {
    const char *chapter;
    const char *variant;         /* plain, debug, tsan, sched */
    const char *defines;         /* space-separated patterns of what it may define */
    const char *imports;         /* space-separated patterns of what else it may use */
    const char *forbids;         /* space-separated patterns the chapter refuses, allowed or not */
    const char *allow_file;      /* imports.allow */
    const char *display;         /* the source file, as the student knows it */
};
void admit_check_object(const struct elf_object *object, const struct admit_rules *rules,
                       const struct preprocessed *source);

/* make hardening's check that the judge alone holds what these rules refuse
 * (tools/hardening): with KIT_ADMIT_SECTIONS_UNCHECKED in the environment,
 * admission leaves out its rules on sections and executable bytes - the
 * section attributes and pragmas, admit_check_code, admit_check_binary -
 * and says so on every call. Never set in a grade that counts. */
extern bool admit_sections_unchecked;

/* ---- executable bytes (admission_code.c) ---- */
/** Reports code sections that are not plain functions, and functions or data out of place. */
void admit_check_code(const struct elf_object *object, const struct preprocessed *source, const char *display);

/* ---- the linked program (admission_binary.c) ---- */
/** Reports a segment both writable and executable, and an executable stack. */
void admit_check_binary(const char *path, const char *display);

/* ---- staging (admit_stage.c) ---- */
struct stage_chapter {
    const char *name;    /* 01-monitor-queue */
    char files[16][128]; /* the exercise's file names */
    int file_count;
};
/** Stages the exercise's files of `from` (with --kit-tree: of its exercises/ folder, if it has a real one). */
int admit_stage(const char *from, bool kit_tree, const char *to, const char *stubs,
               const struct stage_chapter *chapters, int count, bool loose);

#endif
