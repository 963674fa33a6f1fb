/**
 * @file kit_sched_internal.h
 * @brief What the scheduler's files share: the model of the threads and the
 *        synchronisation objects of one schedule, the record of its steps and
 *        choices, and the strategy that makes the choices.
 *
 * One schedule runs at a time, on one OS thread (the runner), and of its
 * threads - user-level contexts (kit_sched_context.c) - exactly one runs at a
 * time. Everything here is touched only by the runner, or by the controller
 * (cmocka's thread) while no job runs: the semaphore that ends a job orders
 * every access.
 */
#ifndef KIT_SCHED_INTERNAL_H
#define KIT_SCHED_INTERNAL_H

#include <semaphore.h>
#include <stddef.h>
#include <time.h>
#include <stdatomic.h>
#include <stdint.h>

#include "kit_rand.h"
#include "kit_sched.h"
#include "kit_thread.h"

/* Threads that have not ended, at once; threads in one schedule, in all. */
#define SCHED_MAX_THREADS 64
#define SCHED_MAX_RECORDS 4096
/* Mutexes and condition variables in one schedule (a destroyed one's memory
 * may hold the next: each gets a slot of its own); the index that finds
 * them by address has twice as many slots, so probes stay short. */
#define SCHED_MAX_OBJECTS 131072
#define SCHED_INDEX_SIZE (2 * SCHED_MAX_OBJECTS)
/* The scenario harness's history, as an object a step may touch (no real object has this number). */
#define SCHED_HISTORY_OBJECT SCHED_MAX_OBJECTS
/* A waiter can go on in two ways at most (signalled; or timed out, or spuriously). */
#define SCHED_MAX_ALTS (SCHED_MAX_THREADS * 2)
/* Frames kept of the stack a thread had when it last blocked. */
#define SCHED_STACK_DEPTH 16

/** What a thread does at a switch point, as the steps list names it. */
enum sched_op {
    OP_START, OP_LOCK, OP_TRYLOCK, OP_UNLOCK, OP_WAIT, OP_WAKE, OP_SIGNAL, OP_BROADCAST,
    OP_CREATE, OP_JOIN, OP_YIELD, OP_SLEEP, OP_AWAIT, OP_EXIT,
    OP_READ, OP_WRITE, OP_ATOMIC, /* a racing access, an atomic: kit_sched_memory.c */
    OP_SEM_WAIT, OP_SEM_POST, OP_SEM_TRY, OP_CLOCK
};

/** Where a thread stands in the model. */
enum sched_state {
    RUNNABLE, /* at a switch point, can go on */
    LOCKING,  /* wants mutex `obj` */
    WAITING,  /* in condition `obj`'s wait set, will want mutex `obj2` back */
    JOINING,  /* waits for thread `target` to end */
    SLEEPING, /* until `deadline` */
    AWAITING, /* until `target` threads are WAITING (kit_explore_await_sleepers) */
    SEMAPHORE, /* until semaphore `obj` is above 0 */
    QUIETING, /* until no other thread can go on, now or at a deadline (kit_explore_await_quiet) */
    DONE
};

/** How a chosen thread goes on: normally, at its deadline, or woken for nothing. */
enum sched_how { GO, TIMEOUT, SPURIOUS };

/* ---- Contexts (kit_sched_context.c) ------------------------------------------------
 * A thread of a schedule is a user-level context on the runner thread: its
 * stack (SCHED_STACK_SIZE above a guard page, unless its attributes ask for
 * more), and while it does not run its registers, errno and copy of the
 * program's thread-local storage. */
#define SCHED_STACK_SIZE (256 * 1024)
struct sched_stack;
struct sched_context {
    void *sp;                  /* its stack pointer while it does not run: its registers are saved there */
    struct sched_stack *stack; /* its stack, its thread-local storage, what the sanitizers keep for it */
    int saved_errno;
};
/* On the runner thread, before its first switch; false, with why, if it cannot run contexts. */
bool sched_contexts_begin(char *why, size_t size);
/* The runner's own context: where a schedule starts, and where it comes back when it is over. */
struct sched_context *sched_runner_context(void);
/* A context that will run main(arg), on a stack of at least `size` bytes (0: the default); false if out of memory. */
bool sched_context_make(struct sched_context *c, size_t size, void (*main)(void *), void *arg);
/* The first call of a new context's main: finishes the switch into it. */
void sched_context_started(void);
/* Save the running context `from` and run `to`; returns when `from` runs again. Ending:
 * `from` never runs again, and its stack goes back to the pool. */
