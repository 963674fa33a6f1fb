/**
 * @file kit_judge_replay.c
 * @brief An exploration's transcripts, replayed: the judge's own copy of
 *        the body runs once for each schedule the subject wrote down, and
 *        each message of its threads is met by the transcript's next entry
 *        instead of by the channel.
 *
 * DESIGN: the subject runs the body itself and sends, in batches, what its
 * stand-ins and the judge's threads would have said to each other
 * (kit_wire.h, "A transcript"). Here every thread of the test waits until
 * the transcript's next entry is its own: a request it sends must be that
 * entry, word for word (a different one is a protocol violation, which fails
 * the test and flags it); an answer it waits for is that entry. So the
 * judge's threads move in the schedule's order, one entry at a time, the
 * body's checks see exactly the answers the subject's copy saw, and they
 * decide. No message goes back: one batch carries many schedules.
 */
#define _GNU_SOURCE
#include "kit_judge.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kit_test.h"

int __real_pthread_mutex_lock(pthread_mutex_t *mutex);
int __real_pthread_mutex_unlock(pthread_mutex_t *mutex);
int __real_pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex);
int __real_pthread_cond_broadcast(pthread_cond_t *cond);
int __real_pthread_cond_signal(pthread_cond_t *cond);
int __real_pthread_cond_init(pthread_cond_t *cond, const pthread_condattr_t *attr);

bool judge_replaying;

/* Guards everything below: the test's threads read the transcript at once. */
static pthread_mutex_t replay_lock = PTHREAD_MUTEX_INITIALIZER;
/* The requests each thread of the test waits on for a reply, innermost last
 * (a call, then the calls of a function of the test's it runs): a call's op,
 * -1 for another request. Which words of a reply are items is the judge's
 * own table's say, for the call it made. */
enum { PENDING = 8 };
static int waiting[KIT_WIRE_CHANNELS][PENDING];
static int pending[KIT_WIRE_CHANNELS];
/* One a channel: signalled when the next entry is that channel's thread's,
 * broadcast to all when a batch is needed or the transcript ended. */
static pthread_cond_t turn[KIT_WIRE_CHANNELS];
static pthread_once_t turns_once = PTHREAD_ONCE_INIT;
static kit_wire_t *batch, *spare;  /* the batch being read; the one the next is read into */
static kit_wire_reader_t reader;   /* ... where in it */
static kit_wire_entry_t next;      /* the transcript's next entry, when have_next */
static bool have_next;
static bool fetching;              /* a thread reads the next batch from channel 0 */
static kit_wire_t *end_message;    /* the exploration's end, once it came instead of a batch */
static kit_wire_namer_t namer;     /* the names the judge's copy of this body gave its objects */
static bool check_failing;         /* a check of the judge's copy failed: the test ends */
/* The chapter's words that carry items (its generated proxies); none without. */
extern const kit_wire_items_t kit_wire_chapter_items __attribute__((weak));
static void begin_names(void);
static void awaits(int channel, const kit_wire_t *m);

static kit_wire_t *allocate(void)
{
    kit_wire_t *m = malloc(sizeof *m);
    if (m == NULL) {
        fprintf(stderr, "[  ERROR   ] --- the judge is out of memory\n");
        kit_verdict_end(false);
        _exit(1);
    }
    return m;
}

static void make_turns(void)
{
    for (int c = 0; c < KIT_WIRE_CHANNELS; c++)
        __real_pthread_cond_init(&turn[c], NULL);
}

/* Wake the thread whose entry is next; every thread if none is known yet
 * (one of them reads the next batch) or the transcript ended. */
static void announce(void)
{
    if (judge_in_context())
        return; /* (its context runs when the running one waits) */
    if (have_next && end_message == NULL) {
        __real_pthread_cond_signal(&turn[next.channel]);
        return;
    }
    for (int c = 0; c < KIT_WIRE_CHANNELS; c++)
        __real_pthread_cond_broadcast(&turn[c]);
}

/* The subject explores while the judge replays what it sent: on a machine
 * of more than one CPU, the judge's threads (made from here on) leave the
 * subject's CPU. */
