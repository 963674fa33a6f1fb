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
 * scenario harness asks when a timed call returned ETIMEDOUT. A timed wait
 * that only ran out is followed the same way (kit_sched_timeout_path): when
 * what it waited for had come by its deadline, the path its time-out took is
 * where the code did not look again. The path is the lines the thread ran:
 * each load and store, and each block of code (the instrumentation's
 * __sanitizer_cov_trace_pc, sched_changes_block), so that a branch on the
 * wait's result alone - `if (err == ETIMEDOUT) return err;` - is on it too.
 * Those paths, and the lines a thread ran after its latest write until it
 * let a mutex go, are followed only while sched_notes.paths is set: when a
 * failing schedule is run again for its report (the explorer is
 * deterministic: the run again meets the same steps), and on the runs that
 * are reported anyway (a replay, a test's one schedule). A schedule that
 * passes pays one test of that flag for each access and block.
 *
 * And a change its thread never undid (sched_changes_never_undone): a count
 * raised at one line and lowered at another by every thread that raised it
 * - but one, whose path out left it raised. Looking at the writes alone,
 * not their values: a place whose every write is followed by its thread's
 * next write of that memory at one other line has an undo, and a write
 * there that its thread did not follow with that line was never undone.
 * The paths out of each thread's waits and after its writes, until it let
 * the mutex go, name the lines that path ran.
 *
 * Only the code under test's loads and stores reach here (the explorer's
 * memory hook, kit_sched_memory.c); the tests' own are not seen.
 */
#include "kit_sched_internal.h"

#include <stdint.h>
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
enum { PATH = 14 };
static struct taken {
    bool open, given_up;
    bool signalled; /* a wake-up it took; false: a wait that only ran out */
    int cond, mutex;
    long step;      /* steps recorded when it timed out */
    void *places[PATH + 2]; /* the wait, the path, where it let the mutex go */
    int nplaces;
} taken[SCHED_MAX_THREADS];
/* Per thread: its last KEPT_OUT time-outs' paths, as taken holds them once
 * they let the mutex go, kept_out[t][n % KEPT_OUT] the n-th (while the
 * paths are followed): what a time-out left behind, asked after a failed
 * check (sched_changes_left_by_timeout), when taken holds a later wait. */
enum { KEPT_OUT = 4 };
static struct taken kept_out[SCHED_MAX_THREADS][KEPT_OUT];
static unsigned nkept_out[SCHED_MAX_THREADS];

/* Per thread: the lines it ran after its latest write, until it let a mutex
 * go (running), and the last such path finished, with the place it let go
 * (kept): where a lost wake-up's change was followed by the code that
 * decided not to signal. A change is on that path's stretch if it came
 * after the thread's first write since it last let a mutex go. */
static struct after_write {
    void *write;  /* the write's place; NULL: none (kept: not finished) */
    long first;   /* the step of the first write since the thread last let a mutex go */
    long last;    /* ... and of the latest */
    bool by_wait; /* kept: it let the mutex go by waiting (not an unlock) */
    void *places[PATH + 1]; /* the lines after it, each place once; then where it let go */
    int nplaces;
} running_after[SCHED_MAX_THREADS];
/* Per thread: its last KEPT finished paths after a write, kept_after[t][n % KEPT] the n-th. */
enum { KEPT = 16 };
static struct after_write kept_after[SCHED_MAX_THREADS][KEPT];
static unsigned nkept[SCHED_MAX_THREADS];

/* Per thread: the lines it ran after its latest wait returned (woken,
 * timed out or spurious), until it let that wait's mutex go (running), and
 * the last such path that ended in an unlock, not a wait again (kept):
 * where a way out of a wait left a change of its thread's in place. */
static struct after_wait {
    bool open;
    int mutex;
    long step;                /* steps recorded when the wait returned */
    void *places[PATH + 2];   /* the wait, the lines after it, where it let go */
    int nplaces;
} running_wait[SCHED_MAX_THREADS], kept_wait[SCHED_MAX_THREADS];

