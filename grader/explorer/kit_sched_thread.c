/**
 * @file kit_sched_thread.c
 * @brief What the C library keeps per thread, kept per thread of a schedule:
 *        its pthread_t, its name, its thread-specific values, its cleanup
 *        handlers and how pthread_exit runs them - and the calls the model
 *        does not cover, which give the schedule up at once.
 *
 * Every thread of a schedule is a context on one OS thread, the runner
 * (kit_sched_context.c): the C library would give them all the runner's
 * identity. So the link-time wrappers answer for it on a thread of the
 * schedule: pthread_self() is the thread's own value (kit_sched.c), the
 * name pthread_setname_np gives it stays its own, pthread_getspecific reads
 * its own values, and pthread_cleanup_push - a macro that registers a buffer
 * on its stack with the C library - registers with the thread's record, so
 * that pthread_exit runs that thread's handlers, newest first, as glibc does
 * (each buffer is a setjmp: the handler runs in the frame that pushed it),
 * and then ends its context. On any other thread they call the C library.
 */
#define _GNU_SOURCE
#include "kit_sched_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_thread.h"

void *__real_malloc(size_t size);
void *__real_realloc(void *block, size_t size);
void __real_free(void *block);

/* ---- Identity ------------------------------------------------------------------ */

pthread_t __real_pthread_self(void);
pthread_t __wrap_pthread_self(void);
int __wrap_pthread_equal(pthread_t a, pthread_t b);

pthread_t __wrap_pthread_self(void)
{
    struct sched_thread *me = sched_me();
    return me != NULL ? me->self : __real_pthread_self();
}

int __wrap_pthread_equal(pthread_t a, pthread_t b)
{
    return a == b;
}

/* ---- Names -------------------------------------------------------------------------
 * The kernel keeps a thread's name (15 characters): a thread of a schedule
 * keeps its own, and the runner's is never touched (no system call). The
 * kit's longer name (kit_thread_set_name) changes only with a call here, so
 * a step copies it into the thread's record only after one (record_step). */
int __real_pthread_setname_np(pthread_t thread, const char *name);
int __real_pthread_getname_np(pthread_t thread, char *name, size_t size);
int __wrap_pthread_setname_np(pthread_t thread, const char *name);
int __wrap_pthread_getname_np(pthread_t thread, char *name, size_t size);

/* The thread of the schedule whose name this is; NULL: a real thread's. */
static struct sched_thread *named(pthread_t thread, int *err)
{
    *err = 0;
    if ((thread & 1) == 0) /* a real thread's pthread_t */
        return NULL;
    struct sched_thread *t = sched_me() != NULL ? sched_managed(thread) : NULL;
    if (t == NULL)
        *err = ESRCH;
    return t;
}

/* A real thread's name. Naming another thread writes its file in /proc,
 * which a judged test's subject may not open (its filter says EPERM): the
 * name is the kit's then (kit_threads_named), as in one process, where the
 * call would have succeeded. */
static int real_thread_named(pthread_t thread, const char *name)
{
    int err = __real_pthread_setname_np(thread, name);
    if (err == EPERM && strlen(name) < 16)
        err = 0;
    if (err == 0)
        kit_thread_named(thread, name);
    return err;
}

int __wrap_pthread_setname_np(pthread_t thread, const char *name)
{
    int err;
    struct sched_thread *t = named(thread, &err);
    if (t == NULL && err == 0)
        return real_thread_named(thread, name);
    if (t == NULL)
        return err;
    t->renamed = true;
    size_t length = strlen(name);
    if (length >= sizeof t->kernel_name)
        return ERANGE;
    memcpy(t->kernel_name, name, length + 1);
    return 0;
}

int __wrap_pthread_getname_np(pthread_t thread, char *name, size_t size)
{
    int err;
    struct sched_thread *t = named(thread, &err);
    if (t == NULL)
        return err ? err : __real_pthread_getname_np(thread, name, size);
    const char *own = t->kernel_name[0] ? t->kernel_name : program_invocation_short_name;
    size_t length = strnlen(own, sizeof t->kernel_name - 1);
    if (size <= length)
        return ERANGE;
    memcpy(name, own, length);
    name[length] = '\0';
    return 0;
}

