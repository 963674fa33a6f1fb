/**
 * @file buggy.h
 * @brief A deliberately wrong "submission" for `make feedback`: each function
 *        is a classic mistake, and tests/feedback/test_feedback.c trips it so
 *        that the grader's words for it can be checked.
 */
#ifndef BUGGY_H
#define BUGGY_H

#include <pthread.h>
#include <stddef.h>

typedef struct counter counter_t;

/** @brief A counter with a mutex and a condition variable. @return NULL without memory. */
counter_t *counter_create(void);
/** @brief Free it. */
void counter_destroy(counter_t *c);
/** @brief Reads the value - without checking for NULL, so NULL crashes. */
long counter_read(counter_t *c);
/** @brief Adds @p n - without the lock: a data race. */
void counter_add_unlocked(counter_t *c, long n);
/** @brief Waits until the counter is ready - which nothing ever makes it: a lost wake-up. */
void counter_wait_ready(counter_t *c);
/** @brief Increments under the lock - and returns without unlocking it. */
void counter_increment_forgetting_unlock(counter_t *c);
/** @brief Waits up to @p ms - with a deadline whose nanoseconds overflow. */
int counter_wait_ms(counter_t *c, long ms);
/**
 * @brief Adds one on a helper thread and returns the value - correctly, but
 *        handing over through pipes, which a test's schedule does not control:
 *        graded, the test runs again on real threads.
 */
long counter_add_on_a_helper(counter_t *c);
/** @brief Adds @p n under the lock. */
void counter_add(counter_t *c, long n);
/** @brief @p total shared out by the value - which divides by zero while the value is 0: a crash. */
long counter_share(counter_t *c, long total);

/** @brief Sets the counter ready under the lock - and wakes nobody: a lost wake-up at that line. */
void counter_set_ready_quietly(counter_t *c);
/** @brief Waits until the value reaches @p value. */
void counter_wait_value(counter_t *c, long value);
/** @brief Adds @p n and signals once - where two threads may wait for the value: a broadcast is due. */
void counter_add_signalling_one(counter_t *c, long n);
/**
 * @brief Waits until the counter is ready or @p ms have passed, @return 0 or
 *        ETIMEDOUT - but computes a new deadline after every wake-up, so a
 *        stream of early wake-ups keeps it waiting for ever.
 */
int counter_wait_ready_for(counter_t *c, long ms);
/** @brief Waits until ready, at most @p ms on CLOCK_MONOTONIC (correct; counter_set_ready_quietly is not). */
int counter_wait_ready_within(counter_t *c, long ms);
/** @brief Adds @p n and @return the value - the one before the add: a wrong result. */
long counter_add_and_read(counter_t *c, long n);
/** @brief Destroys the counter once it is ready - which nothing makes it: a hang in a teardown. */
void counter_destroy_when_ready(counter_t *c);
/** @brief Sets the value back to 0: not written yet, @return ENOSYS. */
int counter_reset(counter_t *c);
/** @brief Adds one on a thread of its own - which it never joins: a thread leak. */
void counter_add_on_a_thread_left_behind(counter_t *c);
/** @brief Frees the counter - and destroys its mutex and condition variable after the free: a use after free. */
void counter_close(counter_t *c);
/** @brief Adds one on a helper thread - and joins it twice, ignoring the second join's error. */
void counter_add_on_a_helper_joined_twice(counter_t *c);

/** @brief Adds one under the lock and signals one waiter. */
void counter_put_one(counter_t *c);
/** @brief Waits until the value is above 0, then takes one. */
void counter_take_one(counter_t *c);
/**
 * @brief As counter_take_one, waiting at most @p ms: @return 0 or ETIMEDOUT -
 *        but gives up as soon as its wait says ETIMEDOUT, without looking at
 *        the value again: a wake-up that came with the time-out is lost.
 */
int counter_take_one_within(counter_t *c, long ms);
/** @brief Adds one under the lock - and wakes nobody: a timed take's wait only runs out. */
void counter_put_one_quietly(counter_t *c);
/** @brief Adds @p n through a helper that expects the lock held - without taking it: a race. */
void counter_add_through_a_helper(counter_t *c, long n);
/** @brief Adds @p n under the lock through a helper - and wakes nobody: a lost wake-up. */
void counter_add_quietly_through_a_helper(counter_t *c, long n);
/** @brief Adds @p n under the lock, and wakes the waiters only once ready is set: a lost wake-up. */
void counter_add_waking_once_ready(counter_t *c, long n);
/** @brief As counter_take_one_within, counting itself while it waits - and a taker that timed out stays counted. */
int counter_take_one_counted_within(counter_t *c, long ms);
/** @brief Takes one, counting itself while it waits; ECANCELED once shut - and a taker that gives up stays counted. */
int counter_take_one_counted_unless_shut(counter_t *c);
/** @brief Takes one, waiting while there is none; ECANCELED once shut - deciding on a copy of "shut" taken
 *         before it waited. */
