/**
 * @file buggy_copy.c
 * @brief The mistake of buggy_copy.h, written the way a student would write
 *        it, and built as a submission's code is: instrumented, its memcpy
 *        handed to the kit first, so that the copy is seen on a schedule.
 */
#define _POSIX_C_SOURCE 200809L
#include "buggy_copy.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct tally {
    pthread_mutex_t lock;
    /* Guarded by lock: */
    long counts[TALLY_SLOTS];
};

tally_t *tally_create(void)
{
    tally_t *t = calloc(1, sizeof *t);
    if (t != NULL && pthread_mutex_init(&t->lock, NULL) != 0) {
        free(t);
        t = NULL;
    }
    return t;
}

void tally_destroy(tally_t *t)
{
    if (t == NULL)
        return;
    pthread_mutex_destroy(&t->lock);
    free(t);
}

void tally_add(tally_t *t, int slot)
{
    pthread_mutex_lock(&t->lock);
    t->counts[slot]++;
    pthread_mutex_unlock(&t->lock);
}

void tally_snapshot(tally_t *t, long *out, size_t slots)
{
    pthread_mutex_lock(&t->lock);
    size_t bytes = (slots < TALLY_SLOTS ? slots : TALLY_SLOTS) * sizeof *out;
    pthread_mutex_unlock(&t->lock);
    memcpy(out, t->counts, bytes); /* BUG: copied after the unlock */
}
