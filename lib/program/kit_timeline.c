/**
 * @file kit_timeline.c
 * @brief SVG rendering of a trace: lanes, spans, instants, axis, legend.
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_timeline.h"

#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_trace.h"

/* A lane holds one level per nesting depth of its spans: a span begun
 * inside another is drawn on the level below it, as in a flame chart. */
enum {
    LABEL_WIDTH = 170, PLOT_WIDTH = 900, LEVEL_HEIGHT = 20, LANE_PAD = 4, TOP = 34,
    MAX_DEPTH = 8, MAX_STATES = 24, STATE_TEXT = 40,
};
static const double MIN_SPAN_WIDTH = 1.0; /* narrower spans cannot be seen: not drawn, not in the legend */

/* A state's colour class is its name with digits removed ("running task 7"
 * and "running task 12" are one state). Colours are handed out in order of
 * first appearance: warm ones for waiting states, cool ones for the rest. */
struct palette {
    char states[MAX_STATES][STATE_TEXT];
    const char *colours[MAX_STATES];
    int count, warm_used, cool_used;
};

static const char *const cool_colours[] = { "#4e9a06", "#3465a4", "#75507b", "#06989a",
                                            "#8ae234", "#729fcf", "#ad7fa8", "#34e2e2" };
static const char *const warm_colours[] = { "#ef2929", "#f57900", "#edd400", "#c17d11" };

static void state_key(const char *name, char *key)
{
    size_t n = 0;
    for (const char *c = name; *c && n + 1 < STATE_TEXT; c++)
        if (!isdigit((unsigned char)*c))
            key[n++] = *c;
    while (n > 0 && strchr(" #-", key[n - 1]) != NULL) /* "teller-3 #2" leaves "teller- #" */
        n--;
    key[n] = '\0';
}

static int is_waiting(const char *key)
{
    return strstr(key, "wait") || strstr(key, "block") || strstr(key, "starv");
}

static int palette_index(struct palette *palette, const char *name)
{
    char key[STATE_TEXT];
    state_key(name, key);
    for (int i = 0; i < palette->count; i++)
        if (strcmp(palette->states[i], key) == 0)
            return i;
    if (palette->count == MAX_STATES)
        return MAX_STATES - 1;
    int i = palette->count++;
    snprintf(palette->states[i], STATE_TEXT, "%s", key);
    palette->colours[i] = is_waiting(key) ? warm_colours[palette->warm_used++ % 4]
                                          : cool_colours[palette->cool_used++ % 8];
    return i;
}

void kit_svg_write_text(FILE *out, const char *text)
{
    for (; *text; text++) {
        switch (*text) {
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '&': fputs("&amp;", out); break;
        case '"': fputs("&quot;", out); break;
        default: fputc(*text, out);
        }
    }
}

struct canvas {
    FILE *out;
    double span_ns;    /* time covered by the plot */
    unsigned *row_of;  /* lane -> row: main first, then threads grouped by role */
    int *levels;       /* lane -> nesting levels drawn in it (at least 1) */
    double *top;       /* lane -> y of its top edge */
    double bottom;     /* y below the last lane */
    struct palette palette;
};

static double lane_height(const struct canvas *canvas, unsigned lane)
{
    return canvas->levels[lane] * LEVEL_HEIGHT + 2 * LANE_PAD;
}

/* Dark text on light colours, white on dark ones. */
static const char *text_colour(const char *fill)
{
    unsigned long rgb = strtoul(fill + 1, NULL, 16);
    double light = 0.299 * (double)(rgb >> 16) + 0.587 * (double)((rgb >> 8) & 0xff) + 0.114 * (double)(rgb & 0xff);
    return light > 150 ? "#2e3436" : "#ffffff";
}

/* "pool-10" after "pool-9": main first, then names by their text, then their number. */
static int compare_names(const char *a, const char *b)
{
    bool a_main = strcmp(a, "main") == 0, b_main = strcmp(b, "main") == 0;
    if (a_main != b_main)
        return a_main ? -1 : 1;
    size_t la = strcspn(a, "0123456789"), lb = strcspn(b, "0123456789");
    int prefix = strncmp(a, b, la < lb ? la : lb);
    if (prefix != 0)
        return prefix;
    if (la != lb)
        return la < lb ? -1 : 1;
    long na = atol(a + la), nb = atol(b + lb);
    if (na != nb)
        return na < nb ? -1 : 1;
    return strcmp(a, b);
}

