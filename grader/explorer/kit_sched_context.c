/**
 * @file kit_sched_context.c
 * @brief The threads of a schedule as user-level contexts: each has a stack
 *        of its own, and a switch from one to the next saves the registers of
 *        one and loads the other's, on one OS thread - no system call, no
 *        kernel hand-over.
 *
 * DESIGN: a schedule runs on one OS thread, the runner (kit_sched_explore.c).
 * Every thread of the code under test is a context: a stack from a pool (256
 * KB above a guard page, mapped once and reused from schedule to schedule),
 * its saved stack pointer - the other registers are on that stack - and its
 * copies of what C keeps per thread:
 * - errno, saved and restored at each switch;
 * - the program's thread-local storage, the block of every _Thread_local
 *   variable the program itself defines (the code under test's, the kit's):
 *   at each switch the outgoing context's block is copied out and the
 *   incoming one's copied in. The runner's own block is that of a context
 *   too. What the C library keeps per thread (its malloc caches, stdio's
 *   locks) is shared: a switch only ever happens at a wrapped call, never
 *   inside the library.
 * The switch itself (sched_swap) is a few instructions for x86-64 and
 * aarch64: push the callee-saved registers, store the stack pointer, load the
 * other, pop its registers, return into it. Elsewhere the C library's
 * ucontext does the same, with a system call.
 *
 * Under ThreadSanitizer each context is a fiber (__tsan_switch_to_fiber, with
 * the switch a synchronisation, as the token hand-over between threads was);
 * under AddressSanitizer each switch is announced
 * (__sanitizer_start_switch_fiber); under valgrind each stack is registered.
 *
 * Everything here runs on the runner thread, one context at a time.
 */
#define _GNU_SOURCE
#include "kit_sched_internal.h"

#include <errno.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define KIT_HAVE_VALGRIND 1
#endif
#endif

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KIT_TSAN 1
#endif
#if __has_feature(address_sanitizer)
#define KIT_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(KIT_SCHED_TSAN_FIBERS)
#define KIT_TSAN 1
#endif
#if defined(__SANITIZE_ADDRESS__)
#define KIT_ASAN 1
#endif

void *__real_malloc(size_t size);
void __real_free(void *block);

/* ---- The switch --------------------------------------------------------------------
 * sched_swap(&from, to): save the callee-saved registers on the running
 * stack, store its pointer in *from, load `to`, restore what is saved there,
 * and return into that context. A new context's stack is laid out as if it
 * had been saved at the first instruction of sched_boot, which calls its
 * main function with its argument and never returns (the outermost frame:
 * a debugger's backtrace ends there). */
void sched_swap(void **from, void *to);
void sched_boot(void);

#if defined(__x86_64__)
__asm__(".text\n"
        ".globl sched_swap\n"
        ".hidden sched_swap\n"
        ".type sched_swap, @function\n"
        "sched_swap:\n"
        "    pushq %rbp\n"
        "    pushq %rbx\n"
        "    pushq %r12\n"
        "    pushq %r13\n"
        "    pushq %r14\n"
        "    pushq %r15\n"
        "    subq $8, %rsp\n"
        "    stmxcsr (%rsp)\n"
        "    fnstcw 4(%rsp)\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    ldmxcsr (%rsp)\n"
        "    fldcw 4(%rsp)\n"
        "    addq $8, %rsp\n"
        "    popq %r15\n"
        "    popq %r14\n"
        "    popq %r13\n"
        "    popq %r12\n"
        "    popq %rbx\n"
        "    popq %rbp\n"
        "    ret\n"
        ".size sched_swap, .-sched_swap\n"
        ".globl sched_boot\n"
        ".hidden sched_boot\n"
        ".type sched_boot, @function\n"
        "sched_boot:\n"
        "    .cfi_startproc\n"
        "    .cfi_undefined rip\n"
        "    movq %rbx, %rdi\n"
        "    callq *%r12\n"
        "    ud2\n"
        "    .cfi_endproc\n"
        ".size sched_boot, .-sched_boot\n");

/* The frame sched_swap pops for a new context: control words, r15..r12, rbx, rbp, return address. */
enum { SAVED_WORDS = 8 };

static void **first_frame(char *top, void (*main)(void *), void *arg)
{
    void **sp = (void **)top - SAVED_WORDS;
    unsigned controls[2] = { 0x1F80, 0x037F }; /* MXCSR and the x87 control word as a thread starts with them */
    memcpy(&sp[0], controls, sizeof controls);
    sp[1] = sp[2] = sp[3] = NULL;       /* r15, r14, r13 */
    sp[4] = (void *)(uintptr_t)main;    /* r12: what sched_boot calls */
    sp[5] = arg;                        /* rbx: its argument */
    sp[6] = NULL;                       /* rbp */
    sp[7] = (void *)(uintptr_t)sched_boot;
    return sp;
}
#define KIT_OWN_SWAP 1

