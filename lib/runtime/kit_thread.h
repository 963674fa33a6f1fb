/**
 * @file kit_thread.h
 * @brief Named threads: every log line and trace lane says which thread acted.
 *
 * The source documents' logs read `[producer-2]`, `[pool-1-thread-1]`; the kit
 * keeps that habit. A thread gets its name at creation (kit_thread_start())
 * or names itself (kit_thread_set_name()); kit_log() and the trace recorder
 * read it back with kit_thread_name(). On Linux the name is also given to the
 * kernel, so `top -H`, gdb and perf show it (truncated to 15 characters).
 *
 * @ingroup kit
 */
#ifndef KIT_THREAD_H
#define KIT_THREAD_H

#include <pthread.h>
#include <stddef.h>

/** @addtogroup kit
 *  @{ */

/** Longest thread name kept, including the terminating NUL. */
#define KIT_THREAD_NAME_MAX 32

/**
 * @brief Start a thread running `fn(arg)` under the name @p name.
 * @param[out] thread  the new thread's handle; unchanged on failure.
 * @param[in]  name    copied (truncated to KIT_THREAD_NAME_MAX - 1 bytes);
 *                     NULL gives an automatic `thread-<n>`.
 * @param[in]  fn, arg the thread's body and its argument.
 * @return 0; EINVAL if @p thread or @p fn is NULL; ENOMEM; or the error of
 *         pthread_create() (EAGAIN when the system is out of threads).
 *         On failure no thread was started and @p fn will never run.
 * @par Thread safety
 * Safe from any thread. The caller still joins the thread.
 */
int kit_thread_start(pthread_t *thread, const char *name, void *(*fn)(void *), void *arg);

/**
 * @brief Start a thread running `fn(arg)` under the name `<role>-<index>`
 *        ("consumer-1"): kit_thread_start() with the name made for it.
 * @return as kit_thread_start(); EINVAL also if @p role is NULL.
 */
int kit_thread_start_numbered(pthread_t *thread, const char *role, size_t index, void *(*fn)(void *), void *arg);

/**
 * @brief Start @p count threads named `<role>-0`, `<role>-1`, ...: thread i
 *        runs `fn(args + i * arg_size)`, or `fn((void *)(intptr_t)i)` when
 *        @p args is NULL (its index is all it needs).
 * @return 0, or the error of the first thread that could not start; the
 *         threads started before it keep running (join them, or end the program).
 */
int kit_thread_start_group(pthread_t *threads, size_t count, const char *role, void *(*fn)(void *), void *args,
                           size_t arg_size);

/** @brief Join the @p count threads of a group started with kit_thread_start_group(). */
void kit_thread_join_group(pthread_t *threads, size_t count);

/** @brief Name the calling thread (programs call it with "main"). */
void kit_thread_set_name(const char *name);

/**
 * @brief The calling thread's name.
 * @return a string owned by the thread, valid until it exits or renames
 *         itself; a thread never named gets `thread-<n>` on first use.
 */
const char *kit_thread_name(void);

/** @} */
#endif
