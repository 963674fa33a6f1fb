/**
 * @file kit_sched_svg.c
 * @brief A failed schedule drawn as a sequence chart (SVG): one column per
 *        thread, one row per step, read from top to bottom, and at the bottom
 *        what each thread was left doing - the blocked ones in red.
 *
 * The picture says what the numbered steps say, laid out so that "who ran
 * while whom waited" shows at a glance. Each step's source line is its
 * tooltip when the file is opened in a browser.
 */
#define _GNU_SOURCE
#include "kit_sched_internal.h"

#include <stdio.h>
#include <string.h>

#include "kit_timeline.h"

#define COLUMN 250
#define ROW 20
#define TOP 76
#define LEFT 44

/* The column of each thread that the picture shows (-1: none): the threads
 * of the drawn steps and those still alive, in creation order. A scheduled
 * test may have started hundreds, most of them long gone. */
static int column[SCHED_MAX_RECORDS];
static int columns;

static void show(int thread)
{
    if (thread >= 0 && thread < sched.nthreads && column[thread] < 0)
        column[thread] = 0;
}

static void assign_columns(long first)
{
    for (int i = 0; i < sched.nthreads; i++)
        column[i] = -1;
    for (long i = first; i < sched.nsteps; i++) {
        show(sched.steps[i].thread);
        if (sched.steps[i].op == OP_SIGNAL || sched.steps[i].op == OP_CREATE || sched.steps[i].op == OP_JOIN)
            show(sched.steps[i].other);
    }
    for (int i = 0; i < sched.nlive; i++)
        show(sched.live[i]);
    columns = 0;
    for (int i = 0; i < sched.nthreads; i++)
        if (column[i] == 0)
            column[i] = ++columns;
}

static int x_of(int thread)
{
    return LEFT + (column[thread] - 1) * COLUMN;
}

void sched_describe_step(const struct sched_step *step, char *out, size_t size);
void sched_describe_thread(const struct sched_thread *t, char *out, size_t size);
const char *sched_place_of(void *addr);

static const char *colour_of(enum sched_op op)
{
    switch (op) {
    case OP_WAIT: return "#d9822b";   /* going to sleep: warm, as in the kit's timelines */
    case OP_WAKE: return "#2b7bd9";
    case OP_SIGNAL:
    case OP_BROADCAST: return "#7b3fbf";
    case OP_LOCK:
    case OP_UNLOCK:
    case OP_TRYLOCK: return "#555555";
    default: return "#888888";
    }
}

static void draw_step(FILE *out, const struct sched_step *step, long number, int row)
{
    char text[160];
    sched_describe_step(step, text, sizeof text);
    int x = x_of(step->thread) + 8, y = TOP + row * ROW;
    fprintf(out, "<g><title>");
    kit_svg_write_text(out, sched_place_of(step->where));
    fprintf(out, "</title><circle cx=\"%d\" cy=\"%d\" r=\"4\" fill=\"%s\"/>", x - 8, y - 4, colour_of(step->op));
    fprintf(out, "<text x=\"%d\" y=\"%d\" fill=\"%s\">", x, y, colour_of(step->op));
    kit_svg_write_text(out, text);
    fprintf(out, "</text></g>\n<text x=\"4\" y=\"%d\" fill=\"#999\">%ld</text>\n", y, number);
    if (step->op == OP_SIGNAL && step->other >= 0) /* a dashed arrow to the one it woke */
        fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#7b3fbf\" "
                     "stroke-dasharray=\"3,3\" marker-end=\"url(#woke)\"/>\n",
                x - 8, y + 4, x_of(step->other), y + 4);
}

/* What thread t was left doing, on two lines: "waits on C1 (to relock M1)", "no signal will come". */
static void draw_end(FILE *out, const struct sched_thread *t, int y)
{
    char text[160];
    sched_describe_thread(t, text, sizeof text);
    char *comma = strstr(text, ", ");
    if (comma != NULL)
        *comma = '\0';
    const char *colour = t->state == DONE || t->state == RUNNABLE ? "#2a7a2a" : "#c0282d";
    int x = x_of(t->id) + 4;
    fprintf(out, "<text x=\"%d\" y=\"%d\" fill=\"%s\" font-weight=\"bold\">", x, y, colour);
    kit_svg_write_text(out, text);
    fprintf(out, "</text>\n");
    if (comma != NULL) {
        fprintf(out, "<text x=\"%d\" y=\"%d\" fill=\"%s\">", x, y + ROW - 4, colour);
        kit_svg_write_text(out, comma + 2);
        fprintf(out, "</text>\n");
    }
}

int sched_draw_svg(const char *path, const char *title, const char *why, long first)
{
    /* The picture's second line: the message's first line, cut to fit
     * above the threads (the log has the whole message). */
    enum { WHY_CHARS = 110 };
    char headline[WHY_CHARS + 8];
    int length = (int)strcspn(why, "\n");
    if (length > WHY_CHARS)
        snprintf(headline, sizeof headline, "%.*s ...", WHY_CHARS, why);
    else
        snprintf(headline, sizeof headline, "%.*s", length, why);
    why = headline;
    FILE *out = fopen(path, "w");
    if (out == NULL)
        return -1;
    assign_columns(first);
    int rows = (int)(sched.nsteps - first) + 4;
    int width = LEFT + columns * COLUMN, height = TOP + ROW + rows * ROW;
    int text_width = 7 * (int)(strlen(why) > strlen(title) ? strlen(why) : strlen(title)) + 8;
    if (width < text_width)
        width = text_width;
    fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                 "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            width, height);
    fprintf(out, "<defs><marker id=\"woke\" markerWidth=\"8\" markerHeight=\"8\" refX=\"7\" refY=\"4\" "
                 "orient=\"auto\"><path d=\"M0,0 L8,4 L0,8 z\" fill=\"#7b3fbf\"/></marker></defs>\n");
    fprintf(out, "<text x=\"4\" y=\"16\" font-weight=\"bold\">");
    kit_svg_write_text(out, title);
    fprintf(out, "</text>\n<text x=\"4\" y=\"34\" fill=\"#c0282d\">");
    kit_svg_write_text(out, why);
    fprintf(out, "</text>\n");
    for (int i = 0; i < sched.nthreads; i++) {
        if (column[i] < 0)
            continue;
        int x = x_of(i);
        fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>\n", x, TOP - 14, x,
                height - 3 * ROW);
        fprintf(out, "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">", x + 4, TOP - 20);
        kit_svg_write_text(out, sched.threads[i]->name);
        fprintf(out, "</text>\n");
    }
    for (long i = first; i < sched.nsteps; i++)
        draw_step(out, &sched.steps[i], i + 1, (int)(i - first));
    for (int i = 0; i < sched.nthreads; i++)
        if (column[i] > 0)
            draw_end(out, sched.threads[i], height - 2 * ROW + 4);
    fprintf(out, "</svg>\n");
    return fclose(out) == 0 ? 0 : -1;
}
