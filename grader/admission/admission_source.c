/**
 * @file admission_source.c
 * @brief The source side of admission: #line directives in what a student
 *        submits; asm, section attributes and section pragmas, and what
 *        switches the instrumentation off (no_sanitize), in the
 *        student's own lines of the preprocessed text.
 *
 * The preprocessor's output marks where each line came from (`# 12 "file" 1`
 * entering an include, `... 2` leaving it). Admission follows those marks as
 * a stack of files, and a line is the student's unless the file on top of
 * the stack is a trusted one: the system's headers, the kit's. A student
 * could fake such marks with a #line directive of their own, so staging
 * refuses any file that has one (admit_line_directive), after the same
 * translation phases as the compiler: trigraphs, joined lines, comments.
 */
#define _POSIX_C_SOURCE 200809L
#include "admission.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- #line directives in a raw source --------------------------------------- */

/* Phases 1 and 2: trigraphs replaced, lines ending in a backslash joined.
 * lines[i] is the physical line of out[i]. */
static size_t join_lines(const char *in, size_t size, char *out, int *lines)
{
    size_t n = 0;
    int line = 1;
    for (size_t i = 0; i < size; i++) {
        char c = in[i];
        if (c == '?' && i + 2 < size && in[i + 1] == '?' && (in[i + 2] == '=' || in[i + 2] == '/')) {
            c = in[i + 2] == '=' ? '#' : '\\';
            i += 2;
        }
        size_t blanks = 0;
        while (c == '\\' && i + 1 + blanks < size && (in[i + 1 + blanks] == ' ' || in[i + 1 + blanks] == '\t'))
            blanks++;
        if (c == '\\' && i + 1 + blanks < size && in[i + 1 + blanks] == '\n') {
            i += 1 + blanks;
            line++;
            continue;
        }
        out[n] = c;
        lines[n++] = line;
        line += c == '\n';
    }
    return n;
}

/* Phase 3, in place: each comment becomes one space (its newlines are kept,
 * so lines[] still holds); literals are skipped, so "/" "*" in one is text. */
static void blank_comments(char *text, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (text[i] == '"' || text[i] == '\'') {
            char quote = text[i];
            for (i++; i < n && text[i] != quote && text[i] != '\n'; i++)
                i += text[i] == '\\';
        } else if (text[i] == '/' && i + 1 < n && (text[i + 1] == '*' || text[i + 1] == '/')) {
            bool block = text[i + 1] == '*';
            size_t end = i + 2;
            while (end < n && (block ? !(text[end] == '*' && end + 1 < n && text[end + 1] == '/') : text[end] != '\n'))
                end++;
            end = block ? (end + 2 < n ? end + 2 : n) : end;
            for (size_t k = i; k < end; k++)
                text[k] = text[k] == '\n' ? '\n' : ' ';
            i = end - 1;
        }
    }
}

int admit_line_directive(const char *text, size_t size)
{
    char *clean = malloc(size + 1);
    int *lines = malloc((size + 1) * sizeof *lines);
    int found = 0;
    size_t n = clean && lines ? join_lines(text, size, clean, lines) : 0;
    blank_comments(clean, n);
    for (size_t i = 0; i < n && !found;) {
        size_t at = i + strspn(clean + i, " \t\f\v");
        if (at < n && (clean[at] == '#' || (clean[at] == '%' && at + 1 < n && clean[at + 1] == ':'))) {
            at += clean[at] == '#' ? 1 : 2;
            at += strspn(clean + at, " \t\f\v");
            bool directive = at < n && (isdigit((unsigned char)clean[at]) ||
                                        (strncmp(clean + at, "line", 4) == 0 && !isalnum((unsigned char)clean[at + 4]) &&
                                         clean[at + 4] != '_'));
            if (directive)
                found = lines[at];
        }
        const char *end = memchr(clean + i, '\n', n - i);
        i = end ? (size_t)(end - clean) + 1 : n;
    }
    free(clean);
    free(lines);
    return found;
}

/* ---- the preprocessed text ------------------------------------------------------ */