/* lane -> row: how many lanes come before it. A few dozen lanes at most. */
static unsigned *order_rows(unsigned lanes)
{
    unsigned *row_of = calloc(lanes ? lanes : 1, sizeof *row_of);
    for (unsigned lane = 0; row_of != NULL && lane < lanes; lane++)
        for (unsigned other = 0; other < lanes; other++) {
            int order = compare_names(kit_trace_lane_name(other), kit_trace_lane_name(lane));
            if (order < 0 || (order == 0 && other < lane))
                row_of[lane]++;
        }
    return row_of;
}

static double x_of(const struct canvas *canvas, int64_t ts)
{
    return LABEL_WIDTH + (double)ts / canvas->span_ns * PLOT_WIDTH;
}

static void draw_span(struct canvas *canvas, unsigned lane, int depth, const kit_trace_event_t *begin, int64_t end_ts)
{
    int index = palette_index(&canvas->palette, begin->name);
    const char *fill = canvas->palette.colours[index];
    double x = x_of(canvas, begin->ts_ns), width = x_of(canvas, end_ts) - x;
    double y = canvas->top[lane] + LANE_PAD + depth * LEVEL_HEIGHT, height = LEVEL_HEIGHT - 2;
    fprintf(canvas->out, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.0f\" fill=\"%s\" stroke=\"white\" stroke-width=\"1\"><title>",
            x, y, width, height, fill);
    kit_svg_write_text(canvas->out, begin->name);
    fprintf(canvas->out, " (%.3f ms)</title></rect>\n", (double)(end_ts - begin->ts_ns) / 1e6);
    if (width > 6.2 * (double)strlen(begin->name) + 8) { /* the state's text, where it fits */
        fprintf(canvas->out, "<text x=\"%.2f\" y=\"%.1f\" font-size=\"11\" fill=\"%s\" pointer-events=\"none\">", x + 4,
                y + height * 0.72, text_colour(fill));
        kit_svg_write_text(canvas->out, begin->name);
        fputs("</text>\n", canvas->out);
    }
}

static void draw_instant(struct canvas *canvas, const kit_trace_event_t *event)
{
    double x = x_of(canvas, event->ts_ns), y = canvas->top[event->lane] + LANE_PAD + LEVEL_HEIGHT / 2.0;
    fprintf(canvas->out, "<path d=\"M%.2f %.1f l4 6 l-8 0 z\" fill=\"#2e3436\"><title>", x, y - 2);
    kit_svg_write_text(canvas->out, event->category);
    fputs(" - ", canvas->out);
    kit_svg_write_text(canvas->out, event->name);
    fprintf(canvas->out, " (%.3f ms)</title></path>\n", (double)event->ts_ns / 1e6);
}

/* A span found by pairing a 'B' with its 'E'. */
struct span {
    const kit_trace_event_t *begin;
    int64_t end_ts;
    int depth;
};

/* Walk the events once, pairing each 'E' with the lane's innermost open 'B';
 * spans still open at the end run to end_ts. Returns the spans found. */
static size_t pair_spans(const kit_trace_event_t *events, size_t count, unsigned lanes, int64_t end_ts,
                         struct span *spans)
{
    const kit_trace_event_t *(*open)[MAX_DEPTH] = calloc(lanes ? lanes : 1, sizeof *open);
    int *depth = calloc(lanes ? lanes : 1, sizeof *depth);
    size_t found = 0;
    for (size_t i = 0; open && depth && i < count; i++) {
        unsigned lane = events[i].lane;
        if (events[i].phase == 'B' && depth[lane] < MAX_DEPTH)
            open[lane][depth[lane]++] = &events[i];
        else if (events[i].phase == 'E' && depth[lane] > 0) {
            depth[lane]--;
            spans[found++] = (struct span){ open[lane][depth[lane]], events[i].ts_ns, depth[lane] };
        }
    }
    for (unsigned lane = 0; open && depth && lane < lanes; lane++)
        while (depth[lane] > 0) {
            depth[lane]--;
            spans[found++] = (struct span){ open[lane][depth[lane]], end_ts, depth[lane] };
        }
    free(open);
    free(depth);
    return found;
}

/* Keeps the spans wide enough to be seen, and gives each lane as many
 * levels as its deepest kept span needs. Returns the spans kept. */