static void leave_the_subjects_cpu(void)
{
#if defined(__linux__)
    /* A thread woken to take its entry need not preempt the one that woke
     * it, which is about to wait: half the switches. */
    struct sched_param none = { 0 };
    sched_setscheduler(0, SCHED_BATCH, &none);
    cpu_set_t mine, others;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (sched_getaffinity(0, sizeof mine, &mine) != 0 || CPU_COUNT(&mine) != 1)
        return; /* not kept to one CPU: nothing to leave */
    CPU_ZERO(&others);
    for (int cpu = 0; cpu < CPU_SETSIZE && cpu < cpus; cpu++)
        if (!CPU_ISSET(cpu, &mine))
            CPU_SET(cpu, &others);
    if (CPU_COUNT(&others) > 0)
        sched_setaffinity(0, sizeof others, &others); /* (refused: the judge stays where it is) */
#endif
}

void judge_replay_begin(const kit_wire_t *first)
{
    pthread_once(&turns_once, make_turns);
    leave_the_subjects_cpu();
    if (batch == NULL) {
        batch = allocate();
        spare = allocate();
        next.m = allocate();
    }
    memcpy(batch, first, sizeof *batch);
    reader = (kit_wire_reader_t){ batch, 0 };
    have_next = false;
    end_message = NULL;
    check_failing = false;
    begin_names();
    judge_replaying = true;
    if (judge_contexts_usable())
        judge_contexts_begin();
}

void judge_replay_end(void)
{
    judge_replaying = false;
    if (judge_in_context())
        judge_contexts_end();
}

/* Wait until the transcript's state changes (called with replay_lock held,
 * by the thread of @p channel, whose entry is not next). On contexts the
 * thread whose entry is next runs meanwhile - the main thread once none is
 * known or the transcript ended: it reads the next batch, or meets the end. */
static void wait_for_turn(int channel)
{
    if (!judge_in_context()) {
        __real_pthread_cond_wait(&turn[channel], &replay_lock);
        return;
    }
    int to = have_next && end_message == NULL ? (int)next.channel : 0;
    judge_mirror_before_turn(to);
    __real_pthread_mutex_unlock(&replay_lock);
    judge_context_yield(to);
    __real_pthread_mutex_lock(&replay_lock);
}

/* A batch, or the end, from channel 0 (called with replay_lock held; let go while reading). */
static void fetch(void)
{
    fetching = true;
    __real_pthread_mutex_unlock(&replay_lock);
    judge_recv(0, spare);
    __real_pthread_mutex_lock(&replay_lock);
    fetching = false;
    if (spare->kind == WIRE_TRANSCRIPT_BATCH) {
        kit_wire_t *read = batch;
        batch = spare;
        spare = read;
        reader = (kit_wire_reader_t){ batch, 0 };
    } else if (spare->kind == WIRE_RESULT || spare->kind == WIRE_RERUN) {
        end_message = spare;
        spare = allocate();
    } else {
        kit_judge_violation("a message of kind %u in the middle of an exploration's transcript", spare->kind);
    }
    if (end_message != NULL)
        announce(); /* every thread of the body learns it */
}

/* Read the next entry from the batch at hand (called with replay_lock held,
 * the batch holding one more). */
static void read_next(void)
{
    int got = kit_wire_entry_take(&reader, &next);
    if (got < 0)
        kit_judge_violation("a transcript's entry whose lengths do not add up");
    if (got > 0 && next.channel >= KIT_WIRE_CHANNELS)
        kit_judge_violation("a transcript's entry on channel %u, of %d", next.channel, KIT_WIRE_CHANNELS);
    have_next = got > 0;
    if (have_next && next.answer && next.m->kind == WIRE_MIRROR)
        judge_mirror_replayed(next.channel); /* the entry is its mirror's first */
}

/* The next entry is there, or the transcript ended (called with replay_lock
 * held, by the thread of @p channel). */
static bool advance(int channel)
{
    while (!have_next && end_message == NULL) {
        if (reader.at < reader.m->nbytes) {
            read_next();
            announce(); /* (its thread may be another, waiting) */
        } else if (fetching) /* while: another thread reads the next batch; it wakes the next entry's thread */
            wait_for_turn(channel);
        else
            fetch();
    }
    return have_next;
}

static bool same_request(const kit_wire_t *mine, const kit_wire_t *written)
{
    if (mine->kind != written->kind || mine->op != written->op || mine->nargs != written->nargs ||
        mine->nbytes != written->nbytes || memcmp(mine->arg, written->arg, mine->nargs * sizeof mine->arg[0]) != 0)
        return false;
    /* A call's bytes are what the test passes in, which it may leave unset:
     * their sizes are compared, not their contents. */
    return mine->kind == WIRE_CALL || memcmp(mine->blob, written->blob, mine->nbytes) == 0;
}

