/**
 * @file kit_sched_split.c
 * @brief A critical section split in two within one call: a thread read
 *        memory under a mutex, let the mutex go, took it again in the same
 *        call of the code under test, and used that memory again - while
 *        another thread changed it in between. What the first section saw
 *        (there is room, the key is new, the count is below its limit) no
 *        longer held when the second acted on it: a check-then-act race
 *        with every access under the mutex, which no race detector flags.
 *
 * Followed only while the paths are (sched_notes.paths, which every caller
 * tests before it calls in, so that the calls cost nothing else: a failing
 * schedule run again for its report, and the runs reported anyway), so a
 * passing schedule pays nothing. kit_sched_report.c turns what is found
 * into the "why:" of a failure nothing else explained, naming the line
 * that let the mutex go.
 *
 * Per thread: its current section's reads (each place's memory once), the
 * section before it once it let its last mutex go inside a call, and - when
 * it takes a mutex again in that call - the reads of that earlier section
 * that another thread wrote since: the first access of its new section to
 * one of those is a finding. A wait on a condition variable ends the story:
 * the code looks again after it wakes, as a wait's loop does.
 */
#include "kit_sched_internal.h"

#include <string.h>

enum { LOOKS = 16, FOUND = 16 };

/* @p where with the running thread's innermost calls: in an earlier
 * chapter's code, the student's line that called it. */
static struct sched_at at_here(void *where)
{
    struct sched_at at = { where, { NULL, NULL } };
    sched_memory_call_sites(at.sites, 2);
    return at;
}

struct look {
    uintptr_t addr;
    unsigned size;
    bool read;    /* the section read it before writing it: a look */
    bool written; /* the section wrote it: its own change */
    bool undone;  /* written at two places (raised, then lowered): no change left for others to see half made */
    void *wrote;  /* the first write's place */
    struct sched_at at; /* its first access there */
};

/* Another thread's read, while this one was between its two sections, of
 * memory its first section wrote: the change seen half made. */
struct seen {
    struct sched_change read; /* where NULL: none */
    struct sched_at write;    /* the first section's write it read */
};

enum { HELD = 4 }; /* the mutexes a thread holds at once, followed */

struct split_thread {
    struct look now[LOOKS]; /* the section now open */
    int nnow;
    bool open;            /* holds a mutex */
    bool in_gap;          /* let a mutex go, not in a wait, and took none since */
    bool retaken;         /* took the mutex of the section before again: checked at its first access */
    bool again;           /* ... and it did, in the same call: a split */
    bool going_on;        /* a look of the section before was changed: its next access goes on regardless */
    int held[HELD];       /* the mutexes it took last, held[n % HELD] the n-th */
    struct sched_at held_at[HELD]; /* ... and where it took each */
    int nheld;
    struct sched_at lock_at; /* where it took its latest mutex */
    struct sched_at locking; /* where it last asked for one */
    struct look before[LOOKS]; /* the section before, ended by an unlock inside a call */
    int nbefore;
    long before_call;     /* the call that section ran in (-1: none) */
    struct sched_at before_lock, before_let_go;
    int before_mutex;
    long before_writes;   /* sched_notes.nwrites when it let go */
    struct sched_change changed[LOOKS]; /* before[i]'s change by another thread since; where NULL: none */
    int narmed;
    int between;          /* its accesses of the code under test between the two sections */
    struct seen seen;     /* another thread's look at its first section's change, in between */
};

static struct split_thread threads[SCHED_MAX_THREADS];
static struct sched_split found[FOUND];
static int nfound;

/* The threads between two sections whose first one wrote: whose change
 * another thread's look may find half made. */
static int gaps[SCHED_MAX_THREADS];
static int ngaps;

static void gap_closes(int thread)
{
    for (int g = 0; g < ngaps; g++)
        if (gaps[g] == thread) {
            gaps[g] = gaps[--ngaps];
            return;
        }
}

void sched_split_begin(void)
{
    nfound = 0;
    ngaps = 0;
}

void sched_split_thread_begins(int thread)
{
    if (thread < 0 || thread >= SCHED_MAX_THREADS)
        return;
    gap_closes(thread);
    struct split_thread *t = &threads[thread]; /* (the fields a section begins from: every schedule pays this) */
    t->open = t->in_gap = t->retaken = t->again = t->going_on = false;
    t->nnow = t->nbefore = t->narmed = t->nheld = t->between = 0;
    t->before_call = -1;
    t->seen.read.where = NULL;
    t->locking.where = NULL;
}