struct text_line {
    const char *text;
    size_t length;
    bool student;
    const char *file; /* as the marks name it */
    int line;
};

struct preprocessed {
    char *text;
    struct text_line *lines;
    size_t count;
    char *names[512]; /* every file name a mark gave, owned */
    int name_count;
};

/* `path`, made absolute and with its . and .. resolved as text. */
static void normalise(const char *path, char *out, size_t size)
{
    char joined[PATH_MAX * 2], cwd[PATH_MAX];
    snprintf(joined, sizeof joined, "%s/%s", path[0] == '/' ? "" : getcwd(cwd, sizeof cwd) ? cwd : "", path);
    size_t n = 0;
    out[0] = '\0';
    for (char *save = NULL, *part = strtok_r(joined, "/", &save); part; part = strtok_r(NULL, "/", &save)) {
        if (strcmp(part, ".") == 0)
            continue;
        if (strcmp(part, "..") == 0) {
            while (n > 0 && out[--n] != '/')
                ;
            out[n] = '\0';
            continue;
        }
        n += (size_t)snprintf(out + n, n < size ? size - n : 0, "/%s", part);
        if (n >= size)
            n = size - 1;
    }
}

static bool trusted_file(const char *name, const char *const trusted[])
{
    if (name[0] == '<') /* <built-in>, <command-line>: the compiler's own */
        return true;
    char path[PATH_MAX * 2];
    normalise(name, path, sizeof path);
    for (int i = 0; trusted && trusted[i]; i++) {
        char root[PATH_MAX * 2];
        normalise(trusted[i], root, sizeof root);
        size_t length = strlen(root);
        if (strncmp(path, root, length) == 0 && path[length] == '/')
            return true;
    }
    return false;
}

/* A mark: `# LINE "FILE" FLAGS`. Returns whether the line is one. */
static bool parse_mark(const char *text, size_t length, int *line, char *file, size_t size, int *flag)
{
    if (length < 4 || text[0] != '#' || text[1] != ' ' || !isdigit((unsigned char)text[2]))
        return false;
    char *end;
    *line = (int)strtol(text + 2, &end, 10);
    const char *quote = end + strspn(end, " ");
    if (*quote != '"')
        return false;
    size_t n = 0;
    const char *c = quote + 1;
    for (; c < text + length && *c != '"' && n + 1 < size; c++)
        file[n++] = *c == '\\' && c + 1 < text + length ? *++c : *c;
    file[n] = '\0';
    *flag = 0;
    for (const char *f = c + 1; f < text + length; f++)
        if ((*f == '1' || *f == '2') && f[-1] == ' ')
            *flag = *flag ? *flag : *f - '0';
    return true;
}

static const char *keep_name(struct preprocessed *source, const char *name)
{
    for (int i = 0; i < source->name_count; i++)
        if (strcmp(source->names[i], name) == 0)
            return source->names[i];
    if (source->name_count == 512)
        return source->names[511];
    return source->names[source->name_count++] = strdup(name);
}

struct stack {
    const char *file[200];
    bool student[200];
    int depth;
};

/* Follows one mark: into an include (1), out of one (2), or a new line number. */
static void follow_mark(struct preprocessed *source, struct stack *stack, const char *file, int flag,
                        const char *const trusted[])
{
    if (flag == 1 && stack->depth < 199) {
        stack->depth++;
        stack->file[stack->depth] = keep_name(source, file);
        stack->student[stack->depth] = !trusted_file(file, trusted);
    } else if (flag == 2 && stack->depth > 0) {
        stack->depth--;
    } else if (stack->file[0] == NULL) {
        stack->file[0] = keep_name(source, file); /* the file compiled: the student's */
        stack->student[0] = true;
    }
}

