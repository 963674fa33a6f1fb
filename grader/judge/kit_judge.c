/**
 * @file kit_judge.c
 * @brief The judge's engine: starting the subject, the channels, sending a
 *        call and checking its answer, the handles (kit_judge.h).
 */
#define _GNU_SOURCE /* program_invocation_name, sched_setaffinity */
#include "kit_judge.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kit_test.h"

int __real_pthread_mutex_lock(pthread_mutex_t *mutex);
int __real_pthread_mutex_unlock(pthread_mutex_t *mutex);

/* What the test's threads do is ordered by the subject: on a schedule, one
 * runs and sends, and the next runs once its answer came; on real threads,
 * a thread that takes the code under test's lock is answered only after the
 * thread that let it go has sent its unlock. ThreadSanitizer cannot see that
 * order through a socket, and is told: every message sent releases, every
 * message received acquires. (It may so miss a race between two threads of
 * the test's own; the code under test's races are the subject's to find.) */
#if KIT_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
static char schedule_order;
#define ORDER_BEFORE_SEND() __tsan_release(&schedule_order)
#define ORDER_AFTER_RECV() __tsan_acquire(&schedule_order)
#else
#define ORDER_BEFORE_SEND() ((void)0)
#define ORDER_AFTER_RECV() ((void)0)
#endif

/* ---- the subject and the channels ---------------------------------------------- */

static pid_t subject = -1;
static int ends[KIT_WIRE_CHANNELS] = { -1 }; /* the judge's end of each channel */
static bool taken[KIT_WIRE_CHANNELS];         /* guarded by channels_lock */
/* Guards taken[], the handles and the pointers sent: the test's threads
 * take channels and hand out handles at once, off a schedule. */
static pthread_mutex_t channels_lock = PTHREAD_MUTEX_INITIALIZER;
static bool gone; /* the subject's end was reported */
static bool raced; /* it ended saying its test met a data race (KIT_WIRE_EXIT_RACED) */

static _Thread_local int my_channel = -1;
static _Thread_local bool my_schedule;
static _Thread_local kit_wire_t *my_message; /* this thread's one message buffer */
static _Thread_local bool my_touch;           /* a history event to send with the next message */
static _Thread_local bool my_clocked;         /* my_clock holds the schedule's time now */
static _Thread_local uint64_t my_clock[2];    /* ... CLOCK_MONOTONIC's and CLOCK_REALTIME's */

/* This program is a judged test's (grader/harness/kit_test.c, kit_test_judged). */
const bool kit_judged_program = true;
bool judge_in_body;

int judge_channel(void)
{
    return my_channel;
}

void judge_set_thread(int channel, bool on_schedule)
{
    my_channel = channel;
    my_schedule = on_schedule;
}

void judge_thread_state_save(struct judge_thread_state *state)
{
    *state = (struct judge_thread_state){ my_channel, my_schedule, my_touch, my_clocked, { my_clock[0], my_clock[1] },
                                          my_message };
}

void judge_thread_state_load(const struct judge_thread_state *state)
{
    my_channel = state->channel;
    my_schedule = state->schedule;
    my_touch = state->touch;
    my_clocked = state->clocked;
    my_clock[0] = state->clock[0];
    my_clock[1] = state->clock[1];
    my_message = state->message;
}

void judge_thread_state_fresh(struct judge_thread_state *state, int channel)
{
    *state = (struct judge_thread_state){ .channel = channel, .message = state->message };
}

void judge_touch(void)
{
    my_touch = true;
}

bool judge_clock(clockid_t clock, struct timespec *now)
{
    if (!my_clocked || (clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME))
        return false;
    uint64_t ns = my_clock[clock == CLOCK_REALTIME];
    now->tv_sec = (time_t)(ns / 1000000000ULL);
    now->tv_nsec = (long)(ns % 1000000000ULL);
    return true;
}

bool kit_judge_on_schedule(void)
{
    return my_schedule;
}

bool kit_judge_subject_gone(void)
{
    return gone;
}

bool kit_judge_subject_raced(void)
{
    return raced;
}

int judge_take_channel(void)
{
    __real_pthread_mutex_lock(&channels_lock);
    int found = -1;
    for (int c = 1; c < KIT_WIRE_MIRROR_FIRST && found < 0; c++)
        if (!taken[c])
            found = c;
    if (found > 0)
        taken[found] = true;
    __real_pthread_mutex_unlock(&channels_lock);
    return found;
}

