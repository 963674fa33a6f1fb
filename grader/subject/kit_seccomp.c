/**
 * @file kit_seccomp.c
 * @brief The subject's system calls, allowed by a list: what threads, memory,
 *        time and the channel need, and nothing that opens, executes, forks,
 *        traces, reaches another process or maps executable memory.
 *
 * Installed by the server before the first call of the submission's code,
 * after the harness warmed up what it loads lazily. A call off the list
 * fails with EPERM, so that the C library reports it as an error, and the
 * code under test sees a failure, not a kill - except the calls no code of
 * the kit's or of a submission's ever needs, and an attack does (trace,
 * splice, dup, exec, executable memory, a signal to another process):
 * those kill the process, and the judge flags the test (SIGSYS).
 */
#define _GNU_SOURCE
#include "kit_serve.h"

#include <errno.h>
#include <execinfo.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kit_test.h"
#include "kit_time.h"

#if defined(__x86_64__)
#define KIT_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define KIT_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

#define LOAD(field) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, field))
#define ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define DENY BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)
/* if nr == N: allow (the next instruction), else skip it */
#define ALLOW_NR(n) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (n), 0, 1), ALLOW
#define KILL BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS)
/* if nr == N: kill the process, else go on */
#define KILL_NR(n) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (n), 0, 1), KILL

/* Every filter's first words: a call of another architecture's numbering kills. */
#define ARCH_CHECKED LOAD(arch), BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, KIT_AUDIT_ARCH, 1, 0), \
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS), LOAD(nr)
/* A signal only to this process, @p self (abort, raise, a crash point's SIGKILL). */
#define SIGNALS_TO_ITSELF(self) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_tgkill, 0, 4), LOAD(args[0]), \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (self), 0, 1), ALLOW, DENY

#if defined(KIT_AUDIT_ARCH)
/* Every call but reading, writing and signalling, which depend on this
 * process's descriptors and pid (kit_seccomp_install's own head). */
static const struct sock_filter calls[] = {
    LOAD(nr),
    /* Memory, never executable: no code of the kit's maps any after the filter. */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mmap, 2, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mprotect, 1, 0),
    BPF_JUMP(BPF_JMP | BPF_JA, 4, 0, 0),
    LOAD(args[2]),
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_EXEC, 0, 1),
    KILL,
    ALLOW,
    LOAD(nr),
    /* Threads: clone only as a thread of this process. */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 4),
    LOAD(args[0]),
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1),
    ALLOW,
    DENY,
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS), /* glibc falls back to clone */
    /* What no code of the kit's does, and an attack would: the process dies of SIGSYS, and is flagged. */
    KILL_NR(SYS_ptrace), KILL_NR(SYS_process_vm_readv), KILL_NR(SYS_process_vm_writev), KILL_NR(SYS_splice),
    KILL_NR(SYS_tee), KILL_NR(SYS_vmsplice), KILL_NR(SYS_sendfile), KILL_NR(SYS_copy_file_range),
    KILL_NR(SYS_dup), KILL_NR(SYS_dup3), KILL_NR(SYS_execve), KILL_NR(SYS_execveat), KILL_NR(SYS_memfd_create),
    KILL_NR(SYS_bpf), KILL_NR(SYS_io_uring_setup), KILL_NR(SYS_kill), KILL_NR(SYS_tkill), KILL_NR(SYS_kcmp),
    KILL_NR(SYS_pidfd_open), KILL_NR(SYS_pidfd_getfd), KILL_NR(SYS_pkey_mprotect), KILL_NR(SYS_userfaultfd),
    KILL_NR(SYS_perf_event_open), KILL_NR(SYS_open_by_handle_at), KILL_NR(SYS_pwrite64), KILL_NR(SYS_pwritev),
#if defined(SYS_dup2)
    KILL_NR(SYS_dup2),
#endif
#if defined(SYS_fork)
    KILL_NR(SYS_fork), KILL_NR(SYS_vfork),
#endif
    ALLOW_NR(SYS_futex), ALLOW_NR(SYS_munmap), ALLOW_NR(SYS_mremap), ALLOW_NR(SYS_madvise), ALLOW_NR(SYS_brk),
    ALLOW_NR(SYS_set_robust_list), ALLOW_NR(SYS_rseq), ALLOW_NR(SYS_rt_sigprocmask),
    ALLOW_NR(SYS_rt_sigreturn), ALLOW_NR(SYS_rt_sigaction), ALLOW_NR(SYS_sigaltstack), ALLOW_NR(SYS_sched_yield),
    ALLOW_NR(SYS_sched_getaffinity), ALLOW_NR(SYS_nanosleep), ALLOW_NR(SYS_clock_nanosleep),
    ALLOW_NR(SYS_clock_gettime), ALLOW_NR(SYS_restart_syscall), ALLOW_NR(SYS_gettid), ALLOW_NR(SYS_getpid),
    ALLOW_NR(SYS_exit), ALLOW_NR(SYS_exit_group), ALLOW_NR(SYS_getrandom), ALLOW_NR(SYS_prctl),
    ALLOW_NR(SYS_fstat), ALLOW_NR(SYS_newfstatat), ALLOW_NR(SYS_lseek), ALLOW_NR(SYS_getrusage),
    ALLOW_NR(SYS_sched_getparam), ALLOW_NR(SYS_sched_getscheduler), ALLOW_NR(SYS_get_mempolicy),
    ALLOW_NR(SYS_membarrier), ALLOW_NR(SYS_timer_create), ALLOW_NR(SYS_timer_settime),
    ALLOW_NR(SYS_timer_delete), ALLOW_NR(SYS_clock_getres), ALLOW_NR(SYS_gettimeofday),
    ALLOW_NR(SYS_readlinkat), ALLOW_NR(SYS_setitimer), ALLOW_NR(SYS_getitimer),