/* A message in a few words: its kind, operation and words (enough of them
 * that the one that differs shows: an inout's value is the sixth of a call). */
static void describe(const kit_wire_t *m, char *out, size_t size)
{
    int at = snprintf(out, size, "(kind %u, op %u, %u bytes; words", m->kind, m->op, m->nbytes);
    for (uint32_t i = 0; i < m->nargs && i < 10 && at > 0 && (size_t)at < size; i++)
        at += snprintf(out + at, size - (size_t)at, " %llu", (unsigned long long)m->arg[i]);
    if (at > 0 && (size_t)at < size)
        snprintf(out + at, size - (size_t)at, ")");
}

void judge_replay_check_fails(void)
{
    __real_pthread_mutex_lock(&replay_lock);
    check_failing = true;
    __real_pthread_mutex_unlock(&replay_lock);
}

/* The judge's copy failed a check of its own where the subject's copy went
 * on (a value of the subject's that only the judge's tables refuse, say):
 * the test fails by the judge's word - an honest failure, not a broken
 * protocol. The subject's copy may still be writing schedules down, and
 * what it prints of them is the student's: they are read to the end and
 * dropped (called with replay_lock held; the other threads stay asleep). */
static _Noreturn void end_on_judges_check(void)
{
    while (end_message == NULL) { /* while: batches, until the exploration's end */
        judge_recv(0, spare);
        if (spare->kind == WIRE_RESULT || spare->kind == WIRE_RERUN)
            end_message = spare;
        else if (spare->kind != WIRE_TRANSCRIPT_BATCH)
            kit_judge_violation("a message of kind %u in the middle of an exploration's transcript", spare->kind);
    }
    fflush(stdout);
    if (kit_check_words_printed()) /* (the subject's copy prints a check's words; it did not fail this one) */
        fprintf(stderr, "%s\n", kit_last_error_text());
    fprintf(stderr, "[  FAILED  ] the check above is the judge's own: the code under test's copy of the test went "
                    "past it on the same schedule\n");
    kit_judge_end_failed();
}

/* The transcript ended with this thread of the body still running. */
static const kit_wire_t *ended_under(int channel)
{
    if (check_failing)
        end_on_judges_check();
    if (channel == 0 && judge_in_body) {
        __real_pthread_mutex_unlock(&replay_lock);
        judge_explore_ended(end_message); /* the main thread leaves the body */
    }
    if (channel != 0)
        for (;;) /* for ever: no entry is this thread's any more; the test ends with its main thread */
            wait_for_turn(channel);
    __real_pthread_mutex_unlock(&replay_lock);
    return end_message;
}

/* Wait until the next entry is @p channel's (called with replay_lock held):
 * false if the transcript ended first. */
static bool my_turn(int channel)
{
    for (;;) {
        if (!advance(channel))
            return false;
        if (next.channel == (uint32_t)channel)
            return true;
        /* while: another thread's entry; whoever reads the one after it wakes that one's thread */
        wait_for_turn(channel);
    }
}

/* The next entry is taken: the one after it, if the batch at hand holds it,
 * is read now, and its thread woken - once the lock is let go, so that it
 * does not wake only to wait for the lock. */
static void taken(void)
{
    have_next = false;
    if (reader.at < reader.m->nbytes)
        read_next();
    bool one = have_next && end_message == NULL;
    int channel = (int)next.channel;
    __real_pthread_mutex_unlock(&replay_lock);
    if (judge_in_context())
        return; /* (its context runs when this one waits) */
    if (one)
        __real_pthread_cond_signal(&turn[channel]);
    else
        for (int c = 0; c < KIT_WIRE_CHANNELS; c++) /* a thread waiting for its entry reads the next batch */
            __real_pthread_cond_broadcast(&turn[c]);
}

