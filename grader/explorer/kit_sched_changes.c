/**
 * @file kit_sched_changes.c
 * @brief What a sleeper waits for, and who changed it last: the shared memory
 *        each thread read in the critical section that ended in its last wait
 *        (what its wait's condition reads), and the schedule's last writes. A
 *        lost wake-up then names the line that changed that condition without
 *        a signal (kit_sched_report.c), not only the critical section around it.
 *
 * And a wake-up a time-out took: a timed wait that a signal chose - with
 * what it waited for changed since it slept, and nobody else in its mutex
 * since the signal - that timed out at once (POSIX allows both), after which
 * its thread let the mutex go without passing the wake-up on. Whether the
 * code then gave up is its call's result (kit_sched_wakeup_given_up): the
 * scenario harness asks when a timed call returned ETIMEDOUT.
 *
 * Only the code under test's loads and stores reach here (the explorer's
 * memory hook, kit_sched_memory.c); the tests' own are not seen.
 */
#include "kit_sched_internal.h"

#include <string.h>

enum { READS = SCHED_NOTE_READS, WRITES = SCHED_NOTE_WRITES, PENDING = SCHED_NOTE_PENDING };

/* What the notes of each load and store go to (kit_sched_internal.h): per
 * thread, its current section - the memory read since it last took a first
 * mutex (the last READS reads, reads[n % READS] the n-th, a read of memory it
 * then wrote itself emptied) and its writes not yet applied to them - and
 * the schedule's last WRITES writes. A write empties the reads before it
 * that it overlaps, not at once but when the reads are wanted - at a wait or
 * a look at the section - or when PENDING writes wait their turn: then most
 * writes cost two stores, and those of a section that ends without a wait
 * are dropped unapplied. Written by the running thread only, as the model is. */
struct sched_notes sched_notes;

/* Per thread: the memory its last wait's section read. */
static struct sched_span wait_reads[SCHED_MAX_THREADS][READS];
static int nwait[SCHED_MAX_THREADS];
static long wait_from[SCHED_MAX_THREADS]; /* nwrites when its last wait began */

/* A sleeper of the code under test that only a long time-out woke: no
 * thread could go on (sched_changes_stalled), as in a deadlock. While
 * as_of_stall, what its wait read and the writes up to then are the ones
 * asked about (sched_changes_of). */
enum { STALLS = 8 };
static struct stall {
    int thread;
    long step;
    struct sched_span reads[READS];
    int nreads;
} stalls[STALLS];            /* the last STALLS, stalls[n % STALLS] the n-th */
static long nstalls;
static const struct stall *as_of;  /* NULL: now */

/* Per thread: a timed wait that took a wake-up (sched_changes_took_wakeup),
 * from then until the thread lets its mutex go - the places it read or
 * wrote meanwhile, each once, in order (PATH at most) - and, once it let
 * the mutex go without passing the wake-up on, the wait, that path and the
 * place it let go (given_up, until kit_sched_wakeup_given_up takes it). */
enum { PATH = 6 };
static struct taken {
    bool open, given_up;
    int cond, mutex;
    void *places[PATH + 2]; /* the wait, the path, where it let the mutex go */
    int nplaces;
} taken[SCHED_MAX_THREADS];

void sched_changes_begin(void)
{
    sched_notes.nwrites = 0;
    nstalls = 0;
    as_of = NULL;
    sched_notes.open = 0;
}

/* A thread's notes start empty (not at each schedule's start for every
 * thread there may be: a schedule has a few). */
void sched_changes_thread_begins(int thread)
{
    if (thread < 0 || thread >= SCHED_MAX_THREADS)
        return;
    struct sched_section *section = &sched_notes.section[thread];
    section->nreads = 0;
    section->npending = 0;
    section->nwritten = 0;
    nwait[thread] = 0;
    sched_notes.last_write[thread] = -1;
    taken[thread] = (struct taken){ .open = false };
}

static bool overlap(const struct sched_span *a, const struct sched_span *b)
{
    return a->size > 0 && b->size > 0 && a->addr < b->addr + b->size && b->addr < a->addr + a->size;
}