void sched_context_switch(struct sched_context *from, struct sched_context *to, bool ending);
/* A failed schedule's context, never to run again: its stack is kept as it is (it
 * may hold the only pointers to what its thread allocated), never reused. */
void sched_context_bury(struct sched_context *c);
void sched_context_range(const struct sched_context *c, uintptr_t *low, uintptr_t *high);
/* The context's buffer for its last failed check's words. */
char *sched_context_text(struct sched_context *c, size_t *size);
/* The program's thread-local storage on the runner: each context's own (a
 * copy swapped in at each switch), never shared - no access there races. */
extern uintptr_t sched_tls_block;
extern size_t sched_tls_size;
static inline bool sched_context_own(uintptr_t addr)
{
    return addr - sched_tls_block < sched_tls_size;
}
/* Whether a fault at addr is the context running out of stack (in or past its guard page). */
bool sched_context_overflowed(const struct sched_context *c, const void *addr);

/* A thread-specific value (pthread_setspecific) of a context. */
struct sched_specific {
    pthread_key_t key;
    void *value;
};

/* The calls a sleeper's story names beyond the wait's own function and
 * those inlined into it: one, the call that decided to wait, most often. */
#define WAIT_CALLERS 1

struct sched_thread {
    int id;                           /* creation order in the schedule, 0 = the body */
    /* The model, changed only by the running thread (first: read at every switch point): */
    enum sched_state state;
    enum sched_op op;                 /* the operation it is at */
    int obj, obj2, target;            /* the objects (or thread) of that operation */
    bool woken;                       /* WAITING: a signal chose it */
    long woken_at;                    /* WAITING and woken: the steps recorded before that signal (-1: a broadcast) */
    bool harness;                     /* WAITING in a gate or latch of the tests, not in the code under test */
    int64_t deadline;                 /* virtual ns, or -1 */
    void *where;                      /* the call's return address */
    unsigned long wait_seq;           /* WAITING: arrival order, for FIFO listing */
    enum sched_how how;               /* how it was last let go */
    enum sched_how left_wait;         /* how its last wait on a condition variable ended */
    int result;                       /* the blocked call's return value */
    int holding;                      /* mutexes it owns */
    int woke_from;                    /* the condition it last woke from, until its next step; else -1 */
    uint64_t priority;                /* PCT */
    long accesses;                    /* loads and stores since its last switch point: a spin shows here */
    void *woken_by;                   /* WAITING and woken: where that signal or broadcast was made */
    void *wait_callers[WAIT_CALLERS]; /* WAITING: where its innermost open calls were made from */
    void *returned_from;              /* the function of its last outermost call of the code that returned */
    long call_began;                  /* the steps recorded when that call (or the open one) began */
    void *calling;                    /* the function of its open outermost call of the code, or NULL */
    int nwait_callers;                /* ... how many are known */
    /* The thread: */
    char name[KIT_THREAD_NAME_MAX];   /* kit_thread_name() as of its last step */
    bool renamed;                     /* its name changed since it was copied (pthread_setname_np, kit_thread.c) */
    pthread_t self;                   /* what pthread_self() says on it: odd, so no real thread's, and unique */
    struct sched_context context;
    bool started;                     /* its context has run */
    bool joined;
    bool detached;
    void *joined_at, *detached_at;    /* where it was joined (or the join began), detached (NULL: at its creation) */
    void *join_decided;               /* the joiner's last write of the code under test before it joined, or NULL */
    long join_decided_seq;            /* that write's number (kit_sched_changes.c) */
    int joined_by;                    /* the thread that joined it, or began to */
    bool returned;                    /* its function returned (not pthread_exit) */
    void *(*fn)(void *);
    void *arg;
    void *ret;
    size_t stack_size;                /* asked for by its attributes; 0: the default */
    uintptr_t stack_low, stack_high;  /* its stack: another thread's later, once it has ended */
    /* What the C library keeps per thread, kept per context (kit_sched_thread.c): */
    void *cleanup;                    /* its newest pthread_cleanup_push buffer */
    struct sched_specific *specific;  /* its pthread_setspecific values */
    int nspecific, specific_capacity;
    char kernel_name[16];             /* pthread_setname_np's */
    void *stack[SCHED_STACK_DEPTH];   /* where it stands, taken for a report: its return addresses, innermost first */
    int depth;
    struct sched_thread *next;        /* on the list of spare records, or of a failed schedule's */
};