#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl sched_swap\n"
        ".hidden sched_swap\n"
        ".type sched_swap, %function\n"
        "sched_swap:\n"
        "    sub sp, sp, #160\n"
        "    stp x19, x20, [sp, #0]\n"
        "    stp x21, x22, [sp, #16]\n"
        "    stp x23, x24, [sp, #32]\n"
        "    stp x25, x26, [sp, #48]\n"
        "    stp x27, x28, [sp, #64]\n"
        "    stp x29, x30, [sp, #80]\n"
        "    stp d8, d9, [sp, #96]\n"
        "    stp d10, d11, [sp, #112]\n"
        "    stp d12, d13, [sp, #128]\n"
        "    stp d14, d15, [sp, #144]\n"
        "    mov x9, sp\n"
        "    str x9, [x0]\n"
        "    mov sp, x1\n"
        "    ldp x19, x20, [sp, #0]\n"
        "    ldp x21, x22, [sp, #16]\n"
        "    ldp x23, x24, [sp, #32]\n"
        "    ldp x25, x26, [sp, #48]\n"
        "    ldp x27, x28, [sp, #64]\n"
        "    ldp x29, x30, [sp, #80]\n"
        "    ldp d8, d9, [sp, #96]\n"
        "    ldp d10, d11, [sp, #112]\n"
        "    ldp d12, d13, [sp, #128]\n"
        "    ldp d14, d15, [sp, #144]\n"
        "    add sp, sp, #160\n"
        "    ret\n"
        ".size sched_swap, .-sched_swap\n"
        ".globl sched_boot\n"
        ".hidden sched_boot\n"
        ".type sched_boot, %function\n"
        "sched_boot:\n"
        "    .cfi_startproc\n"
        "    .cfi_undefined x30\n"
        "    mov x0, x19\n"
        "    blr x20\n"
        "    brk #0\n"
        "    .cfi_endproc\n"
        ".size sched_boot, .-sched_boot\n");

/* The frame sched_swap pops for a new context: x19-x28, x29, x30, d8-d15. */
enum { SAVED_WORDS = 20 };

static void **first_frame(char *top, void (*main)(void *), void *arg)
{
    void **sp = (void **)top - SAVED_WORDS;
    memset(sp, 0, SAVED_WORDS * sizeof *sp);
    sp[0] = arg;                        /* x19: its argument */
    sp[1] = (void *)(uintptr_t)main;    /* x20: what sched_boot calls */
    sp[11] = (void *)(uintptr_t)sched_boot; /* x30: where sched_swap returns */
    return sp;
}
#define KIT_OWN_SWAP 1
#endif

#if !defined(KIT_OWN_SWAP)
/* Elsewhere: the C library's contexts (a system call a switch: slower, the same). */
#include <ucontext.h>
#endif

/* ---- The program's thread-local storage -------------------------------------------- */

uintptr_t sched_tls_block;
size_t sched_tls_size;

static struct {
    unsigned char *block;  /* the runner thread's instance */
    size_t size;           /* PT_TLS's memory size */
    const void *image;     /* its initial contents (.tdata) */
    size_t image_size;     /* (the rest, .tbss, starts zeroed) */
} tls;

static int program_tls(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)data;
    tls.size = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *phdr = &info->dlpi_phdr[i];
        if (phdr->p_type != PT_TLS)
            continue;
        tls.size = phdr->p_memsz;
        tls.image = (const void *)(info->dlpi_addr + phdr->p_vaddr);
        tls.image_size = phdr->p_filesz;
    }
    bool has_block = size >= offsetof(struct dl_phdr_info, dlpi_tls_data) + sizeof info->dlpi_tls_data;
    tls.block = has_block ? info->dlpi_tls_data : NULL;
    return 1; /* the first object is the program itself */
}

/* ---- Stacks -------------------------------------------------------------------------- */

/* A stack of the pool, and what goes with it: the context's copy of the
 * thread-local storage, and what the sanitizers keep for it. */
struct sched_stack {
    char *map;            /* the mapping: a guard page, then the stack */
    size_t map_size;
    char *low, *high;     /* the stack proper */
    unsigned char *tls;   /* the context's thread-local storage while it does not run */
    char text[1024];      /* its last failed check's words (kit_test.c) */
    unsigned valgrind_id;
    void *fiber;          /* ThreadSanitizer's: made with the stack, used by each of its contexts in turn */
    int fiber_uses;
    void *fake_stack;     /* AddressSanitizer's, while it does not run */
#if !defined(KIT_OWN_SWAP)
    ucontext_t registers;
    void (*boot_main)(void *);
    void *boot_arg;
#endif
    struct sched_stack *next;
};

