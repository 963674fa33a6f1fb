/**
 * @file kit_sched_tsan.c
 * @brief ThreadSanitizer's entry points, for the code under test compiled
 *        with its instrumentation and linked without its runtime: each load,
 *        store, block copy and atomic reaches the scheduler's detector
 *        (kit_sched_memory.c).
 *
 * Left out of a ThreadSanitizer build (make tsan), whose runtime has them.
 */
#define _GNU_SOURCE
#include "kit_sched_internal.h"

#include <string.h>

/* ---- ThreadSanitizer's entry points ---------------------------------------------------- */

#define PC __builtin_return_address(0)
void __tsan_init(void);
void __tsan_init(void) {}
void __tsan_func_entry(void *caller);
void __tsan_func_entry(void *caller) { sched_call_entered(caller, PC); }
void __tsan_func_exit(void);
void __tsan_func_exit(void) { sched_call_left(); }
/* -fsanitize-coverage=trace-pc: each block of the code under test, a line of
 * the paths a failing schedule's report follows (kit_sched_changes.c); one
 * test of a flag while they are not. */
void __sanitizer_cov_trace_pc(void);
void __sanitizer_cov_trace_pc(void)
{
    if (__builtin_expect(sched_notes.paths, 0))
        sched_changes_block(PC);
}

#define ACCESSES(n)                                                                                        \
    void __tsan_read##n(void *addr);                                                                       \
    void __tsan_read##n(void *addr) { sched_memory_access(addr, n, false, PC); }                                     \
    void __tsan_write##n(void *addr);                                                                      \
    void __tsan_write##n(void *addr) { sched_memory_access(addr, n, true, PC); }                                     \
    void __tsan_unaligned_read##n(void *addr);                                                             \
    void __tsan_unaligned_read##n(void *addr) { sched_memory_access(addr, n, false, PC); }                           \
    void __tsan_unaligned_write##n(void *addr);                                                            \
    void __tsan_unaligned_write##n(void *addr) { sched_memory_access(addr, n, true, PC); }                           \
    void __tsan_volatile_read##n(void *addr);                                                              \
    void __tsan_volatile_read##n(void *addr) { sched_memory_access(addr, n, false, PC); }                            \
    void __tsan_volatile_write##n(void *addr);                                                             \
    void __tsan_volatile_write##n(void *addr) { sched_memory_access(addr, n, true, PC); }
ACCESSES(1)
ACCESSES(2)
ACCESSES(4)
ACCESSES(8)
ACCESSES(16)

/* A struct copied or cleared at once (gcc). */
void __tsan_read_range(void *addr, unsigned long size);
void __tsan_read_range(void *addr, unsigned long size) { sched_memory_range(addr, size, false, PC); }
void __tsan_write_range(void *addr, unsigned long size);
void __tsan_write_range(void *addr, unsigned long size) { sched_memory_range(addr, size, true, PC); }

/* What clang from version 15 on calls for a copy or a fill it would have
 * left to the C library (a struct assignment, a loop it recognised, a
 * memcpy): the same ranges as the C library's own functions are reported
 * as, when the code under test calls them (kit_sched_libc.c). */
void *__tsan_memcpy(void *to, const void *from, size_t size);
void *__tsan_memcpy(void *to, const void *from, size_t size)
{
    sched_memory_range(from, size, false, PC);
    sched_memory_range(to, size, true, PC);
    return memcpy(to, from, size);
}
void *__tsan_memmove(void *to, const void *from, size_t size);
void *__tsan_memmove(void *to, const void *from, size_t size)
{
    sched_memory_range(from, size, false, PC);
    sched_memory_range(to, size, true, PC);
    return memmove(to, from, size);
}
void *__tsan_memset(void *to, int byte, size_t size);
void *__tsan_memset(void *to, int byte, size_t size)
{
    sched_memory_range(to, size, true, PC);
    return memset(to, byte, size);
}

/* The atomics do what they say, sequentially consistent, after their switch point; a load or a
 * compare-exchange is checked against plain accesses as a read, the rest as a write. */