struct sched_object {
    const void *addr;
    char kind;                        /* 'M' mutex, 'C' condition variable, 'S' semaphore */
    int serial;                       /* M1, M2, C1 ... in order of first use */
    int owner;                        /* mutex: owning thread id, or -1 */
    int slot;                         /* its entry in sched.index */
    int times_held;                   /* mutex: its owner's locks not yet unlocked (a recursive mutex: 1 or more) */
    int count;                        /* semaphore: its value */
    void *locked_at;                  /* mutex: where its owner locked it */
};

struct sched_step {
    int thread;
    enum sched_op op;
    enum sched_how how;
    int obj, other;                   /* object, and a second object or thread (-1: none) */
    void *where;
    int64_t time;
};

struct sched_decision {
    unsigned short n;                 /* alternatives */
    unsigned short chosen;
    bool preemptive;                  /* any choice but 0 preempts a thread that could go on */
};

enum sched_strategy { STRAT_RANDOM, STRAT_PCT, STRAT_DFS, STRAT_DPOR, STRAT_REPLAY };

/** One schedule's world, and the exploration around it. */
struct sched_world {
    kit_explore_t options;
    /* The schedule: */
    struct sched_thread *threads[SCHED_MAX_RECORDS]; /* by id: every thread of the schedule */
    int nthreads;
    int live[SCHED_MAX_THREADS];      /* ids of the threads not ended, in creation order */
    int nlive;
    int current;                      /* the token holder */
    struct sched_object objects[SCHED_MAX_OBJECTS];
    int nobjects;
    int index[SCHED_INDEX_SIZE];      /* open addressing by address: object + 1, 0 empty, -1 removed */
    int serials[3];                   /* last serial given to a mutex, a condition, a semaphore */
    int64_t now;                      /* virtual ns since the schedule began */
    int64_t wall_offset;              /* how far the wall clock was stepped (NTP), in ns */
    unsigned long wait_seq;
    int spurious_left;
    long points;                      /* switch points passed */
    long wakeups, futile_wakeups;     /* wake-ups in the code under test; those that slept again at once */
    struct sched_step *steps;         /* options.max_steps */
    long nsteps;
    struct sched_decision *decisions; /* 2 * options.max_steps */
    long ndecisions;
    bool failed;
    bool deadlocked;
    bool deadlock_explained;          /* its message says who waits on what (kit_sched_report.c) */
    int relocked;                     /* the mutex a thread locked again while holding it, or -1 */
    bool scheduled_test;              /* an ordinary test on one schedule (kit_sched_run_test), not an exploration */
    char test[128];                   /* ... its name, */
    char strategy_word[64];           /* ... and its strategy, "random:SEED" */
    bool gave_up;                     /* ... which met a limit of the model, not a bug of the code */
    int failer;                       /* the thread that failed a check, or -1 */
    char message[4096];
    sem_t done;                       /* posted when the schedule ends, well or not */
    /* The strategy: */
    enum sched_strategy strategy;
    kit_rng_t rng;
    unsigned short *prefix;           /* choices to make first (replay, DFS) */
    long prefix_len;
    long pct_change[8];               /* PCT: points where the running thread drops */
    int pct_depth;
    long pct_length;                  /* PCT: longest schedule seen, in points */
    struct {                          /* the schedule's last futile wake-up (thread -1: none) */
        int thread, cond;             /* who woke for nothing, from which condition variable */
        void *by;                     /* the signal or broadcast that woke it */
        bool broadcast;
        void *slept;                  /* where it slept again */
    } futile;
};

extern struct sched_world sched;
/* Switch points passed, read by the controller's watchdog while a thread runs. */
extern atomic_long sched_progress;
/* Set while a thread of the schedule blocks the runner on purpose, outside
 * the model (kit_sched_outside): the watchdog does not count that time. */
extern atomic_bool sched_outside;
/* Set by the controller when it gives up on a schedule that has not ended
 * (it stalled, or a thread outside it came): the schedule's threads park at
 * their next switch point, and its memory is never freed. */
extern atomic_bool sched_abandoned;


/* The semaphores the controller and the runner hand a job over with: never
 * the model's (the wrappers in kit_sched.c model the code under test's). */
int __real_sem_wait(sem_t *sem);
int __real_sem_timedwait(sem_t *sem, const struct timespec *deadline);
int __real_sem_post(sem_t *sem);
int __real_sem_destroy(sem_t *sem);

