/**
 * @file kit_sched_dpor.c
 * @brief The partial-order reduction of `dpor:BOUND`: a depth-first search of
 *        the schedules that runs one interleaving of each class of equivalent
 *        ones, and knows when it has run them all.
 *
 * Two steps of different threads that touch different objects (two mutexes,
 * a mutex and an unrelated condition variable) give the same state in
 * either order: schedules that differ only in the order of such steps are
 * equivalent - the same Mazurkiewicz trace - and one of them tells how all
 * of them end. The search keeps a sleep set (Godefroid) at each choice: the
 * threads whose step was already explored from an earlier sibling, and that
 * nothing since has touched. A sleeping thread is not chosen again there;
 * it wakes when a step touches what its step touches. Every complete
 * schedule run is then of a class no earlier schedule was of; a schedule
 * whose every runnable thread sleeps is redundant, and runs to its end
 * with no more branching (its result is still checked).
 *
 * What a step touches is recorded as it runs (kit_sched.c, touch_step): the
 * mutexes, condition variables and semaphores of its operations, or
 * everything for what the model cannot see the reach of - a thread made or
 * ended, time moving, a timeout, a spurious wake-up, a racing memory
 * access. Accesses to plain memory between switch points need no place
 * here: the race detector orders them by the locks around them, and a race
 * among them is a failure of its own.
 *
 * With a preemption bound, the search stops at schedules that would need
 * more; it says whether that ever happened. A search that ran out of
 * branches without reaching the bound has run every interleaving of the
 * scenario, up to equivalence: "complete".
 */
#define _GNU_SOURCE
#include "kit_sched_internal.h"

#include <stdlib.h>
#include <string.h>

void *__real_calloc(size_t count, size_t size);
void __real_free(void *block);

/* Choices with more alternatives than this, and choices beyond the first
 * DPOR_MAX_NODES of a schedule, are searched in full, with no sleep set. */
#define DPOR_MAX_ALTS 8
#define DPOR_MAX_NODES 8192
#define DPOR_KEYS 6

struct footprint {
    bool everything;
    unsigned char n;
    int keys[DPOR_KEYS];
};

struct sleeper {
    short thread;
    unsigned char how;
    struct footprint touched; /* what its step touched when it ran from an earlier sibling */
};

struct node {
    bool thread_choice;   /* who goes next; else which waiter a signal wakes */
    bool tracked;         /* within the limits: sleep sets apply */
    bool closed;          /* in a redundant schedule's tail: never branched */
    unsigned short n;
    short alt_thread[DPOR_MAX_ALTS];
    unsigned char alt_how[DPOR_MAX_ALTS];
    struct footprint touched[DPOR_MAX_ALTS]; /* each alternative's step, once explored */
    unsigned char nsleep;
    struct sleeper sleep[DPOR_MAX_ALTS];
};

/* The search, kept from one schedule to the next: */
static struct node *nodes;
static bool active;
static long redundant_runs;
static bool bound_reached;
/* The schedule under way: */
static long last_choice = -1;   /* the last thread choice's node */
static struct footprint touched; /* what the steps since then touched */
static bool redundant;          /* every runnable thread slept at a choice */

void sched_touch(int obj)
{
    if (!active || touched.everything || obj < 0)
        return;
    for (int i = 0; i < touched.n; i++)
        if (touched.keys[i] == obj)
            return;
    if (touched.n == DPOR_KEYS)
        touched.everything = true;
    else
        touched.keys[touched.n++] = obj;
}

void sched_touch_everything(void)
{
    touched.everything = true;
}

static bool dependent(const struct footprint *a, const struct footprint *b)
{
    if (a->everything || b->everything)
        return true;
    for (int i = 0; i < a->n; i++)
        for (int j = 0; j < b->n; j++)
            if (a->keys[i] == b->keys[j])
                return true;
    return false;
}

static bool asleep(const struct node *node, int thread, int how)
{
    for (int i = 0; i < node->nsleep; i++)
        if (node->sleep[i].thread == thread && node->sleep[i].how == how)
            return true;
    return false;
}

static void add_sleeper(struct node *node, const struct sleeper *s)
{
    if (node->nsleep < DPOR_MAX_ALTS && !asleep(node, s->thread, s->how))
        node->sleep[node->nsleep++] = *s;
}

/* The sleep set a choice inherits from the one before it: what slept there,
 * and its siblings explored before the chosen one, unless the chosen
 * thread's step (and any forced steps after it) touched what they touch. */