static void split_lines(struct preprocessed *source, const char *const trusted[])
{
    struct stack stack = { .depth = 0 };
    int line = 1;
    for (char *c = source->text; *c;) {
        char *end = strchr(c, '\n');
        size_t length = end ? (size_t)(end - c) : strlen(c);
        char file[PATH_MAX];
        int flag, marked;
        if (parse_mark(c, length, &marked, file, sizeof file, &flag)) {
            follow_mark(source, &stack, file, flag, trusted);
            line = marked;
        } else {
            struct text_line *l = &source->lines[source->count++];
            *l = (struct text_line){ c, length, stack.student[stack.depth], stack.file[stack.depth], line++ };
        }
        c = end ? end + 1 : c + length;
    }
}

struct preprocessed *preprocessed_load(const char *path, const char *const trusted[])
{
    FILE *in = fopen(path, "r");
    struct preprocessed *source = calloc(1, sizeof *source);
    enum { MAX_TEXT = 64 << 20 };
    if (in == NULL || source == NULL || (source->text = malloc(MAX_TEXT + 1)) == NULL) {
        if (in)
            fclose(in);
        preprocessed_free(source);
        return NULL;
    }
    size_t n = fread(source->text, 1, MAX_TEXT, in);
    fclose(in);
    source->text[n] = '\0';
    size_t lines = 1;
    for (size_t i = 0; i < n; i++)
        lines += source->text[i] == '\n';
    source->lines = calloc(lines, sizeof *source->lines);
    if (source->lines == NULL) {
        preprocessed_free(source);
        return NULL;
    }
    split_lines(source, trusted);
    return source;
}

void preprocessed_free(struct preprocessed *source)
{
    if (source == NULL)
        return;
    for (int i = 0; i < source->name_count; i++)
        free(source->names[i]);
    free(source->lines);
    free(source->text);
    free(source);
}

/* Calls found(word, line) for each identifier of a line outside literals;
 * stops when it returns true, and returns so. */
static bool each_word(const struct text_line *l, bool (*found)(const char *, size_t, const void *), const void *ctx)
{
    for (size_t i = 0; i < l->length; i++) {
        char c = l->text[i];
        if (c == '"' || c == '\'') {
            for (i++; i < l->length && l->text[i] != c; i++)
                i += l->text[i] == '\\';
        } else if (isalpha((unsigned char)c) || c == '_') {
            size_t start = i;
            while (i < l->length && (isalnum((unsigned char)l->text[i]) || l->text[i] == '_'))
                i++;
            if (found(l->text + start, i - start, ctx))
                return true;
            i--;
        } else if (isdigit((unsigned char)c)) {
            while (i + 1 < l->length && (isalnum((unsigned char)l->text[i + 1]) || l->text[i + 1] == '.'))
                i++;
        }
    }
    return false;
}

static bool is_identifier(const char *word, size_t length, const void *ctx)
{
    const char *identifier = ctx;
    return strlen(identifier) == length && strncmp(word, identifier, length) == 0;
}

static bool is_asm(const char *word, size_t length, const void *ctx)
{
    (void)ctx;
    return (length == 3 && strncmp(word, "asm", 3) == 0) || (length == 5 && strncmp(word, "__asm", 5) == 0) ||
           (length == 7 && strncmp(word, "__asm__", 7) == 0);
}

void admit_check_asm(const struct preprocessed *source)
{
    for (size_t i = 0; i < source->count; i++) {
        const struct text_line *l = &source->lines[i];
        if (l->student && each_word(l, is_asm, NULL))
            admit_finding("%s:%d: uses asm (assembly code): a submission is plain C, and the grader refuses asm, "
                         "which could reach the system around the checks\n",
                         l->file, l->line);
    }
}

/* `section` or `__section__` used as an attribute: the word, then "(" - or
 * the end of the line, the parenthesis on a line of its own below. */
static bool names_section(const struct text_line *l)
{
    static const char *const words[] = { "section", "__section__", NULL };
    for (int w = 0; words[w]; w++) {
        size_t length = strlen(words[w]);
        for (const char *at = l->text; at && (at = strstr(at, words[w])) && at < l->text + l->length; at += length) {
            bool starts = at == l->text || !(isalnum((unsigned char)at[-1]) || at[-1] == '_');
            const char *next = at + length;
            while (next < l->text + l->length && (*next == ' ' || *next == '\t'))
                next++;
            bool call = next == l->text + l->length || *next == '(';
            if (starts && call && each_word(l, is_identifier, words[w]))
                return true;
        }
    }
    return false;
}

