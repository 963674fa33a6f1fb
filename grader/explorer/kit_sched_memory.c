/**
 * @file kit_sched_memory.c
 * @brief Every shared access of the code under test, seen by the scheduler:
 *        a data race detector on the schedule, and the switch points where a
 *        race can be made to matter.
 *
 * The tests link the code under test (the exercise, the reference) compiled
 * with ThreadSanitizer's instrumentation but without its runtime: each load,
 * store and atomic calls one of the __tsan_* functions (kit_sched_tsan.c),
 * and each memcpy, memset, strcpy and the like the kit's wrapper of it
 * (kit_sched_libc.c), which report here. On a thread the scheduler runs,
 * they:
 *
 * - keep happens-before with vector clocks: a thread's clock, a mutex's
 *   (unlock releases into it, lock acquires from it), create and join, a
 *   semaphore's, an atomic location's (every atomic both acquires and
 *   releases: a relaxed one orders more than C11 says - a race hidden, never
 *   one invented);
 * - check each access against the last few accesses to the same bytes (four
 *   cells per 8-byte granule, as ThreadSanitizer keeps): two accesses by
 *   different threads, at least one a write, neither before the other, are a
 *   data race, reported with both places;
 * - make the places of a race switch points, from then on in this test
 *   process (the explorer's next schedules, the rest of a scheduled test):
 *   the preemption a lost update needs is then a choice the search makes,
 *   as Landslide adds preemption points at the races a detector found;
 * - make every atomic a switch point.
 * On any other thread (real threads, no schedule) they do nothing.
 *
 * Everything here runs on the token holder alone (kit_sched_internal.h).
 */
#define _GNU_SOURCE
#include "kit_sched_internal.h"

#include <limits.h>

#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

void *__real_realloc(void *block, size_t size);
void __real_free(void *block);

/* ---- Vector clocks ---------------------------------------------------------------- */

/* Thread ids a schedule may have for its clocks: beyond them the detector
 * stops for that schedule (a stress test that starts thousands of threads). */
#define VC_THREADS 1024

struct vclock {
    uint32_t *clock;
    int length;
    int capacity;
};

static struct vclock thread_clock[VC_THREADS];
static int clocks_used; /* thread ids that have a clock in this schedule */
static struct vclock object_clock[SCHED_MAX_OBJECTS];

/* A location an atomic operation touched: its clock. */
#define ATOMIC_SLOTS 4096
static struct atomic_location {
    uintptr_t addr;
    uint32_t generation;
    struct vclock vc;
} atomic_locations[ATOMIC_SLOTS];

static bool vc_reserve(struct vclock *vc, int length)
{
    if (length <= vc->capacity)
        return true;
    int capacity = (length + 63) & ~63;
    uint32_t *clock = __real_realloc(vc->clock, (size_t)capacity * sizeof *clock);
    if (clock == NULL)
        return false;
    memset(clock + vc->capacity, 0, (size_t)(capacity - vc->capacity) * sizeof *clock);
    vc->clock = clock;
    vc->capacity = capacity;
    return true;
}

static uint32_t vc_get(const struct vclock *vc, int tid)
{
    return tid < vc->length ? vc->clock[tid] : 0;
}

/* into = max(into, from), element by element. */
static void vc_join(struct vclock *into, const struct vclock *from)
{
    if (!vc_reserve(into, from->length))
        return;
    for (int i = 0; i < from->length; i++)
        if (from->clock[i] > into->clock[i])
            into->clock[i] = from->clock[i];
    if (from->length > into->length)
        into->length = from->length;
}

static void vc_copy(struct vclock *into, const struct vclock *from)
{
    if (!vc_reserve(into, from->length))
        return;
    memcpy(into->clock, from->clock, (size_t)from->length * sizeof *into->clock);
    if (into->length > from->length)
        memset(into->clock + from->length, 0, (size_t)(into->length - from->length) * sizeof *into->clock);
    into->length = from->length;
}

static void vc_tick(struct vclock *vc, int tid)
{
    if (!vc_reserve(vc, tid + 1))
        return;
    vc->clock[tid]++;
    if (tid + 1 > vc->length)
        vc->length = tid + 1;
}

/* ---- This schedule's detector ------------------------------------------------------ */

static struct {
    bool on;             /* a schedule is under way, and its threads fit VC_THREADS */
    uint32_t generation; /* the schedule's number: shadow cells of earlier ones are empty */
} detector;


static struct sched_thread *tracked(void)
{
    struct sched_thread *me = detector.on ? sched_me() : NULL;
    return me && me->id < VC_THREADS ? me : NULL;
}

/* Whether racing places become switch points: not in a test run again
 * because they made its one schedule too long (KIT_NO_RACE_POINTS, set by
 * kit_test.c); its races are still found and reported. */
static bool race_points = true;

void sched_memory_begin(void)
{
    static bool asked;
    detector.on = true;
    if (!asked) /* (set before the process starts: a test run again is a new process, kit_test.c) */
        race_points = getenv("KIT_NO_RACE_POINTS") == NULL;
    asked = true;
    if (++detector.generation == 0)
        detector.generation = 1;
    for (int i = 0; i < clocks_used; i++)
        thread_clock[i].length = 0;
    clocks_used = 0;
}

unsigned long kit_sched_schedule(void)
{
    return sched_me() != NULL ? detector.generation : 0;
}

unsigned long sched_memory_generation(void)
{
    return detector.generation;
}

void sched_memory_forget_object(int obj)
{
    object_clock[obj].length = 0;
}

void sched_memory_thread_created(int parent, int child)
{
    if (child >= VC_THREADS || parent >= VC_THREADS) {
        detector.on = false; /* too many threads to keep clocks for: no reports in this schedule */
        return;
    }
    if (child + 1 > clocks_used)
        clocks_used = child + 1;
    if (parent >= 0) {
        vc_copy(&thread_clock[child], &thread_clock[parent]);
        vc_tick(&thread_clock[parent], parent);
    }
    vc_tick(&thread_clock[child], child);
}

