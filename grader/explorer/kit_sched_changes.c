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

enum { READS = 16, WRITES = 4096, PENDING = 128 };

struct span {
    uintptr_t addr;
    unsigned size;
    unsigned after; /* a section's read: the thread's writes in the section before it */
};

struct write_note {
    struct span span;
    void *where;
    int thread;
    long step; /* steps recorded before it */
};

/* Per thread: the memory read since it last took a first mutex (its current
 * critical section; the last READS reads, section_reads[n % READS] the n-th,
 * a read of memory it then wrote itself emptied), and the memory its last
 * wait's section read. Written by the running thread only, as the model is.
 * A write empties the reads before it that it overlaps, not at once but when
 * the reads are wanted - at a wait or a look at the section - or when PENDING
 * writes wait their turn: then most writes cost one store each. */
static struct span section_reads[SCHED_MAX_THREADS][READS];
static int nsection[SCHED_MAX_THREADS];
static struct span pending[SCHED_MAX_THREADS][PENDING]; /* the section's last writes, not yet applied */
static int npending[SCHED_MAX_THREADS];
static unsigned nwritten[SCHED_MAX_THREADS];           /* the section's writes */
static struct span wait_reads[SCHED_MAX_THREADS][READS];
static int nwait[SCHED_MAX_THREADS];
static long wait_from[SCHED_MAX_THREADS]; /* nwrites when its last wait began */

/* The schedule's last WRITES writes, writes[n % WRITES] the n-th; and
 * each thread's last write's n (-1: none yet). */
static struct write_note writes[WRITES];
static long nwrites;
static long last_write[SCHED_MAX_THREADS];

/* A sleeper of the code under test that only a long time-out woke: no
 * thread could go on (sched_changes_stalled), as in a deadlock. While
 * as_of_stall, what its wait read and the writes up to then are the ones
 * asked about (sched_changes_of). */