/* ---- Thread-specific values ---------------------------------------------------------- */

int __real_pthread_key_create(pthread_key_t *key, void (*destructor)(void *));
int __real_pthread_key_delete(pthread_key_t key);
void *__real_pthread_getspecific(pthread_key_t key);
int __real_pthread_setspecific(pthread_key_t key, const void *value);
int __wrap_pthread_key_create(pthread_key_t *key, void (*destructor)(void *));
int __wrap_pthread_key_delete(pthread_key_t key);
void *__wrap_pthread_getspecific(pthread_key_t key);
int __wrap_pthread_setspecific(pthread_key_t key, const void *value);

/* The keys made in this process, and their destructors. Keys are the C
 * library's (any thread may make one); a schedule's threads keep their values. */
static _Atomic(void (*)(void *)) destructors[PTHREAD_KEYS_MAX];
static atomic_bool made[PTHREAD_KEYS_MAX];

int __wrap_pthread_key_create(pthread_key_t *key, void (*destructor)(void *))
{
    int err = __real_pthread_key_create(key, destructor);
    if (err == 0 && *key < PTHREAD_KEYS_MAX) {
        atomic_store(&destructors[*key], destructor);
        atomic_store(&made[*key], true);
    }
    return err;
}

static int specific_slot(const struct sched_thread *t, pthread_key_t key)
{
    for (int i = 0; i < t->nspecific; i++)
        if (t->specific[i].key == key)
            return i;
    return -1;
}

int __wrap_pthread_key_delete(pthread_key_t key)
{
    if (key < PTHREAD_KEYS_MAX)
        atomic_store(&made[key], false);
    if (sched_me() != NULL) /* its values are gone with it, on every thread */
        for (int i = 0; i < sched.nlive; i++) {
            struct sched_thread *t = sched.threads[sched.live[i]];
            int slot = specific_slot(t, key);
            if (slot >= 0)
                t->specific[slot] = t->specific[--t->nspecific];
        }
    return __real_pthread_key_delete(key);
}

void *__wrap_pthread_getspecific(pthread_key_t key)
{
    struct sched_thread *me = sched_me();
    if (me == NULL)
        return __real_pthread_getspecific(key);
    int slot = specific_slot(me, key);
    return slot >= 0 ? me->specific[slot].value : NULL;
}

int __wrap_pthread_setspecific(pthread_key_t key, const void *value)
{
    struct sched_thread *me = sched_me();
    if (me == NULL)
        return __real_pthread_setspecific(key, value);
    if (key >= PTHREAD_KEYS_MAX || !atomic_load(&made[key]))
        return EINVAL;
    int slot = specific_slot(me, key);
    if (slot < 0 && me->nspecific == me->specific_capacity) {
        int capacity = me->specific_capacity ? 2 * me->specific_capacity : 8;
        struct sched_specific *grown = __real_realloc(me->specific, (size_t)capacity * sizeof *grown);
        if (grown == NULL)
            return ENOMEM;
        me->specific = grown;
        me->specific_capacity = capacity;
    }
    if (slot < 0) {
        slot = me->nspecific++;
        me->specific[slot].key = key;
    }
    me->specific[slot].value = (void *)value;
    return 0;
}

/* As POSIX says of a thread's end: each value that is not NULL and has a
 * destructor is set to NULL and destroyed, again while destructors set new
 * ones, up to PTHREAD_DESTRUCTOR_ITERATIONS rounds. */
void sched_destroy_specific(struct sched_thread *t)
{
    for (int round = 0; round < PTHREAD_DESTRUCTOR_ITERATIONS; round++) {
        bool called = false;
        for (int i = 0; i < t->nspecific; i++) {
            void *value = t->specific[i].value;
            void (*destructor)(void *) = atomic_load(&destructors[t->specific[i].key]);
            if (value == NULL || destructor == NULL)
                continue;
            t->specific[i].value = NULL;
            destructor(value);
            called = true;
        }
        if (!called)
            break;
    }
    __real_free(t->specific);
    t->specific = NULL;
    t->nspecific = t->specific_capacity = 0;
}

