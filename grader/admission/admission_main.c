/**
 * @file admission_main.c
 * @brief kit-admit: stage a submission, then admit or refuse each of its objects (admission.h).
 *
 *     kit-admit stage --from DIR [--kit-tree] --to DIR --findings DIR [--stubs DIR] [--loose]
 *                    --chapter NN-name FILE... [--chapter ...]
 *     kit-admit source --chapter NN-name --source X.i --display FILE --findings DIR [--trusted DIR]...
 *     kit-admit object --chapter NN-name --variant plain|debug|tsan|sched --object X.o
 *                    --source X.i --display FILE --findings DIR [--defines 'PATTERNS']
 *                    [--imports 'PATTERNS'] [--forbids 'PATTERNS'] [--allow FILE] [--runtime OBJECT]...
 *                    [--trusted DIR]...
 *     kit-admit binary --chapter NN-name --binary PROGRAM --display NAME --findings DIR
 *
 * Each finding goes to standard error and to FINDINGS/NN-name.txt, which the
 * grader reads: the chapter scores 0 and is flagged for integrity. `source`,
 * `object` and `binary` exit 1 when they have findings (make then keeps no
 * object, no program), `stage` exits 0.
 */
#define _POSIX_C_SOURCE 200809L
#include "admission.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *findings_dir, *current_chapter = "unknown";
static int finding_count;

void admit_set_chapter(const char *chapter)
{
    current_chapter = chapter;
}

void admit_finding(const char *format, ...)
{
    char text[2048];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof text, format, args);
    va_end(args);
    fprintf(stderr, "kit-admit: %s", text);
    finding_count++;
    if (findings_dir == NULL)
        return;
    char path[2048];
    snprintf(path, sizeof path, "%s/%s.txt", findings_dir, current_chapter);
    FILE *out = fopen(path, "a");
    if (out) {
        fputs(text, out);
        fclose(out);
    }
}

int admit_finding_count(void)
{
    return finding_count;
}

static _Noreturn void usage(void)
{
    fprintf(stderr, "usage: kit-admit stage --from DIR [--kit-tree] --to DIR --findings DIR [--stubs DIR] [--loose]\n"
                    "                      --chapter NN-name FILE... [--chapter ...]\n"
                    "       kit-admit object --chapter NN-name --variant V --object X.o --source X.i --display FILE\n"
                    "                      --findings DIR [--defines P] [--imports P] [--forbids P] [--allow FILE]\n"
                    "                      [--runtime OBJECT]... [--trusted DIR]...\n"
                    "       kit-admit binary --chapter NN-name --binary PROGRAM --display NAME --findings DIR\n");
    exit(2);
}

static int stage(int argc, char **argv)
{
    static struct stage_chapter chapters[32];
    const char *from = NULL, *to = NULL, *stubs = NULL;
    int count = 0;
    bool loose = false, kit_tree = false;
    for (int i = 2; i < argc; i++) {
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--loose") == 0) { loose = true; continue; }
        if (strcmp(argv[i], "--kit-tree") == 0) { kit_tree = true; continue; }
        if (value == NULL) usage();
        if (strcmp(argv[i], "--from") == 0) from = value;
        else if (strcmp(argv[i], "--to") == 0) to = value;
        else if (strcmp(argv[i], "--stubs") == 0) stubs = value;
        else if (strcmp(argv[i], "--findings") == 0) findings_dir = value;
        else if (strcmp(argv[i], "--chapter") == 0 && count < 32) {
            chapters[count].name = value;
            for (i += 2; i < argc && strncmp(argv[i], "--", 2) != 0 && chapters[count].file_count < 16; i++)
                snprintf(chapters[count].files[chapters[count].file_count++], 128, "%s", argv[i]);
            count++;
            i -= 2;
        } else usage();
        i++;
    }
    if (!from || !to || !findings_dir)
        usage();
    mkdir(findings_dir, 0755);
    for (int c = 0; c < count; c++) { /* an earlier grade's findings are not this one's */
        char path[2048];
        snprintf(path, sizeof path, "%s/%s.txt", findings_dir, chapters[c].name);
        unlink(path);
    }
    admit_stage(from, kit_tree, to, stubs, chapters, count, loose);
    return 0;
}

/* What the kit's runtime objects define: a submission may call it. */
static void add_runtime(char *imports, size_t size, const char *path)
{
    struct elf_object object;
    const char *error = elf_load(&object, path);
    if (error) { /* the kit's own file: a broken build, not the student's doing */
        fprintf(stderr, "kit-admit: cannot read the kit's runtime object %s: %s\n", path, error);
        exit(2);
    }
    for (size_t s = 1; s < object.symbol_count; s++) {
        const Elf64_Sym *symbol = &object.symbols[s];
        if (ELF64_ST_BIND(symbol->st_info) == STB_GLOBAL && symbol->st_shndx != SHN_UNDEF) {
            size_t used = strlen(imports);
            snprintf(imports + used, size - used, " %s", elf_symbol_name(&object, symbol));
        }
    }
    elf_free(&object);
}

