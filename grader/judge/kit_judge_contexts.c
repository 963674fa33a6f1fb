/**
 * @file kit_judge_contexts.c
 * @brief The judge's threads of a replayed schedule as user-level contexts:
 *        the next entry's thread runs by a switch of stacks on one OS
 *        thread, not by a kernel's hand-over between threads.
 *
 * DESIGN: a transcript fixes the order of every step (kit_judge_replay.c):
 * exactly one thread of the test runs at a time, until it waits for an
 * entry that is another's. With real threads each such hand-over is a
 * wake-up and a sleep, a few microseconds each, tens of thousands of them
 * in an exploration; here the waiting thread switches to the context of the
 * thread whose entry is next, which costs a swapcontext. Everything runs
 * on the test's main thread, whose own stack is channel 0's context; a
 * thread the test starts while replaying is a context of its channel's,
 * on a stack kept for that channel from one thread to the next.
 *
 * What the judge keeps per thread (its channel, its message, the schedule's
 * time it last heard: kit_judge.c) and errno are given each context at each
 * switch. The test's own mutexes are never contended here: a lock is taken
 * once the transcript says the subject granted it, after its holder let it
 * go (kit_judge_sync.c says a lie so).
 *
 * Contexts are not used under a sanitizer or valgrind, which follow stacks
 * by thread, nor with KIT_JUDGE_THREADS set: then the replay's threads are
 * real threads, as live schedules' always are.
 */
#define _GNU_SOURCE
#include "kit_judge.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "kit_test.h"

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define KIT_JUDGE_VALGRIND 1
#endif
#endif
#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define KIT_JUDGE_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define KIT_JUDGE_SANITIZED 1
#endif

enum { STACK_SIZE = 512 * 1024 };

/* One channel's context. Only the test's main thread touches these, one
 * context at a time: no lock. */
struct context {
    ucontext_t registers;
    char *stack;                     /* mapped the first time the channel runs a thread here, then kept */
    bool live;                       /* a thread of the test runs here (or waits for its turn) */
    void (*main)(void *);            /* ... started as main(arg) */
    void *arg;
    struct judge_thread_state state; /* what the judge keeps per thread, while another runs */
    int saved_errno;
};
static struct context contexts[KIT_WIRE_CHANNELS];
static int running = -1; /* the running context's channel; -1 while contexts are off */

bool judge_contexts_usable(void)
{
#if defined(KIT_JUDGE_SANITIZED)
    return false;
#else
#if defined(KIT_JUDGE_VALGRIND)
    if (RUNNING_ON_VALGRIND)
        return false;
#endif
    return getenv("KIT_JUDGE_THREADS") == NULL;
#endif
}

bool judge_in_context(void)
{
    return running >= 0;
}

void judge_contexts_begin(void)
{
    running = 0;
    contexts[0].live = true;
}

void judge_contexts_end(void)
{
    running = -1;
    for (int c = 1; c < KIT_WIRE_CHANNELS; c++)
        contexts[c].live = false; /* (a thread the transcript's end left waiting is never run again) */
}

/* Switch from the running context to @p to's. */
static void swap_to(int to)
{
    struct context *from = &contexts[running], *next = &contexts[to];
    judge_thread_state_save(&from->state);
    from->saved_errno = errno;
    running = to;
    judge_thread_state_load(&next->state);
    errno = next->saved_errno;
    if (swapcontext(&from->registers, &next->registers) != 0)
        kit_judge_violation("a switch between the test's threads failed"); /* (never: its contexts are made here) */
}

/* A context's first frame: its thread, then its end. */
static void context_main(void)
{
    struct context *me = &contexts[running];
    me->main(me->arg);
    me->live = false;
    judge_context_yield(0); /* its end was said (kit_judge_sync.c): the main thread goes on */
    kit_judge_violation("an ended thread of the test was run again");
}

bool judge_context_start(int channel, void (*main)(void *), void *arg)
{
    struct context *c = &contexts[channel];
    if (c->stack == NULL) { /* its stack, above a page no thread may touch: an overflow crashes there */
        size_t guard = (size_t)sysconf(_SC_PAGESIZE);
        char *stack = mmap(NULL, guard + STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
                           -1, 0);
        if (stack == MAP_FAILED)
            return false;
        mprotect(stack, guard, PROT_NONE);
        c->stack = stack + guard;
    }
    if (getcontext(&c->registers) != 0)
        return false;
    c->registers.uc_stack.ss_sp = c->stack;
    c->registers.uc_stack.ss_size = STACK_SIZE;
    c->registers.uc_link = NULL;
    makecontext(&c->registers, context_main, 0);
    c->main = main;
    c->arg = arg;
    c->live = true;
    judge_thread_state_fresh(&c->state, channel);
    c->saved_errno = 0;
    return true;
}

void judge_context_yield(int channel)
{
    if (channel < 0 || channel >= KIT_WIRE_CHANNELS || !contexts[channel].live)
        kit_judge_violation("a transcript's next step is of the test's thread %d, which is not running", channel);
    if (channel != running)
        swap_to(channel);
}
