/**
 * @file kit_gate.h
 * @brief A start gate and a countdown latch: the two ways tests line threads up.
 *
 * A **start gate** holds threads until the main thread opens it, so that all
 * of them hit the structure under test at the same moment instead of one
 * by one as they happen to be created (the source document's CountDownLatch
 * trick for "maximum concurrency"). The main thread can also wait until a
 * given number of threads stand at the gate, which is how a test knows that
 * its threads are all started before it lets them go.
 *
 * A **latch** counts down to zero; waiters are released when it gets there,
 * with a timeout so that a test can say "did not happen within 5 s" instead
 * of hanging.
 *
 * Both are built from one mutex and one condition variable, not from
 * pthread_barrier_t, which macOS does not have.
 *
 * @ingroup kit
 */
#ifndef KIT_GATE_H
#define KIT_GATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/** @addtogroup kit
 *  @{ */

/** @brief A start gate. Initialise with kit_gate_init(). */
typedef struct kit_gate {
    pthread_mutex_t lock;   /**< guards the two fields below */
    pthread_cond_t changed; /**< broadcast when a thread arrives or the gate opens */
    size_t arrived;         /**< threads that have called kit_gate_wait() */
    size_t inside;          /**< threads inside a wait right now; destroy waits for 0 */
    bool open;              /**< once true, never false again */
} kit_gate_t;

/** @brief Initialise a closed gate. @return 0 or a pthread error. */
int kit_gate_init(kit_gate_t *gate);
/**
 * @brief Destroy a gate. Threads just released may still be on their way
 *        out of kit_gate_wait(): destroy waits until they have left.
 * @pre The gate is open (or nobody waits at it), and no thread will call it again.
 */
void kit_gate_destroy(kit_gate_t *gate);
/** @brief Arrive at the gate and wait until it opens (returns at once if open). */
void kit_gate_wait(kit_gate_t *gate);
/**
 * @brief Wait until at least @p count threads have arrived.
 * @return 0, or ETIMEDOUT after @p timeout_ms.
 */
int kit_gate_await_arrivals(kit_gate_t *gate, size_t count, long timeout_ms);
/** @brief Open the gate: release every waiting thread and every later arrival. */
void kit_gate_open(kit_gate_t *gate);

/** @brief A countdown latch. Initialise with kit_latch_init(). */
typedef struct kit_latch {
    pthread_mutex_t lock;   /**< guards count */
    pthread_cond_t reached_zero; /**< broadcast when count reaches 0 */
    size_t count;           /**< count-downs still expected */
    size_t inside;          /**< threads inside kit_latch_wait() right now; destroy waits for 0 */
} kit_latch_t;

/** @brief Initialise a latch expecting @p count count-downs. @return 0 or a pthread error. */
int kit_latch_init(kit_latch_t *latch, size_t count);
/**
 * @brief Destroy a latch. A waiter just released by the last count-down may
 *        still be on its way out of kit_latch_wait(): destroy waits until it
 *        has left, so freeing the latch right after counting it down is safe.
 * @pre The count has reached zero (or nobody waits), and no thread will call it again.
 */
void kit_latch_destroy(kit_latch_t *latch);
/** @brief Count down once (no effect once at zero). */
void kit_latch_count_down(kit_latch_t *latch);
/**
 * @brief Wait until the count reaches zero.
 * @return 0, or ETIMEDOUT after @p timeout_ms.
 */
int kit_latch_wait(kit_latch_t *latch, long timeout_ms);

/** @} */
#endif