void sched_memory_thread_joined(int joiner, int ended)
{
    if (joiner < VC_THREADS && ended < VC_THREADS)
        vc_join(&thread_clock[joiner], &thread_clock[ended]);
}

/* A mutex (or semaphore) obj was taken by thread: what its last release saw, it now sees. */
void sched_memory_acquire(int thread, int obj)
{
    if (thread < VC_THREADS)
        vc_join(&thread_clock[thread], &object_clock[obj]);
}

/* Thread gave obj up (unlock, a wait that unlocks, a post): its history goes with it. */
void sched_memory_release(int thread, int obj)
{
    if (thread >= VC_THREADS)
        return;
    vc_join(&object_clock[obj], &thread_clock[thread]);
    vc_tick(&thread_clock[thread], thread);
}

static struct vclock *atomic_clock(uintptr_t addr)
{
    unsigned start = (unsigned)((addr >> 3) * 0x9E3779B1u) & (ATOMIC_SLOTS - 1);
    for (unsigned probe = 0; probe < 64; probe++) {
        struct atomic_location *slot = &atomic_locations[(start + probe) & (ATOMIC_SLOTS - 1)];
        if (slot->generation == detector.generation && slot->addr == addr)
            return &slot->vc;
        if (slot->generation != detector.generation) {
            slot->generation = detector.generation;
            slot->addr = addr;
            slot->vc.length = 0;
            return &slot->vc;
        }
    }
    return NULL;
}

/* ---- Shadow memory ------------------------------------------------------------------ */

/* One access of a granule's bytes: who, when (their clock then), where - as
 * a distance from the program's own code: the code under test is in it. */
struct shadow_cell {
    int32_t place;
    uint32_t clock;
    uint16_t thread;
    uint8_t bytes; /* which of the granule's 8 bytes */
    uint8_t write; /* READ or WRITE, either with ATOMIC; FREED: the granule's block was freed there; GUARD: it is
                      behind the end of a block (kit_sched_guard) */
};
enum { READ, WRITE, FREED, GUARD, ATOMIC = 4 };
/* (FREED and GUARD differ in their last bit alone: one test finds either.) */
#define FREED_OR_GUARD(cell) (((cell)->write & ~1) == FREED)

/* A granule's entry fills one cache line. */
#define CELLS 4
struct shadow_entry {
    uintptr_t granule;
    uint32_t generation;
    uint8_t next; /* the cell to replace when all are taken */
    struct shadow_cell cell[CELLS]; /* those in use first: an empty one has only empty ones after it */
} __attribute__((aligned(64)));

static int32_t place_of_pc(const void *pc)
{
    return (int32_t)((uintptr_t)pc - (uintptr_t)&sched_memory_access);
}

static void *pc_of_place(int32_t place)
{
    return (void *)((uintptr_t)&sched_memory_access + (uintptr_t)(intptr_t)place);
}

#define SHADOW_SIZE (1u << 17)
static struct shadow_entry *shadow;