void judge_release_channel(int channel)
{
    __real_pthread_mutex_lock(&channels_lock);
    taken[channel] = false;
    __real_pthread_mutex_unlock(&channels_lock);
}

/* In the child, before exec: its channels at KIT_WIRE_FD.., and no other
 * descriptor of the judge's above stderr - not the verdict's. */
enum { MOVED_FD = 256, MOVED_ROOM = 1024 }; /* above the channels' numbers, below the usual limit of 1024 */

/* Close descriptors @p from to @p to (-1: the last): one system call where
 * the kernel has close_range, not one for each number up to the limit
 * (often tens of thousands). */
static void close_from_to(int from, int to)
{
#if defined(__linux__) && defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 34)
    if (close_range((unsigned)from, to < 0 ? ~0U : (unsigned)to - 1, 0) == 0)
        return;
#endif
    long most = sysconf(_SC_OPEN_MAX);
    int end = to >= 0 ? to : most > 0 && most < 65536 ? (int)most : 65536;
    for (int fd = from; fd < end; fd++)
        close(fd);
}

/* In the child: its channels moved out of the way of their numbers, every
 * other descriptor closed, then each channel at its number. (Moved to the
 * lowest free from MOVED_FD: a soft limit of 1024 descriptors, a user's
 * usual, must hold them all.) */
static void place_channels(int *theirs)
{
    static bool moved[MOVED_ROOM];
    for (int c = 0; c < KIT_WIRE_CHANNELS; c++) {
        theirs[c] = fcntl(theirs[c], F_DUPFD, MOVED_FD);
        if (theirs[c] < MOVED_FD || theirs[c] >= MOVED_FD + MOVED_ROOM)
            _exit(127); /* (the judge reports the subject's end) */
        moved[theirs[c] - MOVED_FD] = true;
    }
    close_from_to(3, MOVED_FD);
    for (int fd = MOVED_FD; fd < MOVED_FD + MOVED_ROOM; fd++)
        if (!moved[fd - MOVED_FD])
            close(fd);
    close_from_to(MOVED_FD + MOVED_ROOM, -1);
    for (int c = 0; c < KIT_WIRE_CHANNELS; c++) {
        dup2(theirs[c], KIT_WIRE_FD + c);
        close(theirs[c]);
    }
}

static _Noreturn void exec_subject(int *theirs, const char *path)
{
    place_channels(theirs);
    kit_exec_subject(path, "--serve");
}

static void open_channels(int *theirs)
{
    for (int c = 0; c < KIT_WIRE_CHANNELS; c++) {
        int pair[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
            fprintf(stderr, "[  ERROR   ] --- the judge could not open its channels: %s\n", strerror(errno));
            kit_verdict_end(false);
            _exit(1);
        }
        ends[c] = pair[0];
        theirs[c] = pair[1];
    }
}

/* On a schedule, or exploring, one thread of the two processes runs at a
 * time, handing over to the other at every message: on one CPU that hand-over
 * costs half what it costs between two. The judge keeps to the CPU it is on,
 * and the subject, started from it, keeps to it too. */
static void keep_to_one_cpu(const char *test, bool scheduled)
{
#if defined(__linux__)
    if (!scheduled && strstr(test, "_explore_") == NULL)
        return; /* real threads: they must really run at once */
    int cpu = sched_getcpu();
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu >= 0 ? cpu : 0, &one);
    sched_setaffinity(0, sizeof one, &one);
#else
    (void)test, (void)scheduled;
#endif
}

/* The test this process runs (`--run NAME`), for a start the test did not ask for. */
static void running_test(char *out, size_t size)
{
    char words[4096];
    FILE *in = fopen("/proc/self/cmdline", "r");
    size_t n = in ? fread(words, 1, sizeof words - 1, in) : 0;
    if (in)
        fclose(in);
    words[n] = '\0';
    out[0] = '\0';
    for (size_t at = 0; at < n; at += strlen(words + at) + 1)
        if (strcmp(words + at, "--run") == 0 && at + 6 < n)
            snprintf(out, size, "%s", words + at + 6);
}