static size_t keep_visible(struct canvas *canvas, unsigned lanes, struct span *spans, size_t found)
{
    size_t kept = 0;
    for (unsigned lane = 0; lane < lanes; lane++)
        canvas->levels[lane] = 1;
    for (size_t i = 0; i < found; i++) {
        if (x_of(canvas, spans[i].end_ts) - x_of(canvas, spans[i].begin->ts_ns) < MIN_SPAN_WIDTH)
            continue;
        spans[kept++] = spans[i];
        unsigned lane = spans[i].begin->lane;
        if (spans[i].depth + 1 > canvas->levels[lane])
            canvas->levels[lane] = spans[i].depth + 1;
    }
    return kept;
}

/* Each lane's top edge: the heights of the lanes in the rows above it. */
static void place_lanes(struct canvas *canvas, unsigned lanes)
{
    canvas->bottom = TOP;
    for (unsigned lane = 0; lane < lanes; lane++) {
        canvas->top[lane] = TOP;
        for (unsigned other = 0; other < lanes; other++)
            if (canvas->row_of[other] < canvas->row_of[lane])
                canvas->top[lane] += lane_height(canvas, other);
        canvas->bottom += lane_height(canvas, lane);
    }
}

static void draw_events(struct canvas *canvas, const kit_trace_event_t *events, size_t count,
                        const struct span *spans, size_t found)
{
    for (size_t i = 0; i < found; i++)
        draw_span(canvas, spans[i].begin->lane, spans[i].depth, spans[i].begin, spans[i].end_ts);
    for (size_t i = 0; i < count; i++)
        if (events[i].phase == 'i')
            draw_instant(canvas, &events[i]);
}

/* The smallest of 1, 2, 5 x 10^k ms that needs at most 10 ticks. */
static double nice_step(double span_ms)
{
    static const double mantissas[] = { 1, 2, 5 };
    for (double magnitude = 1e-3;; magnitude *= 10)
        for (int i = 0; i < 3; i++)
            if (span_ms / (mantissas[i] * magnitude) <= 10)
                return mantissas[i] * magnitude;
}

