/**
 * @file kit_transcript_gate.c
 * @brief The gates and latches of a written-down test's copy, whose waits
 *        are the harness's own, as in one process.
 *
 * In one process a test's calls of kit_gate_wait() and the rest reach the
 * subject's wrappers (kit_wrap.c; --wrap in the Makefile's TEST_WRAPS),
 * which tell the scheduler that the waits inside are the harness's: never
 * woken spuriously, never counted, never perturbed. The copy of a test
 * that is written down links its own kit_gate.c, private to it, where
 * --wrap cannot reach; its functions are renamed there (the Makefile's
 * WRITTEN_GATE_RENAMES) and these stand in for them, doing what the
 * wrappers do - or the copy would run another schedule than one process
 * (a latch's timed wait woken early there is a choice one process never
 * makes).
 */
#define _GNU_SOURCE
#include "kit_gate.h"
#include "kit_transcript.h"

void kit_transcript_gate_wait(kit_gate_t *gate);
int kit_transcript_gate_await_arrivals(kit_gate_t *gate, size_t count, long timeout_ms);
void kit_transcript_gate_destroy(kit_gate_t *gate);
int kit_transcript_latch_wait(kit_latch_t *latch, long timeout_ms);
void kit_transcript_latch_destroy(kit_latch_t *latch);

void kit_gate_wait(kit_gate_t *gate)
{
    kit_harness_waits(1);
    kit_transcript_gate_wait(gate);
    kit_harness_waits(-1);
}

int kit_gate_await_arrivals(kit_gate_t *gate, size_t count, long timeout_ms)
{
    kit_harness_waits(1);
    int err = kit_transcript_gate_await_arrivals(gate, count, timeout_ms);
    kit_harness_waits(-1);
    return err;
}

void kit_gate_destroy(kit_gate_t *gate)
{
    kit_harness_waits(1);
    kit_transcript_gate_destroy(gate);
    kit_harness_waits(-1);
}

int kit_latch_wait(kit_latch_t *latch, long timeout_ms)
{
    kit_harness_waits(1);
    int err = kit_transcript_latch_wait(latch, timeout_ms);
    kit_harness_waits(-1);
    return err;
}

void kit_latch_destroy(kit_latch_t *latch)
{
    kit_harness_waits(1);
    kit_transcript_latch_destroy(latch);
    kit_harness_waits(-1);
}