/* The subject: this program's name with ".subject", on its own channels. */
static void spawn_subject(void)
{
    int theirs[KIT_WIRE_CHANNELS];
    char path[4096];
    snprintf(path, sizeof path, "%s.subject", program_invocation_name);
    open_channels(theirs);
    fflush(stdout);
    fflush(stderr);
    /* Nothing of the same user may read or write this process's memory. */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    subject = fork();
    if (subject == 0)
        exec_subject(theirs, path);
    for (int c = 0; c < KIT_WIRE_CHANNELS; c++)
        close(theirs[c]);
    taken[0] = true;
    if (kit_judge_ncallback_types > 0) /* the code under test's own threads may call the test's functions */
        judge_mirrors_start();
}

void judge_start_subject(const char *test, bool scheduled, uint64_t seed)
{
    if (subject > 0)
        return;
    char name[256];
    running_test(name, sizeof name);
    keep_to_one_cpu(test[0] ? test : name, scheduled);
    spawn_subject();
    my_channel = 0;
    kit_wire_t *m = kit_judge_begin(WIRE_START, 0);
    kit_judge_word(m, scheduled);
    kit_judge_word(m, seed);
    kit_judge_bytes(m, test, strlen(test) + 1, "the test's name");
    kit_judge_post(m);
}

/* ---- the subject's end ------------------------------------------------------------ */

/* The subject ended while the test waited for it: fail the test as the
 * subject ended - a crash as a crash (the judge dies of the same signal),
 * a stop of the harness's (a deadlock it reported, a failed hang check) with
 * its status. What it printed is in the log above. */
static int reap_subject(void)
{
    gone = true;
    int status = 0;
    kill(subject, SIGKILL); /* (an end already under way keeps its status) */
    while (waitpid(subject, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(status) && WEXITSTATUS(status) == KIT_WIRE_EXIT_RACED) {
        raced = true; /* (a stop's report, above) */
        status = W_EXITCODE(1, 0); /* reported as a stop of one process's: status 1 */
    }
    return status;
}

static _Noreturn void subject_ended(void)
{
    static atomic_flag ending = ATOMIC_FLAG_INIT;
    if (atomic_flag_test_and_set(&ending))
        for (;;)
            pause(); /* another thread of the test reports it, and ends the process */
    int status = reap_subject();
    fflush(stdout);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS) {
        fprintf(stderr, "[ integrity ] the code under test's process made a system call no test needs (its filter "
                        "killed it)\n[  FAILED  ] the test cannot trust its answers: it fails\n");
        kit_verdict_end(false);
        fflush(stderr);
        _exit(1);
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        fprintf(stderr, "[ integrity ] the code under test's process exited in the middle of the test, with status 0"
                        "\n[  FAILED  ] the test cannot trust its answers: it fails\n");
        kit_verdict_end(false);
        fflush(stderr);
        _exit(1);
    }
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "[  FAILED  ] the code under test's process was killed by signal %d (%s)\n", WTERMSIG(status),
                strsignal(WTERMSIG(status)));
        kit_verdict_end(false);
        signal(WTERMSIG(status), SIG_DFL);
        raise(WTERMSIG(status));
    } else {
        fprintf(stderr, "[  FAILED  ] the code under test's process ended (status %d) before the test did\n",
                WEXITSTATUS(status));
        kit_verdict_end(false);
    }
    fflush(stderr);
    _exit(WIFEXITED(status) && WEXITSTATUS(status) != 0 ? WEXITSTATUS(status) : 1);
}

void kit_judge_violation(const char *format, ...)
{
    char text[512];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof text, format, args);
    va_end(args);
    gone = true;
    if (subject > 0)
        kill(subject, SIGKILL);
    fprintf(stderr, "[ integrity ] the code under test's process broke the judge's protocol: %s\n"
                    "[  FAILED  ] the test cannot trust its answers: it fails\n", text);
    kit_verdict_end(false);
    fflush(stderr);
    _exit(1);
}

void kit_judge_end_failed(void)
{
    gone = true; /* (the verdict's hooks take their defaults) */
    if (subject > 0)
        kill(subject, SIGKILL);
    kit_verdict_end(false);
    fflush(stdout);
    fflush(stderr);
    _exit(1);
}

/* ---- messages ------------------------------------------------------------------------ */