static void inherit_sleep(struct node *node, const struct node *before, int chosen)
{
    node->nsleep = 0;
    if (before == NULL || !before->tracked)
        return;
    int mover = before->alt_thread[chosen];
    for (int i = 0; i < before->nsleep; i++)
        if (before->sleep[i].thread != mover && !dependent(&before->sleep[i].touched, &touched))
            add_sleeper(node, &before->sleep[i]);
    for (int j = 0; j < chosen; j++) {
        if (asleep(before, before->alt_thread[j], before->alt_how[j]))
            continue; /* skipped there, not explored: it is in the sleep set above if anywhere */
        struct sleeper s = { before->alt_thread[j], before->alt_how[j], before->touched[j] };
        if (s.thread != mover && !dependent(&s.touched, &touched))
            add_sleeper(node, &s);
    }
}

void sched_dpor_begin_schedule(void)
{
    active = sched.strategy == STRAT_DPOR;
    last_choice = -1;
    redundant = false;
    memset(&touched, 0, sizeof touched);
}

/* Alternative `choice` of the decision at `index`: the replayed prefix, or
 * the first alternative not asleep; a choice where all sleep makes the
 * schedule redundant. */
int sched_dpor_choose(long index, int n, const struct sched_thread *const *alt, const enum sched_how *how)
{
    bool tracked = index < DPOR_MAX_NODES && n <= DPOR_MAX_ALTS;
    struct node scratch;
    struct node *node = index < DPOR_MAX_NODES ? &nodes[index] : &scratch;
    bool fresh = index >= sched.prefix_len;
    if (fresh)
        memset(node, 0, sizeof *node);
    node->n = (unsigned short)n;
    node->tracked = tracked && how != NULL;
    node->thread_choice = how != NULL;
    node->closed = redundant;
    if (how != NULL) {
        const struct node *before = last_choice >= 0 && last_choice < DPOR_MAX_NODES ? &nodes[last_choice] : NULL;
        int chosen_before = last_choice >= 0 ? sched.decisions[last_choice].chosen : 0;
        if (before != NULL && before->tracked && chosen_before < DPOR_MAX_ALTS)
            nodes[last_choice].touched[chosen_before] = touched;
        for (int i = 0; i < n && i < DPOR_MAX_ALTS; i++) {
            node->alt_thread[i] = (short)alt[i]->id;
            node->alt_how[i] = (unsigned char)how[i];
        }
        if (node->tracked)
            inherit_sleep(node, before, chosen_before);
        memset(&touched, 0, sizeof touched);
        last_choice = index;
    }
    if (!fresh)
        return sched.prefix[index];
    if (redundant || !node->tracked)
        return 0;
    for (int i = 0; i < n; i++)
        if (!asleep(node, node->alt_thread[i], node->alt_how[i]))
            return i;
    redundant = true; /* every way on was explored from an equivalent state */
    redundant_runs++;
    node->closed = true;
    return 0;
}

/* The next schedule: the deepest choice with an alternative not yet run,
 * not asleep there, within the preemption bound. False when none is left. */
bool sched_dpor_next(int bound)
{
    long preemptions_before = 0;
    long *before = __real_calloc((size_t)sched.ndecisions + 1, sizeof *before);
    if (before == NULL)
        return false;
    for (long i = 0; i < sched.ndecisions; i++) {
        const struct sched_decision *d = &sched.decisions[i];
        before[i + 1] = before[i] + (d->preemptive && d->chosen > 0);
    }
    bool found = false;
    for (long i = sched.ndecisions - 1; i >= 0 && !found; i--) {
        const struct sched_decision *d = &sched.decisions[i];
        const struct node *node = i < DPOR_MAX_NODES ? &nodes[i] : NULL;
        if (node != NULL && node->closed)
            continue;
        preemptions_before = before[i] + (d->preemptive ? 1 : 0);
        for (int j = d->chosen + 1; j < d->n && !found; j++) {
            if (node != NULL && node->tracked && asleep(node, node->alt_thread[j], node->alt_how[j]))
                continue;
            if (preemptions_before > bound) {
                bound_reached = true;
                break;
            }
            for (long k = 0; k < i; k++)
                sched.prefix[k] = sched.decisions[k].chosen;
            sched.prefix[i] = (unsigned short)j;
            sched.prefix_len = i + 1;
            found = true;
        }
    }
    __real_free(before);
    return found;
}

bool sched_dpor_start(void)
{
    if (nodes == NULL)
        nodes = __real_calloc(DPOR_MAX_NODES, sizeof *nodes);
    redundant_runs = 0;
    bound_reached = false;
    return nodes != NULL;
}

void sched_dpor_figures(long *redundant_schedules, bool *reached_bound)
{
    *redundant_schedules = redundant_runs;
    *reached_bound = bound_reached;
}
