/* Hostile submission: locks the same mutex twice. */
#define _POSIX_C_SOURCE 200809L
#include "msgq.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int msgq_create(msgq_t **out, size_t capacity)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    (void)out;
    (void)capacity;
    pthread_mutex_lock(&lock);
    pthread_mutex_lock(&lock); /* a default mutex: this never returns */
    return 0;
}

int msgq_put(msgq_t *q, msg_t msg) { (void)q; (void)msg; return ENOSYS; }
int msgq_take(msgq_t *q, msg_t *out) { (void)q; (void)out; return ENOSYS; }
int msgq_close(msgq_t *q) { (void)q; return ENOSYS; }
size_t msgq_size(msgq_t *q) { (void)q; return 0; }
void msgq_destroy(msgq_t *q) { (void)q; }
