/**
 * @file dmw_record.c
 * @brief The texts that travel through the run's lists and hashes.
 *
 * A task record is `ID ATTEMPTS PAYLOAD` and an outcome `KIND WORKER
 * ATTEMPTS TEXT`: plain text, so that `redis-cli LRANGE` shows a run as it
 * is. The payload and the text come last and may hold spaces.
 */
#define _POSIX_C_SOURCE 200809L
#include "dmw_redis.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = { [DMW_DONE] = "done", [DMW_FAILED] = "failed", [DMW_DEAD] = "dead" };

int dmw_record_encode(long id, int attempts, const char *payload, char *record, size_t size)
{
    if (payload == NULL || record == NULL || id < 0 || attempts < 0)
        return EINVAL;
    int n = snprintf(record, size, "%ld %d %s", id, attempts, payload);
    return n >= 0 && (size_t)n < size ? 0 : ERANGE;
}

/* A decimal number followed by one space; *at moves past both. */
static int read_number(const char **at, long max, long *out)
{
    char *end;
    errno = 0;
    long value = strtol(*at, &end, 10);
    if (end == *at || **at == '-' || **at == '+' || **at == ' ' || errno != 0 || value > max || *end != ' ')
        return EINVAL;
    *out = value;
    *at = end + 1;
    return 0;
}

int dmw_record_decode(const char *record, dmw_task_t *task)
{
    if (record == NULL || task == NULL)
        return EINVAL;
    const char *at = record;
    long id, attempts;
    if (read_number(&at, LONG_MAX, &id) != 0 || read_number(&at, INT_MAX - 1, &attempts) != 0 ||
        strlen(at) >= sizeof task->payload)
        return EINVAL;
    task->id = id;
    task->attempt = (int)attempts;
    snprintf(task->payload, sizeof task->payload, "%s", at);
    return 0;
}

int dmw_outcome_encode(const dmw_outcome_t *o, char *text, size_t size)
{
    if (o == NULL || text == NULL || (unsigned)o->kind > DMW_DEAD || !dmw_name_ok(o->worker) || o->attempts < 0)
        return EINVAL;
    int n = snprintf(text, size, "%s %s %d %s", kind_names[o->kind], o->worker, o->attempts, o->text);
    return n >= 0 && (size_t)n < size ? 0 : ERANGE;
}

int dmw_outcome_decode(long id, const char *text, dmw_outcome_t *o)
{
    if (text == NULL || o == NULL)
        return EINVAL;
    memset(o, 0, sizeof *o);
    o->id = id;
    size_t kind_length = strcspn(text, " ");
    int kind = -1;
    for (int k = DMW_DONE; k <= DMW_DEAD; k++)
        if (strlen(kind_names[k]) == kind_length && strncmp(text, kind_names[k], kind_length) == 0)
            kind = k;
    const char *at = text + kind_length;
    size_t name_length = *at == ' ' ? strcspn(at + 1, " ") : 0;
    if (kind < 0 || name_length == 0 || name_length >= sizeof o->worker)
        return EINVAL;
    o->kind = (dmw_kind_t)kind;
    snprintf(o->worker, sizeof o->worker, "%.*s", (int)name_length, at + 1);
    const char *after_name = at + 1 + name_length;
    if (*after_name != ' ')
        return EINVAL;
    at = after_name + 1;
    long attempts;
    if (read_number(&at, INT_MAX, &attempts) != 0)
        return EINVAL;
    o->attempts = (int)attempts;
    snprintf(o->text, sizeof o->text, "%s", at);
    return 0;
}
