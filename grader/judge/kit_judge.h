/**
 * @file kit_judge.h
 * @brief The judge's engine, as the generated proxies and the judge's own
 *        files see it: the test's calls into the chapter's API go out as
 *        messages to the subject, and each answer is read, bounded and
 *        checked here before the test sees it.
 *
 * DESIGN: the judge is the test program a grade runs: the test's sources,
 * the harness, the generated proxies of the chapter's API and this engine.
 * It links no object of a submission. It starts the subject - the
 * submission's code, the explorer, the wrappers and a server loop - as a
 * process of its own, gives it one SOCK_SEQPACKET channel per thread of
 * the test and nothing else (not the verdict's descriptors), and alone
 * moves the verdict's tokens. Every thread of the test has a stand-in in
 * the subject that makes its calls; on a schedule, exactly one of the two
 * runs at a time, so the test follows the subject's schedule step by step.
 */
#ifndef KIT_JUDGE_H
#define KIT_JUDGE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "kit_wire.h"

/** This thread's message, begun as @p kind / @p op (its channel is taken,
 *  and the subject started, on first use). */
kit_wire_t *kit_judge_begin(uint32_t kind, uint32_t op);
/** Add a word; the test fails if the message is full (the kit's table is wrong). */
void kit_judge_word(kit_wire_t *m, uint64_t word);
/** Add @p size bytes of @p what; the test fails, saying so, if they do not fit. */
void kit_judge_bytes(kit_wire_t *m, const void *bytes, size_t size, const char *what);
/** Send @p m and wait for its reply, which must hold exactly @p words words
 *  and @p bytes bytes: anything else is a protocol violation. */
const kit_wire_t *kit_judge_call(kit_wire_t *m, uint32_t words, uint32_t bytes);
/** The subject's pointer a handle the judge handed out stands for (0 for
 *  NULL; a pointer the judge never handed out goes as it is). */
uint64_t kit_judge_handle_out(const void *handle);
/** The handle that stands for the subject's pointer @p value (NULL for 0). */
void *kit_judge_handle_in(uint64_t value);
/** Under valgrind: @p size bytes at @p bytes count as set (an out-value the test left unset). */
void kit_judge_defined(const void *bytes, size_t size);
/** Remember a pointer the test hands the code under test (never read there). */
void kit_judge_pointer_out(const void *pointer);
/** What the test holds for a pointer the subject gave back: NULL, or one
 *  handed out, as it is; any other (a wrong answer of the code under
 *  test's, not a forgery) a byte of the judge's own that stands for it,
 *  the same for the same value. */
void *kit_judge_pointer_in(const void *pointer);
/** Fail the test for a message the subject should never have sent, and
 *  flag it: "[ integrity ]" in the log. */
_Noreturn void kit_judge_violation(const char *format, ...) __attribute__((format(printf, 1, 2)));
/** End the test failed, by a check of the judge's own, without a word more
 *  from the subject (which is stopped): no flag, an honest failure. */
_Noreturn void kit_judge_end_failed(void);
/** Whether this thread of the test runs on a schedule (its pthread calls go to the subject). */
bool kit_judge_on_schedule(void);
/** Whether the subject is gone (its end was reported): hooks answer with defaults. */
bool kit_judge_subject_gone(void);
/** The subject ended saying its stopped test met a data race. */
bool kit_judge_subject_raced(void);
/** Send one message that needs no reply (the test's end, a thread's exit). */
void kit_judge_post(kit_wire_t *m);
/** Wait on this thread's channel for a message of @p kind (handling what the
 *  subject may send first: an exploration's end, a re-run). */
const kit_wire_t *kit_judge_wait(uint32_t kind);
/** kit_judge_wait() for either of two kinds. */
const kit_wire_t *kit_judge_wait_either(uint32_t kind, uint32_t or_kind);
/** kit_judge_wait() for any of three kinds. */
const kit_wire_t *kit_judge_wait_any(uint32_t kind, uint32_t or_kind, uint32_t or_else);