/* The table: mapped, so zero until used, and aligned to the cache lines. */
static struct shadow_entry *map_shadow(void)
{
    void *map = mmap(NULL, SHADOW_SIZE * sizeof *shadow, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return map == MAP_FAILED ? NULL : map;
}

/* Neighbouring granules in neighbouring slots - the fields of a struct
 * share cache lines - and the regions (heap, stacks, globals) scattered. */
static unsigned shadow_slot(uintptr_t granule)
{
    return (unsigned)(granule ^ (granule >> 17) * 0x9E3779B1u) & (SHADOW_SIZE - 1);
}

/* The granule's entry in this schedule, the table mapped already (entry_of). */
static inline __attribute__((always_inline)) struct shadow_entry *entry_in(uintptr_t granule, bool create)
{
    unsigned start = shadow_slot(granule);
    for (unsigned probe = 0; probe < 64; probe++) {
        struct shadow_entry *e = &shadow[(start + probe) & (SHADOW_SIZE - 1)];
        if (e->generation == detector.generation && e->granule == granule)
            return e;
        if (e->generation != detector.generation && !create)
            return NULL;
        if (e->generation != detector.generation) {
            memset(e, 0, sizeof *e);
            e->granule = granule;
            e->generation = detector.generation;
            return e;
        }
    }
    return NULL;
}

/* The granule's entry in this schedule; with `create`, a fresh one if it
 * has none (NULL only when the table is full around it: the granule goes
 * unwatched). */
static inline __attribute__((always_inline)) struct shadow_entry *entry_of(uintptr_t granule, bool create)
{
    if (shadow == NULL && (shadow = map_shadow()) == NULL)
        return NULL;
    return entry_in(granule, create);
}

/* Freed memory may come back as another object: what was done to it before is forgotten. */
void kit_sched_forget_memory(const void *block, size_t size)
{
    if (tracked() == NULL || block == NULL)
        return;
    for (uintptr_t g = (uintptr_t)block >> 3; g <= ((uintptr_t)block + size - 1) >> 3 && size > 0; g++) {
        struct shadow_entry *e = entry_of(g, false); /* (none yet: nothing to forget) */
        if (e)
            memset(e->cell, 0, sizeof e->cell);
    }
}

/* ---- Freed memory -----------------------------------------------------------------------
 * free() (and the free inside realloc, kit_wrap.c) is a write to every byte
 * of the block - an access it races with is a data race, whose places become
 * switch points - and leaves one FREED cell in each granule of it: an access
 * after it, ordered or not, is a use after free, and a second free of the
 * block a double free. The schedule fails there, naming both lines; the
 * kit's quarantine keeps the block out of use meanwhile, and memory handed
 * out again is forgotten (kit_sched_forget_memory). A block's first
 * FREED_GRANULES granules are marked: enough for any object's fields. */
#define FREED_GRANULES 1024
#define FREED_KEPT 512 /* the last frees of the schedule, with their calls, for a report */

static struct freed_block {
    uintptr_t start, end;
    uint32_t generation;
    void *pc;                    /* the free's caller */
    void *callers[RACE_CALLERS]; /* the calls into the code under test that led there, innermost first */
    int ncallers;
    char thread[KIT_THREAD_NAME_MAX];
} freed_blocks[FREED_KEPT];
static unsigned nfreed;

static void use_after_free(const struct sched_thread *me, uintptr_t addr, bool write, void *pc)
    __attribute__((noreturn));
static void double_free(const struct sched_thread *me, uintptr_t addr, void *pc) __attribute__((noreturn));
static void overrun(const struct sched_thread *me, uintptr_t addr, bool write, void *pc) __attribute__((noreturn));
static int open_call_sites(void **out, int most);

/* The last free of this schedule whose block holds addr, or NULL. */
static const struct freed_block *freed_block_at(uintptr_t addr)
{
    for (unsigned i = 0; i < FREED_KEPT && i < nfreed; i++) {
        const struct freed_block *b = &freed_blocks[(nfreed - 1 - i) % FREED_KEPT];
        if (b->generation == detector.generation && addr >= b->start && addr < b->end)
            return b;
    }
    return NULL;
}

static void keep_freed_block(const struct sched_thread *me, uintptr_t start, size_t size, void *pc)
{
    struct freed_block *b = &freed_blocks[nfreed++ % FREED_KEPT];
    b->start = start; /* (field by field: of the callers, only the first ncallers are read) */
    b->end = start + size;
    b->generation = detector.generation;
    b->pc = pc;
    b->ncallers = open_call_sites(b->callers, RACE_CALLERS);
    memcpy(b->thread, me->name, sizeof b->thread); /* (NUL-terminated within it, as the steps keep it) */
}

static bool granule_freed(uintptr_t granule)
{
    struct shadow_entry *e = entry_of(granule, false);
    return e != NULL && e->cell[0].write == FREED;
}

/* Whether a cell's access is ordered before what thread me does now: its
 * own, or another thread's that me's clock has seen. */
static inline bool seen_by(const struct sched_thread *me, const struct shadow_cell *cell)
{
    return cell->thread == me->id || cell->clock <= vc_get(&thread_clock[me->id], cell->thread);
}

static void check_cells(struct sched_thread *me, struct shadow_entry *e, uintptr_t addr, uint8_t bytes, bool write,
                        void *pc);

static bool freeing; /* the access being checked is a free of its block (kit_sched_freed) */

void kit_sched_freed(const void *block, size_t size, void *where)
{
    struct sched_thread *me = tracked();
    if (me == NULL || block == NULL || size == 0)
        return;
    uintptr_t first = (uintptr_t)block >> 3, last = ((uintptr_t)block + size - 1) >> 3;
    if (granule_freed(first))
        double_free(me, (uintptr_t)block, where);
    if (last - first >= FREED_GRANULES)
        last = first + FREED_GRANULES - 1;
    keep_freed_block(me, (uintptr_t)block, size, where);
    /* What each granule keeps from now on: the free alone (the same cells for all). */
    const struct shadow_cell freed[CELLS] = { { place_of_pc(where), vc_get(&thread_clock[me->id], me->id),
                                                (uint16_t)me->id, 0xff, FREED } };
    for (uintptr_t g = first; g <= last && detector.on; g++) {
        /* The free writes every byte: checked against what was done there
         * before (a granule with no cell, or only one ordered before the
         * free, has nothing to race with), as an access's check would. */
        struct shadow_entry *e = entry_of(g, true);
        if (e == NULL)
            continue;
        if (e->cell[0].write == FREED)
            use_after_free(me, g << 3, true, where);
        if (e->cell[0].write != GUARD && e->cell[0].bytes != 0 && !(e->cell[1].bytes == 0 && seen_by(me, &e->cell[0]))) {
            freeing = true;
            check_cells(me, e, g << 3, 0xff, true, where);
            freeing = false;
        }
        memcpy(e->cell, freed, sizeof e->cell);
    }
}

/* The blocks allocated last on this schedule, for an overrun's report. */
#define GUARDED_KEPT 512
static struct guarded_block {
    uintptr_t start, end;
    uint32_t generation;
    void *pc; /* the allocation's caller */
} guarded_blocks[GUARDED_KEPT];
static unsigned nguarded;

/* The block of this schedule whose guard holds addr, or NULL. */
static const struct guarded_block *guarded_block_at(uintptr_t addr)
{
    for (unsigned i = 0; i < GUARDED_KEPT && i < nguarded; i++) {
        const struct guarded_block *b = &guarded_blocks[(nguarded - 1 - i) % GUARDED_KEPT];
        if (b->generation == detector.generation && addr >= b->end && addr < b->end + KIT_SCHED_GUARD_BYTES)
            return b;
    }
    return NULL;
}

/* Only the granules wholly behind the block are watched: a block's last
 * granule may hold a few bytes of it, and the allocator rounds up anyway. */
void kit_sched_guard(const void *block, size_t size, void *where)
{
    struct sched_thread *me = tracked();
    if (me == NULL || block == NULL || !detector.on)
        return;
    uintptr_t end = (uintptr_t)block + size;
    guarded_blocks[nguarded++ % GUARDED_KEPT] = (struct guarded_block){ (uintptr_t)block, end, detector.generation,
                                                                        where };
    const struct shadow_cell guard[CELLS] = { { place_of_pc(where), vc_get(&thread_clock[me->id], me->id),
                                                (uint16_t)me->id, 0xff, GUARD } };
    for (uintptr_t g = (end + 7) >> 3; g < (end + KIT_SCHED_GUARD_BYTES) >> 3; g++) {
        struct shadow_entry *e = entry_of(g, true);
        if (e != NULL)
            memcpy(e->cell, guard, sizeof e->cell);
    }
}

/* ---- The last call into the code under test ------------------------------------------
 * Per thread, in every run (real threads too), so that a failed check can say
 * which call of the student's code gave it its value. Only the outermost call
 * counts: a helper the API function calls is part of that call. */

static _Thread_local int call_depth;           /* calls of the code under test now open */
static _Thread_local kit_code_call_t call_now;      /* the outermost one, while it runs */
static _Thread_local kit_code_call_t call_last;     /* the last outermost one that returned */
static _Thread_local bool call_returned;       /* whether call_last holds one */
#define CALL_SITES 8 /* (a power of two) */
/* Where the innermost CALL_SITES open calls were made from, a ring indexed by
 * depth: deep in a worker (the pool's thread, its task, the task's helpers)
 * the calls that tell a student most are the innermost. */
static _Thread_local void *call_sites[CALL_SITES];
static _Thread_local long call_serial;         /* the outermost calls begun, the open one's number */

static _Thread_local void *api_site;   /* kit_sched_api_site's place (NULL: none to name) */
static _Thread_local bool api_site_set; /* ... until the next outermost call takes it */

void kit_sched_api_site(void *where)
{
    api_site = where;
    api_site_set = true;
}

void sched_call_entered(void *site, void *function)
{
    if (call_depth == 0 && api_site_set) {
        site = api_site;
        api_site_set = false;
    }
    call_sites[call_depth & (CALL_SITES - 1)] = site;
    if (call_depth++ == 0) {
        call_now = (kit_code_call_t){ .site = site, .function = function, .touched = NULL };
        call_serial++;
        if (sched_running != NULL) { /* a scheduled thread: its call, for a check another thread fails */
            sched_running->call_began = sched.nsteps;
            sched_running->calling = function;
            sched_changes_call_began(sched_running->id);
        }
    }
}

long sched_memory_call_serial(void)
{
    return call_depth > 0 ? call_serial : -1;
}

/* The places the open calls of this thread were made from, innermost first:
 * for a race, the chain that led to the access. */
static int open_call_sites(void **out, int most)
{
    int n = 0;
    int outermost_kept = call_depth > CALL_SITES ? call_depth - CALL_SITES : 0;
    for (int depth = call_depth - 1; depth >= outermost_kept && n < most; depth--)
        out[n++] = call_sites[depth & (CALL_SITES - 1)];
    return n;
}

int sched_memory_call_sites(void **out, int most)
{
    return open_call_sites(out, most);
}

void sched_call_left(void)
{
    if (call_depth > 0 && --call_depth == 0) {
        call_last = call_now;
        call_returned = true;
        if (sched_running != NULL) {
            sched_running->returned_from = call_now.function;
            sched_running->calling = NULL;
            sched_changes_call_ended(sched_running->id);
        }
    }
}

bool kit_last_call(kit_code_call_t *call)
{
    if (call_returned)
        *call = call_last;
    return call_returned;
}

/* ---- Races -------------------------------------------------------------------------- */

static struct sched_race first_race;
static bool raced;

/* Places where a race was seen: their accesses are switch points from now
 * on. In the order they were found (a replay token lists them so), and by
 * address, for the look-up every access makes. */
#define RACY_PLACES 256
#define RACY_SLOTS (4 * RACY_PLACES)
static void *racy[RACY_PLACES];
static int nracy;
static short racy_index[RACY_SLOTS]; /* open addressing: a position in racy[] plus one; 0: empty */
/* racy_reached[i]: an access of this process was made at racy[i] since it
 * was learned - a place a replay token names that no access reaches is no
 * place of this program (sched_memory_racy_reached). */
static bool racy_reached[RACY_PLACES];

static unsigned racy_slot(const void *pc)
{
    return (unsigned)(((uintptr_t)pc * 0x9E3779B97F4A7C15ULL) >> 40) & (RACY_SLOTS - 1);
}

/* pc's position in racy[], or -1 if no race was seen there. */
static int racy_position(const void *pc)
{
    for (unsigned at = racy_slot(pc); racy_index[at] != 0; at = (at + 1) & (RACY_SLOTS - 1))
        if (racy[racy_index[at] - 1] == pc)
            return racy_index[at] - 1;
    return -1;
}

static void mark_racy(void *pc)
{
    if (pc == NULL || racy_position(pc) >= 0 || nracy == RACY_PLACES)
        return;
    racy_reached[nracy] = false;
    racy[nracy++] = pc;
    unsigned at = racy_slot(pc);
    while (racy_index[at] != 0)
        at = (at + 1) & (RACY_SLOTS - 1);
    racy_index[at] = (short)nracy;
}

/* The racing places, as offsets into the program (the same in every run of
 * it): a replay token carries them, so that a schedule found after earlier
 * ones taught the scheduler its switch points replays alone. */
static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    *(uintptr_t *)data = (uintptr_t)info->dlpi_addr;
    return 1; /* the first one is the program itself */
}