/* Per thread, while the paths are followed: the last RECENT places it ran
 * (a place again right after itself once), recent[t][n % RECENT] the n-th. */
enum { RECENT = SCHED_RECENT_PLACES };
static void *recent[SCHED_MAX_THREADS][RECENT];
static long nrecent[SCHED_MAX_THREADS];

/* Per thread, while the paths are followed: its latest outermost calls of
 * the code under test (the test's calls), each with the last CALL_PLACES
 * places it ran, stamped with the writes noted before each - the lines a
 * call ran after one of its writes, on its way out. calls[t][n % CALLS]
 * the n-th. */
enum { CALLS = 4, CALL_PLACES = 64 };
static struct call_path {
    long began, ended;    /* steps recorded then; ended -1 while it runs */
    long nplaces;         /* places noted; the last CALL_PLACES kept */
    void *places[CALL_PLACES];
    long stamp[CALL_PLACES]; /* sched_notes.nwrites when the place was noted */
} calls[SCHED_MAX_THREADS][CALLS];
static long ncalls[SCHED_MAX_THREADS];

/* Where the calls that led to each write were made, for the writes made
 * while the paths are followed: callers_of[n % WRITES] the n-th write's of
 * this schedule, if its seq is n and its schedule this one. */
static unsigned long schedules_begun;
static struct {
    unsigned long schedule;
    long seq;
    int n;
    void *sites[SCHED_CHANGE_CALLERS];
} callers_of[WRITES];

void sched_changes_begin(void)
{
    schedules_begun++;
    sched_notes.nwrites = 0;
    nstalls = 0;
    as_of = NULL;
    sched_notes.open = 0;
    sched_split_begin();
    sched_recheck_begin();
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
    nkept_out[thread] = 0;
    nrecent[thread] = 0;
    ncalls[thread] = 0;
    running_after[thread].write = NULL;
    nkept[thread] = 0;
    running_wait[thread].open = false;
    kept_wait[thread].nplaces = 0;
    sched_split_thread_begins(thread);
    sched_recheck_thread_begins(thread);
}

/* Add @p where to a path's places[from..*n), once, while it has fewer than @p most. */
static void note_once(void **places, int *n, int from, int most, void *where)
{
    for (int i = from; i < *n; i++)
        if (places[i] == where)
            return;
    if (*n < most)
        places[(*n)++] = where;
}

/* A place thread ran after its latest write: each once, the first PATH. */
static void note_after_write(int thread, void *where)
{
    struct after_write *a = &running_after[thread];
    if (a->write != NULL)
        note_once(a->places, &a->nplaces, 0, PATH, where);
}

/* A place thread ran after its latest wait returned (places[0] is the wait): each once, the first PATH. */
static void note_after_wait(int thread, void *where)
{
    struct after_wait *w = &running_wait[thread];
    if (w->open)
        note_once(w->places, &w->nplaces, 1, PATH + 1, where);
}

static bool overlap(const struct sched_span *a, const struct sched_span *b)
{
    return a->size > 0 && b->size > 0 && a->addr < b->addr + b->size && b->addr < a->addr + a->size;
}

/* A place @p thread ran, in its open call of the code under test. */
static void note_in_call(int thread, void *where)
{
    if (ncalls[thread] == 0)
        return;
    struct call_path *call = &calls[thread][(ncalls[thread] - 1) % CALLS];
    if (call->ended >= 0 || (call->nplaces > 0 && call->places[(call->nplaces - 1) % CALL_PLACES] == where))
        return;
    call->places[call->nplaces % CALL_PLACES] = where;
    call->stamp[call->nplaces % CALL_PLACES] = sched_notes.nwrites;
    call->nplaces++;
}

