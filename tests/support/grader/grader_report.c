/**
 * @file grader_report.c
 * @brief The rubric, and the three ways results are reported: table, JSON, JUnit.
 */
#define _POSIX_C_SOURCE 200809L
#include "grader.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void textf(char *dst, size_t size, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(dst, size, fmt, args);
    va_end(args);
}

/* tests/rubric.tsv: chapter <TAB> test <TAB> points <TAB> description.
 * Blank lines and lines starting with '#' are comments. */
int load_rubric(const char *path, struct test_case *tests, int max_tests, char *error, size_t error_size)
{
    FILE *in = fopen(path, "r");
    if (in == NULL) {
        snprintf(error, error_size, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    char line[1024];
    int count = 0, number = 0;
    while (fgets(line, sizeof line, in)) {
        number++;
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '\0' || line[0] == '#')
            continue;
        char *save = NULL;
        char *chapter = strtok_r(line, "\t", &save);
        char *name = strtok_r(NULL, "\t", &save);
        char *points = strtok_r(NULL, "\t", &save);
        char *description = strtok_r(NULL, "\t", &save);
        char *end = NULL;
        long value = points ? strtol(points, &end, 10) : -1;
        if (!chapter || !name || !points || *end != '\0' || value < 0 || value > 1000 || !description) {
            snprintf(error, error_size, "%s:%d: expected chapter, test, points, description separated by tabs", path,
                     number);
            fclose(in);
            return -1;
        }
        if (count == max_tests) {
            snprintf(error, error_size, "%s: more than %d lines", path, max_tests);
            fclose(in);
            return -1;
        }
        struct test_case *test = &tests[count++];
        memset(test, 0, sizeof *test);
        snprintf(test->chapter, sizeof test->chapter, "%s", chapter);
        snprintf(test->name, sizeof test->name, "%s", name);
        snprintf(test->description, sizeof test->description, "%s", description);
        test->points = (int)value;
        test->verdict = V_NOT_RUN;
    }
    fclose(in);
    return count;
}

void print_chapter_header(const char *chapter)
{
    printf("\n== %s ==\n", chapter);
}

void print_test_line(const struct test_case *test, bool show_points)
{
    const char *label = strcmp(test->name, "tsan") == 0 ? "race-free under ThreadSanitizer" : test->name;
    int earned = test->verdict == V_PASSED ? test->points : 0;
    printf("  %-58s %-12s %6.2fs", label, verdict_text(test->verdict), test->seconds);
    if (show_points)
        printf("  %2d/%-2d", earned, test->points);
    printf("\n");
    if (test->verdict != V_PASSED && test->detail[0]) {
        for (const char *line = test->detail; *line;) {
            const char *end = strchr(line, '\n');
            int length = end ? (int)(end - line) : (int)strlen(line);
            printf("      %.*s\n", length, line);
            line = end ? end + 1 : line + length;
        }
    }
    fflush(stdout);
}

static void json_string(FILE *out, const char *text)
{
    fputc('"', out);
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(out, "\\%c", *c);
        else if (*c == '\n')
            fputs("\\n", out);
        else if (*c < 0x20)
            fprintf(out, "\\u%04x", *c);
        else
            fputc(*c, out);
    }
    fputc('"', out);
}

static void xml_text(FILE *out, const char *text)
{
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        switch (*c) {
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '&': fputs("&amp;", out); break;
        case '"': fputs("&quot;", out); break;
        default:
            if (*c >= 0x20 || *c == '\n' || *c == '\t')
                fputc(*c, out);
        }
    }
}

static int close_report(FILE *out)
{
    int err = ferror(out) ? EIO : 0;
    if (fclose(out) != 0 && err == 0)
        err = errno;
    return err;
}

int write_json_report(const char *path, const char *mode, const char *implementation,
                      const struct test_case *tests, int count)
{
    FILE *out = fopen(path, "w");
    if (out == NULL)
        return errno;
    int score = 0, max = 0;
    for (int i = 0; i < count; i++) {
        max += tests[i].points;
        score += tests[i].verdict == V_PASSED ? tests[i].points : 0;
    }
    fprintf(out, "{\n  \"mode\": ");
    json_string(out, mode);
    fprintf(out, ",\n  \"implementation\": ");
    json_string(out, implementation);
    fprintf(out, ",\n  \"score\": %d,\n  \"max\": %d,\n  \"tests\": [", score, max);
    for (int i = 0; i < count; i++) {
        const struct test_case *t = &tests[i];
        fprintf(out, "%s\n    {\"chapter\": ", i ? "," : "");
        json_string(out, t->chapter);
        fputs(", \"name\": ", out);
        json_string(out, t->name);
        fprintf(out, ", \"points\": %d, \"earned\": %d, \"verdict\": ", t->points,
                t->verdict == V_PASSED ? t->points : 0);
        json_string(out, verdict_text(t->verdict));
        fprintf(out, ", \"seconds\": %.3f, \"description\": ", t->seconds);
        json_string(out, t->description);
        fputs(", \"detail\": ", out);
        json_string(out, t->detail);
        fputc('}', out);
    }
    fputs("\n  ]\n}\n", out);
    return close_report(out);
}

int write_junit_report(const char *path, const struct test_case *tests, int count)
{
    FILE *out = fopen(path, "w");
    if (out == NULL)
        return errno;
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n", out);
    for (int i = 0; i < count;) {
        int end = i, failures = 0;
        while (end < count && strcmp(tests[end].chapter, tests[i].chapter) == 0)
            failures += tests[end++].verdict != V_PASSED;
        fprintf(out, "  <testsuite name=\"%s\" tests=\"%d\" failures=\"%d\">\n", tests[i].chapter, end - i, failures);
        for (; i < end; i++) {
            fprintf(out, "    <testcase classname=\"%s\" name=\"%s\" time=\"%.3f\">", tests[i].chapter, tests[i].name,
                    tests[i].seconds);
            if (tests[i].verdict != V_PASSED) {
                fprintf(out, "<failure message=\"%s\">", verdict_text(tests[i].verdict));
                xml_text(out, tests[i].detail);
                fputs("</failure>", out);
            }
            fputs("</testcase>\n", out);
        }
        fputs("  </testsuite>\n", out);
    }
    fputs("</testsuites>\n", out);
    return close_report(out);
}
