/**
 * @file kit_scenario.h
 * @brief Generated scenarios, checked for linearizability: the calls a chapter's
 *        object takes, a sequential model of what each must do, and the explorer
 *        running small concurrent scenarios of them that nobody wrote by hand.
 *
 * As Lincheck does for the JVM: a chapter declares its operations (each with
 * an argument generator, the call on the object under test, and its effect on
 * a sequential model - the queue as an array, the pool as a set of tasks) and
 * kit_scenarios() generates scenarios from fixed seeds: a few calls before the
 * threads start, two or three threads of one to three calls each, and a
 * release (close) once everything that can move has moved. Then come the
 * spec's *shapes* (kit_shape_t), which free draws seldom hit: an object
 * filled to its capacity, two or three threads that may all sleep on the
 * same condition, and one thread whose calls in a row each let one of them
 * go - both sides blocked, and the transitions between full and empty.
 * A thread's calls that take something (a lock) end with the calls that
 * give it back (kit_op_t.undone_by). Each scenario is
 * explored under the scheduler (kit_sched.h). When every thread has finished
 * or sleeps for good, the history is checked: some order of the calls, one at
 * a time and respecting which returned before which began, must give every
 * result each returned; and a call still asleep must be one that the model
 * says waits in the state that order leaves - otherwise a wake-up was lost.
 * A failure prints the scenario as code, the steps of its schedule, the
 * replay command, and the rule of the header the call broke.
 */
#ifndef KIT_SCENARIO_H
#define KIT_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kit_rand.h"
#include "kit_sched.h"

/** @brief One call of a scenario, as planned and as it went. */
typedef struct kit_call {
    int op;            /**< index in the spec's operations */
    long arg;          /**< its argument (a message id, a key, ...) */
    long timeout_ms;   /**< a timed call's timeout */
    int thread;        /**< 0: before the threads start; 1..: thread A, B, ... */
    int ret;           /**< what it returned (an errno value or 0) */
    long out;          /**< what it gave back (a message id, a size) */
    long invoked, responded; /**< order of the call's start and end in the history; responded -1: still waiting */
    int64_t started_ns, ended_ns; /**< virtual time */
} kit_call_t;

/** @brief An operation a chapter's object takes. */
typedef struct kit_op {
    const char *name;  /**< as the student writes it: "msgq_put" */
    int weight;        /**< how often a thread draws it; 0: never */
    bool once;         /**< at most once in a scenario (close) */
    bool timed;        /**< it takes a timeout: 0 or a few ms, drawn */
    /** The call on the object under test: returns its code, sets *out. */
    int (*run)(void *object, long arg, long timeout_ms, long *out);
    /** Whether a call with this result could take effect now; if so, applies it to @p state. */
    bool (*take_effect)(void *state, const kit_call_t *call);
    /** Whether the call must wait in @p state (a call still waiting at the end must). */
    bool (*waits)(const void *state, const kit_call_t *call);
    const char *rule;  /**< the header's promise, quoted when the call breaks it */
    bool post;         /**< also called once by the test's thread when the scenario is quiet, before
                            the check (a read of counters: what the threads left behind); the
                            first three such operations of the spec are */
    int group;         /**< ops that wait for the same thing, or let the same waiters go (0: none):
                            a shape draws its sleepers from one group and its mover's calls from another */
    int undone_by;     /**< KIT_OP(the op that gives back what this one takes), or 0: a thread whose
                            calls took something and did not give it back ends with those calls */
    /** Optional: what a call still asleep when the scenario is quiet does to the state the other
     *  sleepers are checked against (a writer waiting holds new readers back). */
    void (*asleep)(void *state, const kit_call_t *call);
} kit_op_t;

/** @brief kit_op_t.undone_by's value for the op at index @p index. */
#define KIT_OP(index) ((index) + 1)

/** @brief A shape of scenario: the spec lists those that matter for its object. */
typedef struct kit_shape {
    long param;        /**< the create parameter (a capacity); 0: drawn as for free scenarios */
    int fill;          /**< before the threads start, `param` calls of this group (0: none): a full queue */
    int sleepers;      /**< two or three threads, one call each of this group: they may all sleep at once */
    int mover;         /**< one more thread: two or three calls of this group in a row (0: any op) */
} kit_shape_t;

/** @brief A chapter's object, as scenarios see it. */
typedef struct kit_spec {
    const char *object;   /**< the variable the code names it by: "q" */
    size_t state_size;    /**< the sequential model's size (at most 1 KB) */
    /** A parameter for create (a capacity), drawn. */
    long (*param)(kit_rng_t *rng);
    /** Creates the object under test, and sets the model's state to match;
     *  on failure NULL, with errno set to the create call's error. */
    void *(*create)(long param, void *state);
    /** The model's state for the object create(param) makes, without making
     *  it: a judge checks histories from it (needed in a judged chapter). */
    void (*model)(long param, void *state);
    /** Wakes every call still waiting (close), after the check. */
    void (*release)(void *object);
    /** What a call still waiting at the check returns once released (ECANCELED). */
    int released_ret;
    void (*destroy)(void *object);
    /** "msgq_create(&q, 2)" */
    void (*print_create)(long param, char *text, size_t size);
    /** "msgq_put(q, m3)" */
    void (*print_call)(const kit_call_t *call, const char *name, char *text, size_t size);
    /** "-> 0, m3": what a call that returned gave back. */
    void (*print_out)(const kit_call_t *call, char *text, size_t size);
    /** "the queue holds m1 and m2": the model's state, for a failure's message. */
    void (*print_state)(const void *state, char *text, size_t size);
    /** Optional: for a call that never waits in @p state, whatever the others
     *  do, the words that say why ("thread B reads already, ..."), and true; a
     *  call still asleep there was never to begin its wait - its test let it
     *  in wrongly, no wake-up was missed. False: it waits, or only should
     *  have been woken. */
    bool (*never_waits)(const void *state, const kit_call_t *call, char *text, size_t size);
    /** Optional: a check of the object itself once the scenario is quiet
     *  (every accepted task has run): NULL if it holds, else what is wrong. */
    const char *(*at_quiet)(void *object, const void *state);
    const kit_op_t *ops;
    int nops;
    const kit_shape_t *shapes; /**< drawn KIT_SHAPE_DRAWS times each, after the free scenarios */
    int nshapes;
} kit_spec_t;

/** @brief How many scenarios kit_scenarios() draws of each shape. */
#define KIT_SHAPE_DRAWS 4

/**
 * @brief Generate @p count scenarios of @p spec from fixed seeds, then
 *        KIT_SHAPE_DRAWS of each of its shapes (numbered on from @p count),
 *        and explore each with @p options (its strategy's seed mixed with the scenario's).
 *        Fails the calling test at the first scenario that fails, printing it
 *        as code, with the steps and the replay command. KIT_SCENARIO=N in the
 *        environment runs scenario N alone (the replay command sets it).
 */
void kit_scenarios_run(const char *test, const char *file, int line, const kit_spec_t *spec, int count,
                       const kit_explore_t *options);
/**
 * @brief The calls of the history being checked, for a model whose effect of
 *        one call depends on when others ran (a timed call's deadline against
 *        a writer's call): @p count set to their number; NULL outside a check.
 */
const kit_call_t *kit_scenario_calls(int *count);

#define kit_scenarios(spec, count, options) kit_scenarios_run(__func__, __FILE__, __LINE__, (spec), (count), (options))

#endif