static size_t page_size;
static struct sched_stack *spare;       /* the pool: stacks no context uses */
static struct sched_stack *buried;      /* those of failed schedules' contexts: never reused */
static struct sched_stack runner_stack; /* the runner's own: its thread's stack, its storage */
static struct sched_context runner;

static struct sched_stack *new_stack(size_t size)
{
    struct sched_stack *s = __real_malloc(sizeof *s);
    unsigned char *copy = __real_malloc(tls.size > 0 ? tls.size : 1);
    size_t map_size = size + page_size;
    char *map = mmap(NULL, map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK,
                     -1, 0);
    if (s == NULL || copy == NULL || map == MAP_FAILED || mprotect(map, page_size, PROT_NONE) != 0) {
        if (map != MAP_FAILED)
            munmap(map, map_size);
        __real_free(copy);
        __real_free(s);
        return NULL;
    }
    memset(s, 0, sizeof *s);
    s->map = map;
    s->map_size = map_size;
    s->low = map + page_size;
    s->high = map + map_size;
    s->tls = copy;
#if defined(KIT_HAVE_VALGRIND)
    s->valgrind_id = VALGRIND_STACK_REGISTER(s->low, s->high);
#endif
    return s;
}

/* A stack of at least `size` bytes: from the pool, or mapped now. */
static struct sched_stack *take_stack(size_t size)
{
    for (struct sched_stack **at = &spare; *at != NULL; at = &(*at)->next) {
        struct sched_stack *s = *at;
        if ((size_t)(s->high - s->low) >= size) {
            *at = s->next;
            s->next = NULL;
            return s;
        }
    }
    return new_stack(size);
}

/* ---- Sanitizers ------------------------------------------------------------------------ */

#if defined(KIT_TSAN)
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
#endif
#if defined(KIT_ASAN)
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom, size_t size);
void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old, size_t *size_old);
void __asan_unpoison_memory_region(const volatile void *addr, size_t size);
#endif

/* A stack's fiber for its next context. Making one is dear (ThreadSanitizer
 * clears a thread's whole state), so a fiber serves the stack's contexts in
 * turn - the switches order all of them anyway. But a context ends inside
 * the calls that switched away, which stay on its fiber's record of calls:
 * after FIBER_USES contexts the fiber is made afresh. */
#if defined(KIT_TSAN)
enum { FIBER_USES = 64 };

static void fresh_fiber(struct sched_stack *s)
{
    if (s->fiber != NULL && s->fiber_uses < FIBER_USES) {
        s->fiber_uses++;
        return;
    }
    if (s->fiber != NULL)
        __tsan_destroy_fiber(s->fiber); /* (not the running one: its last context has ended) */
    s->fiber = __tsan_create_fiber(0);
    s->fiber_uses = 1;
}
#endif

/* Before the registers change: what the sanitizers must know of the switch. */
static void announce_switch(struct sched_context *from, struct sched_context *to, bool ending)
{
#if defined(KIT_TSAN)
    __tsan_switch_to_fiber(to->stack->fiber, 0); /* 0: the switch orders what came before it, as a hand-over does */
#endif
#if defined(KIT_ASAN)
    __sanitizer_start_switch_fiber(ending ? NULL : &from->stack->fake_stack, to->stack->low,
                                   (size_t)(to->stack->high - to->stack->low));
#endif
    (void)from, (void)to, (void)ending;
}

/* In the context that now runs, just after the switch into it. */
static void switch_done(struct sched_context *now)
{
#if defined(KIT_ASAN)
    __sanitizer_finish_switch_fiber(now->stack->fake_stack, NULL, NULL);
#endif
    (void)now;
}

/* ---- Contexts ---------------------------------------------------------------------------- */

struct sched_context *sched_runner_context(void)
{
    return &runner;
}

/* The runner thread's own stack, for AddressSanitizer. */
static void runner_stack_bounds(void)
{
    pthread_attr_t attr;
    void *low = NULL;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        pthread_attr_getstack(&attr, &low, &size);
        pthread_attr_destroy(&attr);
    }
    runner_stack.low = low;
    runner_stack.high = (char *)low + size;
}

/* Where the runner takes a signal: a thread of the schedule that ran out of
 * stack faults in its guard page, and the crash report needs a stack to run
 * on (kit_stacks.c). One runner at a time uses it. */