uintptr_t sched_load_bias(void)
{
    uintptr_t bias = 0;
    dl_iterate_phdr(first_object, &bias);
    return bias;
}

/* Where a token's racing places are counted from: kit_code_anchor(), linked
 * just before the code under test (kit_anchor.c), so that a token printed by
 * a judged test's subject replays in one process, and across builds of the
 * kit whose own code changed size; the program's start where a program has
 * no anchor (the kit's own tests). */
void kit_code_anchor(void) __attribute__((weak));

static uintptr_t places_origin(bool anchored)
{
    return anchored && kit_code_anchor ? (uintptr_t)kit_code_anchor : sched_load_bias();
}

bool sched_memory_anchored(void)
{
    return kit_code_anchor != NULL;
}

int sched_memory_racy_offsets(intptr_t *out, int most)
{
    uintptr_t origin = places_origin(true);
    int n = 0;
    for (int i = 0; i < nracy && n < most; i++)
        out[n++] = (intptr_t)((uintptr_t)racy[i] - origin);
    return n;
}

void sched_memory_learn_offset(intptr_t offset, bool anchored)
{
    mark_racy((void *)(places_origin(anchored) + (uintptr_t)offset));
}

int sched_memory_racy_count(void)
{
    return nracy;
}

int sched_memory_racy_reached(int from, int to)
{
    if (!race_points)
        return to - from; /* no place is a switch point: none changes the schedule */
    int reached = 0;
    for (int i = from; i < to && i < nracy; i++)
        if (racy_reached[i])
            reached++;
    return reached;
}

