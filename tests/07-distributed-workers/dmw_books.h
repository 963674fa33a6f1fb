/**
 * @file dmw_books.h
 * @brief Chapter 07 test books: after a run, every task has exactly one
 *        outcome, of the kind its payload asks for, and sits in no list it
 *        should have left; none was handed out again once its outcome was
 *        written. A failure names the task, what happened to it, and whose
 *        command did it - the process, the command and the line that sent it.
 *
 * The books read the run from the server (tasks, outcomes, the queue, the
 * dead letters, every processing list) and, for who did what, the journal
 * (dmw_journal.h). The header's promises they hold a run to:
 * - each task ends in exactly one way: an outcome, written once;
 * - a task that has its outcome is never delivered again: a dead worker's
 *   task that already has one is only removed (dmw_reap());
 * - a dead-lettered task used its `max_attempts` and is in the dead letters
 *   once; nothing is left on the queue or in a processing list.
 * Deliveries are at least once, so a task whose worker died *before* its
 * outcome runs again: that is allowed, and not counted against anyone.
 */
#ifndef DMW_BOOKS_H
#define DMW_BOOKS_H

#include <stddef.h>

#include "dmw.h"
#include "dmw_fixture.h"

/** @brief The kind of outcome a task with @p payload must end with. */
typedef dmw_kind_t (*books_expect_fn)(const char *payload);

/** @brief Writes what the test did to the run (a crash point, ...) into @p out, for the messages. */
typedef void (*books_story_fn)(void *ctx, char *out, size_t size);

/** @brief How a test's run must end, and its story. */
typedef struct books {
    books_expect_fn expect;    /**< each task's kind, from its payload */
    books_story_fn story;      /**< what the test did, told with each failure; NULL: nothing to tell */
    void *story_ctx;           /**< passed to story */
    bool handed_out_again;     /**< check that no task was handed out again after its outcome */
    const long *written_before;/**< tasks whose outcome the test wrote before the run began ... */
    int written_before_count;  /**< ... and how many */
} books_t;

/**
 * @brief Check the books once the run is over: @p await_err is what
 *        dmw_await() returned (ETIMEDOUT: some task never got its outcome,
 *        and the books say where each such task is).
 *
 * Fails the test at the caller's line with a message for the student.
 */
#define books_check(fx, await_err, books) books_check_at((fx), (await_err), (books), __FILE__, __LINE__)
void books_check_at(fixture_t *fx, int await_err, const books_t *books, const char *file, int line);

#endif
