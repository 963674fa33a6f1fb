/**
 * @file grader_drawing.c
 * @brief The failing schedule of a test, drawn by the grader from its log.
 *
 * A test that failed on a schedule prints the schedule's steps and where
 * each thread was left (grader/explorer/kit_sched_report.c): numbered lines
 * after "The last N of M steps", one a step, "thread description file:line".
 * The grader parses those lines itself, bounded - at most MAX_STEPS steps,
 * MAX_THREADS columns, MAX_TEXT characters of text each, plain printable
 * ASCII, every character escaped - and draws them as a sequence chart: one
 * column per thread, one row per step, each step's line as its tooltip. The
 * test's own drawing stays in its confinement: nothing a test writes reaches
 * the reports as it is, and the picture is the same whatever the code under
 * test printed around it (forged lines only draw that test's own picture).
 */
#define _POSIX_C_SOURCE 200809L
#include "grader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { MAX_STEPS = 200, MAX_THREADS = 16, MAX_TEXT = 120, COLUMN = 250, ROW = 20, TOP = 76, LEFT = 44 };

struct drawn_step {
    int number, column;
    char text[MAX_TEXT + 1], place[MAX_TEXT + 1];
    int woke; /* the column a signal woke, or -1 */
};

struct drawing {
    char title[MAX_TEXT + 1], headline[MAX_TEXT + 1];
    char threads[MAX_THREADS][48];
    char ends[MAX_THREADS][MAX_TEXT + 1]; /* what each was left doing ("" if it had ended) */
    int thread_count;
    struct drawn_step steps[MAX_STEPS];
    int step_count;
};

/* Printable ASCII of at most `size - 1` characters; anything else is '?'. */
static void keep_text(char *out, size_t size, const char *text, size_t length)
{
    size_t n = 0;
    for (size_t i = 0; i < length && n + 1 < size; i++)
        out[n++] = text[i] >= 0x20 && text[i] < 0x7f ? text[i] : '?';
    while (n > 0 && out[n - 1] == ' ')
        n--;
    out[n] = '\0';
}

/* The column of a thread named `name` (added while there is room), or -1. */
static int column_of(struct drawing *d, const char *name, size_t length, bool add)
{
    char kept[48];
    keep_text(kept, sizeof kept, name, length);
    for (int i = 0; i < d->thread_count; i++)
        if (strcmp(d->threads[i], kept) == 0)
            return i;
    if (!add || d->thread_count == MAX_THREADS || kept[0] == '\0')
        return -1;
    snprintf(d->threads[d->thread_count], sizeof d->threads[0], "%s", kept);
    d->ends[d->thread_count][0] = '\0';
    return d->thread_count++;
}

/* Splits "name   description   file.c:12" (after the tag and the number). */
static void split_line(const char *text, size_t length, const char **name, size_t *name_length,
                       const char **what, size_t *what_length, const char **place, size_t *place_length)
{
    while (length > 0 && text[length - 1] == ' ')
        length--;
    size_t i = strspn(text, " ");
    *name = text + i;
    *name_length = strcspn(*name, " \n");
    if (*name_length > length - i)
        *name_length = length - i;
    const char *rest = *name + *name_length, *end = text + length;
    rest += strspn(rest, " ");
    const char *last = end;
    while (last > rest && last[-1] != ' ')
        last--;
    bool has_place = last > rest && memchr(last, ':', (size_t)(end - last)) != NULL;
    *place = has_place ? last : end;
    *place_length = has_place ? (size_t)(end - last) : 0;
    *what = rest < end ? rest : end;
    *what_length = (size_t)((has_place ? last : end) - *what);
}

static void add_step(struct drawing *d, const char *text, size_t length)
{
    char *end;
    long number = strtol(text, &end, 10);
    const char *name, *what, *place;
    size_t name_length, what_length, place_length;
    split_line(end, length - (size_t)(end - text), &name, &name_length, &what, &what_length, &place, &place_length);
    int column = column_of(d, name, name_length, true);
    if (column < 0 || d->step_count == MAX_STEPS || number <= 0)
        return;
    struct drawn_step *step = &d->steps[d->step_count++];
    step->number = (int)(number < 1000000 ? number : 999999);
    step->column = column;
    keep_text(step->text, sizeof step->text, what, what_length);
    keep_text(step->place, sizeof step->place, place, place_length);
    const char *woke = strstr(step->text, ", waking ");
    step->woke = woke ? column_of(d, woke + 9, strcspn(woke + 9, " ,"), false) : -1;
}

static void add_end(struct drawing *d, const char *text, size_t length)
{
    const char *name, *what, *place;
    size_t name_length, what_length, place_length;
    split_line(text, length, &name, &name_length, &what, &what_length, &place, &place_length);
    int column = column_of(d, name, name_length, true);
    if (column >= 0)
        keep_text(d->ends[column], sizeof d->ends[0], what, what_length);
}