void sched_memory_forget_racy(int keep)
{
    if (keep < 0 || keep >= nracy)
        return;
    int n = nracy;
    nracy = 0;
    memset(racy_index, 0, sizeof racy_index);
    for (int i = 0; i < keep; i++) /* (the first keep, in their order: learned again from here) */
        mark_racy(racy[i]);
    for (int i = keep; i < n; i++)
        racy[i] = NULL;
}

/* A cell of another thread's stack, which that thread has left: its memory is
 * a new thread's stack now, and what the old one did there is no race. */
static bool stale(const struct shadow_cell *cell, uintptr_t addr)
{
    if (cell->thread >= sched.nthreads)
        return true;
    const struct sched_thread *owner = sched.threads[cell->thread];
    return owner->state == DONE && addr >= owner->stack_low && addr < owner->stack_high;
}

/* (Out of line: the check that calls it stays small.) */
static __attribute__((noinline, cold)) void record_race(const struct sched_thread *me, const struct shadow_cell *cell,
                                                        uintptr_t addr, bool write, void *pc)
{
    mark_racy(pc);
    mark_racy(pc_of_place(cell->place));
    if (raced)
        return;
    raced = true;
    first_race = (struct sched_race){ .addr = addr, .pc = { pc, pc_of_place(cell->place) }, .write = { write, cell->write & WRITE },
                                      .step = sched.nsteps, .holding = me->holding, .freeing = freeing };
    first_race.ncallers = open_call_sites(first_race.callers, RACE_CALLERS);
    snprintf(first_race.thread[0], sizeof first_race.thread[0], "%s", me->name);
    snprintf(first_race.thread[1], sizeof first_race.thread[1], "%s", sched.threads[cell->thread]->name);
    snprintf(first_race.test, sizeof first_race.test, "%s", sched.test);
}

/* The cell an access of me at pc leaves: who, when, where, which bytes, how. */
static inline struct shadow_cell own_cell(const struct sched_thread *me, uint8_t bytes, bool write, void *pc)
{
    return (struct shadow_cell){ place_of_pc(pc), vc_get(&thread_clock[me->id], me->id), (uint16_t)me->id, bytes,
                                 write };
}

/* The access me makes now against the cells of its granule; then its own
 * cell replaces, in this order: its last cell of the same bytes (a write
 * replaces a read or write, a read a read), the first free cell or one
 * ordered before this access (nothing left to race with), or the next in
 * turn. A cell of its own thread is always ordered before the access (a
 * thread's own entry of its clock only grows): it is neither a race nor a
 * clock to read. (Out of line: the check of an access calls it only when
 * the granule holds more than one cell, or one not ordered before it.) */
static __attribute__((noinline)) void check_cells(struct sched_thread *me, struct shadow_entry *e, uintptr_t addr,
                                                  uint8_t bytes, bool write, void *pc)
{
    const struct vclock *now = &thread_clock[me->id];
    int mine = -1, spare = -1, i;
    for (i = 0; i < CELLS && e->cell[i].bytes != 0; i++) { /* the cells in use come first */
        const struct shadow_cell *cell = &e->cell[i];
        if (cell->thread == me->id) {
            if (cell->bytes == bytes && (write || !(cell->write & WRITE)))
                mine = i;
            else if (spare < 0)
                spare = i;
            continue;
        }
        bool ordered = cell->clock <= vc_get(now, cell->thread);
        if (!ordered && (cell->bytes & bytes) && (write || (cell->write & WRITE)) && !stale(cell, addr))
            record_race(me, cell, addr, write, pc);
        if (ordered && spare < 0)
            spare = i;
    }
    if (i < CELLS && spare < 0)
        spare = i; /* the first free cell */
    if (mine < 0)
        mine = spare >= 0 ? spare : e->next++ % CELLS;
    e->cell[mine] = own_cell(me, bytes, write, pc);
}

/* (Out of line: an access meets a freed or guard granule only to fail there.) */
static __attribute__((noinline, cold, noreturn)) void freed_or_guard(struct sched_thread *me,
                                                                    const struct shadow_cell *first, uintptr_t addr,
                                                                    bool write, void *pc)
{
    if (first->write == GUARD)
        overrun(me, addr, write, pc);
    use_after_free(me, addr, write, pc);
}

/* An access against the cells of its granule's entry (check_cells). Two
 * cases, most accesses, need no loop: a granule with no cell yet, and one
 * whose only cell is ordered before this access - nothing to race with -
 * which this access replaces (check_cells would take it as the same bytes,
 * or as the first cell with nothing to race with). */
static inline __attribute__((always_inline)) void check_entry(struct sched_thread *me, struct shadow_entry *e,
                                                              uintptr_t addr, uint8_t bytes, bool write, void *pc)
{
    struct shadow_cell *first = &e->cell[0];
    if (FREED_OR_GUARD(first))
        freed_or_guard(me, first, addr, write, pc);
    bool alone = first->bytes == 0 || (e->cell[1].bytes == 0 && seen_by(me, first));
    if (alone)
        *first = own_cell(me, bytes, write, pc);
    else
        check_cells(me, e, addr, bytes, write, pc);
}

