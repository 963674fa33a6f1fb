/**
 * @file dmw_journal.h
 * @brief Chapter 07 test journal: every Redis command a worker or a reaper
 *        sends, who sent it and from which line, every delivery of a task,
 *        and crash points at any command.
 *
 * The tests link a wrapper of hiredis's redisvCommand() (chapter 07's
 * build.mk wraps it, and dmw_worker_run() and dmw_reap(), for the tests
 * only): every command of the kit's connection passes through it. A thread
 * running dmw_worker_run() or dmw_reap() has a *role* ("worker victim",
 * "reaper"); each command such a thread sends is numbered within the call
 * (a *pass*: one dmw_worker_run(), one dmw_reap()) and written to the
 * journal with its text, its reply and the calls that sent it. The journal
 * lives in memory shared by the test process and the worker processes it
 * forks, so a test reads what every process did, in the order it happened.
 *
 * A *crash point* kills the process right after the reply of a given
 * command of a role, as if its machine died there: the command took effect,
 * the next one is never sent. A test counts a role's commands on a run
 * without a crash, then crashes it after each of them in turn.
 *
 * Journal entries are claimed with an atomic counter and published with a
 * release store; a reader sees an entry only once it is whole.
 */
#ifndef DMW_JOURNAL_H
#define DMW_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "dmw.h"

/** Longest role name ("worker NAME"), including the terminating NUL. */
#define JOURNAL_ROLE_MAX (DMW_NAME_MAX + 8)
/** Longest command text kept, including the terminating NUL. */
#define JOURNAL_TEXT_MAX 300
/** Return addresses kept per command. */
#define JOURNAL_DEPTH 10
/** Keys the test may arm a call for at once (journal_before_next_command_naming). */
#define JOURNAL_HOOKS 4
/** Longest key, as commands show it, its NUL included. */
#define JOURNAL_KEY_MAX 64

/** @brief One command a worker or a reaper sent, and its reply. */
typedef struct journal_command {
    long index;                   /**< its place in the journal: the order commands were answered */
    pid_t pid;                    /**< the process that sent it */
    char role[JOURNAL_ROLE_MAX];  /**< "worker NAME" or "reaper" */
    int pass;                     /**< which call of the role in that process: 1, 2, ... */
    int number;                   /**< the command's number within the pass, from 1 */
    char text[JOURNAL_TEXT_MAX];  /**< its words, keys without the run's prefix: "LREM processing:w 1 \"0 0 ok\"" */
    bool integer_reply;           /**< the reply was an integer ... */
    long long integer;            /**< ... this one */
    bool crashed_after;           /**< the process was killed right after this reply */
    int depth;                    /**< return addresses in stack */
    void *stack[JOURNAL_DEPTH];   /**< the calls that sent it, innermost first: offsets in the sender's program */
} journal_command_t;

/** @brief One delivery of a task: a call of the tests' process function. */
typedef struct journal_delivery {
    long id;                      /**< the task */
    int attempt;                  /**< the attempt the worker said it was */
    pid_t pid;                    /**< the worker's process */
    char worker[JOURNAL_ROLE_MAX];/**< the role that ran it ("worker NAME") */
    long taken_at;                /**< journal index of that role's last command before it: its take; -1 if none */
} journal_delivery_t;

/** @brief Map the shared journal (once, before any fork) and empty it. */
void journal_open(void);
/** @brief The descriptor the journal is mapped from: a process the test starts maps it (journal_attach). */
int journal_fd(void);
/** @brief In a program the test started: map the journal from @p fd (closed then); 0 or an errno value. */
int journal_attach(int fd);
/** @brief The commands' places are in @p program (judged: the subject's), not in this one. */
void journal_places_in(const char *program);

/** @brief Empty the journal: a new run starts, each role's calls count from 1 again. Only while no worker runs. */
void journal_reset(void);

/**
 * @brief In a call's own process (dmw_call.h), which makes one call, before
 *        any thread: its passes count from 1 again; every thread of it counts
 *        its commands for that call, one numbering - a thread the code under
 *        test starts too (only the kit heartbeat's beats from another thread
 *        are left out); and it is killed right after the reply of command
 *        @p crash_after of the first pass of @p role (0: never). In the test's
 *        own process, each thread counts only its own call's commands.
 */
void journal_call_process(const char *role, int crash_after);

/**
 * @brief A crash point: arm a crash. The next Redis command of the call that
 *        names the outcomes or a processing list - whichever thread of the
 *        call sends it - gets its reply and then the process kills itself
 *        with SIGKILL, as if the machine died right there.
 *
 * A process function that calls this just before returning (the tests'
 * work, dmw_work.h, on "crash-after-outcome") makes the worker die right
 * after the first command it sends for that task's places - for a correct
 * worker, the outcome write. The journal sees every reply through a link-time
 * wrapper of hiredis's redisvCommand() (chapter 07's build.mk wraps it for
 * the tests only), the way the harness's wrappers inject spurious
 * wake-ups: the kit's own code knows nothing of it.
 */
void journal_crash_after_next_call(void);

/**
 * @brief Note a delivery of @p task by the calling thread's role (the process
 *        function calls it); returns how many deliveries of the task the
 *        journal now holds.
 */
int journal_note_delivery(const dmw_task_t *task);

/** @brief Entries in the journal (some may be dropped once it is full). */
long journal_command_count(void);
/** @brief Entry @p index, or NULL if there is none or it is not whole. */
const journal_command_t *journal_command(long index);
/** @brief The deliveries of task @p id, in order, into @p out (at most @p max); returns how many there were. */
int journal_deliveries(long id, journal_delivery_t *out, int max);

/** @brief The commands of the first pass of @p role in process @p pid. */
int journal_pass_length(pid_t pid, const char *role);
/** @brief Command @p number of the first pass of @p role in process @p pid, or NULL. */
const journal_command_t *journal_find(pid_t pid, const char *role, int number);

/**
 * @brief A command in words, with the line of the code under test that
 *        sent it: "`LREM processing:w 1 \"0 0 ok\"` (dmw_worker.c:97
 *        in acknowledge)", or "... (dmw_redis_move_back, called at
 *        dmw_reaper.c:52 in return_task)" for a command the kit's helper sent.
 */
void journal_describe(const journal_command_t *command, char *out, size_t size);

/**
 * @brief Call @p fn(@p ctx) once, on the thread about to send it, before the
 *        next command from any thread of this process that names @p key
 *        (one call a key, JOURNAL_HOOKS keys at most; @p fn may arm itself
 *        again, for the command after).
 */
void journal_before_next_command_naming(const char *key, void (*fn)(void *ctx), void *ctx);

/**
 * @brief A key the test may arm a call for (journal_before_next_command_naming)
 *        while a process it started runs: judged, such a process asks the
 *        test before each command naming it (journal_watched), and the test
 *        makes its armed call, if any, then. At most JOURNAL_HOOKS keys.
 */
void journal_watch(const char *key);
/** @brief Watched key @p index (from 0), as commands show it, or NULL. */
const char *journal_watched(int index);
/** @brief Make the call armed for @p key (as commands show it) now, once (judged: a worker's process asked). */
void journal_run_armed(const char *key);

#endif