/* kit_sched_memory.c: happens-before, the race detector, the racing places. */
struct sched_race {
    uintptr_t addr;
    void *pc[2];          /* the access that found the race, and the earlier one */
    bool write[2];
    char thread[2][KIT_THREAD_NAME_MAX];
    long step;            /* the steps taken when it was found */
    char test[128];
    void *callers[4];     /* where the calls that led to pc[0] were made, innermost first */
    int ncallers;
    int holding;          /* the mutexes the thread of pc[0] held at it */
    bool freeing;         /* pc[0] is a free (or a destroy's) of the block: pc[1], a use nothing ordered before it */
};
#define RACE_CALLERS 4
/* A lock-order inversion (kit_sched_lockorder.c): thread[i] held M serial[i][0]
 * (locked at first_at[i]) when it locked M serial[i][1] at then_at[i]; the
 * two orders are opposite. */
struct sched_lock_inversion {
    int serial[2][2];
    void *first_at[2], *then_at[2];
    char thread[2][KIT_THREAD_NAME_MAX];
    char test[128];
};
void sched_lock_order_begin(void);
/* Thread `thread` has locked mutex obj at where, blocking: its order against those it holds. */
void sched_lock_order(int thread, int obj, void *where);
bool sched_lock_inverted(struct sched_lock_inversion *out);
void sched_memory_begin(void);
void sched_memory_forget_object(int obj);
void sched_memory_thread_created(int parent, int child);
void sched_memory_thread_joined(int joiner, int ended);
void sched_memory_acquire(int thread, int obj);
void sched_memory_release(int thread, int obj);
bool kit_sched_raced(struct sched_race *race);
/* An access of the code under test (kit_sched_tsan.c): checked, and a switch point if its place raced. */
void sched_memory_access(const void *addr, unsigned size, bool write, void *pc);
/* A block of @p size bytes read or written at once (a struct copy, a memcpy
 * of the code under test): one access, its long middle left unchecked. */
void sched_memory_range(const void *addr, size_t size, bool write, void *pc);
/* The instrumentation's function entry (the caller's return address and a
 * place in the function) and exit, for kit_last_call(). */
void sched_call_entered(void *site, void *function);
void sched_call_left(void);
/* A thread that has made SCHED_SPIN_ACCESSES loads and stores at pc since
 * its last switch point: it loops without a call the scheduler sees, and
 * would loop for ever (only it runs) - the schedule fails here. */
#define SCHED_SPIN_ACCESSES 20000000L
void sched_endless_loop(void *pc) __attribute__((noreturn));
/* An atomic of the code under test: a switch point, and a release and an acquire of the location. */
void sched_memory_atomic(const volatile void *addr, unsigned size, bool write, void *pc);
/* The racing places as distances from kit_code_anchor() (kit_anchor.c), or
 * from the program's start where it has none (sched_memory_anchored), for a
 * replay token; and one learned back from a token, @p anchored or (a token
 * of an earlier kit: "~") from the program's start. */
int sched_memory_racy_offsets(intptr_t *out, int most);
bool sched_memory_anchored(void);
/* Where the program itself is loaded: its code's addresses less this are
 * what addr2line reads. */
uintptr_t sched_load_bias(void);
/* kit_sched_call_site()'s place, taken (it holds for one call), or @p where if none. */
void *sched_site_or(void *where);
void sched_memory_learn_offset(intptr_t offset, bool anchored);
/* The racing places known so far; and all but the first @p keep of them
 * forgotten - a schedule run again for its report learns them again, at the
 * steps where it first did. */
int sched_memory_racy_count(void);
void sched_memory_forget_racy(int keep);
/* How many of the racing places from @p from (counted as
 * sched_memory_racy_count does) to @p to an access of this process was made
 * at since they were learned (all of them where places are no switch
 * points: KIT_NO_RACE_POINTS). */
int sched_memory_racy_reached(int from, int to);
/* The number kit_sched_schedule() gives the last schedule's threads. */
unsigned long sched_memory_generation(void);
/* Whether a race was seen in this process: then a wait gets a switch point
 * of its own before it sleeps, where lock-free code may slip in. */
bool sched_memory_races_seen(void);

/* kit_sched.c: a switch point at an access or an atomic of the token holder. */
void sched_memory_point(void *pc, enum sched_op op);
/* kit_sched.c: the schedule fails on the running thread, at @p where, for a
 * misuse said in @p text (a use after free, a double free). */
void sched_misuse_at(void *where, const char *text) __attribute__((noreturn));

/* kit_sched_explore.c: what each transition touches, for the partial-order
 * reduction (dpor:BOUND): a modelled object's number, or everything (thread
 * creation and ends, time, a memory access - anything another thread's next
 * step may depend on in ways the objects do not show). */