/* This thread's message buffer, made on first use (a thread's first wait may come before its first message). */
static kit_wire_t *buffer(void)
{
    if (my_message == NULL && (my_message = malloc(sizeof *my_message)) == NULL) {
        fprintf(stderr, "[  ERROR   ] --- the judge is out of memory\n");
        kit_verdict_end(false);
        _exit(1);
    }
    return my_message;
}

void judge_thread_done(void)
{
    free(my_message);
    my_message = NULL;
}

kit_wire_t *kit_judge_begin(uint32_t kind, uint32_t op)
{
    buffer();
    if (my_channel < 0) /* the main thread, first call: the subject runs off a schedule */
        judge_start_subject("", false, 0);
    kit_wire_begin(my_message, kind, op);
    return my_message;
}

void kit_judge_word(kit_wire_t *m, uint64_t word)
{
    if (!kit_wire_word(m, word))
        kit_fail_at(__FILE__, __LINE__, "the judge's table of the chapter's calls gives a call too many arguments");
}

void kit_judge_bytes(kit_wire_t *m, const void *bytes, size_t size, const char *what)
{
    if (!kit_wire_bytes(m, bytes, size))
        kit_fail_at(__FILE__, __LINE__, "%s: %zu bytes, more than the %d the judge's channel carries in one call", what,
                    size, KIT_WIRE_BLOB);
}

void kit_judge_post(kit_wire_t *m)
{
    if (gone)
        return;
    ORDER_BEFORE_SEND();
    m->flags = my_touch ? WIRE_TOUCHED : 0;
    my_touch = false;
    my_clocked = false;
    if (judge_replaying && my_schedule)
        judge_replay_post(my_channel, m);
    else if (kit_wire_send(ends[my_channel], m) != 0)
        subject_ended();
}

void judge_recv(int channel, kit_wire_t *m)
{
    int err = kit_wire_recv(ends[channel], m);
    ORDER_AFTER_RECV();
    if (err == EPROTO)
        kit_judge_violation("a message that is not one (its lengths do not add up)");
    if (err != 0)
        subject_ended();
}

bool judge_recv_idle(int channel, kit_wire_t *m)
{
    int err = kit_wire_recv(ends[channel], m);
    ORDER_AFTER_RECV();
    if (err == EPROTO)
        kit_judge_violation("a message that is not one (its lengths do not add up)");
    return err == 0;
}

/* The schedule's time a message from the subject carries, as this thread's now. */
static void take_clock(const kit_wire_t *m)
{
    if (my_schedule && (m->flags & WIRE_CLOCKED)) {
        my_clocked = true;
        my_clock[0] = m->clock[0];
        my_clock[1] = m->clock[1];
    }
}

const kit_wire_t *judge_wait_idle(uint32_t kind, uint32_t or_kind)
{
    kit_wire_t *m = buffer();
    if (!judge_recv_idle(my_channel, m))
        return NULL;
    take_clock(m);
    if (m->kind != kind && m->kind != or_kind)
        kit_judge_violation("a message of kind %u where a call of the test's function or a thread's end was due",
                            m->kind);
    return m;
}

const kit_wire_t *kit_judge_wait(uint32_t kind)
{
    return kit_judge_wait_either(kind, kind);
}

const kit_wire_t *kit_judge_wait_either(uint32_t kind, uint32_t or_kind)
{
    return kit_judge_wait_any(kind, or_kind, or_kind);
}

const kit_wire_t *kit_judge_wait_any(uint32_t kind, uint32_t or_kind, uint32_t or_else)
{
    kit_wire_t *m = buffer();
    for (;;) {
        if (judge_replaying && my_schedule)
            m = (kit_wire_t *)judge_replay_wait(my_channel, m);
        else
            judge_recv(my_channel, m);
        take_clock(m);
        if (m->kind == kind || m->kind == or_kind || m->kind == or_else)
            return m;
        if (my_channel == 0 && m->kind == WIRE_RESULT && judge_in_body)
            judge_explore_ended(m);
        if (my_channel == 0 && m->kind == WIRE_RERUN) {
            char reason[512];
            snprintf(reason, sizeof reason, "%.*s", (int)(m->nbytes < 511 ? m->nbytes : 511), (const char *)m->blob);
            kill(subject, SIGKILL);
            kit_test_run_again(reason, m->nargs > 0 && m->arg[0] != 0);
        }
        kit_judge_violation("a message of kind %u where a reply of kind %u was due", m->kind, kind);
    }
}