void sched_changes_on_path(int thread, void *where)
{
    struct taken *t = &taken[thread];
    if (!t->open)
        return;
    for (int i = 1; i < t->nplaces; i++) /* (each place once) */
        if (t->places[i] == where)
            return;
    if (t->nplaces < PATH + 1)
        t->places[t->nplaces++] = where;
}

void sched_changes_apply(int thread)
{
    struct sched_section *section = &sched_notes.section[thread];
    struct sched_span *reads = section->reads;
    int n = section->nreads < READS ? section->nreads : READS;
    unsigned first = section->nwritten - (unsigned)section->npending; /* the number of the first pending write */
    for (int w = 0; w < section->npending; w++) {
        const struct sched_span *write = &section->pending[w];
        for (int i = 0; i < n; i++)
            if (reads[i].after <= first + (unsigned)w && reads[i].addr < write->addr + write->size &&
                write->addr < reads[i].addr + reads[i].size)
                reads[i].size = 0; /* (an emptied one, overlapping or not, stays empty) */
    }
    section->npending = 0;
}

void sched_changes_section(int thread)
{
    if (thread >= 0 && thread < SCHED_MAX_THREADS) {
        struct sched_section *section = &sched_notes.section[thread];
        section->nreads = 0;
        section->npending = 0; /* (what the last section wrote empties none of the next one's reads) */
        section->nwritten = 0;
    }
}

void sched_changes_wait(int thread)
{
    if (thread < 0 || thread >= SCHED_MAX_THREADS)
        return;
    sched_changes_apply(thread);
    const struct sched_section *section = &sched_notes.section[thread];
    memcpy(wait_reads[thread], section->reads, sizeof wait_reads[thread]);
    nwait[thread] = section->nreads < READS ? section->nreads : READS;
    wait_from[thread] = sched_notes.nwrites;
}

/* Whether another thread wrote, since @p thread's last wait began, memory
 * that wait read: what it waited for may have come. */
static bool changed_since_wait(int thread)
{
    long oldest = sched_notes.nwrites > WRITES ? sched_notes.nwrites - WRITES : 0;
    if (wait_from[thread] < oldest)
        return false; /* no longer known */
    for (long i = wait_from[thread]; i < sched_notes.nwrites; i++) {
        const struct sched_write_note *note = &sched_notes.writes[i % WRITES];
        for (int j = 0; note->thread != thread && j < nwait[thread]; j++)
            if (overlap(&wait_reads[thread][j], &note->span))
                return true;
    }
    return false;
}

void sched_changes_took_wakeup(int thread, int cond, int mutex, void *where)
{
    if (thread < 0 || thread >= SCHED_MAX_THREADS)
        return;
    struct taken *t = &taken[thread];
    if (t->open)
        sched_notes.open--;
    *t = (struct taken){ .open = false };
    if (!changed_since_wait(thread))
        return; /* nothing it waited for changed: no telling whether the wake-up mattered */
    *t = (struct taken){ .open = true, .cond = cond, .mutex = mutex, .places = { where }, .nplaces = 1 };
    sched_notes.open++;
}

void sched_changes_signalled(int thread, int cond)
{
    if (sched_notes.open > 0 && thread >= 0 && thread < SCHED_MAX_THREADS && taken[thread].open && taken[thread].cond == cond) {
        taken[thread].open = false; /* the wake-up passed on */
        sched_notes.open--;
    }
}

void sched_changes_let_go(int thread, int mutex, void *where, int cond)
{
    if (sched_notes.open == 0 || thread < 0 || thread >= SCHED_MAX_THREADS)
        return;
    struct taken *t = &taken[thread];
    if (!t->open || t->mutex != mutex)
        return;
    t->open = false;
    sched_notes.open--;
    t->given_up = cond != t->cond; /* asleep on it again: no wake-up given up */
    t->places[t->nplaces++] = where;
}

int kit_sched_wakeup_given_up(void **places, int most)
{
    int thread = sched_running_thread();
    if (thread < 0 || thread >= SCHED_MAX_THREADS || !taken[thread].given_up)
        return 0;
    struct taken *t = &taken[thread];
    int n = t->nplaces < most ? t->nplaces : most;
    for (int i = 0; i < n; i++)
        places[i] = t->places[i];
    if (n < t->nplaces && n > 0)
        places[n - 1] = t->places[t->nplaces - 1]; /* where it let go, always */
    t->given_up = false;
    return n;
}

