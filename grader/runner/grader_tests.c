/**
 * @file grader_tests.c
 * @brief Which test binary has which test: read from the tests' sources.
 *
 * A binary that links a submission is never run to list its tests - its
 * code would run, outside any test and before the grader has decided
 * anything. The names come from the test table in tests/NN-name/test_x.c,
 * read as text;
 * `make test` checks once that every reference binary lists the same names
 * when asked (`--list`), so that reading and running agree.
 */
#define _POSIX_C_SOURCE 200809L
#include "grader.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void blank(char *from, const char *to)
{
    for (; from < to; from++)
        if (*from != '\n')
            *from = ' ';
}

/* The source's text with its comments and literals blanked out. */
static char *code_of(const char *path)
{
    FILE *in = fopen(path, "r");
    if (in == NULL)
        return NULL;
    enum { MAX_SOURCE = 1 << 20 };
    char *text = malloc(MAX_SOURCE + 1);
    size_t n = text ? fread(text, 1, MAX_SOURCE, in) : 0;
    fclose(in);
    if (text == NULL)
        return NULL;
    text[n] = '\0';
    for (char *c = text; *c;) {
        char *end = NULL;
        if (c[0] == '/' && c[1] == '*') {
            char *close = strstr(c + 2, "*/");
            end = close ? close + 2 : c + strlen(c);
        } else if (c[0] == '/' && c[1] == '/') {
            end = c + strcspn(c, "\n");
        } else if (c[0] == '"' || c[0] == '\'') {
            for (end = c + 1; *end && *end != c[0]; end += *end == '\\' && end[1] ? 2 : 1)
                ;
            end += *end != '\0';
        }
        if (end)
            blank(c, end);
        c = end ? end : c + 1;
    }
    return text;
}

static bool is_word(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* The names in the file's test table (`struct CMUnitTest tests[] = {...}`):
 * in each of its entries, the first identifier that starts with test_ -
 * whatever macro makes the entry (cmocka_unit_test(test_x), the kit's
 * kit_real_threads_test(test_x), a file's own FIXTURE_TEST(test_x)). */
static int names_in(const char *code, char names[][128], int max_names)
{
    const char *table = strstr(code, "struct CMUnitTest");
    table = table ? strchr(table, '{') : NULL;
    int count = 0, depth = 0;
    bool named = false; /* this entry's name is taken */
    for (const char *c = table; c && *c && count < max_names; c++) {
        if (*c == '{' || *c == '(' || *c == '[')
            depth++;
        else if (*c == '}' || *c == ')' || *c == ']')
            depth--;
        if (depth == 0)
            break;
        if (depth == 1 && *c == ',')
            named = false;
        if (is_word(*c) && !is_word(c[-1])) {
            size_t length = 0;
            while (is_word(c[length]))
                length++;
            if (!named && length > 5 && length < 128 && strncmp(c, "test_", 5) == 0) {
                textf(names[count++], 128, "%.*s", (int)length, c);
                named = true;
            }
            c += length - 1;
        }
    }
    return count;
}

void discover_tests(const char *bin_dir, const char *source_root, const char *chapter, struct chapter_tests *found)
{
    memset(found, 0, sizeof *found);
    char dir_path[512];
    snprintf(dir_path, sizeof dir_path, "%s/%s", bin_dir, chapter);
    DIR *dir = opendir(dir_path);
    for (struct dirent *entry; dir && (entry = readdir(dir)) && found->binary_count < MAX_BINARIES;) {
        if (strncmp(entry->d_name, "test_", 5) != 0 || strchr(entry->d_name, '.'))
            continue;
        int b = found->binary_count;
        textf(found->binaries[b], sizeof found->binaries[b], "%s/%s", dir_path, entry->d_name);
        char source[1024];
        snprintf(source, sizeof source, "%stests/%s/%s.c", source_root ? source_root : "", chapter, entry->d_name);
        char *code = access(found->binaries[b], X_OK) == 0 ? code_of(source) : NULL;
        if (code == NULL)
            continue;
        found->name_counts[b] = names_in(code, found->names[b], MAX_NAMES);
        found->binary_count++;
        free(code);
    }
    if (dir)
        closedir(dir);
}

const char *binary_for(const struct chapter_tests *found, const char *name)
{
    for (int b = 0; b < found->binary_count; b++)
        for (int n = 0; n < found->name_counts[b]; n++)
            if (strcmp(found->names[b][n], name) == 0)
                return found->binaries[b];
    return NULL;
}

/* make test: each (trusted, reference) binary, asked for its tests, names
 * those read from its source, in the same order. Returns the mismatches. */
int check_listing(const struct chapter_tests *found)
{
    int problems = 0;
    for (int b = 0; b < found->binary_count; b++) {
        char log[] = "/tmp/kit-list-XXXXXX";
        int fd = mkstemp(log);
        if (fd >= 0)
            close(fd);
        char *argv[] = { (char *)found->binaries[b], "--list", NULL };
        struct process_end end;
        char *listed = fd >= 0 && run_tool(argv, log, 30, &end) == 0 ? read_log(log) : NULL;
        unlink(log);
        char expected[MAX_NAMES * 130] = "";
        for (int n = 0; n < found->name_counts[b]; n++)
            textf(expected + strlen(expected), sizeof expected - strlen(expected), "%s\n", found->names[b][n]);
        if (listed == NULL || strcmp(listed, expected) != 0) {
            printf("  warning: %s lists other tests than its source's table names\n", found->binaries[b]);
            problems++;
        }
        free(listed);
    }
    return problems;
}