const kit_wire_t *kit_judge_call(kit_wire_t *m, uint32_t words, uint32_t bytes)
{
    if (gone)
        subject_ended();
    kit_judge_post(m);
    const kit_wire_t *reply = kit_judge_wait_either(WIRE_REPLY, WIRE_CALLBACK);
    while (reply->kind == WIRE_CALLBACK) { /* the call runs a function of the test's first */
        judge_run_callback(reply);
        reply = kit_judge_wait_either(WIRE_REPLY, WIRE_CALLBACK);
    }
    if (reply->nargs != words || reply->nbytes != bytes)
        kit_judge_violation("a reply of %u words and %u bytes where %u and %u were due", reply->nargs, reply->nbytes,
                            words, bytes);
    return reply;
}

/* ---- handles --------------------------------------------------------------------------
 * The test never holds a pointer of the subject's: each object the subject
 * makes is a handle here, one byte of the judge's own memory. */

struct handle {
    uint64_t value; /* the subject's pointer */
    char *token;    /* what the test holds */
};
static struct handle *handles; /* guarded by channels_lock */
static size_t nhandles, handles_room;

uint64_t kit_judge_handle_out(const void *handle)
{
    if (handle == NULL)
        return 0;
    uint64_t value = (uint64_t)(uintptr_t)handle;
    __real_pthread_mutex_lock(&channels_lock);
    for (size_t i = 0; i < nhandles; i++)
        if (handles[i].token == handle)
            value = handles[i].value;
    __real_pthread_mutex_unlock(&channels_lock);
    return value;
}

void *kit_judge_handle_in(uint64_t value)
{
    if (value == 0)
        return NULL;
    void *token = NULL;
    __real_pthread_mutex_lock(&channels_lock);
    for (size_t i = 0; i < nhandles && token == NULL; i++)
        if (handles[i].value == value)
            token = handles[i].token;
    if (token == NULL && nhandles == handles_room) {
        handles_room = handles_room ? 2 * handles_room : 64;
        handles = realloc(handles, handles_room * sizeof *handles);
    }
    if (token == NULL && handles != NULL && (token = malloc(1)) != NULL)
        handles[nhandles++] = (struct handle){ value, token };
    __real_pthread_mutex_unlock(&channels_lock);
    if (token == NULL)
        kit_judge_violation("a handle the judge had no memory to stand for");
    return token;
}

/* ---- opaque pointers ---------------------------------------------------------------------
 * A pointer the test hands the code under test (a message's body, an item)
 * is only a value to it: kept, given back, never read. Every value the judge
 * sent is remembered; one that comes back must be one of them, or NULL. */

static uint64_t *sent;       /* open addressing; 0 marks a free place; guarded by channels_lock */
static size_t sent_room, sent_count;

static void sent_add(uint64_t value)
{
    for (size_t i = (size_t)(value * 0x9e3779b97f4a7c15ULL) & (sent_room - 1);; i = (i + 1) & (sent_room - 1)) {
        if (sent[i] == value)
            return;
        if (sent[i] == 0) {
            sent[i] = value;
            sent_count++;
            return;
        }
    }
}

static bool sent_has(uint64_t value)
{
    if (sent_room == 0)
        return false;
    for (size_t i = (size_t)(value * 0x9e3779b97f4a7c15ULL) & (sent_room - 1); sent[i] != 0; i = (i + 1) & (sent_room - 1))
        if (sent[i] == value)
            return true;
    return false;
}

/* Twice the room, everything placed again (called with channels_lock held). */
static bool sent_grow(void)
{
    size_t old_room = sent_room;
    uint64_t *old = sent;
    sent_room = old_room ? 2 * old_room : 1024;
    sent = calloc(sent_room, sizeof *sent);
    if (sent == NULL)
        return false;
    sent_count = 0;
    for (size_t i = 0; i < old_room; i++)
        if (old[i] != 0)
            sent_add(old[i]);
    free(old);
    return true;
}

void kit_judge_pointer_out(const void *pointer)
{
    uint64_t value = (uint64_t)(uintptr_t)pointer;
    if (value == 0)
        return;
    __real_pthread_mutex_lock(&channels_lock);
    bool room = 2 * (sent_count + 1) <= sent_room || sent_grow();
    if (room)
        sent_add(value);
    __real_pthread_mutex_unlock(&channels_lock);
    if (!room)
        kit_judge_violation("no memory left to remember the pointers handed out");
}

