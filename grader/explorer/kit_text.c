/**
 * @file kit_text.c
 * @brief A report's text, put together piece by piece (kit_text_t): one
 *        file of its own, since both the explorer's reports and a judge's
 *        checks of generated scenarios write with it, and a judge links no
 *        explorer.
 */
#define _GNU_SOURCE
#include "kit_sched.h"

#include <stdarg.h>
#include <stdio.h>

void kit_text_put(kit_text_t *t, const char *fmt, ...)
{
    if (t->at + 1 >= t->size)
        return;
    va_list args;
    va_start(args, fmt);
    int n = vsnprintf(t->out + t->at, t->size - t->at, fmt, args);
    va_end(args);
    if (n > 0)
        t->at += (size_t)n < t->size - t->at ? (size_t)n : t->size - t->at - 1;
}