void sched_split_taken(int thread, int mutex, void *where, bool first)
{
    if (thread < 0 || thread >= SCHED_MAX_THREADS)
        return;
    struct split_thread *t = &threads[thread];
    gap_closes(thread);
    if (first)
        t->nnow = 0;
    t->open = true;
    t->in_gap = false;
    t->again = false;
    t->going_on = false;
    t->narmed = 0;
    t->lock_at = t->locking.where == where ? t->locking : (struct sched_at){ where, { NULL, NULL } };
    t->held_at[t->nheld % HELD] = t->lock_at;
    t->held[t->nheld++ % HELD] = mutex;
    t->retaken = t->nbefore > 0 && t->before_mutex == mutex;
}

void sched_split_locking(int thread, void *where)
{
    if (thread >= 0 && thread < SCHED_MAX_THREADS)
        threads[thread].locking = at_here(where);
}

/* Where @p thread took @p mutex, which it holds: the latest such take kept. */
static struct sched_at taken_at(const struct split_thread *t, int mutex)
{
    for (int n = t->nheld - 1; n >= 0 && n >= t->nheld - HELD; n--)
        if (t->held[n % HELD] == mutex)
            return t->held_at[n % HELD];
    return (struct sched_at){ NULL, { NULL, NULL } };
}

static bool overlaps(const struct look *look, uintptr_t addr, unsigned size)
{
    return look->addr < addr + size && addr < look->addr + look->size;
}

/* The latest write by a thread other than @p thread, since write number
 * @p from, to memory overlapping @p look, into @p out; false if none is kept. */
static bool changed_by_another(int thread, long from, const struct look *look, struct sched_change *out)
{
    long oldest = sched_notes.nwrites > SCHED_NOTE_WRITES ? sched_notes.nwrites - SCHED_NOTE_WRITES : 0;
    if (from < oldest)
        return false; /* the ring lost some of them: no telling */
    for (long n = sched_notes.nwrites - 1; n >= from; n--) {
        const struct sched_write_note *w = &sched_notes.writes[n % SCHED_NOTE_WRITES];
        if (w->thread != thread && overlaps(look, w->span.addr, w->span.size)) {
            *out = (struct sched_change){ w->where, w->thread, w->step, n };
            return true;
        }
    }
    return false;
}

/* The first access of a section taken again: in the same call as the
 * section before? Then which of that section's looks did another thread
 * change since - a use of one of those is a stale look acted on. */
static void arm(int thread, struct split_thread *t)
{
    t->retaken = false;
    t->narmed = 0;
    if (t->before_call < 0 || t->before_call != sched_memory_call_serial()) {
        t->nbefore = 0;
        return;
    }
    t->again = true;
    for (int i = 0; i < t->nbefore; i++) {
        t->changed[i].where = NULL;
        if (t->before[i].read && changed_by_another(thread, t->before_writes, &t->before[i], &t->changed[i]))
            t->narmed++;
    }
    t->going_on = t->narmed > 0;
}

static void keep(const struct sched_split *split)
{
    for (int k = 0; k < nfound; k++)
        if (found[k].look.where == split->look.where && found[k].use.where == split->use.where &&
            found[k].let_go.where == split->let_go.where && found[k].half_made == split->half_made &&
            found[k].went_on == split->went_on)
            return;
    if (nfound < FOUND)
        found[nfound++] = *split;
}

/* What the section before had, for a finding of @p thread's. */
static struct sched_split split_of(int thread, const struct split_thread *t, void *use, bool write)
{
    return (struct sched_split){ .thread = thread, .mutex = t->before_mutex, .lock = t->before_lock,
                                 .let_go = t->before_let_go, .retake = t->lock_at, .use = at_here(use),
                                 .use_writes = write, .between = t->between };
}

/* The first access after taking the mutex back, when a look of the
 * section before had changed: the thread went on with what it had decided
 * (the act may be in memory the explorer does not see, such as the kit's
 * map). A check it made, rather than its own change, is told first. */
static void went_on(int thread, struct split_thread *t, bool write, void *where)
{
    int which = -1;
    for (int i = 0; i < t->nbefore; i++)
        if (t->changed[i].where != NULL && (which < 0 || (!t->before[i].written && t->before[which].written)))
            which = i;
    t->going_on = false;
    if (which < 0)
        return;
    struct sched_split split = split_of(thread, t, where, write);
    split.look = t->before[which].at;
    split.change = t->changed[which];
    split.looked_only = !t->before[which].written;
    split.went_on = true;
    keep(&split);
}