#if defined(SYS_readlink)
    ALLOW_NR(SYS_readlink),
#endif
#if defined(SYS_alarm)
    ALLOW_NR(SYS_alarm),
#endif
    DENY,
};

bool kit_seccomp_prepare(bool filtered)
{
    void *frames[4];
    backtrace(frames, 4); /* the first backtrace loads libgcc_s: before the filter */
    kit_now_ns();
    /* (A sanitizer's or valgrind's own runtime needs calls the list leaves out.) */
    return filtered && !KIT_SANITIZED;
}

/* Install @p head followed by the common list. */
static int install(const struct sock_filter *head, size_t head_length)
{
    enum { CALLS = sizeof calls / sizeof calls[0], MOST_HEAD = 64 };
    struct sock_filter filter[MOST_HEAD + CALLS];
    if (head_length > MOST_HEAD)
        return E2BIG;
    memcpy(filter, head, head_length * sizeof head[0]);
    memcpy(filter + head_length, calls, sizeof calls);
    struct sock_fprog program = { (unsigned short)(head_length + CALLS), filter };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return errno;
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program) != 0)
        return errno;
    return 0;
}

int kit_seccomp_install(int first_channel, int channels)
{
    unsigned last = (unsigned)(first_channel + channels - 1);
    const struct sock_filter head[] = {
        ARCH_CHECKED,
        /* Reading and writing: stdin, stdout, stderr and the channels only. */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_read, 6, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_write, 5, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_sendto, 4, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_recvmsg, 3, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_recvfrom, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_writev, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JA, 6, 0, 0),
        LOAD(args[0]),
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 3, 0, 3),              /* fd 0-2: allowed */
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (unsigned)first_channel, 0, 1),
        BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, last, 0, 1),           /* a channel: allowed */
        DENY,
        ALLOW,
        SIGNALS_TO_ITSELF((unsigned)getpid()),
    };
    return install(head, sizeof head / sizeof head[0]);
}

/* A networked subject holds only the descriptors its test handed it and
 * the sockets it opened itself (it can open nothing else): reading and
 * writing any of them is its own business. A socket reaches the network
 * namespace the grade confines it to: the run's server, on loopback. */
int kit_seccomp_install_networked(void)
{
    const struct sock_filter head[] = {
        ARCH_CHECKED,
        /* Sockets of the Internet only (no netlink, no Unix sockets to pass descriptors on). */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 0, 5),
        LOAD(args[0]),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET6, 1, 0),
        DENY,
        ALLOW,
        SIGNALS_TO_ITSELF((unsigned)getpid()),
        ALLOW_NR(SYS_read), ALLOW_NR(SYS_write), ALLOW_NR(SYS_readv), ALLOW_NR(SYS_writev),
        ALLOW_NR(SYS_sendto), ALLOW_NR(SYS_recvfrom), ALLOW_NR(SYS_sendmsg), ALLOW_NR(SYS_recvmsg),
        ALLOW_NR(SYS_connect), ALLOW_NR(SYS_setsockopt), ALLOW_NR(SYS_getsockopt), ALLOW_NR(SYS_getsockname),
        ALLOW_NR(SYS_getpeername), ALLOW_NR(SYS_shutdown), ALLOW_NR(SYS_ppoll), ALLOW_NR(SYS_pselect6),
        ALLOW_NR(SYS_close), ALLOW_NR(SYS_fcntl), ALLOW_NR(SYS_uname),
#if defined(SYS_poll)
        ALLOW_NR(SYS_poll), ALLOW_NR(SYS_select),
#endif
    };
    return install(head, sizeof head / sizeof head[0]);
}
#else
bool kit_seccomp_prepare(bool filtered)
{
    (void)filtered;
    return false;
}

int kit_seccomp_install(int first_channel, int channels)
{
    (void)first_channel, (void)channels;
    return ENOSYS;
}

int kit_seccomp_install_networked(void)
{
    return ENOSYS;
}
#endif