/* An access against its granule's cells, unless the granule goes unwatched. */
static inline __attribute__((always_inline)) void check_granule(struct sched_thread *me, uintptr_t addr,
                                                                uint8_t bytes, bool write, void *pc)
{
    struct shadow_entry *e = entry_of(addr >> 3, true);
    if (e != NULL) /* (NULL: unwatched, the table is full around it) */
        check_entry(me, e, addr, bytes, write, pc);
}

/* An access across granules: each granule's bytes in turn. */
static __attribute__((noinline)) void check_granules(struct sched_thread *me, uintptr_t addr, size_t size, bool write,
                                                     void *pc)
{
    for (uintptr_t a = addr; size > 0 && detector.on;) {
        unsigned offset = (unsigned)(a & 7), n = size < 8u - offset ? (unsigned)size : 8 - offset;
        check_granule(me, a, (uint8_t)(((1u << n) - 1) << offset), write, pc);
        a += n;
        size -= n;
    }
}

/* The thread that makes an access at pc now, if the detector watches it; NULL if not. */
static inline __attribute__((always_inline)) struct sched_thread *access_starts(const void *addr, void *pc)
{
    if (call_depth > 0)
        call_now.touched = pc;
    struct sched_thread *me = tracked();
    if (me == NULL)
        return NULL;
    if (++me->accesses > SCHED_SPIN_ACCESSES)
        sched_endless_loop(pc);
    if (sched_context_own((uintptr_t)addr))
        return NULL; /* a _Thread_local variable: this thread's own copy */
    return me;
}

/* The access's notes for the lost wake-up report, then its switch point if its place raced. */
static inline __attribute__((always_inline)) void access_noted(struct sched_thread *me, const void *addr, size_t size,
                                                               bool write, void *pc)
{
    unsigned bytes = size < UINT_MAX ? (unsigned)size : UINT_MAX;
    if (write)
        sched_changes_write(me->id, addr, bytes, pc);
    else
        sched_changes_read(me->id, addr, bytes, pc);
    if (race_points && nracy > 0) {
        int racy_at = racy_position(pc);
        if (racy_at >= 0) { /* a preemption here may make the race matter */
            racy_reached[racy_at] = true;
            sched_memory_point(pc, write ? OP_WRITE : OP_READ);
        }
    }
}

/* Each granule of [addr, addr + size) against its cells. (Inline in each
 * caller: a load's or store's check is one call from the code under test.) */
static inline __attribute__((always_inline)) void check_bytes(struct sched_thread *me, uintptr_t a, size_t size,
                                                              bool write, void *pc)
{
    unsigned first = (unsigned)(a & 7);
    if (size > 0 && first + size <= 8) { /* within one granule, as nearly every access is */
        if (detector.on)
            check_granule(me, a, (uint8_t)(((1u << size) - 1) << first), write, pc);
        return;
    }
    check_granules(me, a, size, write, pc);
}

/* An access of me, once started (access_starts), every case. */
static __attribute__((noinline)) void access_the_long_way(struct sched_thread *me, const void *addr, unsigned size,
                                                          bool write, void *pc)
{
    access_noted(me, addr, size, write, pc);
    check_bytes(me, (uintptr_t)addr, size, write, pc);
    if (write && sched_notes.paths) /* (checked: no freed block, no overrun) */
        sched_changes_store_over(me->id, addr, size);
}

/* A load or store of the code under test. Nearly every one - within one
 * granule, its notes plain (sched_changes_plain), no racing place seen yet
 * - is checked here without a call until the end, so that no register has
 * to be kept across one; any other goes the long way, which does the same
 * in the same order. */
void sched_memory_access(const void *addr, unsigned size, bool write, void *pc)
{
    struct sched_thread *me = access_starts(addr, pc);
    if (me == NULL)
        return;
    uintptr_t a = (uintptr_t)addr;
    unsigned first = (unsigned)(a & 7);
    bool plain = size > 0 && first + size <= 8 && sched_changes_plain(me->id, write) && !(race_points && nracy > 0) &&
                 shadow != NULL && detector.on;
    if (!plain) {
        access_the_long_way(me, addr, size, write, pc);
        return;
    }
    sched_changes_note(me->id, addr, size, write, pc);
    struct shadow_entry *e = entry_in(a >> 3, true);
    if (e != NULL) /* (NULL: unwatched, the table is full around it) */
        check_entry(me, e, a, (uint8_t)(((1u << size) - 1) << first), write, pc);
}

/* ---- Ranges -----------------------------------------------------------------------------
 * A block the code under test reads or writes whole: a struct copied at once,
 * or what a memcpy, memset or strcpy it calls does (kit_sched_libc.c). One
 * access - one switch point, at most, and one step towards the endless loop's
 * limit - whose granules are checked as a load's are: a cost of a few
 * nanoseconds per 8 bytes. Of a longer block than RANGE_BYTES, the first and
 * the last RANGE_BYTES / 2 are checked (where the fields and the ends of an
 * array are), so that one memset of a large buffer neither costs a schedule
 * thousands of checks nor fills the shadow table, which the other accesses
 * need. */
#define RANGE_BYTES 8192

void sched_memory_range(const void *addr, size_t size, bool write, void *pc)
{
    if (size == 0)
        return;
    struct sched_thread *me = access_starts(addr, pc);
    if (me == NULL)
        return;
    access_noted(me, addr, size, write, pc);
    uintptr_t start = (uintptr_t)addr;
    if (size <= RANGE_BYTES) {
        check_bytes(me, start, size, write, pc);
        return;
    }
    check_bytes(me, start, RANGE_BYTES / 2, write, pc);
    check_bytes(me, start + size - RANGE_BYTES / 2, RANGE_BYTES / 2, write, pc);
}