/* The last failing schedule a log reports, parsed; false if it has none. */
static bool parse_schedule(const char *log, struct drawing *d)
{
    const char *header = NULL;
    for (const char *at = strstr(log, "] The threads at the end:"); at; at = strstr(at + 1, "] The threads at the end:"))
        header = at;
    if (header == NULL || header - log < 12)
        return false;
    const char *tag = header - 11; /* "[ explore  ]" or "[ schedule ]" */
    const char *failed = NULL;
    for (const char *at = strstr(log, " failed after "); at && at < header; at = strstr(at + 1, " failed after "))
        failed = at;
    const char *line_start = failed;
    while (line_start && line_start > log && line_start[-1] != '\n')
        line_start--;
    const char *why = failed ? strchr(failed, '\n') : NULL; /* the failure's first line follows the header */
    if (why && strncmp(why + 1, tag, 12) == 0 && strncmp(why + 13, "   ", 3) == 0)
        keep_text(d->headline, sizeof d->headline, why + 16, strcspn(why + 16, "\n"));
    else if (line_start)
        keep_text(d->headline, sizeof d->headline, line_start + 13, strcspn(line_start + 13, "\n"));
    bool in_steps = false;
    for (const char *line = strchr(header, '\n'); line && strncmp(line + 1, tag, 12) == 0; line = strchr(line + 1, '\n')) {
        const char *text = line + 14; /* after the newline, the tag and a space */
        size_t length = strcspn(text, "\n");
        if (strncmp(text, "The last ", 9) == 0)
            in_steps = true;
        else if (in_steps && text[strspn(text, " ")] >= '0' && text[strspn(text, " ")] <= '9')
            add_step(d, text, length);
        else if (!in_steps && strncmp(text, "  ", 2) == 0 && strncmp(text, "  (", 3) != 0)
            add_end(d, text, length);
    }
    return d->step_count > 0;
}

static void write_escaped(FILE *out, const char *text)
{
    for (; *text; text++) {
        switch (*text) {
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '&': fputs("&amp;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default: fputc(*text, out);
        }
    }
}

static void text_at(FILE *out, int x, int y, const char *style, const char *text)
{
    fprintf(out, "<text x=\"%d\" y=\"%d\" %s>", x, y, style);
    write_escaped(out, text);
    fputs("</text>\n", out);
}

/* What a thread was left doing, on two lines: "waits on C1 (to relock M1)", "no signal will come". */
static void write_end(FILE *out, int x, int y, const char *end)
{
    if (end[0] == '\0') /* it had ended, or the log did not say */
        return;
    char first[MAX_TEXT + 1];
    snprintf(first, sizeof first, "%s", end);
    char *comma = strstr(first, ", ");
    if (comma)
        *comma = '\0';
    text_at(out, x, y, "fill=\"#c0282d\" font-weight=\"bold\"", first);
    if (comma)
        text_at(out, x, y + ROW - 4, "fill=\"#c0282d\"", comma + 2);
}

/* The kit's colours for what a step did: going to sleep warm, waking blue,
 * signalling purple, locks grey. */
static const char *colour_of(const char *text)
{
    if (strncmp(text, "waits", 5) == 0)
        return "#d9822b";
    if (strncmp(text, "wakes", 5) == 0)
        return "#2b7bd9";
    if (strncmp(text, "signals", 7) == 0 || strncmp(text, "broadcasts", 10) == 0)
        return "#7b3fbf";
    return strstr(text, "locks") ? "#555555" : "#888888";
}

static void write_steps(FILE *out, const struct drawing *d)
{
    for (int i = 0; i < d->step_count; i++) {
        const struct drawn_step *step = &d->steps[i];
        int x = LEFT + step->column * COLUMN + 8, y = TOP + i * ROW;
        fputs("<g><title>", out);
        write_escaped(out, step->place);
        char fill[32];
        snprintf(fill, sizeof fill, "fill=\"%s\"", colour_of(step->text));
        fprintf(out, "</title><circle cx=\"%d\" cy=\"%d\" r=\"4\" %s/>", x - 8, y - 4, fill);
        text_at(out, x, y, fill, step->text);
        fputs("</g>\n", out);
        char number[16];
        snprintf(number, sizeof number, "%d", step->number);
        text_at(out, 4, y, "fill=\"#999999\"", number);
        if (step->woke >= 0) /* a dashed line to the one it woke */
            fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#7b3fbf\" stroke-dasharray=\"3,3\"/>\n",
                    x - 8, y + 4, LEFT + step->woke * COLUMN, y + 4);
    }
}

static int write_svg(const char *path, const struct drawing *d)
{
    FILE *out = fopen(path, "w");
    if (out == NULL)
        return -1;
    int width = LEFT + d->thread_count * COLUMN, height = TOP + ROW + (d->step_count + 4) * ROW;
    int text_width = 7 * MAX_TEXT + 8;
    fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
                 "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            width > text_width ? width : text_width, height);
    text_at(out, 4, 16, "font-weight=\"bold\"", d->title);
    text_at(out, 4, 34, "fill=\"#c0282d\"", d->headline);
    for (int i = 0; i < d->thread_count; i++) {
        int x = LEFT + i * COLUMN;
        fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#dddddd\"/>\n", x, TOP - 14, x,
                height - 3 * ROW);
        text_at(out, x + 4, TOP - 20, "font-weight=\"bold\"", d->threads[i]);
        write_end(out, x + 4, height - 2 * ROW + 4, d->ends[i]);
    }
    write_steps(out, d);
    fputs("</svg>\n", out);
    return fclose(out) == 0 ? 0 : -1;
}

int draw_failed_schedule(const char *log, const char *title, const char *path)
{
    struct drawing *d = log ? calloc(1, sizeof *d) : NULL;
    if (d == NULL)
        return -1;
    int err = -1;
    if (parse_schedule(log, d)) {
        keep_text(d->title, sizeof d->title, title, strlen(title));
        err = write_svg(path, d);
    }
    free(d);
    return err;
}