void sched_changes_call_began(int thread)
{
    if (!sched_notes.paths || thread < 0 || thread >= SCHED_MAX_THREADS)
        return;
    calls[thread][ncalls[thread]++ % CALLS] = (struct call_path){ .began = sched.nsteps, .ended = -1 };
}

void sched_changes_call_ended(int thread)
{
    if (sched_notes.paths && thread >= 0 && thread < SCHED_MAX_THREADS && ncalls[thread] > 0)
        calls[thread][(ncalls[thread] - 1) % CALLS].ended = sched.nsteps;
}

int sched_changes_call_after(const struct sched_change *change, void **places, int most)
{
    if (change->thread < 0 || change->thread >= SCHED_MAX_THREADS)
        return 0;
    long kept = ncalls[change->thread] < CALLS ? ncalls[change->thread] : CALLS;
    for (long k = ncalls[change->thread] - 1; k >= ncalls[change->thread] - kept; k--) {
        const struct call_path *call = &calls[change->thread][k % CALLS];
        if (call->began > change->step || call->ended < 0)
            continue; /* a later call, or one still running */
        if (call->ended < change->step)
            return 0; /* the write was made between calls */
        long first = call->nplaces > CALL_PLACES ? call->nplaces - CALL_PLACES : 0;
        if (call->stamp[first % CALL_PLACES] > change->seq + 1)
            return 0; /* the lines right after the write are no longer kept */
        int n = 0;
        for (long i = first; i < call->nplaces && n < most; i++)
            if (call->stamp[i % CALL_PLACES] > change->seq)
                places[n++] = call->places[i % CALL_PLACES];
        return n;
    }
    return 0;
}

/* A place thread ran (a load, a store, a block): on the path after its
 * latest write, and on its timed wait's path. */
static void note_place(int thread, void *where)
{
    if (sched_notes.paths) {
        note_after_write(thread, where);
        note_after_wait(thread, where);
        if (nrecent[thread] == 0 || recent[thread][(nrecent[thread] - 1) % RECENT] != where)
            recent[thread][nrecent[thread]++ % RECENT] = where;
        note_in_call(thread, where);
    }
    struct taken *t = &taken[thread];
    if (!t->open)
        return;
    for (int i = 1; i < t->nplaces; i++) /* (each place once) */
        if (t->places[i] == where)
            return;
    if (t->nplaces < PATH + 1)
        t->places[t->nplaces++] = where;
}

int sched_changes_callers(const struct sched_change *change, void **out)
{
    long oldest = sched_notes.nwrites > WRITES ? sched_notes.nwrites - WRITES : 0;
    if (change->seq < oldest || change->seq >= sched_notes.nwrites || callers_of[change->seq % WRITES].seq != change->seq ||
        callers_of[change->seq % WRITES].schedule != schedules_begun)
        return 0;
    memcpy(out, callers_of[change->seq % WRITES].sites, sizeof callers_of[0].sites);
    return callers_of[change->seq % WRITES].n;
}

void sched_changes_followed(int thread, const void *addr, unsigned size, bool write, void *where)
{
    sched_changes_on_path(thread, where, write);
    if (!sched_notes.paths)
        return;
    sched_split_access(thread, addr, size, write, where);
    if (!write)
        sched_recheck_read(thread, addr, size);
}