bool kit_sched_saw_race(void)
{
    return raced || sched_lock_inverted(NULL);
}

bool sched_memory_races_seen(void)
{
    return race_points && nracy > 0;
}

bool kit_sched_take_race(void)
{
    bool seen = raced;
    raced = false;
    return seen;
}

bool kit_sched_raced(struct sched_race *race)
{
    if (raced && race)
        *race = first_race;
    return raced;
}

void sched_memory_end(void)
{
    detector.on = false;
}

/* ---- Atomics ----------------------------------------------------------------------- */

/* An atomic access against the plain accesses of its granule: C11 calls an
 * atomic and a plain access of the same bytes by two threads, neither
 * ordered before the other and one a write, a data race, as two plain ones;
 * two atomics never race. The atomic's own cell, marked ATOMIC, then
 * replaces its thread's cell of the same bytes, or takes a free or ordered
 * one, or the next in turn, so that a plain access after it is checked
 * against it. (Checked after the atomic's acquire: what the location's last
 * atomic ordered is ordered, as every atomic orders here.) */
static void check_atomic(struct sched_thread *me, uintptr_t addr, unsigned size, bool write, void *pc)
{
    unsigned first = (unsigned)(addr & 7);
    struct shadow_entry *e = first + size <= 8 ? entry_of(addr >> 3, true) : NULL;
    if (e != NULL && e->cell[0].write == GUARD)
        overrun(me, addr, write, pc);
    if (e == NULL || e->cell[0].write == FREED)
        return; /* (unwatched; one across granules is none the code under test makes; a freed one is told above) */
    uint8_t bytes = (uint8_t)(((1u << size) - 1) << first);
    int mine = -1, i;
    for (i = 0; i < CELLS && e->cell[i].bytes != 0; i++) {
        const struct shadow_cell *cell = &e->cell[i];
        bool ordered = seen_by(me, cell);
        if (!ordered && !(cell->write & ATOMIC) && (cell->bytes & bytes) && (write || (cell->write & WRITE)) &&
            !stale(cell, addr))
            record_race(me, cell, addr, write, pc);
        if (mine < 0 && (cell->thread == me->id ? cell->bytes == bytes : ordered))
            mine = i;
    }
    if (mine < 0)
        mine = i < CELLS ? i : e->next++ % CELLS;
    e->cell[mine] = own_cell(me, bytes, write, pc);
    e->cell[mine].write |= ATOMIC;
}

/* An atomic operation of @p size bytes on addr by the token holder: a switch
 * point before it; then it acquires the location's history, is checked
 * against the plain accesses of its bytes, and releases its own. */
void sched_memory_atomic(const volatile void *addr, unsigned size, bool write, void *pc)
{
    if (call_depth > 0)
        call_now.touched = pc;
    struct sched_thread *me = tracked();
    if (me == NULL)
        return;
    sched_memory_point(pc, OP_ATOMIC);
    if (!sched_context_own((uintptr_t)addr) && granule_freed((uintptr_t)addr >> 3))
        use_after_free(me, (uintptr_t)addr, true, pc);
    struct vclock *vc = sched_context_own((uintptr_t)addr) ? NULL : atomic_clock((uintptr_t)addr);
    if (vc == NULL)
        return; /* (a _Thread_local variable is each thread's own: it orders nothing) */
    vc_join(&thread_clock[me->id], vc);
    if (detector.on)
        check_atomic(me, (uintptr_t)addr, size, write, pc);
    vc_join(vc, &thread_clock[me->id]);
    vc_tick(&thread_clock[me->id], me->id);
}

/* ---- Telling a use after free or a double free -------------------------------------- */

/* Whether a caller's place is the kit's own plumbing - a judged subject's
 * serving of the test's call (serve.c), the kit's thread start (kit_*.c) -
 * which tells a student nothing: the chain of calls ends before it. */
static bool kit_plumbing(const char *place)
{
    return strncmp(place, "serve.c:", 8) == 0 || strncmp(place, "kit_", 4) == 0;
}

/* "bq.c:120 in bq_take, called from test_bq.c:40 in take_one": a place and the calls that led there. */
static void describe_chain(kit_text_t *t, void *pc, void *const *callers, int ncallers)
{
    void *pcs[1 + RACE_CALLERS];
    char places[1 + RACE_CALLERS][160];
    int n = 0;
    pcs[n++] = pc;
    for (int i = 0; i < ncallers && i < RACE_CALLERS; i++)
        pcs[n++] = callers[i];
    char inlined[480];
    kit_describe_places(pcs, n, places);
    kit_describe_inlined_calls(pc, inlined, sizeof inlined);
    kit_text_put(t, "%s%s", places[0], inlined);
    bool called = inlined[0] != '\0'; /* ", called from" said already */
    for (int i = 1; i < n && !kit_plumbing(places[i]); i++)
        if (strcmp(places[i], "a place without a line") != 0 && strstr(places[i], ":? ") == NULL) {
            kit_text_put(t, "%s%s", called ? " <- " : ", called from ", places[i]);
            called = true;
        }
}

/* describe_chain of the running thread's access or call at @p pc. */
static void describe_own_chain(kit_text_t *t, void *pc)
{
    void *callers[RACE_CALLERS];
    int ncallers = tracked() ? open_call_sites(callers, RACE_CALLERS) : 0;
    describe_chain(t, pc, callers, ncallers);
}

static void describe_free(kit_text_t *t, const struct freed_block *b)
{
    if (b == NULL) {
        kit_text_put(t, "another call (its place was not kept)");
        return;
    }
    kit_text_put(t, "%s at ", b->thread);
    describe_chain(t, b->pc, b->callers, b->ncallers);
}

bool kit_sched_who_freed(const void *addr, char *out, size_t size)
{
    const struct freed_block *b = tracked() ? freed_block_at((uintptr_t)addr) : NULL;
    if (b == NULL)
        return false;
    kit_text_t t = { out, size, 0 };
    describe_free(&t, b);
    return true;
}