/* ---- Cleanup handlers and pthread_exit --------------------------------------------
 * glibc's pthread_cleanup_push (C, without exceptions) sets a jump buffer on
 * the stack of the function that pushes, registers it, and on the way out
 * of the thread is jumped to: the handler runs, then __pthread_unwind_next
 * goes on to the one before. On a thread of the schedule the buffers chain
 * through the record, the one before kept in the buffer's spare words. */
void __real___pthread_register_cancel(__pthread_unwind_buf_t *buf);
void __real___pthread_unregister_cancel(__pthread_unwind_buf_t *buf);
void __real___pthread_unwind_next(__pthread_unwind_buf_t *buf) __attribute__((noreturn));
void __wrap___pthread_register_cancel(__pthread_unwind_buf_t *buf);
void __wrap___pthread_unregister_cancel(__pthread_unwind_buf_t *buf);
void __wrap___pthread_unwind_next(__pthread_unwind_buf_t *buf) __attribute__((noreturn));
void sched_run_cleanup(void) __attribute__((noreturn));
/* The C library's longjmp, given a cleanup buffer as glibc's own unwinder
 * gives it: a jmp_buf that never saved a signal mask, so shorter than one. */
void jump_to_handler(void *buffer, int value) __asm__("longjmp") __attribute__((noreturn));

void __wrap___pthread_register_cancel(__pthread_unwind_buf_t *buf)
{
    struct sched_thread *me = sched_me();
    if (me == NULL) {
        __real___pthread_register_cancel(buf);
        return;
    }
    buf->__pad[0] = me->cleanup;
    me->cleanup = buf;
}

void __wrap___pthread_unregister_cancel(__pthread_unwind_buf_t *buf)
{
    struct sched_thread *me = sched_me();
    if (me == NULL) {
        __real___pthread_unregister_cancel(buf);
        return;
    }
    me->cleanup = buf->__pad[0];
}

/* The running thread leaves: its newest cleanup handler runs (a jump back
 * into the frame that pushed it), and each one then comes back here for the
 * next; with none left, the thread ends. */
void sched_run_cleanup(void)
{
    struct sched_thread *me = sched_me();
    __pthread_unwind_buf_t *buf = me->cleanup;
    if (buf == NULL)
        sched_thread_ends();
    me->cleanup = buf->__pad[0];
    jump_to_handler(buf->__cancel_jmp_buf, 1);
}

void __wrap___pthread_unwind_next(__pthread_unwind_buf_t *buf)
{
    if (sched_me() == NULL)
        __real___pthread_unwind_next(buf);
    sched_run_cleanup();
}

/* ---- What the model does not cover ---------------------------------------------------
 * Read-write locks, barriers, spin locks and cancellation are the C
 * library's own, and it knows only the runner: a lock another thread of the
 * schedule holds would look like the caller's own (EDEADLK), a wait would
 * block the runner for good. An uncontended lock goes ahead; anything that
 * would wait gives the schedule up, at once (a test then runs on real
 * threads). */
int __real_pthread_rwlock_rdlock(pthread_rwlock_t *lock);
int __real_pthread_rwlock_wrlock(pthread_rwlock_t *lock);
int __real_pthread_rwlock_timedrdlock(pthread_rwlock_t *lock, const struct timespec *deadline);
int __real_pthread_rwlock_timedwrlock(pthread_rwlock_t *lock, const struct timespec *deadline);
int __real_pthread_spin_lock(pthread_spinlock_t *lock);
int __real_pthread_barrier_wait(pthread_barrier_t *barrier);
int __real_pthread_cancel(pthread_t thread);
int __real_pthread_timedjoin_np(pthread_t thread, void **ret, const struct timespec *deadline);
int __wrap_pthread_rwlock_rdlock(pthread_rwlock_t *lock);
int __wrap_pthread_rwlock_wrlock(pthread_rwlock_t *lock);
int __wrap_pthread_rwlock_timedrdlock(pthread_rwlock_t *lock, const struct timespec *deadline);
int __wrap_pthread_rwlock_timedwrlock(pthread_rwlock_t *lock, const struct timespec *deadline);
int __wrap_pthread_spin_lock(pthread_spinlock_t *lock);
int __wrap_pthread_barrier_wait(pthread_barrier_t *barrier);
int __wrap_pthread_cancel(pthread_t thread);
int __wrap_pthread_timedjoin_np(pthread_t thread, void **ret, const struct timespec *deadline);