void sched_changes_on_path(int thread, void *where, bool write)
{
    note_place(thread, where);
    struct after_write *a = &running_after[thread];
    if (!write || !sched_notes.paths)
        return;
    long seq = sched_notes.nwrites; /* the number of the write whose note comes next (sched_changes_write) */
    callers_of[seq % WRITES].schedule = schedules_begun;
    callers_of[seq % WRITES].seq = seq;
    callers_of[seq % WRITES].n = sched_memory_call_sites(callers_of[seq % WRITES].sites, SCHED_CHANGE_CALLERS);
    if (a->write == NULL) /* a new stretch of writes: its path begins again after each */
        a->first = sched.nsteps;
    a->write = where;
    a->last = sched.nsteps;
    a->nplaces = 0;
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

int sched_changes_wait_reads(int thread, struct sched_span *out, int most)
{
    if (thread < 0 || thread >= SCHED_MAX_THREADS)
        return 0;
    int n = nwait[thread] < most ? nwait[thread] : most;
    memcpy(out, wait_reads[thread], (size_t)n * sizeof *out);
    return n;
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
    *t = (struct taken){ .open = true, .signalled = true, .cond = cond, .mutex = mutex, .places = { where },
                         .nplaces = 1 };
    sched_notes.open++;
}

void sched_changes_timed_out(int thread, int cond, int mutex, void *where)
{
    if (thread < 0 || thread >= SCHED_MAX_THREADS)
        return;
    if (!sched_notes.paths)
        return; /* followed only when the paths are (sched_notes.paths) */
    struct taken *t = &taken[thread];
    if (!t->open)
        sched_notes.open++;
    *t = (struct taken){ .open = true, .cond = cond, .mutex = mutex, .step = sched.nsteps, .places = { where },
                         .nplaces = 1 };
}

int sched_changes_timeout_after(int thread, long step, void **places, int most)
{
    if (thread < 0 || thread >= SCHED_MAX_THREADS)
        return 0;
    const struct taken *t = &taken[thread];
    if (!t->given_up || t->signalled || t->step <= step)
        return 0;
    int n = t->nplaces < most ? t->nplaces : most;
    memcpy(places, t->places, (size_t)n * sizeof *places);
    if (n > 0)
        places[n - 1] = t->places[t->nplaces - 1]; /* where it let go, always */
    return n;
}

void sched_changes_woke(int thread, int mutex, void *where)
{
    if (thread < 0 || thread >= SCHED_MAX_THREADS || !sched_notes.paths)
        return;
    running_wait[thread] = (struct after_wait){ .open = true, .mutex = mutex, .step = sched.nsteps,
                                                .places = { where }, .nplaces = 1 };
}

int sched_changes_wait_after(int thread, long step, void **places, int most)
{
    if (thread < 0 || thread >= SCHED_MAX_THREADS)
        return 0;
    const struct after_wait *w = &kept_wait[thread];
    if (w->nplaces < 2 || w->step <= step)
        return 0;
    int n = w->nplaces < most ? w->nplaces : most;
    memcpy(places, w->places, (size_t)n * sizeof *places);
    places[n - 1] = w->places[w->nplaces - 1]; /* where it let go, always */
    return n;
}

void sched_changes_block(void *where)
{
    int thread = sched_running_thread(); /* (first: a thread off the schedule reads nothing of it) */
    if (thread < 0 || thread >= SCHED_MAX_THREADS)
        return;
    note_place(thread, where);
}

void sched_changes_signalled(int thread, int cond)
{
    if (sched_notes.open > 0 && thread >= 0 && thread < SCHED_MAX_THREADS && taken[thread].open &&
        taken[thread].signalled && taken[thread].cond == cond) {
        taken[thread].open = false; /* the wake-up passed on */
        sched_notes.open--;
    }
}

void sched_changes_let_go(int thread, int mutex, void *where, int cond)
{
    if (thread < 0 || thread >= SCHED_MAX_THREADS)
        return;
    struct after_write *a = &running_after[thread];
    if (sched_notes.paths && a->write != NULL) { /* the path after its latest write ends here */
        a->places[a->nplaces++] = where;
        a->by_wait = cond >= 0;
        kept_after[thread][nkept[thread]++ % KEPT] = *a;
        a->write = NULL;
    }
    struct after_wait *w = &running_wait[thread];
    if (sched_notes.paths && w->open && w->mutex == mutex) { /* out of its wait's section: kept if it left */
        w->places[w->nplaces++] = where;
        w->open = false;
        if (cond < 0)
            kept_wait[thread] = *w;
    }
    if (sched_notes.open == 0)
        return;
    struct taken *t = &taken[thread];
    if (!t->open || t->mutex != mutex)
        return;
    t->open = false;
    sched_notes.open--;
    t->given_up = cond != t->cond; /* asleep on it again: no wake-up given up */
    t->places[t->nplaces++] = where;
    if (t->given_up && !t->signalled && sched_notes.paths)
        kept_out[thread][nkept_out[thread]++ % KEPT_OUT] = *t;
}

/* The places of the running thread's given-up path, if it is a wake-up's (@p signalled) or a time-out's. */
static int given_up_path(void **places, int most, bool signalled)
{
    int thread = sched_running_thread();
    if (thread < 0 || thread >= SCHED_MAX_THREADS || !taken[thread].given_up || taken[thread].signalled != signalled)
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

int kit_sched_wakeup_given_up(void **places, int most)
{
    return given_up_path(places, most, true);
}

int kit_sched_timeout_path(void **places, int most)
{
    return given_up_path(places, most, false);
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
            out[n++] = (struct sched_change){ note->where, note->thread, note->step, i };
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
            out[n++] = (struct sched_change){ note->where, note->thread, note->step, i };
    }
    return n;
}

/* The kept path after @p thread's writes that holds its write at @p step, or NULL. */
static const struct after_write *stretch_of(int thread, long step)
{
    const struct after_write *a = NULL;
    unsigned kept = nkept[thread];
    for (unsigned k = kept > KEPT ? kept - KEPT : 0; k < kept; k++) {
        const struct after_write *stretch = &kept_after[thread][k % KEPT];
        if (step >= stretch->first && step <= stretch->last)
            a = stretch;
    }
    return a;
}

int sched_changes_after(const struct sched_change *change, void **places, int most)
{
    if (change->thread < 0 || change->thread >= SCHED_MAX_THREADS)
        return 0;
    const struct after_write *a = stretch_of(change->thread, change->step);
    if (a == NULL)
        return 0; /* that write was not in one of its thread's last stretches of writes before a let-go */
    int n = a->nplaces < most ? a->nplaces : most;
    memcpy(places, a->places, (size_t)n * sizeof *places);
    if (n > 0)
        places[n - 1] = a->places[a->nplaces - 1]; /* where it let go, always */
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
            *out = (struct sched_change){ note->where, note->thread, note->step, i };
            return true;
        }
    }
    return false;
}