void judge_replay_post(int channel, kit_wire_t *m)
{
    __real_pthread_mutex_lock(&replay_lock);
    if (!my_turn(channel)) {
        ended_under(channel);
        return;
    }
    kit_wire_rename(&namer, m, kit_wire_names(m, &kit_wire_chapter_items));
    if (namer.count >= KIT_WIRE_NAMES)
        kit_fail_at(__FILE__, __LINE__, "the test names more than %d objects and items on one schedule: more than "
                    "a transcript carries", KIT_WIRE_NAMES - 1);
    if (next.answer || !same_request(m, next.m)) {
        if (check_failing) /* (the failure's own messages: the judge's copy went its own way) */
            end_on_judges_check();
        char mine[300], written[300];
        describe(m, mine, sizeof mine);
        describe(next.m, written, sizeof written);
        kit_judge_violation("the transcript's next step of the test's thread %d is %s %s, where the judge's copy of "
                            "the body sent the request %s", channel, next.answer ? "the answer" : "the request",
                            written, mine);
    }
    awaits(channel, m);
    taken();
}

static void begin_names(void)
{
    kit_wire_namer_reset(&namer);
    memset(pending, 0, sizeof pending);
    judge_refs_forget();
    judge_mirrors_forget();
}

/* A request of @p channel's that a reply answers: remembered (called with replay_lock held). */
static void awaits(int channel, const kit_wire_t *m)
{
    if (m->kind != WIRE_CALL && m->kind != WIRE_SYNC && m->kind != WIRE_HOOK)
        return;
    if (pending[channel] == PENDING)
        kit_judge_violation("calls of the test's functions nested deeper than the judge follows");
    waiting[channel][pending[channel]++] = m->kind == WIRE_CALL ? (int)m->op : -1;
}

/* An answer's items, from their names back to the judge's own pointers
 * (called with replay_lock held). A name first given in an answer - a value
 * the code under test made up, which the subject's copy named as it came -
 * stands for a value no pointer of the judge's has (the top bit set): the
 * test's checks fail on it as on the subject's value, in words. */
static void unname(int channel, kit_wire_t *m)
{
    const kit_wire_items_t *items = &kit_wire_chapter_items;
    uint32_t names = 0;
    if (m->kind == WIRE_CALLBACK)
        names = kit_wire_names(m, items);
    if (m->kind == WIRE_REPLY && pending[channel] > 0) {
        int op = waiting[channel][--pending[channel]];
        names = items != NULL && op >= 0 && op < items->nops ? items->reply[op] : 0;
    }
    for (uint32_t w = 0; w < m->nargs; w++) {
        if (!(names & (1u << w)))
            continue;
        uint64_t name = m->arg[w];
        if (name == (uint64_t)namer.count + 1 && namer.count < KIT_WIRE_NAMES - 1)
            kit_wire_name(&namer, (1ULL << 63) | name);
        if (name == 0 || name > (uint64_t)namer.count)
            kit_judge_violation("an item named %llu in a transcript's answer, where %d were named",
                                (unsigned long long)name, namer.count);
        m->arg[w] = namer.value[name - 1];
    }
}

/* A name first given in an answer (unname, above) stands for a value the
 * code under test made up: the test's own checks meet it, as the subject's
 * copy met the value, and decide in the same words. */
bool judge_value_made_up(uint64_t word)
{
    return judge_replaying && (word >> 63) != 0;
}

const kit_wire_t *judge_replay_wait(int channel, kit_wire_t *into)
{
    __real_pthread_mutex_lock(&replay_lock);
    if (!my_turn(channel))
        return ended_under(channel);
    if (!next.answer && check_failing)
        end_on_judges_check();
    if (!next.answer)
        kit_judge_violation("the transcript's next step of the test's thread %d is a request of kind %u, op %u, "
                            "where the judge's copy of the body waits for an answer", channel, next.m->kind, next.m->op);
    memcpy(into, next.m, offsetof(kit_wire_t, blob) + next.m->nbytes);
    if (channel == 0 && into->kind == WIRE_BODY)
        begin_names(); /* a body begins: its objects are named afresh */
    unname(channel, into);
    taken();
    return into;
}

/* A graded test's body returned: every entry of its transcript must have
 * been met, and the schedule's end comes next. */
const kit_wire_t *judge_replay_finish(void)
{
    __real_pthread_mutex_lock(&replay_lock);
    while (end_message == NULL) { /* while: a batch, possibly empty, may come before the end */
        if (have_next || reader.at < reader.m->nbytes)
            kit_judge_violation("a transcript with steps after the test's end");
        fetch();
    }
    const kit_wire_t *end = end_message;
    __real_pthread_mutex_unlock(&replay_lock);
    return end;
}

