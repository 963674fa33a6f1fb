/**
 * @file kit_transcript.h
 * @brief An exploration's body run in the subject and written down for the
 *        judge (kit_transcript.c), and the test's own pthread calls in the
 *        subject's copy of the test, recorded as the judge would send them
 *        (kit_transcript_sync.c).
 */
#ifndef KIT_TRANSCRIPT_H
#define KIT_TRANSCRIPT_H

#include <stdbool.h>

#include "kit_sched.h"
#include "kit_wire.h"

/** The copy's tests, registered (before the first request). */
void kit_transcript_register(void);
/** Explore @p test of the copy (its kit_explore() call of that @p number, 0 its first), with the judge's @p options, and send the
 *  transcripts and the result: false if the copy has no such test. */
bool kit_transcript_explore(const char *test, int number, const kit_explore_t *options);
/** The copy's kit_explore(). */
void kit_transcript_explore_run(const char *test, const char *file, int line, const kit_explore_t *options,
                                void (*body)(void *ctx), void *ctx);

/** Run graded test @p test of the copy on its one schedule, written down
 *  and sent: false if the copy does not write it down (the chapter's
 *  chNN_written); else *@p passed and @p reason as kit_sched_run_test's. */
bool kit_transcript_graded(const char *test, uint64_t seed, char *reason, size_t size, bool *passed);
/** The subject forgets every object of the test's before it begins (kit_serve_hooks.c). */
void kit_serve_forget_all(void);

/** Set while a schedule's body is written down. */
extern bool kit_transcript_on;
/** The next entry: @p m on @p channel, a request or an answer (a request's
 *  names of the test's objects are renamed in place). */
void kit_transcript_put(int channel, bool answer, kit_wire_t *m);
/** kit_transcript_put() with the words @p names of @p m written as names
 *  (a call's answer: the items its row gives back). */
void kit_transcript_put_named(int channel, bool answer, kit_wire_t *m, uint32_t names);
/** A function of the test's (@p id, of callback @p type) called by the code
 *  under test on a thread of the copy's while written down: its message,
 *  for the generated stand-in to add the arguments to ... */
kit_wire_t *kit_transcript_callback_begin(uint32_t type, uint64_t id);
/** ... then written down, the copy's function run, its return (and the
 *  @p nmore words it stored through its out-pointers, into @p more) written
 *  down and returned. */
uint64_t kit_transcript_callback(kit_wire_t *m, uint64_t *more, uint32_t nmore);
/** Send what is written down so far (a failure ends the subject next). */
void kit_transcript_flush(void);
/** The calling thread's channel while a body is written down, else -1. */
int kit_transcript_channel(void);
/** A thread of the code under test's own, calling the test's functions back
 *  on a schedule written down: its mirror channel, taken now (-1: none free). */
int kit_transcript_take_mirror(void);
/** Such a thread ends: its end is written down; false if it is none. */
bool kit_transcript_mirror_ended(void);
/** A body begins on the calling thread, channel 0: every other channel is free. */
void kit_transcript_begin_body(void);
/** A thread of the copy ends: its message buffers go. */
void kit_transcript_thread_done(void);

/** The calling thread enters (@p delta 1) or leaves (-1) a wait of the
 *  harness's gates and latches (kit_wrap.c): for the copy's own gates,
 *  which the wrappers cannot reach (kit_transcript_gate.c). */
void kit_harness_waits(int delta);

/** The subject's answer to an exploration (kit_serve.c). */
void kit_serve_result(bool passed, const kit_explore_result_t *result);

#endif