/* The next write of note @p i's thread to the same memory after it, or -1. */
static long next_by_same(long i)
{
    const struct sched_write_note *note = &sched_notes.writes[i % WRITES];
    for (long j = i + 1; j < sched_notes.nwrites; j++) {
        const struct sched_write_note *later = &sched_notes.writes[j % WRITES];
        if (later->thread == note->thread && later->span.addr == note->span.addr)
            return j;
    }
    return -1;
}

/* The first write of note @p i's thread to the same memory, from @p oldest on. */
static long first_by_same(long i, long oldest)
{
    const struct sched_write_note *note = &sched_notes.writes[i % WRITES];
    for (long j = oldest; j < i; j++) {
        const struct sched_write_note *earlier = &sched_notes.writes[j % WRITES];
        if (earlier->thread == note->thread && earlier->span.addr == note->span.addr)
            return j;
    }
    return i;
}

/* Whether a thread is asleep in the wait its write at note @p i came just
 * before (its latest write of all): the undo of that write is still to come. */
static bool still_waiting_after(long i, bool (*asleep)(int thread))
{
    const struct sched_write_note *note = &sched_notes.writes[i % WRITES];
    if (!asleep(note->thread) || sched_notes.last_write[note->thread] != i)
        return false;
    const struct after_write *a = stretch_of(note->thread, note->step);
    return a == NULL || a->by_wait; /* not when it unlocked after it, and sleeps in another wait */
}