#define MO __ATOMIC_SEQ_CST
#define ATOMICS(bits, type)                                                                                    \
    type __tsan_atomic##bits##_load(const volatile type *a, int mo);                                           \
    type __tsan_atomic##bits##_load(const volatile type *a, int mo)                                            \
    { (void)mo; sched_memory_atomic(a, sizeof *a, false, PC); return __atomic_load_n(a, MO); }                                            \
    void __tsan_atomic##bits##_store(volatile type *a, type v, int mo);                                        \
    void __tsan_atomic##bits##_store(volatile type *a, type v, int mo)                                         \
    { (void)mo; sched_memory_atomic(a, sizeof *a, true, PC); __atomic_store_n(a, v, MO); }                                                \
    type __tsan_atomic##bits##_exchange(volatile type *a, type v, int mo);                                     \
    type __tsan_atomic##bits##_exchange(volatile type *a, type v, int mo)                                      \
    { (void)mo; sched_memory_atomic(a, sizeof *a, true, PC); return __atomic_exchange_n(a, v, MO); }                                     \
    type __tsan_atomic##bits##_fetch_add(volatile type *a, type v, int mo);                                    \
    type __tsan_atomic##bits##_fetch_add(volatile type *a, type v, int mo)                                     \
    { (void)mo; sched_memory_atomic(a, sizeof *a, true, PC); return __atomic_fetch_add(a, v, MO); }                                      \
    type __tsan_atomic##bits##_fetch_sub(volatile type *a, type v, int mo);                                    \
    type __tsan_atomic##bits##_fetch_sub(volatile type *a, type v, int mo)                                     \
    { (void)mo; sched_memory_atomic(a, sizeof *a, true, PC); return __atomic_fetch_sub(a, v, MO); }                                      \
    type __tsan_atomic##bits##_fetch_and(volatile type *a, type v, int mo);                                    \
    type __tsan_atomic##bits##_fetch_and(volatile type *a, type v, int mo)                                     \
    { (void)mo; sched_memory_atomic(a, sizeof *a, true, PC); return __atomic_fetch_and(a, v, MO); }                                      \
    type __tsan_atomic##bits##_fetch_or(volatile type *a, type v, int mo);                                     \
    type __tsan_atomic##bits##_fetch_or(volatile type *a, type v, int mo)                                      \
    { (void)mo; sched_memory_atomic(a, sizeof *a, true, PC); return __atomic_fetch_or(a, v, MO); }                                       \
    type __tsan_atomic##bits##_fetch_xor(volatile type *a, type v, int mo);                                    \
    type __tsan_atomic##bits##_fetch_xor(volatile type *a, type v, int mo)                                     \
    { (void)mo; sched_memory_atomic(a, sizeof *a, true, PC); return __atomic_fetch_xor(a, v, MO); }                                      \
    type __tsan_atomic##bits##_fetch_nand(volatile type *a, type v, int mo);                                   \
    type __tsan_atomic##bits##_fetch_nand(volatile type *a, type v, int mo)                                    \
    { (void)mo; sched_memory_atomic(a, sizeof *a, true, PC); return __atomic_fetch_nand(a, v, MO); }                                     \
    int __tsan_atomic##bits##_compare_exchange_strong(volatile type *a, type *c, type v, int mo, int fail);     \
    int __tsan_atomic##bits##_compare_exchange_strong(volatile type *a, type *c, type v, int mo, int fail)      \
    { (void)mo, (void)fail; sched_memory_atomic(a, sizeof *a, false, PC); return __atomic_compare_exchange_n(a, c, v, false, MO, MO); }   \
    int __tsan_atomic##bits##_compare_exchange_weak(volatile type *a, type *c, type v, int mo, int fail);       \
    int __tsan_atomic##bits##_compare_exchange_weak(volatile type *a, type *c, type v, int mo, int fail)        \
    { (void)mo, (void)fail; sched_memory_atomic(a, sizeof *a, false, PC); return __atomic_compare_exchange_n(a, c, v, false, MO, MO); }   \
    type __tsan_atomic##bits##_compare_exchange_val(volatile type *a, type c, type v, int mo, int fail);        \
    type __tsan_atomic##bits##_compare_exchange_val(volatile type *a, type c, type v, int mo, int fail)         \
    { (void)mo, (void)fail; sched_memory_atomic(a, sizeof *a, false, PC); __atomic_compare_exchange_n(a, &c, v, false, MO, MO); return c; }
ATOMICS(8, uint8_t)
ATOMICS(16, uint16_t)
ATOMICS(32, uint32_t)
ATOMICS(64, uint64_t)
/* (No 128-bit atomics: they would need libatomic, and no chapter has a use for them.) */

void __tsan_atomic_thread_fence(int mo);
void __tsan_atomic_thread_fence(int mo)
{
    (void)mo;
    __atomic_thread_fence(MO);
}
void __tsan_atomic_signal_fence(int mo);
void __tsan_atomic_signal_fence(int mo)
{
    (void)mo;
    __atomic_signal_fence(MO);
}
