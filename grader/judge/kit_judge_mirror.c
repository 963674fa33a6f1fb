/**
 * @file kit_judge_mirror.c
 * @brief The test's functions that the code under test calls back on
 *        threads of its own (a pool's worker running a task): each such
 *        thread has a thread here that mirrors it and runs them.
 *
 * DESIGN: a thread of the subject's own that calls a function of the
 * test's for the first time takes a channel from KIT_WIRE_MIRROR_FIRST up
 * and says so on KIT_WIRE_CONTROL (WIRE_MIRROR: the channel, whether it runs
 * on a schedule, its name). The dispatcher here, the one reader of that
 * channel, starts a mirror thread for it, named as the subject's thread is.
 * The mirror serves its channel as a test's thread serves its own while its
 * call is under way: each WIRE_CALLBACK runs the test's function here - its
 * calls of the API and its pthread calls go back on the same channel, and
 * the subject's thread, waiting for WIRE_CALLBACK_DONE, makes them - until
 * WIRE_EXIT says the subject's thread ended. A new thread there is a new
 * thread here, so pthread_self() tells two workers apart in the test's
 * functions as it would in one process.
 *
 * Between two callbacks a mirror waits outside any call of the test's: the
 * subject's end then is the test's main thread's to report, and the mirror
 * only leaves. A channel named twice before its mirror saw WIRE_EXIT waits
 * for that mirror to leave (its WIRE_EXIT is on the way, ahead of the new
 * thread's messages); a channel out of range is a protocol violation.
 */
#define _GNU_SOURCE
#include "kit_judge.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_test.h"
#include "kit_thread.h"

int __real_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
int __real_pthread_detach(pthread_t thread);
int __real_pthread_mutex_lock(pthread_mutex_t *mutex);
int __real_pthread_mutex_unlock(pthread_mutex_t *mutex);
int __real_pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex);
int __real_pthread_cond_broadcast(pthread_cond_t *cond);

/* Which mirror channels have a mirror thread now: guarded by mirrors_lock,
 * which the dispatcher and the mirrors take; mirror_left is broadcast when
 * one leaves. */
static bool mirrored[KIT_WIRE_CHANNELS];
static pthread_mutex_t mirrors_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t mirror_left = PTHREAD_COND_INITIALIZER;

struct mirror {
    int channel;
    bool scheduled;
    char name[16];
};

static void mirror_leaves(int channel)
{
    judge_thread_done();
    __real_pthread_mutex_lock(&mirrors_lock);
    mirrored[channel] = false;
    __real_pthread_cond_broadcast(&mirror_left);
    __real_pthread_mutex_unlock(&mirrors_lock);
}

static void *mirror_main(void *raw)
{
    struct mirror start = *(struct mirror *)raw;
    free(raw);
    kit_thread_set_name(start.name); /* what the test's function reads as its thread's name */
    judge_set_thread(start.channel, start.scheduled);
    for (;;) {
        const kit_wire_t *m = judge_wait_idle(WIRE_CALLBACK, WIRE_EXIT);
        if (m == NULL || m->kind == WIRE_EXIT)
            break;
        judge_run_callback(m);
    }
    mirror_leaves(start.channel);
    return NULL;
}

/* Start the mirror @p start says, once the channel's last one has left. */
static void mirror_start(const struct mirror *start)
{
    __real_pthread_mutex_lock(&mirrors_lock);
    while (mirrored[start->channel]) /* while: its WIRE_EXIT is queued ahead; another's leaving wakes us too */
        __real_pthread_cond_wait(&mirror_left, &mirrors_lock);
    mirrored[start->channel] = true;
    __real_pthread_mutex_unlock(&mirrors_lock);
    struct mirror *copy = malloc(sizeof *copy);
    pthread_t thread;
    if (copy != NULL)
        *copy = *start;
    if (copy == NULL || __real_pthread_create(&thread, NULL, mirror_main, copy) != 0) {
        free(copy);
        kit_fail_at(__FILE__, __LINE__, "the judge could not start a thread to run the test's functions that a "
                    "thread of the code under test's calls back");
        return;
    }
    __real_pthread_detach(thread);
}

static void *dispatcher_main(void *unused)
{
    (void)unused;
    kit_wire_t *m = malloc(sizeof *m);
    while (m != NULL && judge_recv_idle(KIT_WIRE_CONTROL, m)) {
        uint64_t channel = m->nargs == 2 ? m->arg[0] : 0;
        if (m->kind != WIRE_MIRROR || channel < KIT_WIRE_MIRROR_FIRST || channel >= KIT_WIRE_CONTROL ||
            m->nbytes > 64)
            kit_judge_violation("a message on the channel of the code under test's own threads that does not "
                                "name one of them (kind %u, channel %llu)", m->kind, (unsigned long long)channel);
        struct mirror start = { (int)channel, m->arg[1] != 0, "" };
        snprintf(start.name, sizeof start.name, "%.*s", (int)m->nbytes, (const char *)m->blob);
        mirror_start(&start);
    }
    free(m);
    return NULL;
}

void judge_mirrors_start(void)
{
    pthread_t dispatcher;
    if (__real_pthread_create(&dispatcher, NULL, dispatcher_main, NULL) != 0) {
        kit_fail_at(__FILE__, __LINE__, "the judge could not start the thread that mirrors the code under test's own");
        return;
    }
    __real_pthread_detach(dispatcher);
}

/* ---- on a replayed schedule (kit_judge_replay.c) ------------------------------------------
 * A transcript says where a thread of the code under test's own first
 * called back: the WIRE_MIRROR entry opening its channel's steps. Its mirror
 * then replays that channel as a test's thread replays its own. On real
 * threads it starts as the entry is read; on contexts, where only the
 * running one may be touched, once another hands over to it. Touched with
 * the replay's lock held (or on contexts, one at a time). */

static bool unstarted[KIT_WIRE_CHANNELS];

static void replayed_mirror(void *raw)
{
    judge_set_thread((int)(intptr_t)raw, true);
    for (;;) {
        const kit_wire_t *m = kit_judge_wait_any(WIRE_CALLBACK, WIRE_EXIT, WIRE_MIRROR);
        if (m->kind == WIRE_EXIT)
            return;
        if (m->kind == WIRE_CALLBACK)
            judge_run_callback(m);
    }
}

static void *replayed_mirror_thread(void *raw)
{
    replayed_mirror(raw);
    judge_thread_done();
    return NULL;
}

void judge_mirror_replayed(uint32_t channel)
{
    if (channel < KIT_WIRE_MIRROR_FIRST || channel >= KIT_WIRE_CONTROL)
        kit_judge_violation("a transcript names a thread of the code under test's own on channel %u", channel);
    if (judge_in_context()) {
        unstarted[channel] = true;
        return;
    }
    pthread_t thread;
    if (__real_pthread_create(&thread, NULL, replayed_mirror_thread, (void *)(intptr_t)channel) != 0) {
        kit_fail_at(__FILE__, __LINE__, "the judge could not start a thread to run the test's functions that a "
                    "thread of the code under test's calls back");
        return;
    }
    __real_pthread_detach(thread);
}

void judge_mirror_before_turn(int channel)
{
    if (channel < 0 || channel >= KIT_WIRE_CHANNELS || !unstarted[channel])
        return;
    unstarted[channel] = false;
    if (!judge_context_start(channel, replayed_mirror, (void *)(intptr_t)channel))
        kit_fail_at(__FILE__, __LINE__, "the judge is out of memory for a thread that mirrors the code under test's");
}

void judge_mirrors_forget(void)
{
    memset(unstarted, 0, sizeof unstarted);
}