/* Whether every write at place @p where to @p addr from @p oldest on is
 * followed by its thread's write of the same memory at one other place
 * (*undo), but for note @p skip and the writes of threads still waiting: a
 * change with an undo, such as a count of sleepers raised and lowered. */
static bool always_undone(void *where, uintptr_t addr, long oldest, long skip, const struct sched_undo_ask *ask,
                          void **undo)
{
    *undo = NULL;
    for (long i = oldest; i < sched_notes.nwrites; i++) {
        const struct sched_write_note *note = &sched_notes.writes[i % WRITES];
        if (i == skip || !ask->same(note->where, where) || note->span.addr != addr)
            continue;
        long next = next_by_same(i);
        if (next < 0 && still_waiting_after(i, ask->asleep))
            continue;
        void *then = next >= 0 ? sched_notes.writes[next % WRITES].where : NULL;
        if (then == NULL || ask->same(then, where) || (*undo != NULL && !ask->same(then, *undo)))
            return false;
        *undo = then;
    }
    return *undo != NULL;
}

/* The writes looked at for a change never undone: the schedule's last ones. */
enum { UNDONE_LOOKED_AT = 1024, PAIRS = 16 };

bool sched_changes_never_undone(int sleeper, const struct sched_undo_ask *ask, struct sched_change *out, void **undo)
{
    if (sleeper < 0 || sleeper >= SCHED_MAX_THREADS)
        return false;
    long oldest = sched_notes.nwrites > UNDONE_LOOKED_AT ? sched_notes.nwrites - UNDONE_LOOKED_AT : 0;
    struct seen { void *where; uintptr_t addr; } seen[PAIRS]; /* places and memory found to have no one undo */
    int nseen = 0;
    for (long i = sched_notes.nwrites - 1; i >= oldest; i--) {
        const struct sched_write_note *note = &sched_notes.writes[i % WRITES];
        bool known = false;
        for (int k = 0; k < nseen; k++)
            known = known || (ask->same(seen[k].where, note->where) && seen[k].addr == note->span.addr);
        if (known || (as_of && note->step > as_of->step) || !read_before_waiting(sleeper, &note->span))
            continue; /* not what it waits for, or a place whose writes have no one undo */
        if (!always_undone(note->where, note->span.addr, oldest, i, ask, undo)) {
            if (nseen < PAIRS)
                seen[nseen++] = (struct seen){ note->where, note->span.addr };
            continue;
        }
        long next = next_by_same(i);
        if (next >= 0 ? ask->same(sched_notes.writes[next % WRITES].where, *undo) : still_waiting_after(i, ask->asleep))
            continue; /* undone (or still may be) */
        if (!ask->same(sched_notes.writes[first_by_same(i, oldest) % WRITES].where, note->where))
            continue; /* the undo itself: its thread's first change of that memory was elsewhere */
        *out = (struct sched_change){ note->where, note->thread, note->step, i };
        return true;
    }
    return false;
}

int sched_changes_undo_places(int sleeper, void **places, int most)
{
    if (sleeper < 0 || sleeper >= SCHED_MAX_THREADS)
        return 0;
    long oldest = sched_notes.nwrites > UNDONE_LOOKED_AT ? sched_notes.nwrites - UNDONE_LOOKED_AT : 0;
    int n = 0;
    bool wrote[SCHED_MAX_THREADS] = { false };
    for (long i = sched_notes.nwrites - 1; i >= oldest && n < most; i--) {
        const struct sched_write_note *note = &sched_notes.writes[i % WRITES];
        if (!read_before_waiting(sleeper, &note->span) || note->thread < 0 || note->thread >= SCHED_MAX_THREADS)
            continue;
        bool listed = false;
        for (int k = 0; k < n; k++)
            listed = listed || places[k] == note->where;
        if (!listed)
            places[n++] = note->where;
        wrote[note->thread] = true;
    }
    for (int t = 0; t < SCHED_MAX_THREADS; t++) { /* the ways out of their waits and after their writes */
        const struct after_wait *w = &kept_wait[t];
        for (int k = 0; wrote[t] && k < w->nplaces && n < most; k++)
            places[n++] = w->places[k];
        for (unsigned k = 0; wrote[t] && k < KEPT && k < nkept[t]; k++)
            for (int j = 0; j < kept_after[t][k].nplaces && n < most; j++)
                places[n++] = kept_after[t][k].places[j];
    }
    return n;
}