static bool read_before_waiting(int thread, const struct sched_span *span)
{
    const struct sched_span *reads = as_of ? as_of->reads : wait_reads[thread];
    int n = as_of ? as_of->nreads : nwait[thread];
    for (int i = 0; i < n; i++)
        if (overlap(&reads[i], span))
            return true;
    return false;
}

void sched_changes_stalled(int thread)
{
    if (thread < 0 || thread >= SCHED_MAX_THREADS)
        return;
    struct stall *stall = &stalls[nstalls++ % STALLS];
    stall->thread = thread;
    stall->step = sched.nsteps;
    memcpy(stall->reads, wait_reads[thread], sizeof stall->reads);
    stall->nreads = nwait[thread];
}

int sched_changes_stall(int back, long *step)
{
    if (back < 0 || back >= STALLS || back >= nstalls)
        return -1;
    const struct stall *stall = &stalls[(nstalls - 1 - back) % STALLS];
    *step = stall->step;
    return stall->thread;
}

void sched_changes_as_of_stall(int back)
{
    as_of = back >= 0 && back < STALLS && back < nstalls ? &stalls[(nstalls - 1 - back) % STALLS] : NULL;
}

int sched_changes_of(int thread, struct sched_change *out, int most)
{
    if (thread < 0 || thread >= SCHED_MAX_THREADS)
        return 0;
    int n = 0;
    long oldest = sched_notes.nwrites > WRITES ? sched_notes.nwrites - WRITES : 0;
    for (long i = sched_notes.nwrites - 1; i >= oldest && n < most; i--) {
        const struct sched_write_note *note = &sched_notes.writes[i % WRITES];
        if (as_of && note->step > as_of->step)
            continue;
        bool seen = false;
        for (int j = 0; j < n; j++)
            seen = seen || out[j].where == note->where;
        if (!seen && read_before_waiting(thread, &note->span))
            out[n++] = (struct sched_change){ note->where, note->thread, note->step };
    }
    return n;
}

void *sched_changes_last_write(int thread, long *seq)
{
    long oldest = sched_notes.nwrites > WRITES ? sched_notes.nwrites - WRITES : 0;
    bool kept = thread >= 0 && thread < SCHED_MAX_THREADS && sched_notes.last_write[thread] >= oldest;
    *seq = kept ? sched_notes.last_write[thread] : -1;
    return kept ? sched_notes.writes[*seq % WRITES].where : NULL;
}

int sched_changes_section_writers(int thread, struct sched_change *out, int most)
{
    if (thread < 0 || thread >= SCHED_MAX_THREADS)
        return 0;
    sched_changes_apply(thread);
    const struct sched_section *section = &sched_notes.section[thread];
    int n = 0, nreads = section->nreads < READS ? section->nreads : READS;
    long oldest = sched_notes.nwrites > WRITES ? sched_notes.nwrites - WRITES : 0;
    for (long i = sched_notes.nwrites - 1; i >= oldest && n < most; i--) {
        const struct sched_write_note *note = &sched_notes.writes[i % WRITES];
        bool seen = false, read = false;
        for (int j = 0; j < n; j++)
            seen = seen || out[j].where == note->where;
        for (int j = 0; !seen && j < nreads; j++)
            read = read || overlap(&section->reads[j], &note->span);
        if (read)
            out[n++] = (struct sched_change){ note->where, note->thread, note->step };
    }
    return n;
}

bool sched_changes_last_in(int thread, long from, long to, struct sched_change *out)
{
    long oldest = sched_notes.nwrites > WRITES ? sched_notes.nwrites - WRITES : 0;
    for (long i = sched_notes.nwrites - 1; i >= oldest; i--) {
        const struct sched_write_note *note = &sched_notes.writes[i % WRITES];
        if (note->step < from)
            return false;
        if (note->thread == thread && note->step <= to) {
            *out = (struct sched_change){ note->where, note->thread, note->step };
            return true;
        }
    }
    return false;
}
