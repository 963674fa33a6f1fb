/**
 * @file kit_sched_internal.h
 * @brief What the scheduler's files share: the model of the threads and the
 *        synchronisation objects of one schedule, the record of its steps and
 *        choices, and the strategy that makes the choices.
 *
 * One schedule runs at a time, and of its threads exactly one runs at a time:
 * the one holding the run token. Everything here is touched only by that
 * thread, or by the controller (cmocka's thread) while no managed thread
 * runs; the semaphores that pass the token order every access.
 */
#ifndef KIT_SCHED_INTERNAL_H
#define KIT_SCHED_INTERNAL_H

#include <semaphore.h>
#include <stdint.h>

#include "kit_rand.h"
#include "kit_sched.h"
#include "kit_thread.h"

#define SCHED_MAX_THREADS 32
#define SCHED_MAX_OBJECTS 512
#define SCHED_MAX_ALTS (SCHED_MAX_THREADS * 2)

/** What a thread does at a switch point, as the steps list names it. */
enum sched_op {
    OP_START, OP_LOCK, OP_TRYLOCK, OP_UNLOCK, OP_WAIT, OP_WAKE, OP_SIGNAL, OP_BROADCAST,
    OP_CREATE, OP_JOIN, OP_YIELD, OP_SLEEP, OP_AWAIT, OP_EXIT
};

/** Where a thread stands in the model. */
enum sched_state {
    RUNNABLE, /* at a switch point, can go on */
    LOCKING,  /* wants mutex `obj` */
    WAITING,  /* in condition `obj`'s wait set, will want mutex `obj2` back */
    JOINING,  /* waits for thread `target` to end */
    SLEEPING, /* until `deadline` */
    AWAITING, /* until `target` threads are WAITING (kit_explore_await_sleepers) */
    DONE
};

/** How a chosen thread goes on: normally, at its deadline, or woken for nothing. */
enum sched_how { GO, TIMEOUT, SPURIOUS };

struct sched_thread {
    int id;                           /* creation order in the schedule, 0 = the body */
    char name[KIT_THREAD_NAME_MAX];   /* copied from kit_thread_name() at each step */
    sem_t go;                         /* posted to hand this thread the run token */
    pthread_t real;
    bool real_joined;
    bool detached;
    void *(*fn)(void *);
    void *arg;
    void *ret;
    /* The model, changed only by the token holder: */
    enum sched_state state;
    enum sched_op op;                 /* the operation it is at */
    int obj, obj2, target;            /* the objects (or thread) of that operation */
    void *where;                      /* the call's return address */
    int64_t deadline;                 /* virtual ns, or -1 */
    bool woken;                       /* WAITING: a signal chose it */
    unsigned long wait_seq;           /* WAITING: arrival order, for FIFO listing */
    enum sched_how how;               /* how it was last let go */
    int result;                       /* the blocked call's return value */
    uint64_t priority;                /* PCT */
    struct sched_thread *buried_next; /* kept after a failed schedule */
};

struct sched_object {
    const void *addr;
    char kind;                        /* 'M' mutex, 'C' condition variable */
    int serial;                       /* M1, M2, C1 ... in order of first use */
    int owner;                        /* mutex: owning thread id, or -1 */
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

enum sched_strategy { STRAT_RANDOM, STRAT_PCT, STRAT_DFS, STRAT_REPLAY };

/** One schedule's world, and the exploration around it. */
struct sched_world {
    kit_explore_t options;
    /* The schedule: */
    struct sched_thread *threads[SCHED_MAX_THREADS];
    int nthreads;
    int current;                      /* the token holder */
    struct sched_object objects[SCHED_MAX_OBJECTS];
    int nobjects;
    int serials[2];                   /* last serial given to a mutex, a condition */
    int64_t now;                      /* virtual ns since the schedule began */
    unsigned long wait_seq;
    int spurious_left;
    long points;                      /* switch points passed */
    struct sched_step *steps;         /* options.max_steps */
    long nsteps;
    struct sched_decision *decisions; /* 2 * options.max_steps */
    long ndecisions;
    bool failed;
    bool deadlocked;
    int failer;                       /* the thread that failed a check, or -1 */
    char message[2048];
    sem_t done;                       /* posted when the schedule ends, well or not */
    /* The strategy: */
    enum sched_strategy strategy;
    kit_rng_t rng;
    unsigned short *prefix;           /* choices to make first (replay, DFS) */
    long prefix_len;
    long pct_change[8];               /* PCT: points where the running thread drops */
    int pct_depth;
    long pct_length;                  /* PCT: longest schedule seen, in points */
};

extern struct sched_world sched;

/* kit_sched.c: steps name @p where (non-NULL) instead of the pthread call's caller. */
void sched_set_outer_where(void *where);

/* kit_sched_explore.c: the choices. */
int sched_decide(int n, bool preemptive, const struct sched_thread *const *alt_threads,
                 const enum sched_how *alt_how);
void sched_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* kit_sched_report.c: telling what happened. */
void sched_report(const char *test, const char *strategy, long schedule);
const char *sched_op_name(enum sched_op op);

#endif