/* @p thread's access in its section taken again: a use of a look another
 * thread changed since, or its first write after another thread read its
 * first section's change half made. */
static void check_use(int thread, struct split_thread *t, uintptr_t addr, unsigned size, bool write, void *where)
{
    for (int i = 0; t->narmed > 0 && i < t->nbefore; i++)
        if (t->changed[i].where != NULL && overlaps(&t->before[i], addr, size)) {
            struct sched_split split = split_of(thread, t, where, write);
            split.look = t->before[i].at;
            split.change = t->changed[i];
            split.looked_only = !t->before[i].written;
            keep(&split);
            t->changed[i].where = NULL;
            t->narmed--;
        }
    if (write && t->again && t->seen.read.where != NULL) {
        struct sched_split split = split_of(thread, t, where, true);
        split.look = t->seen.write;
        split.change = t->seen.read;
        split.half_made = true;
        keep(&split);
        t->seen.read.where = NULL;
    }
}

/* @p reader reads [addr, addr + size) at where: a look at a change of a
 * thread between two sections of one call? */
static void check_half_made(int reader, uintptr_t addr, unsigned size, void *where)
{
    for (int k = 0; k < ngaps; k++) {
        struct split_thread *t = &threads[gaps[k]];
        if (gaps[k] == reader || t->seen.read.where != NULL)
            continue;
        for (int i = 0; i < t->nbefore; i++)
            if (t->before[i].written && !t->before[i].undone && overlaps(&t->before[i], addr, size)) {
                t->seen = (struct seen){ { where, reader, sched.nsteps, -1 }, t->before[i].at };
                break;
            }
    }
}

/* The section's first access of each memory, a look or a write. */
static void note_in_section(struct split_thread *t, uintptr_t addr, unsigned size, bool write, void *where)
{
    for (int i = 0; i < t->nnow; i++)
        if (t->now[i].addr == addr && t->now[i].size == size) {
            struct look *look = &t->now[i];
            look->undone = look->undone || (write && look->written && look->wrote != where);
            if (write && !look->written)
                look->wrote = where;
            look->written = look->written || write;
            return;
        }
    if (t->nnow < LOOKS)
        t->now[t->nnow++] = (struct look){ addr, size, !write, write, false, write ? where : NULL, at_here(where) };
}

void sched_split_access(int thread, const void *addr, unsigned size, bool write, void *where)
{
    struct split_thread *t = &threads[thread]; /* (the caller checked thread) */
    uintptr_t at = (uintptr_t)addr;
    if (!write && t->open && ngaps > 0)
        check_half_made(thread, at, size, where);
    if (t->in_gap)
        t->between++;
    if (!t->open)
        return;
    if (t->retaken)
        arm(thread, t);
    if (t->going_on)
        went_on(thread, t, write, where);
    if (t->nbefore > 0)
        check_use(thread, t, at, size, write, where);
    note_in_section(t, at, size, write, where);
}

void sched_split_let_go(int thread, int mutex, void *where, bool last, bool wait)
{
    if (thread < 0 || thread >= SCHED_MAX_THREADS)
        return;
    struct split_thread *t = &threads[thread];
    t->narmed = 0;
    t->retaken = false;
    t->seen.read.where = NULL;
    gap_closes(thread);
    if (wait) { /* it looks again once woken */
        t->nnow = 0;
        t->nbefore = 0;
        return;
    }
    if (!t->open)
        return;
    t->open = !last; /* (an outer mutex held still: its section goes on, and a split of the inner one is seen) */
    t->in_gap = true;
    memcpy(t->before, t->now, sizeof t->before);
    t->nbefore = t->nnow;
    t->before_call = sched_memory_call_serial();
    t->before_lock = taken_at(t, mutex);
    t->before_let_go = at_here(where);
    t->before_mutex = mutex;
    t->before_writes = sched_notes.nwrites;
    t->between = 0;
    bool wrote = false;
    for (int i = 0; i < t->nbefore; i++)
        wrote = wrote || (t->before[i].written && !t->before[i].undone);
    if (wrote && t->before_call >= 0)
        gaps[ngaps++] = thread;
}

int sched_split_found(struct sched_split *out, int most)
{
    int n = nfound < most ? nfound : most;
    memcpy(out, found, (size_t)n * sizeof *out);
    return n;
}