void sched_touch(int obj);
void sched_touch_everything(void);

/* kit_sched_dpor.c: the sleep sets of dpor:BOUND. */
bool sched_dpor_start(void);
void sched_dpor_begin_schedule(void);
int sched_dpor_choose(long index, int n, const struct sched_thread *const *alt, const enum sched_how *how);
bool sched_dpor_next(int bound);
void sched_dpor_figures(long *redundant_schedules, bool *reached_bound);

/* kit_sched_explore.c: the choices. */
int sched_decide(int n, bool preemptive, const struct sched_thread *const *alt_threads,
                 const enum sched_how *alt_how);
void sched_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* kit_sched.c: the running thread of the schedule on this OS thread, or NULL. */
extern _Thread_local struct sched_thread *sched_running;
static inline struct sched_thread *sched_me(void)
{
    return sched_running;
}

/* kit_sched.c: on a scheduled thread, give up the schedule (a scheduled
 * test then runs again on real threads); register the fork handler once. */
void sched_give_up(const char *why) __attribute__((noreturn));
void sched_handle_forks(void);
/* The live thread of the schedule whose pthread_t this is, or NULL. */
struct sched_thread *sched_managed(pthread_t thread);
/* The running thread ends here (its function returned, or it called
 * pthread_exit and its cleanup handlers ran): never returns. */
void sched_thread_ends(void) __attribute__((noreturn));
/* Every live thread's stack as it stands, for a report (on the runner thread). */
void sched_collect_stacks(void);
/* A new thread of the schedule, not yet run; NULL if over the limits or out of memory. */
struct sched_thread *sched_new_thread(void *(*fn)(void *), void *arg, const pthread_attr_t *attr);
/* A schedule's threads once it ended well (back to the pool), or failed (kept as they are). */
void sched_release_threads(void);
void sched_bury_threads(void);

/* kit_sched_thread.c: what the C library keeps per thread, per context. */
/* The running thread's thread-specific values are destroyed, as at a thread's end. */
void sched_destroy_specific(struct sched_thread *t);

/* kit_sched_report.c: telling what happened. A schedule < 0 is a scheduled
 * test's one schedule. */
void sched_report(const char *test, const char *strategy, long schedule);
void sched_print_stacks(const char *why);
void sched_end_failed_test(void) __attribute__((noreturn));
/* A deadlock's message, rewritten from the final state: who waits on what, who could have woken them. */
void sched_explain_deadlock(void);
void sched_forget_objects(void);
const char *sched_op_name(enum sched_op op);

/* What a sleeper's wait read and who wrote it last (kit_sched_changes.c). */
struct sched_change {
    void *where; /* the write's place */
    int thread;  /* who wrote */
    long step;   /* steps recorded before it */
    long seq;    /* the write's number in the schedule (sched_changes_callers) */
};
void sched_changes_begin(void);
/* A new thread of the schedule: its notes start empty. */
void sched_changes_thread_begins(int thread);

/* The notes each load and store of the code under test leaves (inline
 * below: every access makes one; what they mean, kit_sched_changes.c). */
enum { SCHED_NOTE_READS = 16, SCHED_NOTE_PENDING = 128, SCHED_NOTE_WRITES = 4096 };
struct sched_span {
    uintptr_t addr;
    unsigned size;
    unsigned after; /* a section's read: the thread's writes in the section before it */
};
struct sched_write_note {
    struct sched_span span;
    void *where;
    int thread;
    long step; /* steps recorded before it */
};
/* A thread's current critical section: its last reads, reads[n % SCHED_NOTE_READS]
 * the n-th, and its writes not yet applied to them (sched_changes_apply). */
struct sched_section {
    struct sched_span reads[SCHED_NOTE_READS];
    int nreads;
    int npending;
    unsigned nwritten; /* the section's writes */
    struct sched_span pending[SCHED_NOTE_PENDING];
};
extern struct sched_notes {
    struct sched_section section[SCHED_MAX_THREADS];
    struct sched_write_note writes[SCHED_NOTE_WRITES]; /* the schedule's last writes, writes[n % SCHED_NOTE_WRITES] the n-th */
    long nwrites;
    long last_write[SCHED_MAX_THREADS]; /* each thread's last write's n (-1: none yet) */
    int open;                           /* timed waits whose path is followed and hold their mutex still */
    bool paths; /* the lines each thread runs are followed (kit_sched_changes.c): a failing schedule's report */
} sched_notes;
/* Thread's pending writes empty the reads made before them that they overlap:
 * what a thread wrote itself is no condition it waits on. */