int sched_changes_section_latest(int thread, struct sched_change *out, int most)
{
    enum { SPANS = 64 };
    if (thread < 0 || thread >= SCHED_MAX_THREADS)
        return 0;
    sched_changes_apply(thread);
    const struct sched_section *section = &sched_notes.section[thread];
    struct sched_span seen[SPANS]; /* the memory of the later writes looked at: written again after */
    int n = 0, nseen = 0, nreads = section->nreads < READS ? section->nreads : READS;
    long oldest = sched_notes.nwrites > WRITES ? sched_notes.nwrites - WRITES : 0;
    for (long i = sched_notes.nwrites - 1; i >= oldest && n < most && nseen < SPANS; i--) {
        const struct sched_write_note *note = &sched_notes.writes[i % WRITES];
        bool read = false, again = false;
        for (int j = 0; j < nreads; j++)
            read = read || overlap(&section->reads[j], &note->span);
        for (int j = 0; read && j < nseen; j++)
            again = again || (seen[j].addr == note->span.addr && seen[j].size == note->span.size);
        if (!read || again)
            continue; /* not read, or not the latest write of that memory */
        seen[nseen++] = note->span;
        out[n++] = (struct sched_change){ note->where, note->thread, note->step, i };
    }
    return n;
}

int sched_changes_left_by_timeout(const struct sched_change *change, void **wait, void **places, int most)
{
    if (change->thread < 0 || change->thread >= SCHED_MAX_THREADS)
        return 0;
    const struct after_write *a = stretch_of(change->thread, change->step);
    if (a == NULL || !a->by_wait || a->nplaces < 1)
        return 0; /* its thread did not wait next: no wait's way out to leave it */
    *wait = a->places[a->nplaces - 1];
    unsigned kept = nkept_out[change->thread];
    for (unsigned k = kept > KEPT_OUT ? kept - KEPT_OUT : 0; k < kept; k++) {
        const struct taken *t = &kept_out[change->thread][k % KEPT_OUT];
        if (t->step <= change->step)
            continue;
        int n = t->nplaces < most ? t->nplaces : most;
        memcpy(places, t->places, (size_t)n * sizeof *places);
        if (n > 0)
            places[n - 1] = t->places[t->nplaces - 1]; /* where it let go, always */
        return n;
    }
    return 0;
}

int kit_sched_left_by_timeout(void **places, int most)
{
    enum { LOOKED_AT = 8 };
    int thread = sched_running_thread();
    struct sched_change changes[LOOKED_AT];
    if (!sched_notes.paths || thread < 0 || thread >= SCHED_MAX_THREADS || most < 4)
        return 0; /* followed only on a report's run */
    int n = sched_changes_section_latest(thread, changes, LOOKED_AT);
    for (int i = 0; i < n; i++) {
        int k = sched_changes_left_by_timeout(&changes[i], &places[1], places + 2, most - 2);
        if (k >= 2) {
            places[0] = changes[i].where;
            return k + 2;
        }
    }
    return 0;
}

/* Stores made over a 0 while the paths are followed, the last OVER_ZERO:
 * over_zero[n % OVER_ZERO] the n-th, by its write's number. */
enum { OVER_ZERO = WRITES }; /* (as many as the writes kept: an older one is not named) */
static struct zero_store {
    unsigned long schedule;
    long seq;
    uintptr_t addr;
    unsigned size;
} over_zero[OVER_ZERO];
static long nover_zero;