/* A pragma (#pragma ..., or a _Pragma the preprocessor left) that says one
 * of @p words: they are inside it, maybe in quotes. */
static bool pragma_says(const struct text_line *l, const char *const words[])
{
    const char *text = l->text + strspn(l->text, " \t");
    size_t length = l->length - (size_t)(text - l->text);
    bool pragma = (length > 7 && text[0] == '#' && strncmp(text + 1 + strspn(text + 1, " \t"), "pragma", 6) == 0) ||
                  each_word(l, is_identifier, "_Pragma") || each_word(l, is_identifier, "__pragma");
    char line[4096];
    snprintf(line, sizeof line, "%.*s", (int)(length < sizeof line ? length : sizeof line - 1), text);
    for (int w = 0; pragma && words[w]; w++)
        if (strstr(line, words[w]) != NULL)
            return true;
    return false;
}

/* #pragma clang section, #pragma section, ... */
static bool section_pragma(const struct text_line *l)
{
    static const char *const words[] = { "section", NULL };
    return pragma_says(l, words);
}

void admit_check_sections(const struct preprocessed *source)
{
    for (size_t i = 0; i < source->count; i++) {
        const struct text_line *l = &source->lines[i];
        if (l->student && (names_section(l) || section_pragma(l)))
            admit_finding("%s:%d: places code or data in a section of its own choosing (a section attribute or "
                          "pragma): the grader refuses them, since they could put bytes in executable memory or "
                          "code in writable memory\n", l->file, l->line);
    }
}

/* ---- attributes and pragmas that switch the instrumentation off ----------------------
 * The explorer switches threads and the race detector looks at every load
 * and store the compiler instruments. A function marked no_sanitize (or one
 * of its kin) is compiled without: its accesses are neither switch points
 * nor checked, and a racy function would earn the race-free line. */

/* An attribute's name, with or without its __ __ (no_sanitize, __no_sanitize__). */
static bool is_uninstrumenting(const char *word, size_t length, const void *ctx)
{
    (void)ctx;
    static const char *const prefixes[] = { "no_sanitize", "disable_sanitizer_instrumentation", "no_instrument_function",
                                            "no_profile_instrument_function", NULL };
    if (length > 4 && strncmp(word, "__", 2) == 0 && strncmp(word + length - 2, "__", 2) == 0)
        word += 2, length -= 4;
    for (int p = 0; prefixes[p]; p++) {
        size_t n = strlen(prefixes[p]);
        if (length >= n && strncmp(word, prefixes[p], n) == 0)
            return true;
    }
    return false;
}

/* A pragma that speaks of sanitizers or instrumentation (#pragma clang
 * attribute push(__attribute__((no_sanitize("thread"))), ...), a _Pragma). */
static bool uninstrumenting_pragma(const struct text_line *l)
{
    static const char *const words[] = { "sanitize", "instrument", NULL };
    return pragma_says(l, words);
}

void admit_check_instrumentation(const struct preprocessed *source)
{
    for (size_t i = 0; i < source->count; i++) {
        const struct text_line *l = &source->lines[i];
        if (l->student && (each_word(l, is_uninstrumenting, NULL) || uninstrumenting_pragma(l)))
            admit_finding("%s:%d: switches the compiler's instrumentation off for its code (no_sanitize or its kin, "
                          "an attribute or a pragma): the grader refuses it, since the explorer and the race detector "
                          "must see every load and store of a submission\n", l->file, l->line);
    }
}

void preprocessed_locate(const struct preprocessed *source, const char *identifier, char *where, size_t size)
{
    where[0] = '\0';
    for (size_t i = 0; source && i < source->count; i++) {
        const struct text_line *l = &source->lines[i];
        if (l->student && each_word(l, is_identifier, identifier)) {
            snprintf(where, size, "%s:%d", l->file, l->line);
            return;
        }
    }
}