/* ---- functions of the test's handed to the code under test (kit_judge_callback.c) ---- */
/** A callback type of the chapter's table, as the generated proxies run it. */
typedef struct {
    const char *name;  /**< the type's name and what it stands for, for a failure's words */
    /** Run the test's function a WIRE_CALLBACK named, from its words (copied);
     *  what it stored through its out-pointers into @p more (#nmore words). */
    uint64_t (*run)(const uint64_t *arg, uint32_t nargs, const unsigned char *blob, uint32_t nbytes, uint64_t *more);
    /** The judge's forwarder in @p slot: a function of this type the test
     *  holds for one of the code under test's, which calls it there. */
    uint64_t (*forwarder)(int slot);
    /** Words its WIRE_CALLBACK_DONE carries after what it returned: at most KIT_WIRE_CALLBACK_MORE. */
    uint32_t nmore;
} kit_judge_callback_type_t;
extern const kit_judge_callback_type_t kit_judge_callback_types[];
extern const int kit_judge_ncallback_types;
/** The word that names the function @p fn of callback type @p type on the
 *  channel: an id for a test's function, the subject's word for one of its own. */
uint64_t kit_judge_function_out(int type, uint64_t fn);
/** The function a reply's word names: a test's function by its id, or a
 *  stand-in of the judge's for one of the code under test's; a violation
 *  for an id the judge never handed out. */
uint64_t kit_judge_function_in(int type, uint64_t word, const char *call);
/** The subject's word for the function of the code under test's behind forwarder @p slot of @p type. */
uint64_t kit_judge_their_word(int type, int slot);
/** The test's function a WIRE_CALLBACK's id names (of @p type): a violation unless the judge handed it out. */
uint64_t kit_judge_callback_function(int type, uint64_t word);
/** An item a callback was handed: one the test gave the code under test, or
 *  NULL; any other fails the test, in words (an honest bug can do it). */
void *kit_judge_callback_pointer(uint64_t word, const char *what);
/** A struct's pointer field, as the channel says it: one the test handed
 *  out (remembered), or the word of one the code under test put in a struct
 *  it gave back (its stand-in here). */
uint64_t kit_judge_opaque_out(const void *pointer);
/** A struct's pointer field the subject gave back: the test's own pointer,
 *  or a stand-in of the judge's for a value of the code under test's. */
void *kit_judge_opaque_in(uint64_t word);
/** An item a call gave back (out_pointer): one the test handed out, or
 *  NULL; any other fails the test in words, as an honest bug can give one
 *  back (a slot read that no put wrote). */
void kit_judge_item_in(uint64_t word, const char *call);
/** A struct the test handed by pointer to the call in progress on this
 *  thread: pushed as the call is made (the word that names it on the
 *  channel: its place among those of the calls in progress, never its
 *  address), popped once its reply came. */
uint64_t kit_judge_ref_push(const void *ref);
void kit_judge_ref_pop(void);
/** A struct pointer a callback was handed, from its two words (0: NULL;
 *  1: the test's own, the @p value-th of the calls in progress on this thread; 2: one
 *  the code under test made up): the test's pointer, or the test fails. */
const void *kit_judge_ref_in(uint64_t state, uint64_t value, const char *what);
/** A body begins: no struct is in a call in progress (a schedule may have ended in one). */
void judge_refs_forget(void);
/** Run the WIRE_CALLBACK @p m on this thread and answer it. */
void judge_run_callback(const kit_wire_t *m);
/** Whether the test handed the code under test the pointer @p value (kit_judge.c). */
bool judge_pointer_sent(uint64_t value);

/* ---- between the judge's own files ---------------------------------------------- */
/** This thread's channel, -1 if it has none yet. */
int judge_channel(void);
void judge_set_thread(int channel, bool on_schedule);
int judge_take_channel(void);
void judge_release_channel(int channel);
/** A history event of this thread's, sent with its next message (kit_wire.h). */
void judge_touch(void);
/** The schedule's time on @p clock as the last message said; false if it said none. */
bool judge_clock(clockid_t clock, struct timespec *now);
/** A thread of the test ends: its message buffer goes. */
void judge_thread_done(void);
/** The subject started with @p scheduled (on first use of the channel, scheduled is false). */
void judge_start_subject(const char *test, bool scheduled, uint64_t seed);
/** An exploration's end arrived on channel 0 while its body ran: jump out. */
void judge_explore_ended(const kit_wire_t *result);
/** Set by the exploration proxy while its body runs. */
extern bool judge_in_body;
/** Receive the next message on @p channel into @p m; the subject's end or a
 *  malformed packet ends the test here. */