void sched_changes_store_over(int thread, const void *addr, unsigned size)
{
    if (!sched_notes.paths || thread < 0 || thread >= SCHED_MAX_THREADS || (size != 4 && size != 8) ||
        ((uintptr_t)addr & (size - 1)) != 0 || sched_notes.last_write[thread] != sched_notes.nwrites - 1)
        return; /* not followed, not a count's size, or its note is not this thread's last */
    uint64_t was = size == 8 ? *(const volatile uint64_t *)addr : *(const volatile uint32_t *)addr;
    if (was == 0)
        over_zero[nover_zero++ % OVER_ZERO] = (struct zero_store){ schedules_begun, sched_notes.nwrites - 1,
                                                                    (uintptr_t)addr, size };
}

/* The first write after write number @p seq, by a thread other than
 * @p thread, to memory at @p addr, into @p out (where NULL: none kept). */
static void next_write_by_another(long seq, int thread, uintptr_t addr, struct sched_change *out)
{
    *out = (struct sched_change){ NULL, -1, -1, -1 };
    for (long i = seq + 1; i < sched_notes.nwrites; i++) {
        const struct sched_write_note *note = &sched_notes.writes[i % WRITES];
        if (note->span.addr == addr && note->thread != thread) {
            *out = (struct sched_change){ note->where, note->thread, note->step, i };
            return;
        }
    }
}

bool sched_changes_below_zero(int back, struct sched_change *out, struct sched_change *before,
                              struct sched_change *after)
{
    long oldest = sched_notes.nwrites > WRITES ? sched_notes.nwrites - WRITES : 0, n = nover_zero - 1 - back;
    if (back < 0 || back >= OVER_ZERO || n < 0 || over_zero[n % OVER_ZERO].schedule != schedules_begun ||
        over_zero[n % OVER_ZERO].seq < oldest)
        return false;
    long i = over_zero[n % OVER_ZERO].seq;
    const struct sched_write_note *note = &sched_notes.writes[i % WRITES];
    *out = (struct sched_change){ note->where, note->thread, note->step, i };
    *before = (struct sched_change){ NULL, -1, -1, -1 };
    for (i = i - 1; i >= oldest; i--) {
        note = &sched_notes.writes[i % WRITES];
        if (note->span.addr == over_zero[n % OVER_ZERO].addr) {
            *before = (struct sched_change){ note->where, note->thread, note->step, i };
            break;
        }
    }
    next_write_by_another(out->seq, out->thread, over_zero[n % OVER_ZERO].addr, after);
    return true;
}

enum { SMALL_NEGATIVE = 1 << 16 };

bool sched_changes_still_below_zero(int back)
{
    long n = nover_zero - 1 - back;
    char freer[8];
    if (back < 0 || back >= OVER_ZERO || n < 0 || over_zero[n % OVER_ZERO].schedule != schedules_begun)
        return false;
    const struct zero_store *z = &over_zero[n % OVER_ZERO];
    if (kit_sched_who_freed((const void *)z->addr, freer, sizeof freer))
        return false; /* freed since: what it holds now tells nothing */
    /* A count lowered past 0 holds a small negative (an unsigned one its
     * wrap): -1, -2. A pointer or a hash over a 0 may have its top bit set
     * too, and is no count. */
    int64_t now = z->size == 8 ? (int64_t)*(const volatile uint64_t *)z->addr
                               : (int64_t)(int32_t)*(const volatile uint32_t *)z->addr;
    return now < 0 && now >= -SMALL_NEGATIVE;
}

int sched_changes_recent(int thread, void **out)
{
    if (thread < 0 || thread >= SCHED_MAX_THREADS)
        return 0;
    int n = nrecent[thread] < RECENT ? (int)nrecent[thread] : RECENT;
    for (int i = 0; i < n; i++)
        out[i] = recent[thread][(nrecent[thread] - n + i) % RECENT];
    return n;
}
