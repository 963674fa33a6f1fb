/**
 * @file kit_sched_changes.c
 * @brief What a sleeper waits for, and who changed it last: the shared memory
 *        each thread read in the critical section that ended in its last wait
 *        (what its wait's condition reads), and the schedule's last writes. A
 *        lost wake-up then names the line that changed that condition without
 *        a signal (kit_sched_report.c), not only the critical section around it.
 *
 * Only the code under test's loads and stores reach here (the explorer's
 * memory hook, kit_sched_memory.c); the tests' own are not seen.
 */
#include "kit_sched_internal.h"

#include <string.h>

enum { READS = 16, WRITES = 4096, PENDING = 16 };

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
 * the reads are wanted - at a wait - or when PENDING writes wait their turn:
 * most sections end in an unlock, and their writes then cost one store each. */
static struct span section_reads[SCHED_MAX_THREADS][READS];
static int nsection[SCHED_MAX_THREADS];
static struct span pending[SCHED_MAX_THREADS][PENDING]; /* the section's last writes, not yet applied */
static int npending[SCHED_MAX_THREADS];
static unsigned nwritten[SCHED_MAX_THREADS];           /* the section's writes */
static struct span wait_reads[SCHED_MAX_THREADS][READS];
static int nwait[SCHED_MAX_THREADS];

/* The schedule's last WRITES writes, writes[n % WRITES] the n-th. */
static struct write_note writes[WRITES];
static long nwrites;

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

void sched_changes_begin(void)
{
    memset(nsection, 0, sizeof nsection);
    memset(npending, 0, sizeof npending);
    memset(nwritten, 0, sizeof nwritten);
    memset(nwait, 0, sizeof nwait);
    nwrites = 0;
    nstalls = 0;
    as_of = NULL;
}

static bool overlap(const struct span *a, const struct span *b)
{
    return a->size > 0 && b->size > 0 && a->addr < b->addr + b->size && b->addr < a->addr + a->size;
}

void sched_changes_read(int thread, const void *addr, unsigned size)
{
    if (thread < 0 || thread >= SCHED_MAX_THREADS || size == 0)
        return;
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

void sched_changes_write(int thread, const void *addr, unsigned size, void *where, bool in_section)
{
    if (thread < 0 || thread >= SCHED_MAX_THREADS || size == 0)
        return;
    struct span span = { (uintptr_t)addr, size, 0 };
    writes[nwrites++ % WRITES] = (struct write_note){ span, where, thread, sched.nsteps };
    if (!in_section)
        return;
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