/* ---- stand-ins ---------------------------------------------------------------------------
 * A pointer the subject gives back that the judge never handed out is a
 * wrong answer of the code under test's - a slot no put wrote, memory never
 * set - and only that: the test sees it and fails as it fails in one
 * process ("another body than the one put"); one handed out, even one
 * given back before, reaches the test as it is, for its checks. It
 * never holds the subject's value itself (an address in the judge's memory
 * of the subject's choosing), but a byte of the judge's own that stands for
 * it: the same byte for the same value, never one the judge handed out. */

enum { STAND_INS_MAX = 1 << 20 };
struct stand_in {
    uint64_t value; /* the subject's pointer; 0 marks a free place */
    char *byte;     /* what the test holds for it */
};
static struct stand_in *stand_ins; /* open addressing; guarded by channels_lock */
static size_t stand_ins_room, stand_ins_count;
struct chunk {
    struct chunk *next; /* the chunk made before (each lives as long as the test: its bytes are held) */
    char bytes[4096];   /* the bytes stand-ins are carved from */
};
static struct chunk *chunk; /* the newest; guarded by channels_lock */
static size_t chunk_used;   /* ... how many of its bytes are taken */
static char last_stand_in; /* for every value past STAND_INS_MAX, or when memory runs out */

static struct stand_in *stand_in_place(struct stand_in *table, size_t room, uint64_t value)
{
    size_t i = (size_t)(value * 0x9e3779b97f4a7c15ULL) & (room - 1);
    while (table[i].value != 0 && table[i].value != value)
        i = (i + 1) & (room - 1);
    return &table[i];
}

/* Twice the room, every stand-in placed again (called with channels_lock held). */
static bool stand_ins_grow(void)
{
    size_t room = stand_ins_room ? 2 * stand_ins_room : 256;
    struct stand_in *table = calloc(room, sizeof *table);
    if (table == NULL)
        return false;
    for (size_t i = 0; i < stand_ins_room; i++)
        if (stand_ins[i].value != 0)
            *stand_in_place(table, room, stand_ins[i].value) = stand_ins[i];
    free(stand_ins);
    stand_ins = table;
    stand_ins_room = room;
    return true;
}

/* The byte that stands for @p value (called with channels_lock held). */
static char *stand_in_for(uint64_t value)
{
    struct stand_in *place = stand_ins_room > 0 ? stand_in_place(stand_ins, stand_ins_room, value) : NULL;
    if (place != NULL && place->value == value)
        return place->byte;
    if (stand_ins_count >= STAND_INS_MAX || (2 * (stand_ins_count + 1) > stand_ins_room && !stand_ins_grow()))
        return &last_stand_in;
    if (chunk == NULL || chunk_used == sizeof chunk->bytes) {
        struct chunk *fresh = malloc(sizeof *fresh);
        if (fresh == NULL)
            return &last_stand_in;
        fresh->next = chunk;
        chunk = fresh;
        chunk_used = 0;
    }
    place = stand_in_place(stand_ins, stand_ins_room, value);
    *place = (struct stand_in){ value, &chunk->bytes[chunk_used++] };
    stand_ins_count++;
    return place->byte;
}

void *kit_judge_pointer_in(const void *pointer)
{
    uint64_t value = (uint64_t)(uintptr_t)pointer;
    if (value == 0)
        return NULL;
    __real_pthread_mutex_lock(&channels_lock);
    void *seen = sent_has(value) ? (void *)(uintptr_t)value : stand_in_for(value);
    __real_pthread_mutex_unlock(&channels_lock);
    return seen;
}

/* An out-value the test left unset goes to the subject as it is, for the
 * call to keep or overwrite, as in one process: under valgrind its bytes
 * are no error of the test's. */
#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define KIT_JUDGE_MEMCHECK 1
#endif
#endif

void kit_judge_defined(const void *bytes, size_t size)
{
#if defined(KIT_JUDGE_MEMCHECK)
    VALGRIND_MAKE_MEM_DEFINED(bytes, size);
#else
    (void)bytes, (void)size;
#endif
}

bool judge_pointer_sent(uint64_t value)
{
    __real_pthread_mutex_lock(&channels_lock);
    bool known = sent_has(value);
    __real_pthread_mutex_unlock(&channels_lock);
    return known;
}