static void set_signal_stack(void)
{
    static char signal_stack[64 * 1024];
    stack_t alternate = { .ss_sp = signal_stack, .ss_size = sizeof signal_stack, .ss_flags = 0 }, now;
    if (sigaltstack(NULL, &now) == 0 && (now.ss_flags & SS_DISABLE)) /* (a sanitizer may have set its own) */
        sigaltstack(&alternate, NULL);
}

bool sched_contexts_begin(char *why, size_t size)
{
    if (page_size == 0)
        page_size = (size_t)sysconf(_SC_PAGESIZE);
    set_signal_stack();
    dl_iterate_phdr(program_tls, NULL);
    if (tls.size > 0 && tls.block == NULL) {
        snprintf(why, size, "the explorer cannot find the program's thread-local storage");
        return false;
    }
    sched_tls_block = (uintptr_t)tls.block;
    sched_tls_size = tls.size;
    if (runner_stack.tls == NULL && (runner_stack.tls = __real_malloc(tls.size > 0 ? tls.size : 1)) == NULL) {
        snprintf(why, size, "the explorer is out of memory");
        return false;
    }
    runner_stack_bounds();
    runner.stack = &runner_stack;
#if defined(KIT_TSAN)
    runner_stack.fiber = __tsan_get_current_fiber();
#endif
    return true;
}

/* The context a switch goes to: a new one finishes the switch into it first. */
static struct sched_context *starting;

#if !defined(KIT_OWN_SWAP)
static void boot_from_ucontext(void)
{
    starting->stack->boot_main(starting->stack->boot_arg);
}
#endif

void sched_context_started(void)
{
    switch_done(starting);
}

bool sched_context_make(struct sched_context *c, size_t size, void (*main)(void *), void *arg)
{
    struct sched_stack *s = take_stack(size > SCHED_STACK_SIZE ? size : SCHED_STACK_SIZE);
    if (s == NULL)
        return false;
#if defined(KIT_ASAN)
    __asan_unpoison_memory_region(s->low, (size_t)(s->high - s->low)); /* what an ended context left poisoned */
#endif
#if defined(KIT_TSAN)
    fresh_fiber(s);
#endif
    if (tls.size > 0) { /* as a new thread's: the initial image, then zeroes */
        memcpy(s->tls, tls.image, tls.image_size);
        memset(s->tls + tls.image_size, 0, tls.size - tls.image_size);
    }
    s->text[0] = '\0';
    c->stack = s;
    c->saved_errno = 0;
#if defined(KIT_OWN_SWAP)
    c->sp = first_frame((char *)((uintptr_t)s->high & ~(uintptr_t)15), main, arg);
#else
    getcontext(&s->registers);
    s->registers.uc_stack.ss_sp = s->low;
    s->registers.uc_stack.ss_size = (size_t)(s->high - s->low);
    s->registers.uc_link = NULL;
    makecontext(&s->registers, (void (*)(void))boot_from_ucontext, 0);
    s->boot_main = main;
    s->boot_arg = arg;
#endif
    return true;
}

/* Run `to` in place of `from`. */
static void swap(struct sched_context *from, struct sched_context *to)
{
#if defined(KIT_OWN_SWAP)
    sched_swap(&from->sp, to->sp);
#else
    swapcontext(&from->stack->registers, &to->stack->registers);
#endif
}

void sched_context_switch(struct sched_context *from, struct sched_context *to, bool ending)
{
    from->saved_errno = errno;
    if (tls.size > 0) { /* from here on, the thread-local variables are `to`'s */
        memcpy(from->stack->tls, tls.block, tls.size);
        memcpy(tls.block, to->stack->tls, tls.size);
    }
    announce_switch(from, to, ending);
    if (ending) { /* its stack goes back to the pool: nothing runs on it once the switch is made */
        from->stack->next = spare;
        spare = from->stack;
    }
    starting = to;
    errno = to->saved_errno;
    swap(from, to);
    switch_done(from);
}

void sched_context_bury(struct sched_context *c)
{
    if (c->stack == NULL || c->stack == &runner_stack)
        return;
    c->stack->next = buried;
    buried = c->stack;
    c->stack = NULL;
}

void sched_context_range(const struct sched_context *c, uintptr_t *low, uintptr_t *high)
{
    *low = c->stack ? (uintptr_t)c->stack->low : 0;
    *high = c->stack ? (uintptr_t)c->stack->high : 0;
}

char *sched_context_text(struct sched_context *c, size_t *size)
{
    *size = sizeof c->stack->text;
    return c->stack->text;
}

bool sched_context_overflowed(const struct sched_context *c, const void *addr)
{
    const char *at = addr;
    const size_t slack = 64 * 1024; /* a frame larger than the guard page may have jumped past it */
    return c->stack != NULL && at < c->stack->low && at + slack >= c->stack->map;
}

