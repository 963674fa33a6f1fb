/**
 * @file dmw_work.h
 * @brief Chapter 07 tests' work: the process function every worker of the
 *        tests runs, whatever process it runs in.
 *
 * It is test code, but it runs where the worker runs: in a forked copy of
 * the test, or - judged - in the subject program beside the test, which
 * links the submission (dmw_call.h). A worker's knobs name it by pointer in
 * the test and by name across an exec, so it is the only process function
 * a test hands a worker.
 */
#ifndef DMW_WORK_H
#define DMW_WORK_H

#include <stddef.h>

#include "dmw.h"

/**
 * @brief The payload is the script: "ok", "sleep MS", "sleep-first MS" (only
 *        on the first delivery), "retry" (EAGAIN every time), "retry-first"
 *        (EAGAIN on the first delivery only), "fail" (for good),
 *        "retry-quietly" and "fail-quietly" (the same, leaving the text
 *        empty), "crash-after-outcome" (on its first delivery the process
 *        dies right after its next command). A result reads "result ID,
 *        call N": the N-th delivery of the task the journal holds.
 */
int dmw_work_scripted(const dmw_task_t *task, char *text, size_t size, void *ctx);

/** @brief How many deliveries of task @p id the journal holds, across every process of the run. */
int dmw_work_deliveries(long id);

#endif
