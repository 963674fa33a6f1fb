/**
 * @file kit_timeline.h
 * @brief Draw a recorded trace as an SVG timeline: one lane per thread.
 *
 * Each thread is a horizontal lane; each span (kit_trace_begin() ..
 * kit_trace_end()) is a coloured bar labelled with its state where the text
 * fits; a span begun inside another is drawn on a level of its own just
 * below it, as in a flame chart. Each instant is a small marker whose text
 * shows on hover when the SVG is opened on its own (a page that embeds it
 * as an image shows no hover text). States that differ only in numbers
 * ("running task 7", "running task 8") share a colour, and waiting states
 * are always drawn in warm colours, so "who was blocked, and for how long"
 * is visible at a glance. Spans too short to be seen (under a pixel wide)
 * are left out, and the legend lists only what is drawn. A time axis and
 * the legend complete the picture. No external tool is needed: open the
 * file in a browser.
 *
 * @ingroup kit
 */
#ifndef KIT_TIMELINE_H
#define KIT_TIMELINE_H

#include <stdio.h>

/** @addtogroup kit
 *  @{ */

/**
 * @brief Render the events recorded so far (kit_trace.h) to @p path as SVG.
 * @return 0, ENOMEM, or the errno of opening or writing the file.
 */
int kit_timeline_write_svg(const char *path);

/** @brief Write @p text into an SVG (or any XML) file, with `<`, `>`, `&` and `"` escaped. */
void kit_svg_write_text(FILE *out, const char *text);

/** @} */
#endif