/* A lock the runner could take at once, or the schedule given up. */
static int at_once(int err, const char *what)
{
    if (err == 0)
        return 0;
    char why[160];
    snprintf(why, sizeof why, "%s, which the scheduler does not model, while another thread holds it", what);
    sched_give_up(why);
}

int __wrap_pthread_rwlock_rdlock(pthread_rwlock_t *lock)
{
    if (sched_me() == NULL)
        return __real_pthread_rwlock_rdlock(lock);
    return at_once(pthread_rwlock_tryrdlock(lock), "a read-write lock (pthread_rwlock_rdlock)");
}

int __wrap_pthread_rwlock_wrlock(pthread_rwlock_t *lock)
{
    if (sched_me() == NULL)
        return __real_pthread_rwlock_wrlock(lock);
    return at_once(pthread_rwlock_trywrlock(lock), "a read-write lock (pthread_rwlock_wrlock)");
}

int __wrap_pthread_rwlock_timedrdlock(pthread_rwlock_t *lock, const struct timespec *deadline)
{
    if (sched_me() == NULL)
        return __real_pthread_rwlock_timedrdlock(lock, deadline);
    return at_once(pthread_rwlock_tryrdlock(lock), "a read-write lock (pthread_rwlock_timedrdlock)");
}

int __wrap_pthread_rwlock_timedwrlock(pthread_rwlock_t *lock, const struct timespec *deadline)
{
    if (sched_me() == NULL)
        return __real_pthread_rwlock_timedwrlock(lock, deadline);
    return at_once(pthread_rwlock_trywrlock(lock), "a read-write lock (pthread_rwlock_timedwrlock)");
}

int __wrap_pthread_spin_lock(pthread_spinlock_t *lock)
{
    if (sched_me() == NULL)
        return __real_pthread_spin_lock(lock);
    return at_once(pthread_spin_trylock(lock), "a spin lock (pthread_spin_lock)");
}

int __wrap_pthread_barrier_wait(pthread_barrier_t *barrier)
{
    if (sched_me() == NULL)
        return __real_pthread_barrier_wait(barrier);
    sched_give_up("a barrier (pthread_barrier_wait), which the scheduler does not model");
}

int __wrap_pthread_cancel(pthread_t thread)
{
    if (sched_me() == NULL && (thread & 1) == 0)
        return __real_pthread_cancel(thread);
    if (sched_me() == NULL)
        return ESRCH;
    sched_give_up("thread cancellation (pthread_cancel), which the scheduler does not model");
}

int __wrap_pthread_timedjoin_np(pthread_t thread, void **ret, const struct timespec *deadline)
{
    if (sched_me() == NULL)
        return __real_pthread_timedjoin_np(thread, ret, deadline);
    sched_give_up("a join with a time-out (pthread_timedjoin_np), which the scheduler does not model");
}

/* ---- For the harness and the subject's runtime --------------------------------------- */

char *kit_sched_error_text(size_t *size)
{
    struct sched_thread *me = sched_me();
    return me != NULL ? sched_context_text(&me->context, size) : NULL;
}

bool kit_sched_stack_overflow(const void *addr)
{
    struct sched_thread *me = sched_me();
    return me != NULL && sched_context_overflowed(&me->context, addr);
}

struct named_start {
    void *(*fn)(void *);
    void *arg;
    char name[KIT_THREAD_NAME_MAX];
};

static void *named_body(void *raw)
{
    struct named_start start = *(struct named_start *)raw;
    __real_free(raw);
    kit_thread_set_name(start.name);
    return start.fn(start.arg);
}

int kit_sched_start_thread(pthread_t *thread, const char *name, void *(*fn)(void *), void *arg)
{
    if (sched_me() == NULL)
        return EPERM;
    struct named_start *start = __real_malloc(sizeof *start);
    if (start == NULL)
        return ENOMEM;
    *start = (struct named_start){ fn, arg, "" };
    snprintf(start->name, sizeof start->name, "%s", name ? name : "");
    int err = kit_sched_create(thread, NULL, named_body, start, sched_site_or(__builtin_return_address(0)));
    if (err != 0)
        __real_free(start);
    return err;
}