void sched_changes_apply(int thread);
/* Thread ran at where (a load, or a store if write): a place on the path
 * its timed wait's time-out took, if one is followed, and (sched_notes.paths)
 * on the path after its latest write. */
void sched_changes_on_path(int thread, void *where, bool write);

/* A critical section split in two within one call (kit_sched_split.c),
 * followed while the paths are: a thread's read under a mutex, the mutex let
 * go and taken again in the same call, another thread's change of that
 * memory in between, and the thread's use of it after. */
struct sched_at {
    void *where;
    void *sites[2]; /* where the innermost calls of the code under test open then were made from */
};
struct sched_split {
    int thread, mutex;             /* who split its section, and the mutex it let go */
    struct sched_at lock, look, let_go; /* the first section: where it took the mutex, read, let go */
    struct sched_at retake, use;   /* the second: where it took a mutex again, and used that memory */
    struct sched_change change;    /* the other thread's write in between */
    bool looked_only;              /* the first section read it without writing it: a check */
    bool use_writes;               /* the use is a write: the act */
    bool half_made;                /* look is the first section's write, change another thread's read of it */
    bool went_on;                  /* use is the second section's first access, not of the look's memory */
    int between;                   /* the thread's accesses of the code under test between the sections */
};
void sched_split_begin(void);
void sched_split_thread_begins(int thread);
/* The running @p thread asks for a mutex at @p where: its calls now are
 * the ones it takes the mutex in (sched_split_taken may run on another's stack). */
void sched_split_locking(int thread, void *where);
/* @p thread took @p mutex at @p where, its @p first held (it may not be the running thread). */
void sched_split_taken(int thread, int mutex, void *where, bool first);
/* @p thread let @p mutex go at @p where: in a wait, or its @p last mutex. */
void sched_split_let_go(int thread, int mutex, void *where, bool last, bool wait);
/* The running @p thread's load or store of the code under test. */
void sched_split_access(int thread, const void *addr, unsigned size, bool write, void *where);
/* What this schedule found, the first @p most; their number. */
int sched_split_found(struct sched_split *out, int most);
/* The running thread's outermost call of the code under test, numbered
 * (-1: none open) - two sections in the same call have the same number. */
long sched_memory_call_serial(void);

/* A wait that returned spuriously, after which its thread let the mutex go
 * without reading again what the wait's section read (kit_sched_recheck.c,
 * followed while the paths are): a wait in an `if`. */
struct sched_unlooked {
    int thread, cond;
    void *wait;   /* the wait's place */
    void *let_go; /* where its thread then let the mutex go */
    long step;    /* steps recorded before it woke */
};
void sched_recheck_begin(void);
void sched_recheck_thread_begins(int thread);
/* @p thread's wait on @p cond at @p where returned spuriously. */
void sched_recheck_woke(int thread, int cond, void *where);
/* The running @p thread's load (paths followed). */
void sched_recheck_read(int thread, const void *addr, unsigned size);
/* @p thread let its mutex go at @p where (unlocked, or in a wait). */
void sched_recheck_let_go(int thread, void *where);
/* The schedule's first such wait; false if none. */
bool sched_recheck_found(struct sched_unlooked *out);
/* What @p thread's last wait's section read, at most @p most; their number. */
int sched_changes_wait_reads(int thread, struct sched_span *out, int most);

/* A load or store while a time-out's path or a report's paths are followed
 * (out of line: a passing schedule's notes stay one test and two stores):
 * sched_changes_on_path, and the report's split sections and waits not
 * looked at again. */
void sched_changes_followed(int thread, const void *addr, unsigned size, bool write, void *where);

/* Whether thread's note of a load (or a store) is plain: a thread with
 * notes, no path to follow, room for one more pending write. */
static inline bool sched_changes_plain(int thread, bool write)
{
    return thread >= 0 && thread < SCHED_MAX_THREADS && sched_notes.open == 0 && !sched_notes.paths &&
           (!write || sched_notes.section[thread].npending < SCHED_NOTE_PENDING);
}