static void draw_frame(struct canvas *canvas, unsigned lanes)
{
    FILE *out = canvas->out;
    for (unsigned lane = 0; lane < lanes; lane++) {
        double y = canvas->top[lane], height = lane_height(canvas, lane);
        fprintf(out, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"%s\"/>\n", LABEL_WIDTH, y,
                PLOT_WIDTH, height, canvas->row_of[lane] % 2 ? "#f4f4f2" : "#ffffff");
        fprintf(out, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", LABEL_WIDTH - 8, y + LANE_PAD + LEVEL_HEIGHT * 0.65);
        kit_svg_write_text(out, kit_trace_lane_name(lane));
        fputs("</text>\n", out);
    }
    double span_ms = canvas->span_ns / 1e6, step = nice_step(span_ms);
    for (double t = 0; t <= span_ms + 1e-9; t += step) {
        double x = LABEL_WIDTH + t / span_ms * PLOT_WIDTH;
        fprintf(out, "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#d3d7cf\"/>\n", x, TOP - 4, x,
                canvas->bottom);
        fprintf(out, "<text x=\"%.2f\" y=\"%d\" text-anchor=\"middle\" fill=\"#555753\">%g ms</text>\n", x, TOP - 8, t);
    }
}

/* What the legend explains besides the states: only what the picture draws. */
struct legend_extras {
    bool instants; /* at least one event marker */
    bool nested;   /* at least one lane with a span inside another */
};

static const char *const EVENT_TEXT = "event (in the picture opened on its own, hover over it for its text)";
static const char *const NESTED_TEXT = "a bar below another: a state inside that one";

/* The legend's entries flow left to right and wrap; with draw == false it
 * only counts the rows it needs, so the picture can be made tall enough. */
static int lay_out_legend(struct canvas *canvas, struct legend_extras extras, bool draw)
{
    double y = canvas->bottom + 22, x = LABEL_WIDTH;
    int rows = 1;
    for (int i = 0; i < canvas->palette.count + 2; i++) {
        bool marker = i == canvas->palette.count, nesting = i == canvas->palette.count + 1;
        if ((marker && !extras.instants) || (nesting && !extras.nested))
            continue;
        const char *text = canvas->palette.states[i];
        if (marker)
            text = EVENT_TEXT;
        else if (nesting)
            text = NESTED_TEXT;
        double width = 30 + 7.0 * (double)strlen(text);
        if (x + width > LABEL_WIDTH + PLOT_WIDTH && x > LABEL_WIDTH) {
            x = LABEL_WIDTH;
            y += 20;
            rows++;
        }
        if (draw && marker)
            fprintf(canvas->out, "<path d=\"M%.1f %.1f l4 6 l-8 0 z\" fill=\"#2e3436\"/>", x + 7, y - 8);
        else if (draw && nesting)
            fprintf(canvas->out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"6\" fill=\"#888a85\"/>"
                                 "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"5\" fill=\"#babdb6\"/>",
                    x, y - 11, x + 2, y - 4);
        else if (draw)
            fprintf(canvas->out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"12\" fill=\"%s\"/>", x, y - 10,
                    canvas->palette.colours[i]);
        if (draw) {
            fprintf(canvas->out, "<text x=\"%.1f\" y=\"%.1f\">", x + 18, y);
            kit_svg_write_text(canvas->out, text);
            fputs("</text>\n", canvas->out);
        }
        x += width;
    }
    return rows;
}

static struct legend_extras find_extras(const struct canvas *canvas, unsigned lanes,
                                        const kit_trace_event_t *events, size_t count)
{
    struct legend_extras extras = { false, false };
    for (size_t i = 0; i < count; i++)
        if (events[i].phase == 'i')
            extras.instants = true;
    for (unsigned lane = 0; lane < lanes; lane++)
        if (canvas->levels[lane] > 1)
            extras.nested = true;
    return extras;
}

/* Spans in the order they began, so the legend lists states as they first appear. */
static int compare_begins(const void *a, const void *b)
{
    const kit_trace_event_t *first = ((const struct span *)a)->begin, *second = ((const struct span *)b)->begin;
    if (first == second)
        return 0;
    return first < second ? -1 : 1;
}

static void write_picture(struct canvas *canvas, unsigned lanes, const kit_trace_event_t *events, size_t count,
                          struct span *spans, size_t found)
{
    found = keep_visible(canvas, lanes, spans, found);
    qsort(spans, found, sizeof *spans, compare_begins);
    place_lanes(canvas, lanes);
    /* Meet the states first: the legend's height depends on how many there are. */
    for (size_t i = 0; i < found; i++)
        palette_index(&canvas->palette, spans[i].begin->name);
    struct legend_extras extras = find_extras(canvas, lanes, events, count);
    int height = (int)canvas->bottom + 16 + 20 * lay_out_legend(canvas, extras, false);
    /* viewBox + width 100%: the picture scales down to fit a narrow page. */
    int width = LABEL_WIDTH + PLOT_WIDTH + 20;
    fprintf(canvas->out, "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" width=\"100%%\" "
                         "style=\"max-width:%dpx\" font-family=\"sans-serif\" font-size=\"12\">\n"
                         "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            width, height, width);
    draw_frame(canvas, lanes);
    draw_events(canvas, events, count, spans, found);
    lay_out_legend(canvas, extras, true);
    fputs("</svg>\n", canvas->out);
}

static int64_t last_timestamp(const kit_trace_event_t *events, size_t count)
{
    return count ? events[count - 1].ts_ns : 0;
}

int kit_timeline_write_svg(const char *path)
{
    kit_trace_event_t *events;
    size_t count;
    if (kit_trace_snapshot(&events, &count) != 0)
        return ENOMEM;
    unsigned lanes = kit_trace_lane_count();
    int64_t end_ts = last_timestamp(events, count);
    struct canvas canvas = { .span_ns = end_ts > 0 ? (double)end_ts * 1.02 : 1e6, .row_of = order_rows(lanes),
                             .levels = calloc(lanes ? lanes : 1, sizeof(int)),
                             .top = calloc(lanes ? lanes : 1, sizeof(double)) };
    struct span *spans = calloc(count ? count : 1, sizeof *spans);
    int err = canvas.row_of && canvas.levels && canvas.top && spans ? 0 : ENOMEM;
    if (err == 0 && (canvas.out = fopen(path, "w")) == NULL)
        err = errno;
    if (err == 0) {
        write_picture(&canvas, lanes, events, count, spans, pair_spans(events, count, lanes, end_ts, spans));
        err = ferror(canvas.out) ? EIO : 0;
        if (fclose(canvas.out) != 0 && err == 0)
            err = errno;
    }
    free(spans);
    free(canvas.top);
    free(canvas.levels);
    free(canvas.row_of);
    free(events);
    return err;
}
