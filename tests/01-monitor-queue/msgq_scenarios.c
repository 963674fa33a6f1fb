/**
 * @file msgq_scenarios.c
 * @brief Chapter 01's generated scenarios (kit_scenario.h): the queue's sequential
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
#include "msgq.h"

/* ---- Generated scenarios (kit_scenario.h) ------------------------------------------
 * The queue's sequential model: the messages in it, oldest first, and
 * whether it is closed. A call takes effect if the model allows the result
 * it returned; it must wait exactly when the model says so. */

struct queue_model {
    int capacity, count;
    bool closed;
    long ids[16];
};

static long draw_capacity(kit_rng_t *rng)
{
    return 1 + (long)kit_rng_below(rng, 2);
}

static void queue_of(long capacity, void *state)
{
    struct queue_model *m = state;
    *m = (struct queue_model){ .capacity = (int)capacity };
}

static void *make_queue(long capacity, void *state)
{
    queue_of(capacity, state);
    msgq_t *q = NULL;
    errno = msgq_create(&q, (size_t)capacity);
    return errno == 0 ? q : NULL;
}

static void close_queue(void *q)
{
    msgq_close(q);
}

static void destroy_queue(void *q)
{
    msgq_destroy(q);
}

static int run_put(void *q, long id, long timeout_ms, long *out)
{
    (void)timeout_ms;
    (void)out;
    return msgq_put(q, (msg_t){ .id = (int)id });
}

static bool put_takes_effect(void *state, const kit_call_t *call)
{
    struct queue_model *m = state;
    if (call->ret == ECANCELED)
        return m->closed;
    if (call->ret != 0 || m->closed || m->count == m->capacity)
        return false;
    m->ids[m->count++] = call->arg;
    return true;
}

static bool put_waits(const void *state, const kit_call_t *call)
{
    (void)call;
    const struct queue_model *m = state;
    return !m->closed && m->count == m->capacity;
}

static int run_take(void *q, long arg, long timeout_ms, long *out)
{
    (void)arg;
    (void)timeout_ms;
    msg_t msg = { .id = -1 };
    int err = msgq_take(q, &msg);
    *out = msg.id;
    return err;
}

static bool take_takes_effect(void *state, const kit_call_t *call)
{
    struct queue_model *m = state;
    if (call->ret == ECANCELED)
        return m->closed && m->count == 0;
    if (call->ret != 0 || m->count == 0 || m->ids[0] != call->out)
        return false;
    memmove(&m->ids[0], &m->ids[1], (size_t)(m->count - 1) * sizeof m->ids[0]);
    m->count--;
    return true;
}

static bool take_waits(const void *state, const kit_call_t *call)
{
    (void)call;
    const struct queue_model *m = state;
    return !m->closed && m->count == 0;
}

static int run_close(void *q, long arg, long timeout_ms, long *out)
{
    (void)arg;
    (void)timeout_ms;
    (void)out;
    return msgq_close(q);
}

static bool close_takes_effect(void *state, const kit_call_t *call)
{
    struct queue_model *m = state;
    m->closed = true;
    return call->ret == 0;
}

static bool never_waits(const void *state, const kit_call_t *call)
{
    (void)state;
    (void)call;
    return false;
}

static int run_size(void *q, long arg, long timeout_ms, long *out)
{
    (void)arg;
    (void)timeout_ms;
    *out = (long)msgq_size(q);
    return 0;
}

static bool size_takes_effect(void *state, const kit_call_t *call)
{
    const struct queue_model *m = state;
    return call->out == m->count;
}

static void print_create(long capacity, char *text, size_t size)
{
    snprintf(text, size, "msgq_t *q; msgq_create(&q, %ld)", capacity);
}

enum { PUT, TAKE, CLOSE, SIZE };
enum { PUTS = 1, TAKES }; /* the groups of the shapes */

