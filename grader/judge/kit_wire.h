/**
 * @file kit_wire.h
 * @brief The channel between the judge and the subject: one message a
 *        packet of a SOCK_SEQPACKET socket pair, read into the reader's own
 *        memory, every length bounded before it is used.
 *
 * DESIGN: a message is a fixed head - its kind, an operation number, up to
 * KIT_WIRE_ARGS 64-bit words and the length of what follows - and a blob of
 * at most KIT_WIRE_BLOB bytes. Buffers an operation carries sit one after
 * another in the blob; each one's length is one of the words. Both sides
 * link this file and nothing of the other side: the judge never reads the
 * subject's memory, only the bytes the kernel copied out of a packet.
 */
#ifndef KIT_WIRE_H
#define KIT_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { KIT_WIRE_ARGS = 10, KIT_WIRE_BLOB = 65536 };

/* The channels: channel 0 is the test's main thread's; each other thread of
 * the judge takes one of its own below KIT_WIRE_MIRROR_FIRST. From there up
 * to KIT_WIRE_CONTROL, a thread of the code under test's own that calls a
 * function of the test's back (a pool's worker running a task) takes one:
 * the judge's thread that mirrors it runs the function there. On
 * KIT_WIRE_CONTROL the subject says which it took (WIRE_MIRROR): 127 of
 * the submission's threads may call the test's functions at once (a test
 * process may run 256 tasks in all, and each such thread has its mirror).
 * The subject finds them at descriptors KIT_WIRE_FD, KIT_WIRE_FD + 1, ... */
enum { KIT_WIRE_CHANNELS = 160, KIT_WIRE_FD = 40, KIT_WIRE_MIRROR_FIRST = 32, KIT_WIRE_CONTROL = KIT_WIRE_CHANNELS - 1 };

/* The subject's exit status when a test stopped in it (a failed schedule,
 * a misuse) after meeting a data race: the judge can no longer ask it. */
enum { KIT_WIRE_EXIT_RACED = 42 };

/** What a message is. Judge to subject first, then subject to judge. */
enum kit_wire_kind {
    WIRE_START = 1,   /* ch 0: run the test arg[0]=scheduled, arg[1]=seed; blob: its name */
    WIRE_CALL,        /* op: a function of the chapter's table; args and buffers per its row */
    WIRE_HOOK,        /* op: a harness hook (enum kit_hook) */
    WIRE_SYNC,        /* op: a pthread call of the test's own code, on a schedule (enum kit_sync) */
    WIRE_EXPLORE,     /* ch 0: explore; args: the options, whether the body is the test's own, and which of the test's
                         explorations it is (0: its first); blob: test\0strategy */
    WIRE_BODY_DONE,   /* the body of an exploration returned */
    WIRE_EXIT,        /* a thread of the test returned: its stand-in ends */
    WIRE_END,         /* ch 0: the test is over */
    WIRE_CALLBACK_DONE, /* the test's function a WIRE_CALLBACK named returned: arg[0] what it returned,
                           then what it stored through its out-pointers */
    WIRE_REPLY = 32,  /* args: the return value, then out-values; blob: out-buffers */
    WIRE_GO,          /* a stand-in runs: the judge's thread starts (or the test body does) */
    WIRE_BODY,        /* ch 0: run the exploration's body once (arg[0]: the schedule) */
    WIRE_RESULT,      /* ch 0: an exploration ended; args: passed, gave_up, schedules; blob: message\0token */
    WIRE_RERUN,       /* ch 0: the test cannot run on a schedule; blob: why */
    WIRE_HISTORY_SCENARIO, /* ch 0: explore a generated scenario in the subject; args: its number, the free
                              scenarios' count, the test's line, then the options as WIRE_EXPLORE's;
                              blob: test\0file\0strategy\0the spec's name */
    WIRE_HISTORY_BATCH,    /* ch 0, subject to judge: arg[0] schedules' histories (kit_wire_history_t,
                              then its calls), one after another in the blob */
    WIRE_TRANSCRIPT_BATCH, /* ch 0, exploring: the next entries of the schedules' transcripts (below) */
    WIRE_TRANSCRIPT_REPEAT, /* a transcript's entry, in place of a schedule's WIRE_BODY and all after it: the
                               schedule's entries are, byte for byte, those of one sent whole before */
    WIRE_CALLBACK,    /* in place of a call's reply: the code under test called a function the test handed it;
                         op: its type (the table's callback rows); arg[0]: its id; then its arguments. The
                         judge runs it on the calling thread's test thread, serves the calls it makes, and
                         answers WIRE_CALLBACK_DONE */
    WIRE_MIRROR,      /* on KIT_WIRE_CONTROL: a thread of the code under test's own took channel arg[0] (on a
                         schedule if arg[1]) to call the test's functions back; blob: its name. It ends with
                         WIRE_EXIT on that channel */
};

