/**
 * @file kit_misuse.h
 * @brief Misused pthread calls on real threads (no schedule): a join of a
 *        thread joined or detached already, an unlock or a wait without the
 *        mutex, a wait on one condition variable with two mutexes, a destroy
 *        of a locked mutex or of a condition variable a thread sleeps on.
 *
 * On a schedule the scheduler's model sees all of these (kit_sched.c); on
 * real threads the link-time wrappers call these checks, which end the test
 * in words - what was wrong, the student's file and line, how to fix it -
 * whatever the code does with the result the C library would have given
 * (often none: glibc does not check a default mutex's owner, and a join of
 * a joined thread is undefined).
 */
#ifndef KIT_MISUSE_H
#define KIT_MISUSE_H

#include <pthread.h>
#include <stdbool.h>

/** A thread just made by pthread_create, joinable or detached by @p attr. */
void kit_misuse_thread_made(pthread_t thread, const pthread_attr_t *attr);
/** pthread_join, checked first: called from @p where. */
int kit_misuse_join(pthread_t thread, void **ret, void *where);
/** pthread_detach, checked first. */
int kit_misuse_detach(pthread_t thread, void *where);
/** Before an unlock: the calling thread must hold the mutex. */
void kit_misuse_unlock(pthread_mutex_t *mutex, void *where);
/** Before a condition wait: the mutex held, and the one other waiters use. */
void kit_misuse_wait_begin(pthread_cond_t *cond, pthread_mutex_t *mutex, void *where);
/** After it, with its result. */
void kit_misuse_wait_end(pthread_cond_t *cond, int err);
/** A signal (@p all false) or a broadcast: the waiters it lets go. */
void kit_misuse_wake(pthread_cond_t *cond, bool all);
/** Before a destroy: nobody holds the mutex. */
void kit_misuse_mutex_destroy(pthread_mutex_t *mutex, void *where);
/** Before a destroy: nobody sleeps on the condition variable unwoken. */
void kit_misuse_cond_destroy(pthread_cond_t *cond, void *where);

#endif
