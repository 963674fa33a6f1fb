/**
 * @file confine.h
 * @brief Running untrusted code confined: bubblewrap namespaces, an
 *        unprivileged uid, limits, and nothing left alive afterwards.
 *
 * Everything that compiles or runs a submission goes through confine_run():
 * the compile, the link, every test, make debug and make explore on a
 * submission. Three levels, the best the machine allows:
 * - CONFINE_NAMESPACES: bubblewrap (user, mount, pid, network, IPC and UTS
 *   namespaces) shows only the system's programs and libraries, the kit's
 *   headers, and the paths the caller lists; the root is read-only but for a
 *   small private /tmp. As root, the sandbox's uid is unprivileged first.
 * - CONFINE_UID: root without user namespaces (a container, say): the
 *   command runs as the unprivileged sandbox uid, and every process of that
 *   uid is killed when it ends. Files the uid may read stay readable.
 * - CONFINE_NONE: neither: only the resource limits hold.
 * In every level: resource limits, a filter that refuses to push input into
 * the terminal (TIOCSTI), an environment of listed variables only, and no
 * descriptor but those listed.
 */
#ifndef CONFINE_H
#define CONFINE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum confine_level { CONFINE_NAMESPACES, CONFINE_UID, CONFINE_NONE };

enum { CONFINE_MAX_MOUNTS = 96, CONFINE_MAX_FDS = 8 };

struct confine_mount {
    const char *source;
    const char *dest; /* where it appears inside; the same path when NULL */
    bool writable;
};

struct confine_spec {
    const char *kit_root;      /* shown as its headers only, at its own path (NULL: not shown) */
    const char *chdir;         /* working directory inside (default: the caller's) */
    struct confine_mount mounts[CONFINE_MAX_MOUNTS];
    int mount_count;
    int keep_fds[CONFINE_MAX_FDS]; /* passed in, at the same numbers, besides 0, 1 and 2 */
    int keep_fd_count;
    long sandbox_uid;   /* root: the unprivileged uid the command runs as */
    double wall_seconds; /* 0: no limit */
    long cpu_seconds;    /* RLIMIT_CPU, 0: none */
    long memory_mb;      /* the slot's cgroup when root, else RLIMIT_AS; 0: none */
    bool address_space_unlimited; /* sanitizers map terabytes: no RLIMIT_AS */
    long file_size_mb;   /* RLIMIT_FSIZE */
    long tasks;          /* processes and threads: RLIMIT_NPROC and the cgroup's pids.max */
    long output_kb;      /* > 0: stdout and stderr pass through a pipe, cut after this much */
    bool interactive;    /* keep the terminal's session (make debug); else a new session */
};

/** The level this machine gives, and in words what it leaves open (empty when nothing). */
enum confine_level confine_probe(long sandbox_uid, char *why, size_t size);

/** The level's name, as make grade prints it. */
const char *confine_level_name(enum confine_level level);

/** Runs argv confined; returns its wait status once every process it started is dead. */
int confine_run(const struct confine_spec *spec, char *const argv[]);

/** Root: the first sandbox uid from uid on that no other grade holds; held until exit. */
long confine_claim_uid(long uid);

/** Root: kills every process of uid, and waits until none is left. */
void confine_reap_uid(long uid);

/** Root: becomes uid (and its group), with no supplementary groups; exits 126 if it cannot. */
void confine_drop_privileges(long uid);

/** Refuses new user namespaces to this process and all it starts (a seccomp filter). */
void confine_refuse_user_namespaces(void);

/** Sets the limits a confined process runs under (0: leave that one alone); no core files. */
void confine_set_limits(long tasks, long cpu_seconds, long file_size_mb, long address_space_mb);

#endif