static int object(int argc, char **argv)
{
    static char imports[65536];
    static const char *trusted[32];
    struct admit_rules rules = { .variant = "plain", .defines = "", .forbids = "", .display = "the file" };
    const char *object_path = NULL, *source_path = NULL;
    for (int i = 2, t = 0; i + 1 < argc; i += 2) {
        const char *arg = argv[i], *value = argv[i + 1];
        if (strcmp(arg, "--chapter") == 0) rules.chapter = value;
        else if (strcmp(arg, "--variant") == 0) rules.variant = value;
        else if (strcmp(arg, "--object") == 0) object_path = value;
        else if (strcmp(arg, "--source") == 0) source_path = value;
        else if (strcmp(arg, "--display") == 0) rules.display = value;
        else if (strcmp(arg, "--findings") == 0) findings_dir = value;
        else if (strcmp(arg, "--defines") == 0) rules.defines = value;
        else if (strcmp(arg, "--imports") == 0) snprintf(imports + strlen(imports), sizeof imports - strlen(imports), " %s", value);
        else if (strcmp(arg, "--forbids") == 0) rules.forbids = value;
        else if (strcmp(arg, "--allow") == 0) rules.allow_file = value;
        else if (strcmp(arg, "--runtime") == 0) add_runtime(imports, sizeof imports, value);
        else if (strcmp(arg, "--trusted") == 0 && t < 31) trusted[t++] = value;
        else usage();
    }
    if (!rules.chapter || !object_path || !source_path || !findings_dir)
        usage();
    rules.imports = imports;
    admit_set_chapter(rules.chapter);
    mkdir(findings_dir, 0755);
    struct preprocessed *source = preprocessed_load(source_path, trusted);
    struct elf_object elf;
    const char *error = elf_load(&elf, object_path);
    if (source == NULL || error)
        admit_finding("%s: admission could not read what the compiler made of it (%s)\n", rules.display,
                     error ? error : "no preprocessed text");
    if (error == NULL)
        admit_check_object(&elf, &rules, source);
    elf_free(&elf);
    preprocessed_free(source);
    return admit_finding_count() > 0;
}

/* The preprocessed text alone, before it is compiled: an asm that would not
 * even assemble (an .incbin of a file the confinement hides) is still seen. */
static int source(int argc, char **argv)
{
    static const char *trusted[32];
    const char *source_path = NULL;
    for (int i = 2, t = 0; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--chapter") == 0) admit_set_chapter(argv[i + 1]);
        else if (strcmp(argv[i], "--source") == 0) source_path = argv[i + 1];
        else if (strcmp(argv[i], "--findings") == 0) findings_dir = argv[i + 1];
        else if (strcmp(argv[i], "--trusted") == 0 && t < 31) trusted[t++] = argv[i + 1];
        else if (strcmp(argv[i], "--display") != 0) usage();
    }
    if (!source_path || !findings_dir)
        usage();
    mkdir(findings_dir, 0755);
    struct preprocessed *text = preprocessed_load(source_path, trusted);
    if (text) {
        admit_check_asm(text);
        admit_check_instrumentation(text);
        if (!admit_sections_unchecked)
            admit_check_sections(text);
    }
    preprocessed_free(text);
    return admit_finding_count() > 0;
}

/* The program a confined link made of a submission (admission_binary.c). */
static int binary(int argc, char **argv)
{
    const char *path = NULL, *display = "the test program";
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--chapter") == 0) admit_set_chapter(argv[i + 1]);
        else if (strcmp(argv[i], "--binary") == 0) path = argv[i + 1];
        else if (strcmp(argv[i], "--display") == 0) display = argv[i + 1];
        else if (strcmp(argv[i], "--findings") == 0) findings_dir = argv[i + 1];
        else usage();
    }
    if (!path || !findings_dir)
        usage();
    mkdir(findings_dir, 0755);
    if (!admit_sections_unchecked)
        admit_check_binary(path, display);
    return admit_finding_count() > 0;
}

bool admit_sections_unchecked;

int main(int argc, char **argv)
{
    admit_sections_unchecked = getenv("KIT_ADMIT_SECTIONS_UNCHECKED") != NULL;
    if (admit_sections_unchecked)
        fprintf(stderr, "kit-admit: the rules on sections and executable bytes are OFF "
                "(KIT_ADMIT_SECTIONS_UNCHECKED): this grade checks that the judge alone holds\n");
    if (argc > 1 && strcmp(argv[1], "stage") == 0)
        return stage(argc, argv);
    if (argc > 1 && strcmp(argv[1], "source") == 0)
        return source(argc, argv);
    if (argc > 1 && strcmp(argv[1], "object") == 0)
        return object(argc, argv);
    if (argc > 1 && strcmp(argv[1], "binary") == 0)
        return binary(argc, argv);
    usage();
}
