/**
 * @file kit_sched_recheck.c
 * @brief A wait that woke for nothing and was not looked at again: a
 *        thread's wait on a condition variable returned spuriously (no
 *        signal, nothing changed - POSIX allows it, and the explorer makes
 *        it happen), and the thread let the mutex go without reading again
 *        any of the memory its wait's section read - what it waited for.
 *        A wait in an `if`, not a `while`: the code went on as though what
 *        it waited for had come.
 *
 * Followed only while the paths are (a failing schedule run again for its
 * report), as kit_sched_split.c is; kit_sched_report.c tells it as the
 * "why:" of a failure, naming the wait.
 */
#include "kit_sched_internal.h"

#include <string.h>

enum { READS = SCHED_NOTE_READS };

/* Per thread: its wait that returned spuriously, until it reads again what
 * that wait's section read (looked again) or lets the mutex go (it did not). */
static struct after_spurious {
    bool open;
    struct sched_span reads[READS];
    int nreads;
    struct sched_unlooked told; /* what a let-go then tells */
} threads[SCHED_MAX_THREADS];

static struct sched_unlooked found;
static bool any_found;

void sched_recheck_begin(void)
{
    any_found = false;
}

void sched_recheck_thread_begins(int thread)
{
    if (thread >= 0 && thread < SCHED_MAX_THREADS)
        threads[thread].open = false;
}

void sched_recheck_woke(int thread, int cond, void *where)
{
    if (thread < 0 || thread >= SCHED_MAX_THREADS)
        return;
    struct after_spurious *t = &threads[thread];
    t->nreads = sched_changes_wait_reads(thread, t->reads, READS);
    t->open = t->nreads > 0; /* (a wait whose section read nothing of the code's: nothing to look at again) */
    t->told = (struct sched_unlooked){ thread, cond, where, NULL, sched.nsteps };
}

void sched_recheck_read(int thread, const void *addr, unsigned size)
{
    struct after_spurious *t = &threads[thread]; /* (the caller checked thread) */
    uintptr_t a = (uintptr_t)addr;
    for (int i = 0; t->open && i < t->nreads; i++)
        if (t->reads[i].addr < a + size && a < t->reads[i].addr + t->reads[i].size)
            t->open = false; /* it looked again */
}

void sched_recheck_let_go(int thread, void *where)
{
    if (thread < 0 || thread >= SCHED_MAX_THREADS || !threads[thread].open)
        return;
    threads[thread].open = false;
    if (!any_found) {
        found = threads[thread].told;
        found.let_go = where;
        any_found = true;
    }
}

bool sched_recheck_found(struct sched_unlooked *out)
{
    if (any_found)
        *out = found;
    return any_found;
}