/* The note of a load or store of size bytes at addr by thread at where, plain. */
static inline void sched_changes_note(int thread, const void *addr, unsigned size, bool write, void *where)
{
    struct sched_section *section = &sched_notes.section[thread];
    struct sched_span span = { (uintptr_t)addr, size, 0 };
    if (!write) {
        span.after = section->nwritten;
        unsigned n = (unsigned)section->nreads++; /* (never below 0: unsigned, the remainder needs no sign) */
        section->reads[n % SCHED_NOTE_READS] = span;
        return;
    }
    unsigned long n = (unsigned long)sched_notes.nwrites++; /* (as above) */
    sched_notes.last_write[thread] = (long)n;
    sched_notes.writes[n % SCHED_NOTE_WRITES] = (struct sched_write_note){ span, where, thread, sched.nsteps };
    section->pending[section->npending++] = span;
    section->nwritten++;
}

/* A load of the code under test by thread at where, as sched_memory_access sees it (kept also when
 * it holds no mutex: a failed check asks who wrote what its thread last read). */
static inline void sched_changes_read(int thread, const void *addr, unsigned size, void *where)
{
    if (thread < 0 || thread >= SCHED_MAX_THREADS || size == 0)
        return;
    if (sched_notes.open > 0 || sched_notes.paths)
        sched_changes_followed(thread, addr, size, false, where);
    sched_changes_note(thread, addr, size, false, where);
}

/* A store at where: it may empty a read of the thread's section. */
static inline void sched_changes_write(int thread, const void *addr, unsigned size, void *where)
{
    if (thread < 0 || thread >= SCHED_MAX_THREADS || size == 0)
        return;
    if (sched_notes.open > 0 || sched_notes.paths)
        sched_changes_followed(thread, addr, size, true, where);
    if (sched_notes.section[thread].npending == SCHED_NOTE_PENDING)
        sched_changes_apply(thread);
    sched_changes_note(thread, addr, size, true, where);
}

/* The thread took a mutex holding none: a new critical section begins. */
void sched_changes_section(int thread);
/* The thread waits on a condition variable: what its section read is what it waits for. */
void sched_changes_wait(int thread);
/* Where the calls that led to @p change were made, innermost first (at
 * most SCHED_CHANGE_CALLERS), if its write was made while the paths were
 * followed; their number (0: not known). */
enum { SCHED_CHANGE_CALLERS = 3 };
int sched_changes_callers(const struct sched_change *change, void **out);
/* The places the open calls of the running thread were made from,
 * innermost first (kit_sched_memory.c); their number. */
int sched_memory_call_sites(void **out, int most);
/* The latest writes (each place once, newest first, at most @p most) to memory
 * that @p thread's last wait read in its critical section; their number. */
int sched_changes_of(int thread, struct sched_change *out, int most);
/* The last write @p thread made after step @p from and up to step @p to
 * (steps recorded before it), or false. */
bool sched_changes_last_in(int thread, long from, long to, struct sched_change *out);
/* No thread could go on, and time jumps a long way to a deadline while
 * @p thread, a sleeper of the code under test, waits: a lost wake-up that
 * a time-out may hide, kept to be told if the test fails (the last 8). */
void sched_changes_stalled(int thread);
/* The sleeper of the @p back-th latest such jump (0: the latest; -1: no
 * such jump this schedule), and the steps recorded before it. */
int sched_changes_stall(int back, long *step);
/* sched_changes_of answers as of the @p back-th latest jump (-1: now). */
void sched_changes_as_of_stall(int back);
/* A timed wait of @p thread on @p cond with @p mutex, at @p where, that a
 * signal chose timed out (POSIX allows both), nobody else in the mutex
 * since the signal: it took the wake-up. */
void sched_changes_took_wakeup(int thread, int cond, int mutex, void *where);
/* A timed wait of @p thread on @p cond with @p mutex, at @p where, that
 * returned ETIMEDOUT, not as one that took a wake-up (above): while the
 * paths are followed (sched_notes.paths), its path is, until it lets the
 * mutex go. */
void sched_changes_timed_out(int thread, int cond, int mutex, void *where);
/* The path of @p thread's latest timed wait that returned ETIMEDOUT after
 * step @p step (no wake-up taken) and let the mutex go: the wait, the lines
 * after it, where it let go (at most @p most); 0 if there is none. */
int sched_changes_timeout_after(int thread, long step, void **places, int most);
/* A wait of @p thread with @p mutex at @p where returned (woken, timed out
 * or spurious): while the paths are followed, the lines it runs are, until
 * it lets the mutex go. */
void sched_changes_woke(int thread, int mutex, void *where);
/* The path of @p thread's latest wait that returned after step @p step and
 * whose thread then unlocked its mutex: the wait, the lines after it, where
 * it let go (at most @p most); 0 if there is none. */
