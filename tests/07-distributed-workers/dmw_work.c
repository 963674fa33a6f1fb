/**
 * @file dmw_work.c
 * @brief The chapter-07 tests' process function (dmw_work.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "dmw_work.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dmw_journal.h"
#include "kit_time.h"

int dmw_work_deliveries(long id)
{
    return journal_deliveries(id, NULL, 0);
}

int dmw_work_scripted(const dmw_task_t *task, char *text, size_t size, void *ctx)
{
    (void)ctx;
    int call = journal_note_delivery(task);
    long ms = 0;
    if (sscanf(task->payload, "sleep %ld", &ms) == 1 ||
        (sscanf(task->payload, "sleep-first %ld", &ms) == 1 && task->attempt == 1))
        kit_sleep_ms(ms);
    if (strcmp(task->payload, "retry") == 0 || (strcmp(task->payload, "retry-first") == 0 && task->attempt == 1)) {
        snprintf(text, size, "still not ready");
        return EAGAIN;
    }
    if (strcmp(task->payload, "fail") == 0) {
        snprintf(text, size, "bad input");
        return EPERM;
    }
    if (strcmp(task->payload, "retry-quietly") == 0)
        return EAGAIN;
    if (strcmp(task->payload, "fail-quietly") == 0)
        return EPERM;
    if (strcmp(task->payload, "crash-after-outcome") == 0 && task->attempt == 1)
        journal_crash_after_next_call();
    snprintf(text, size, "result %ld, call %d", task->id, call);
    return 0;
}
