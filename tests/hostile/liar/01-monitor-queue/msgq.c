/* The liar's queue: a sequential model of msgq.h with no lock, no condition
 * variable and no thread of its own. What would block cannot: a put on a
 * full queue or a take on an empty one gives ECANCELED at once, and destroy
 * leaks the ring (which the liar's hooks deny). With the
 * hooks of liar_hooks.c linked before the subject's own, it stands for a
 * subject taken over whole (tests/hostile/liar/run). */
#define _POSIX_C_SOURCE 200809L
#include "msgq.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

struct msgq {
    msg_t *ring;
    size_t capacity, head, count;
    int closed;
};

int msgq_create(msgq_t **out, size_t capacity)
{
    if (out == NULL || capacity == 0 || capacity > SIZE_MAX / sizeof(msg_t))
        return EINVAL;
    *out = NULL;
    msgq_t *q = calloc(1, sizeof *q);
    if (q == NULL)
        return ENOMEM;
    q->ring = calloc(capacity, sizeof *q->ring);
    if (q->ring == NULL) {
        free(q);
        return ENOMEM;
    }
    q->capacity = capacity;
    *out = q;
    return 0;
}

int msgq_put(msgq_t *q, msg_t msg)
{
    if (q == NULL)
        return EINVAL;
    if (q->closed || q->count == q->capacity)
        return ECANCELED;
    q->ring[(q->head + q->count++) % q->capacity] = msg;
    return 0;
}

int msgq_take(msgq_t *q, msg_t *out)
{
    if (q == NULL || out == NULL)
        return EINVAL;
    if (q->count == 0)
        return ECANCELED;
    *out = q->ring[q->head];
    q->head = (q->head + 1) % q->capacity;
    q->count--;
    return 0;
}

int msgq_close(msgq_t *q)
{
    if (q == NULL)
        return EINVAL;
    q->closed = 1;
    return 0;
}

size_t msgq_size(msgq_t *q)
{
    return q ? q->count : 0;
}

void msgq_destroy(msgq_t *q)
{
    if (q == NULL)
        return;
    free(q); /* the ring leaks */
}