enum { STALLS = 8 };
static struct stall {
    int thread;
    long step;
    struct span reads[READS];
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
static int nopen;

void sched_changes_begin(void)
{
    nwrites = 0;
    nstalls = 0;
    as_of = NULL;
    nopen = 0;
}

/* A thread's notes start empty (not at each schedule's start for every
 * thread there may be: a schedule has a few). */
void sched_changes_thread_begins(int thread)
{
    if (thread < 0 || thread >= SCHED_MAX_THREADS)
        return;
    nsection[thread] = 0;
    npending[thread] = 0;
    nwritten[thread] = 0;
    nwait[thread] = 0;
    last_write[thread] = -1;
    taken[thread] = (struct taken){ .open = false };
}

static bool overlap(const struct span *a, const struct span *b)
{
    return a->size > 0 && b->size > 0 && a->addr < b->addr + b->size && b->addr < a->addr + a->size;
}

/* A place a thread whose timed wait took a wake-up ran: the path its
 * time-out took, each place once. */
static void note_path(struct taken *t, void *where)
{
    for (int i = 1; i < t->nplaces; i++)
        if (t->places[i] == where)
            return;
    if (t->nplaces < PATH + 1)
        t->places[t->nplaces++] = where;
}

void sched_changes_read(int thread, const void *addr, unsigned size, void *where)
{
    if (thread < 0 || thread >= SCHED_MAX_THREADS || size == 0)
        return;
    if (nopen > 0 && taken[thread].open)
        note_path(&taken[thread], where);
    section_reads[thread][nsection[thread]++ % READS] = (struct span){ (uintptr_t)addr, size, nwritten[thread] };
}

/* The pending writes empty the reads made before them that they overlap:
 * what a thread wrote itself (n++) is no condition it waits on. */
static void apply_writes(int thread)
{
    struct span *reads = section_reads[thread];
    int n = nsection[thread] < READS ? nsection[thread] : READS;
    unsigned first = nwritten[thread] - (unsigned)npending[thread]; /* the number of the first pending write */
    for (int w = 0; w < npending[thread]; w++) {
        const struct span *write = &pending[thread][w];
        for (int i = 0; i < n; i++)
            if (reads[i].after <= first + (unsigned)w && reads[i].addr < write->addr + write->size &&
                write->addr < reads[i].addr + reads[i].size)
                reads[i].size = 0; /* (an emptied one, overlapping or not, stays empty) */
    }
    npending[thread] = 0;
}

void sched_changes_write(int thread, const void *addr, unsigned size, void *where)
{
    if (thread < 0 || thread >= SCHED_MAX_THREADS || size == 0)
        return;
    if (nopen > 0 && taken[thread].open)
        note_path(&taken[thread], where);
    struct span span = { (uintptr_t)addr, size, 0 };
    last_write[thread] = nwrites;
    writes[nwrites++ % WRITES] = (struct write_note){ span, where, thread, sched.nsteps };
    if (npending[thread] == PENDING)
        apply_writes(thread);
    pending[thread][npending[thread]++] = span;
    nwritten[thread]++;
}

void sched_changes_section(int thread)
{
    if (thread >= 0 && thread < SCHED_MAX_THREADS) {
        nsection[thread] = 0;
        npending[thread] = 0; /* (what the last section wrote empties none of the next one's reads) */
        nwritten[thread] = 0;
    }
}

void sched_changes_wait(int thread)
{
    if (thread < 0 || thread >= SCHED_MAX_THREADS)
        return;
    apply_writes(thread);
    memcpy(wait_reads[thread], section_reads[thread], sizeof wait_reads[thread]);
    nwait[thread] = nsection[thread] < READS ? nsection[thread] : READS;
    wait_from[thread] = nwrites;
}

/* Whether another thread wrote, since @p thread's last wait began, memory
 * that wait read: what it waited for may have come. */
static bool changed_since_wait(int thread)
{
    long oldest = nwrites > WRITES ? nwrites - WRITES : 0;
    if (wait_from[thread] < oldest)
        return false; /* no longer known */
    for (long i = wait_from[thread]; i < nwrites; i++) {
        const struct write_note *note = &writes[i % WRITES];
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
        nopen--;
    *t = (struct taken){ .open = false };
    if (!changed_since_wait(thread))
        return; /* nothing it waited for changed: no telling whether the wake-up mattered */
    *t = (struct taken){ .open = true, .cond = cond, .mutex = mutex, .places = { where }, .nplaces = 1 };
    nopen++;
}

void sched_changes_signalled(int thread, int cond)
{
    if (nopen > 0 && thread >= 0 && thread < SCHED_MAX_THREADS && taken[thread].open && taken[thread].cond == cond) {
        taken[thread].open = false; /* the wake-up passed on */
        nopen--;
    }
}

void sched_changes_let_go(int thread, int mutex, void *where, int cond)
{
    if (nopen == 0 || thread < 0 || thread >= SCHED_MAX_THREADS)
        return;
    struct taken *t = &taken[thread];
    if (!t->open || t->mutex != mutex)
        return;
    t->open = false;
    nopen--;
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

static bool read_before_waiting(int thread, const struct span *span)
{
    const struct span *reads = as_of ? as_of->reads : wait_reads[thread];
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
    long oldest = nwrites > WRITES ? nwrites - WRITES : 0;
    for (long i = nwrites - 1; i >= oldest && n < most; i--) {
        const struct write_note *note = &writes[i % WRITES];
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
    long oldest = nwrites > WRITES ? nwrites - WRITES : 0;
    bool kept = thread >= 0 && thread < SCHED_MAX_THREADS && last_write[thread] >= oldest;
    *seq = kept ? last_write[thread] : -1;
    return kept ? writes[*seq % WRITES].where : NULL;
}

int sched_changes_section_writers(int thread, struct sched_change *out, int most)
{
    if (thread < 0 || thread >= SCHED_MAX_THREADS)
        return 0;
    apply_writes(thread);
    int n = 0, nreads = nsection[thread] < READS ? nsection[thread] : READS;
    long oldest = nwrites > WRITES ? nwrites - WRITES : 0;
    for (long i = nwrites - 1; i >= oldest && n < most; i--) {
        const struct write_note *note = &writes[i % WRITES];
        bool seen = false, read = false;
        for (int j = 0; j < n; j++)
            seen = seen || out[j].where == note->where;
        for (int j = 0; !seen && j < nreads; j++)
            read = read || overlap(&section_reads[thread][j], &note->span);
        if (read)
            out[n++] = (struct sched_change){ note->where, note->thread, note->step };
    }
    return n;
}

bool sched_changes_last_in(int thread, long from, long to, struct sched_change *out)
{
    long oldest = nwrites > WRITES ? nwrites - WRITES : 0;
    for (long i = nwrites - 1; i >= oldest; i--) {
        const struct write_note *note = &writes[i % WRITES];
        if (note->step < from)
            return false;
        if (note->thread == thread && note->step <= to) {
            *out = (struct sched_change){ note->where, note->thread, note->step };
            return true;
        }
    }
    return false;
}
