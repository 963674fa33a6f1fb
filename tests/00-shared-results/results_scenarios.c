/**
 * @file results_scenarios.c
 * @brief Chapter 00's generated scenarios (kit_scenario.h): the list's sequential
 *        model, the calls a scenario draws, and how each is printed.
 *
 * Apart from the test that runs them, so that both sides of a judged test
 * link the same spec: the judge draws and checks with it (its model and its
 * printing), the subject makes its calls on the object under test.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kit_errno.h"
#include "kit_scenario.h"
#include "results.h"

/* ---- Generated scenarios (kit_scenario.h) ------------------------------------------
 * The list's sequential model: its records, oldest first. An append adds
 * its record at the end; a drain of up to N takes the N oldest; a count,
 * once nothing else can move, is the number left. Every load and store of
 * the list is a switch point once it raced, so an append made without the
 * lock loses a record on some schedule, and the count or a drain shows it. */

enum { APPEND, DRAIN, COUNT };
enum { APPENDS = 1, DRAINS }; /* the groups of the shapes */
enum { MAX_RECORDS = 24, DRAIN_MOST = 3 };

struct list_model {
    int count;
    long records[MAX_RECORDS];
};

static void empty_list(long hint, void *state)
{
    (void)hint;
    memset(state, 0, sizeof(struct list_model));
}

static void *make_list(long hint, void *state)
{
    empty_list(hint, state);
    results_t *list = NULL;
    errno = results_create(&list, (size_t)hint);
    return errno == 0 ? list : NULL;
}

static long draw_hint(kit_rng_t *rng)
{
    return (long)kit_rng_below(rng, 3); /* 0, 1 or 2: the list grows during the scenario */
}

static void nothing_to_wake(void *list)
{
    (void)list; /* no call of the list waits */
}

static void destroy_list(void *list)
{
    results_destroy(list);
}

/* How many records a drain asks for: 1 to DRAIN_MOST, from its id. */
static size_t drain_length(long id)
{
    return 1 + (size_t)id % DRAIN_MOST;
}

/* A drain's records packed 6 bits each after a 2-bit count (ids stay below 64). */
static long packed(const long *records, size_t count)
{
    long out = (long)count;
    for (size_t i = 0; i < count; i++)
        out |= (records[i] & 63) << (2 + 6 * i);
    return out;
}

static int run_append(void *list, long id, long timeout_ms, long *out)
{
    (void)timeout_ms;
    *out = 0;
    return results_append(list, id);
}

static int run_drain(void *list, long id, long timeout_ms, long *out)
{
    (void)timeout_ms;
    long records[DRAIN_MOST] = { 0 };
    size_t taken = 0;
    int err = results_drain(list, records, drain_length(id), &taken);
    *out = packed(records, taken <= DRAIN_MOST ? taken : DRAIN_MOST);
    return err;
}

static int run_count(void *list, long id, long timeout_ms, long *out)
{
    (void)id;
    (void)timeout_ms;
    *out = (long)results_count(list);
    return 0;
}

static bool append_takes_effect(void *state, const kit_call_t *call)
{
    struct list_model *m = state;
    if (call->ret != 0 || m->count == MAX_RECORDS)
        return false;
    m->records[m->count++] = call->arg;
    return true;
}

static bool drain_takes_effect(void *state, const kit_call_t *call)
{
    struct list_model *m = state;
    size_t n = drain_length(call->arg) < (size_t)m->count ? drain_length(call->arg) : (size_t)m->count;
    if (call->ret != 0 || call->out != packed(m->records, n))
        return false;
    memmove(&m->records[0], &m->records[n], ((size_t)m->count - n) * sizeof m->records[0]);
    m->count -= (int)n;
    return true;
}

static bool count_takes_effect(void *state, const kit_call_t *call)
{
    const struct list_model *m = state;
    return call->out == m->count;
}

static bool never_waits(const void *state, const kit_call_t *call)
{
    (void)state;
    (void)call;
    return false;
}

static void print_create(long hint, char *text, size_t size)
{
    snprintf(text, size, "results_t *list; results_create(&list, %ld)", hint);
}

static void print_call(const kit_call_t *call, const char *name, char *text, size_t size)
{
    if (call->op == APPEND)
        snprintf(text, size, "results_append(list, %ld)", call->arg);
    else if (call->op == DRAIN)
        snprintf(text, size, "results_drain(list, dest, %zu, &taken)", drain_length(call->arg));
    else
        snprintf(text, size, "%s(list)", name);
}

static void print_out(const kit_call_t *call, char *text, size_t size)
{
    long o = call->out;
    if (call->ret != 0) {
        snprintf(text, size, "-> %s", kit_errno_name(call->ret));
        return;
    }
    if (call->op == COUNT) {
        snprintf(text, size, "-> %ld", o);
        return;
    }
    if (call->op == APPEND) {
        snprintf(text, size, "-> 0");
        return;
    }
    int at = snprintf(text, size, "-> 0, taken %ld:", o & 3);
    for (long i = 0; i < (o & 3) && at < (int)size; i++)
        at += snprintf(text + at, size - (size_t)at, " %ld", o >> (2 + 6 * i) & 63);
}

static void print_state(const void *state, char *text, size_t size)
{
    const struct list_model *m = state;
    int at = snprintf(text, size, m->count ? "the list holds" : "the list is empty");
    for (int i = 0; i < m->count && at < (int)size; i++)
        at += snprintf(text + at, size - (size_t)at, " %ld", m->records[i]);
}

static const kit_op_t list_ops[] = {
    [APPEND] = { .name = "results_append", .weight = 4, .group = APPENDS, .run = run_append,
                 .take_effect = append_takes_effect, .waits = never_waits,
                 .rule = "results_append adds the record at the end: each appended record is drained exactly once" },
    [DRAIN] = { .name = "results_drain", .weight = 2, .group = DRAINS, .run = run_drain,
                .take_effect = drain_takes_effect, .waits = never_waits,
                .rule = "results_drain moves the oldest records out, in the order they were appended: a record is "
                        "either in the list or in some caller's dest, never both and never neither" },
    [COUNT] = { .name = "results_count", .weight = 1, .post = true, .run = run_count,
                .take_effect = count_takes_effect, .waits = never_waits,
                .rule = "results_count: the number of records in the list at one instant during the call" },
};

/* Appenders that all run at once, while a drainer takes in a row; appenders
 * and appends in a row (the list grows under them). */
static const kit_shape_t list_shapes[] = {
    { .sleepers = APPENDS, .mover = DRAINS },
    { .sleepers = APPENDS, .mover = APPENDS },
};

const kit_spec_t list_spec = {
    .object = "list",
    .state_size = sizeof(struct list_model),
    .param = draw_hint,
    .create = make_list,
    .model = empty_list,
    .release = nothing_to_wake,
    .destroy = destroy_list,
    .print_create = print_create,
    .print_call = print_call,
    .print_out = print_out,
    .print_state = print_state,
    .ops = list_ops,
    .nops = (int)(sizeof list_ops / sizeof list_ops[0]),
    .shapes = list_shapes,
    .nshapes = (int)(sizeof list_shapes / sizeof list_shapes[0]),
};

/* The specs of the chapter's scenarios, by which a judged test's subject finds the one its judge names. */
const kit_spec_t *const kit_scenario_specs[] = { &list_spec, NULL };