/* A function of the test's, as the channel names it: KIT_WIRE_CALLBACK | its
 * id (below KIT_WIRE_CALLBACKS), never its address. A word without the bit
 * is a function of the code under test's (a built-in policy's), which the
 * judge only keeps and gives back. */
#define KIT_WIRE_CALLBACK (1ULL << 63)
enum { KIT_WIRE_CALLBACKS = 32 };
/** The most words a WIRE_CALLBACK_DONE carries after what the function
 *  returned: what it stored through its out-pointers (a `void **`). */
enum { KIT_WIRE_CALLBACK_MORE = 2 };

/** One schedule's history of a generated scenario (WIRE_HISTORY_BATCH):
 *  event numbers count invocations and responses in the schedule's order. */
typedef struct {
    uint8_t ncalls;          /**< the scenario's calls, each a kit_wire_history_call_t after this */
    uint8_t released;        /**< 1: after the release and the joins; 0: a check failed before */
    uint8_t events;          /**< events in all */
    uint8_t quiet_events;    /**< ... when nothing else could move (before the calls after) */
    uint8_t checked_events;  /**< ... when the history was checked (after them) */
    uint8_t unused[3];
} kit_wire_history_t;

/** One call of a history, in the scenario's order of calls. */
typedef struct {
    int64_t out;             /**< what it gave back */
    int64_t started_ns, ended_ns; /**< the schedule's time at its start and end */
    int32_t ret;             /**< what it returned */
    int8_t invoked, responded; /**< its events; -1: none */
    uint8_t skipped;         /**< a call before the threads left out: alone, it would wait for ever */
    uint8_t unused;
} kit_wire_history_call_t;

/** Flags of a message. WIRE_TOUCHED (judge to subject): the test's thread
 *  recorded a history event (kit_sched_touch_history) since its last message:
 *  the stand-in records it first. WIRE_CLOCKED (subject to judge): the
 *  message carries the schedule's virtual time, which is the time until the
 *  test's thread sends again - nothing else runs meanwhile. */
enum { WIRE_TOUCHED = 1, WIRE_CLOCKED = 2 };

/** One message, as it is read into the reader's memory. */
typedef struct {
    uint32_t kind, op;     /**< enum kit_wire_kind; the operation */
    uint32_t nargs;        /**< words used in arg */
    uint32_t nbytes;       /**< bytes used in blob */
    uint32_t flags;        /**< WIRE_TOUCHED, WIRE_CLOCKED */
    uint32_t unused;
    uint64_t clock[2];     /**< WIRE_CLOCKED: the subject's CLOCK_MONOTONIC and CLOCK_REALTIME, in ns */
    uint64_t arg[KIT_WIRE_ARGS];
    unsigned char blob[KIT_WIRE_BLOB];
} kit_wire_t;

/** Start @p m as a message of @p kind and @p op, with no words and no bytes. */
void kit_wire_begin(kit_wire_t *m, uint32_t kind, uint32_t op);
/** Add a word; false if the message has no room for it. */
bool kit_wire_word(kit_wire_t *m, uint64_t word);
/** Add @p size bytes to the blob (and no word); false if they do not fit. */
bool kit_wire_bytes(kit_wire_t *m, const void *bytes, size_t size);
/** Send it whole as one packet: 0 or an errno value. */
int kit_wire_send(int fd, const kit_wire_t *m);
/** Receive one packet into @p m: 0, EPIPE at the other side's end, or EPROTO
 *  for a packet that is not a well-formed message (too long, cut, lengths
 *  that do not add up). */
int kit_wire_recv(int fd, kit_wire_t *m);

/** A reader of a message's blob, segment by segment, in order. */
typedef struct {
    const kit_wire_t *m;
    size_t at;
} kit_wire_reader_t;
/** The next @p size bytes of the blob, or NULL if fewer are left. */
const void *kit_wire_take(kit_wire_reader_t *r, size_t size);

/** The harness's hooks a test calls, which only the subject can answer
 *  (WIRE_HOOK). What they say is the subject's word: docs/grading.md names
 *  the checks that rest on it. */