void kit_sched_call_chain(void *where, char *out, size_t size)
{
    kit_text_t t = { out, size, 0 };
    describe_own_chain(&t, where);
}

/* A memory error's first words: "WHAT: thread writes memory at place, called from ...". */
static void access_words(kit_text_t *t, const char *what, const struct sched_thread *me, bool write, void *pc)
{
    kit_text_put(t, "%s: %s %s memory at ", what, me->name, write ? "writes" : "reads");
    describe_own_chain(t, pc);
}

/* The bytes a freed block was allocated with, where this schedule allocated
 * it (its guard bytes are not the code's); else all the allocator gave. */
static long asked_size(const struct freed_block *b)
{
    for (unsigned i = 0; i < GUARDED_KEPT && i < nguarded; i++) {
        const struct guarded_block *g = &guarded_blocks[(nguarded - 1 - i) % GUARDED_KEPT];
        if (g->generation == detector.generation && g->start == b->start)
            return (long)(g->end - g->start);
    }
    return (long)(b->end - b->start);
}

static void use_after_free(const struct sched_thread *me, uintptr_t addr, bool write, void *pc)
{
    static char text[2048];
    kit_text_t t = { text, sizeof text, 0 };
    const struct freed_block *b = freed_block_at(addr);
    access_words(&t, "USE AFTER FREE", me, write, pc);
    if (b != NULL)
        kit_text_put(&t, ", %ld bytes into a block of %ld,", (long)(addr - b->start), asked_size(b));
    kit_text_put(&t, " that was freed before it, on this schedule, by ");
    describe_free(&t, b);
    kit_text_put(&t, ". An object may be freed only once no thread can reach it any more: destroy must not free "
                     "what a thread still uses (wait until every caller has left, or join the threads first), and "
                     "of several owners only the last may free, decided under the lock (read the count you changed "
                     "before you unlock, never after).");
    sched_misuse_at(pc, text);
}

/* Whether a described place is on @p line's line ("results.c:81" of "results.c:81 in ..."). */
static bool on_line(const char *place, const char *line, size_t length)
{
    return strncmp(place, line, length) == 0 && place[length] == ' ';
}

/* " Before it, main ran results.c:77, results.c:78 in results_append: ...":
 * the lines of the access's own function its thread ran since it last ran
 * another line's access before this one's (on a run whose paths are
 * followed, the run made for the report): this call's way to it, where the
 * test that let the access through is. Nothing if none is known. */
static void name_lines_before(kit_text_t *t, const struct sched_thread *me, void *pc)
{
    void *places[SCHED_RECENT_PLACES + 1];
    static char described[SCHED_RECENT_PLACES + 1][160];
    char lines[600];
    kit_text_t ran = { lines, sizeof lines, 0 };
    int n = sched_changes_recent(me->id, places), said = 0, from = n;
    places[n] = pc;
    kit_describe_places(places, n + 1, described);
    const char *function = strstr(described[n], " in ");
    size_t line = strcspn(described[n], " ");
    if (function == NULL || strchr(described[n], ':') == NULL)
        return; /* no line of the access known */
    while (from > 0 && on_line(described[from - 1], described[n], line))
        from--; /* the access's own line, just before it */
    while (from > 0 && !on_line(described[from - 1], described[n], line))
        from--; /* this call's way there: back to that line's last run before */
    for (int i = from; i < n; i++) {
        bool again = on_line(described[i], described[n], line);
        for (int j = from; j < i && !again; j++)
            again = strcmp(described[j], described[i]) == 0;
        const char *in = strstr(described[i], " in ");
        if (again || in == NULL || strcmp(in, function) != 0)
            continue; /* the access's own line, one said, or another function's */
        kit_text_put(&ran, "%s%.*s", said++ ? ", " : "", (int)(in - described[i]), described[i]);
    }
    if (said > 0)
        kit_text_put(t, " Before it, %s ran %s%s: the test that let this access through (a count against a "
                        "capacity, an index) is on those lines.", me->name, lines, function);
}

static void overrun(const struct sched_thread *me, uintptr_t addr, bool write, void *pc)
{
    static char text[2048];
    kit_text_t t = { text, sizeof text, 0 };
    const struct guarded_block *b = guarded_block_at(addr);
    access_words(&t, "HEAP OVERRUN", me, write, pc);
    if (b != NULL) {
        char place[1][160];
        kit_describe_places(&b->pc, 1, place);
        kit_text_put(&t, ", %ld bytes past the end of a block of %ld allocated at %s", (long)(addr - b->end),
                     (long)(b->end - b->start), place[0]);
    } else {
        kit_text_put(&t, ", past the end of a block allocated on this schedule");
    }
    kit_text_put(&t, ". A block holds the bytes it was allocated with and no more: an index or a size computed from a "
                     "capacity the block does not have yet (grown before the realloc succeeded, or after it failed) "
                     "writes over what the allocator keeps there.");
    if (sched_notes.paths)
        name_lines_before(&t, me, pc);
    sched_misuse_at(pc, text);
}

static void double_free(const struct sched_thread *me, uintptr_t addr, void *pc)
{
    static char text[2048];
    kit_text_t t = { text, sizeof text, 0 };
    kit_text_put(&t, "DOUBLE FREE: %s frees at ", me->name);
    describe_own_chain(&t, pc);
    kit_text_put(&t, " a block that was freed already, on this schedule, by ");
    describe_free(&t, freed_block_at(addr));
    kit_text_put(&t, ". Each block is freed exactly once: when several threads share an object, the one that drops "
                     "the last reference frees it, and which one that is must be decided under the lock (read the "
                     "count you changed before you unlock, never after).");
    sched_misuse_at(pc, text);
}