void judge_recv(int channel, kit_wire_t *m);
/** The same, for a thread between calls: false at the subject's end (not
 *  this thread's to report). */
bool judge_recv_idle(int channel, kit_wire_t *m);
/** This thread's next message, of @p kind or @p or_kind, between calls: NULL
 *  at the subject's end; any other kind is a protocol violation. */
const kit_wire_t *judge_wait_idle(uint32_t kind, uint32_t or_kind);
/** The place @p site of this program as an offset in its file, which the
 *  subject's reports name as the test's line (0: unknown; kit_judge_sync.c). */
uint64_t judge_offset_of(const void *site);
/** The test's line that made this thread's last call of the chapter's API
 *  (noted by the generated proxies), for kit_last_call(). */
void kit_judge_note_site(const void *site);
/** Start the thread that mirrors the code under test's own threads (kit_judge_mirror.c). */
void judge_mirrors_start(void);
/** A transcript's entry opens the steps of a thread of the code under test's
 *  own on @p channel: its mirror starts (on contexts, at its first turn). */
void judge_mirror_replayed(uint32_t channel);
/** The replay hands over to @p channel's context: a mirror not started yet starts. */
void judge_mirror_before_turn(int channel);
/** A body begins: no mirror waits to start. */
void judge_mirrors_forget(void);

/** What the judge keeps per thread of the test (kit_judge.c). */
struct judge_thread_state {
    int channel;
    bool schedule, touch, clocked;
    uint64_t clock[2];
    kit_wire_t *message;
};
/** The calling thread's, saved into @p state. */
void judge_thread_state_save(struct judge_thread_state *state);
/** The calling thread's, from @p state. */
void judge_thread_state_load(const struct judge_thread_state *state);
/** A new thread's on @p channel (a message buffer of @p state's kept). */
void judge_thread_state_fresh(struct judge_thread_state *state, int channel);

/* ---- the replay's threads as contexts on one OS thread (kit_judge_contexts.c) ---- */
/** Whether contexts may be used (not under a sanitizer or valgrind, nor KIT_JUDGE_THREADS). */
bool judge_contexts_usable(void);
/** Whether the test's threads run as contexts now (between begin and end). */
bool judge_in_context(void);
/** The calling main thread becomes channel 0's context; the threads the
 *  test starts from now on are contexts (judge_context_start). */
void judge_contexts_begin(void);
void judge_contexts_end(void);
/** Make @p channel's context, to run @p main(@p arg) once switched to; false: no memory. */
bool judge_context_start(int channel, void (*main)(void *), void *arg);
/** Let @p channel's context run; this one goes on once switched to again.
 *  A channel with no context running is a protocol violation. */
void judge_context_yield(int channel);

/* ---- an exploration's transcripts, replayed (kit_judge_replay.c) ---------------- */
/** Set while the test's threads on a schedule take their answers from a transcript. */
extern bool judge_replaying;
/** Replay from the batch @p first on. */
void judge_replay_begin(const kit_wire_t *first);
void judge_replay_end(void);
/** This thread's request @p m, met by the transcript (its words may be renamed). */
void judge_replay_post(int channel, kit_wire_t *m);
/** This thread's next answer, copied into @p into; or, on channel 0 between
 *  bodies, the exploration's end. */
const kit_wire_t *judge_replay_wait(int channel, kit_wire_t *into);
/** A graded test's transcript, met to its end: the schedule's end (WIRE_RESULT or WIRE_RERUN). */
const kit_wire_t *judge_replay_finish(void);
/** Whether @p word stands for a value the code under test made up (the judge,
 *  replaying: its checks are the test's own); the subject's copy: never. */
bool judge_value_made_up(uint64_t word);
/** A check of the judge's copy began to fail (its words are being printed). */
void judge_replay_check_fails(void);
/** Replaying a written-down test: its failed checks' words were printed by the subject's copy. */
bool kit_check_words_printed(void);

#endif