int counter_take_one_unless_shut(counter_t *c);
/** @brief Stores one, waiting while the counter holds one already, and counts the store - before it waited. */
void counter_store_counted_first(counter_t *c);
/** @brief The stores done (correct). */
long counter_stored(counter_t *c);
/** @brief Takers give up from now on (correct). */
void counter_shut(counter_t *c);
/** @brief Destroys the counter once no taker is counted: it waits for ever after a time-out left one counted. */
void counter_destroy_once_no_taker_waits(counter_t *c);
/** @brief The takers counted now, under the lock (correct). */
long counter_takers(counter_t *c);
/** @brief Offers one: counted as offered, then refused with EAGAIN if the counter holds one already - and a
 *         refused offer stays counted. */
int counter_offer_refusable(counter_t *c);
/** @brief Takes what was offered, no longer counted as offered (correct); how many. */
long counter_take_offered(counter_t *c);
/** @brief The offers counted now, under the lock (correct). */
long counter_offered(counter_t *c);
/** @brief Offers one, counted as arriving in one critical section and stored in the next (EAGAIN if the counter
 *         holds one already) - and a refused offer stays counted. */
int counter_offer_arriving(counter_t *c);
/** @brief Destroys the counter once no offer is arriving: it waits for ever after a refusal left one counted. */
void counter_destroy_once_none_arriving(counter_t *c);
/** @brief Takes the counter's turn (one thread at a time) as soon as it is free, then leaves it. */
void counter_pass_through(counter_t *c);
/** @brief Takes the counter's turn at once (correct when nobody holds it). */
void counter_enter(counter_t *c);
/** @brief Leaves the turn and wakes one thread waiting for it - but only when two or more wait. */
void counter_leave(counter_t *c);
/** @brief A meter: a value and how many adds made it, under one mutex. */
/** Adds @p n through a helper it calls (not inlined), under the lock - and wakes nobody (a lost wake-up). */
void counter_add_quietly_through_a_called_helper(counter_t *c, long n);
/** Takes one, counted as a taker while it waits - and un-counts itself twice when it takes the last one. */
void counter_take_one_uncounting_twice(counter_t *c);
/** Adds 1 if the value is below @p limit - its check and its add in two critical sections. */
void counter_add_once_below(counter_t *c, long limit);

/** A roster of names (a kit_map: memory the explorer does not follow);
 *  roster_wait_empty() returns once it is closed and holds no name. */
typedef struct roster roster_t;
roster_t *roster_create(void);
void roster_add(roster_t *r, const char *name);
void roster_close(roster_t *r);
/** Removes @p name - and wakes nobody, though it may be the last one after the close. */
void roster_remove_quietly(roster_t *r, const char *name);
void roster_wait_empty(roster_t *r);
size_t roster_size(roster_t *r);
void roster_destroy(roster_t *r);

/** A log of at most @p capacity numbers; an append past it writes past the block (a heap overrun). */
typedef struct numbers numbers_t;
numbers_t *numbers_create(long capacity);
void numbers_append(numbers_t *l, long value);
void numbers_destroy(numbers_t *l);

typedef struct meter meter_t;
/** @brief What a meter holds, copied out. */
typedef struct {
    long value; /**< the sum of the adds */
    long adds;  /**< how many adds there were */
} meter_reading_t;
/** @brief A meter at 0. @return NULL without memory. */
meter_t *meter_create(void);
/** @brief Adds @p n under the lock - and counts the add twice: a wrong count, made at that line. */
void meter_add(meter_t *m, long n);
/** @brief Copies the meter out under the lock. */
void meter_read(meter_t *m, meter_reading_t *out);
/** @brief Frees it. */
void meter_destroy(meter_t *m);
/** @brief Joins @p helper unless the counter's helper was joined already - deciding it without looking: a second join. */
void counter_join_helper(counter_t *c, pthread_t helper);

#endif