enum kit_hook {
    HOOK_FAIL_ALLOCATION = 1, HOOK_LIVE_ALLOCATIONS, HOOK_ALLOCATION_CALLS, HOOK_LEAK_PLACES,
    HOOK_FAIL_THREAD_CREATE, HOOK_SPURIOUS_WAKEUPS, HOOK_WAKEUPS_EVERY, HOOK_SPURIOUS_COUNT,
    HOOK_WAITING_THREADS, HOOK_AWAIT_WAITING, HOOK_LOCK_DELAYS, HOOK_CHAOS,
    HOOK_SCHED_WAKEUPS, HOOK_FUTILE_WAKEUPS, HOOK_WOKEN_SPURIOUSLY, HOOK_PRINT_WAKEUPS,
    HOOK_SAW_RACE, HOOK_PRINT_RACE, HOOK_AWAIT_SLEEPERS, HOOK_AWAIT_QUIET, HOOK_TOUCH_HISTORY,
    HOOK_REPLAY_SCENARIO, HOOK_DUMP_STACKS, HOOK_CRASH_CONTEXT, HOOK_CLOCK_NOTE, HOOK_EXPLORE_FAIL,
    HOOK_SCHEDULE, HOOK_LAST_CALL, HOOK_THREADS_NAMED, HOOK_COUNT
};
/** The test's own pthread calls on a schedule (WIRE_SYNC): the subject
 *  makes each on a stand-in object of its own, under its scheduler, so
 *  that the test's threads wait as the schedule says. */
enum kit_sync {
    SYNC_CREATE = 1, SYNC_JOIN, SYNC_DETACH, SYNC_MUTEX_LOCK, SYNC_MUTEX_TRYLOCK, SYNC_MUTEX_UNLOCK,
    SYNC_COND_WAIT, SYNC_COND_SIGNAL, SYNC_COND_BROADCAST, SYNC_FORGET, SYNC_YIELD, SYNC_SLEEP, SYNC_CLOCK,
    SYNC_NAME, SYNC_COUNT
};

/** A transcript: an exploration whose body ran in the subject, each of its
 *  schedules written down as the messages the judge's threads and their
 *  stand-ins would have exchanged had the body run in the judge, in the
 *  order the schedule made them. An entry is a message and the channel it
 *  went on: a request (judge to subject) or an answer (subject to judge).
 *  Words that name the test's own mutexes and conditions (kit_wire_names())
 *  are written as the order each was first named in since the body began,
 *  so that both sides' copies of the body, whose objects lie at different
 *  addresses, name them alike. */
typedef struct {
    uint32_t channel;  /**< the test's thread: 0 its main thread */
    uint32_t answer;   /**< 1: subject to judge; 0: a request */
    kit_wire_t *m;     /**< the message (the reader's own copy) */
} kit_wire_entry_t;
/** Add an entry to @p batch: false if it has no room left for it. */
bool kit_wire_entry_put(kit_wire_t *batch, uint32_t channel, bool answer, const kit_wire_t *m);
/** Read the next entry of @p r into @p out->m: 1, 0 at the batch's end, -1
 *  for bytes that are not an entry (lengths that do not add up). */
int kit_wire_entry_take(kit_wire_reader_t *r, kit_wire_entry_t *out);
/** Which words of a chapter's messages carry an item of the test's - a
 *  pointer it hands the code under test, which gives it back or hands it to
 *  a function of the test's: a bit per word (generated with the chapter's
 *  proxies, grader/judge/kit-proxies). Items are named in a transcript as
 *  mutexes are: the two copies of a test hold them at different addresses. */
typedef struct {
    int nops, ntypes;
    const uint32_t *call;     /**< per op: a WIRE_CALL's words */
    const uint32_t *reply;    /**< per op: its WIRE_REPLY's words */
    const uint32_t *callback; /**< per callback type: a WIRE_CALLBACK's words */
    const uint32_t *done;     /**< per callback type: its WIRE_CALLBACK_DONE's (what a `void *` one returned, its out-pointers') */
} kit_wire_items_t;
/** The words of @p m that name a mutex, a condition or an item of the
 *  test's, a bit per word (@p items: the chapter's table, or NULL). */
uint32_t kit_wire_names(const kit_wire_t *m, const kit_wire_items_t *items);
/** The names a transcript's body has given so far: each value, in the order
 *  first seen, and a hash table of them (a stress test names thousands). */
enum { KIT_WIRE_NAMES = 1 << 16 };
typedef struct {
    uint64_t value[KIT_WIRE_NAMES];
    uint32_t at[KIT_WIRE_NAMES];       /* each value's place in slot */
    uint32_t slot[2 * KIT_WIRE_NAMES]; /* 1 + a value's index; 0: free */
    int count;
} kit_wire_namer_t;
/** A body begins: no name given yet. */
void kit_wire_namer_reset(kit_wire_namer_t *namer);
/** The name of @p value (1, 2, ...), given now if it has none; 0 once @p namer is full. */
uint64_t kit_wire_name(kit_wire_namer_t *namer, uint64_t value);
/** Write the words @p names of @p m as the order each value was first named
 *  in (kit_wire_name). */
void kit_wire_rename(kit_wire_namer_t *namer, kit_wire_t *m, uint32_t names);

#endif