static void print_call(const kit_call_t *call, const char *name, char *text, size_t size)
{
    if (call->op == PUT)
        snprintf(text, size, "msgq_put(q, m%ld)", call->arg);
    else if (call->op == TAKE)
        snprintf(text, size, "msgq_take(q, &m)");
    else
        snprintf(text, size, "%s(q)", name);
}

static void print_out(const kit_call_t *call, char *text, size_t size)
{
    if (call->ret != 0)
        snprintf(text, size, "-> %s", kit_errno_name(call->ret));
    else if (call->op == TAKE)
        snprintf(text, size, "-> 0, m = m%ld", call->out);
    else if (call->op == SIZE)
        snprintf(text, size, "-> %ld", call->out);
    else
        snprintf(text, size, "-> 0");
}

static void print_state(const void *state, char *text, size_t size)
{
    const struct queue_model *m = state;
    int at = snprintf(text, size, "the queue %s", m->closed ? "is closed and " : "");
    if (m->count == 0)
        snprintf(text + at, size - (size_t)at, "is empty");
    else if (m->count == m->capacity)
        at += snprintf(text + at, size - (size_t)at, "is full, holding");
    else
        at += snprintf(text + at, size - (size_t)at, "holds");
    for (int i = 0; i < m->count && at < (int)size; i++)
        at += snprintf(text + at, size - (size_t)at, " m%ld", m->ids[i]);
}

static const kit_op_t queue_ops[] = {
    [PUT] = { .name = "msgq_put", .group = PUTS, .weight = 4, .run = run_put, .take_effect = put_takes_effect, .waits = put_waits,
              .rule = "msgq_put waits while the queue is full, then appends: 0; ECANCELED if the queue is closed, "
                      "before or during the wait" },
    [TAKE] = { .name = "msgq_take", .group = TAKES, .weight = 4, .run = run_take, .take_effect = take_takes_effect,
               .waits = take_waits,
               .rule = "msgq_take waits while the queue is empty, then removes the oldest message; ECANCELED once the"
                       " queue is closed and empty" },
    [CLOSE] = { .name = "msgq_close", .weight = 1, .once = true, .run = run_close, .take_effect = close_takes_effect,
                .waits = never_waits,
                .rule = "msgq_close wakes every waiting thread; later puts fail, takes drain what is left and then "
                        "fail" },
    [SIZE] = { .name = "msgq_size", .weight = 1, .run = run_size, .take_effect = size_takes_effect,
               .waits = never_waits, .post = true,
               .rule = "msgq_size returns the number of messages queued at one instant during the call" },
};

/* Both sides asleep on the one condition variable: a full queue of 2 or 3,
 * producers asleep on it and takes in a row before a woken one runs; takers
 * asleep on an empty queue and puts in a row. */
static const kit_shape_t queue_shapes[] = {
    { .param = 2, .fill = PUTS, .sleepers = PUTS, .mover = TAKES },
    { .param = 3, .fill = PUTS, .sleepers = PUTS, .mover = TAKES },
    { .param = 2, .sleepers = TAKES, .mover = PUTS },
    { .param = 3, .sleepers = TAKES, .mover = PUTS },
};

const kit_spec_t queue_spec = {
    .object = "q",
    .state_size = sizeof(struct queue_model),
    .param = draw_capacity,
    .create = make_queue,
    .model = queue_of,
    .release = close_queue,
    .released_ret = ECANCELED,
    .destroy = destroy_queue,
    .print_create = print_create,
    .print_call = print_call,
    .print_out = print_out,
    .print_state = print_state,
    .ops = queue_ops,
    .nops = 4,
    .shapes = queue_shapes,
    .nshapes = (int)(sizeof queue_shapes / sizeof queue_shapes[0]),
};

/* The specs of the chapter's scenarios, by which a judged test's subject finds the one its judge names. */
const kit_spec_t *const kit_scenario_specs[] = { &queue_spec, NULL };