int sched_changes_wait_after(int thread, long step, void **places, int most);
/* A change of what @p sleeper's wait read that its thread never undid: that
 * thread's last write of the memory, at a place whose every other write was
 * followed by its thread's write of the same memory at one other place
 * (*undo) - a count raised and never lowered. Threads @p asleep still may. */
struct sched_undo_ask {
    bool (*asleep)(int thread);      /* a thread asleep in a wait now, its undo still to come */
    bool (*same)(void *a, void *b);  /* two places of one line (an inlined helper has a place per caller) */
};
bool sched_changes_never_undone(int sleeper, const struct sched_undo_ask *ask, struct sched_change *out, void **undo);
/* The places sched_changes_never_undone may name for @p sleeper (to be
 * resolved first): the writes of what its wait read, and their threads'
 * paths out of a wait and after a write. */
int sched_changes_undo_places(int sleeper, void **places, int most);
/* A block of the code under test begins at @p where, on the running thread,
 * while the paths are followed: a line of the paths (sched_changes_on_path). */
void sched_changes_block(void *where);
/* The lines @p change's thread ran after its last write of the stretch of
 * writes that holds that change, until it let a mutex go, that place last
 * (at most @p most places); 0 if that stretch is not its latest finished. */
int sched_changes_after(const struct sched_change *change, void **places, int most);
/* @p thread signalled or broadcast @p cond: a wake-up it took is passed on. */
void sched_changes_signalled(int thread, int cond);
/* @p thread lets @p mutex go at @p where: unlocked (@p cond -1), or in a
 * wait on condition variable @p cond. */
void sched_changes_let_go(int thread, int mutex, void *where, int cond);
/* The place of @p thread's latest write of the code under test still
 * kept, or NULL; @p *seq numbers that write in the schedule (-1: none). */
void *sched_changes_last_write(int thread, long *seq);
/* The latest writes (each place once, newest first, at most @p most) to
 * memory @p thread read since it last took a first mutex; their number. */
int sched_changes_section_writers(int thread, struct sched_change *out, int most);
/* The latest write to each memory @p thread read since it last took a
 * first mutex, of the writes kept (newest first, at most @p most): what that
 * memory holds now. Their number. */
int sched_changes_section_latest(int thread, struct sched_change *out, int most);
/* A store of 4 or 8 bytes at @p addr by @p thread, checked, about to be made
 * over what it holds: kept if that is 0, while the paths are followed (a
 * count lowered below zero, sched_changes_below_zero). */
void sched_changes_store_over(int thread, const void *addr, unsigned size);
/* The @p back-th latest such store (0: the latest), the write to the same
 * memory before it and another thread's first write of it after it (each
 * where NULL: none kept); false if none. */
bool sched_changes_below_zero(int back, struct sched_change *out, struct sched_change *before,
                              struct sched_change *after);
/* Whether the memory of that store, not freed since, holds a small value
 * below zero now (-1, -2, ...: a count an earlier chapter's code keeps,
 * whose source is not at hand, lowered below zero or wrapped). */
bool sched_changes_still_below_zero(int back);
/* The places @p thread ran last, oldest first (at most SCHED_RECENT_PLACES),
 * while the paths are followed; their number. */
enum { SCHED_RECENT_PLACES = 32 };
int sched_changes_recent(int thread, void **out);
/* The running @p thread began an outermost call of the code under test
 * (one the test made), or returned from it: while the paths are followed,
 * the lines each call runs are kept. */
void sched_changes_call_began(int thread);
void sched_changes_call_ended(int thread);
/* The places @p change's thread ran after that write, to the end of the
 * call that made it, which has returned (at most @p most); 0 if that call
 * is not among the last kept, still runs, or the lines right after the
 * write are no longer kept. */
int sched_changes_call_after(const struct sched_change *change, void **places, int most);
/* After @p change its thread waited (before it let its mutex go otherwise)
 * at *@p wait, and its first time-out since that change took the path into
 * @p places: the timed wait, the lines after it, where it let go (at most
 * @p most). 0 if it did not wait next, or no time-out of its is kept. */
int sched_changes_left_by_timeout(const struct sched_change *change, void **wait, void **places, int most);
/* The scheduled thread running now, or -1 (kit_sched.c). */
int sched_running_thread(void);

/* kit_wrap.c's: @p thread is named @p name now ("": it ended), for
 * kit_threads_named(). Called by the pthread_setname_np wrapper. */
void kit_thread_named(pthread_t thread, const char *name);

#endif
