/**
 * @file confine.c
 * @brief Running untrusted code confined (confine.h): bubblewrap, an
 *        unprivileged uid, resource limits, and every process dead at the end.
 *
 * The shape of one confined run:
 *
 *     confine_run                 the caller's uid; joins the slot's cgroup (root)
 *       `- child                  the terminal filter, listed fds and variables, then exec:
 *            `- bwrap             namespaces, the mounts (CONFINE_NAMESPACES); as root,
 *                 |               with its privileges, so that it reads what root may
 *                 `- shim         kit-confine --exec-limited: the sandbox uid (root), the
 *                      |          limits (RLIMIT_NPROC counted inside), no user namespace
 *                      `- command
 *
 * confine_run is the run's subreaper: every process the command leaves
 * behind, a daemon that called setsid() included, becomes its child, and it
 * returns only once it has killed and reaped them all. bubblewrap's pid
 * namespace makes that immediate: when the command ends, its pid 1 ends and
 * the kernel kills the rest.
 */
#define _GNU_SOURCE /* pipe2, ppoll, setgroups, clearenv */
#include "confine.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__linux__)
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/syscall.h>
#endif

/* ---- small helpers ---------------------------------------------------------- */

static double now_seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

static bool write_text(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    bool ok = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);
    if (fd >= 0)
        close(fd);
    return ok;
}

static void set_limit(int resource, long value)
{
    struct rlimit limit = { (rlim_t)value, (rlim_t)value };
    setrlimit(resource, &limit);
}

/* The program's own path, to run it again inside the sandbox as the shim. */
static const char *own_path(void)
{
    static char path[PATH_MAX];
    if (path[0] == '\0') {
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
        path[n > 0 ? n : 0] = '\0';
    }
    return path;
}

/* ---- the environment: listed variables only -------------------------------- */

/* What a compile, a link or a test may see of the environment: the search
 * path, the locale, the kit's own knobs and the sanitizers' options. The
 * rest of the grader's environment - tokens, keys, an instructor's
 * settings - stays out. */
static bool variable_passes(const char *entry)
{
    static const char *const exact[] = { "PATH=", "LANG=", "LANGUAGE=", "TERM=", "TZ=", "SEED=",
                                         "TSAN_OPTIONS=", "ASAN_OPTIONS=", "UBSAN_OPTIONS=", "LSAN_OPTIONS=",
                                         "REDIS_URL=", "CPATH=", "C_INCLUDE_PATH=", "LIBRARY_PATH=",
                                         "COMPILER_PATH=", "GCC_EXEC_PREFIX=", "SOURCE_DATE_EPOCH=", NULL };
    static const char *const prefixes[] = { "LC_", "KIT_", NULL };
    for (int i = 0; exact[i]; i++)
        if (strncmp(entry, exact[i], strlen(exact[i])) == 0)
            return true;
    for (int i = 0; prefixes[i]; i++)
        if (strncmp(entry, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    return false;
}

static void keep_listed_variables(void)
{
    extern char **environ;
    size_t count = 0;
    while (environ[count])
        count++;
    char **kept = calloc(count + 1, sizeof *kept);
    size_t n = 0;
    for (size_t i = 0; kept && i < count; i++)
        if (variable_passes(environ[i]))
            kept[n++] = strdup(environ[i]);
    clearenv();
    for (size_t i = 0; kept && i < n; i++)
        if (kept[i])
            putenv(kept[i]);
    setenv("HOME", "/tmp", 1);
    setenv("TMPDIR", "/tmp", 1);
    free(kept);
}

/* ---- descriptors: listed ones only ------------------------------------------ */

static bool fd_is_kept(const struct confine_spec *spec, int fd)
{
    if (fd <= 2)
        return true;
    for (int i = 0; i < spec->keep_fd_count; i++)
        if (spec->keep_fds[i] == fd)
            return true;
    return false;
}

/* Closes every descriptor but 0, 1, 2 and the kept ones, which stay open across exec. */
static void close_unlisted_fds(const struct confine_spec *spec)
{
    int open_fds[1024], count = 0;
    DIR *dir = opendir("/proc/self/fd");
    for (struct dirent *entry; dir && (entry = readdir(dir)) && count < 1024;)
        if (entry->d_name[0] != '.')
            open_fds[count++] = atoi(entry->d_name);
    if (dir)
        closedir(dir);
    if (dir == NULL)
        for (int fd = 3; fd < 1024; fd++)
            open_fds[count++] = fd;
    for (int i = 0; i < count; i++)
        if (!fd_is_kept(spec, open_fds[i]))
            close(open_fds[i]);
    for (int i = 0; i < spec->keep_fd_count; i++)
        fcntl(spec->keep_fds[i], F_SETFD, 0);
}

/* ---- the terminal filter ------------------------------------------------------ */

/* A process that shares the grader's terminal could push characters into
 * its input queue (ioctl TIOCSTI, TIOCLINUX): they would run as commands in
 * the instructor's shell once the grade ends. A seccomp filter refuses both
 * ioctls, and any system call made through another architecture's table. */
static void refuse_terminal_injection(void)
{
#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__))
#if defined(__x86_64__)
    const unsigned arch = AUDIT_ARCH_X86_64;
#else
    const unsigned arch = AUDIT_ARCH_AARCH64;
#endif
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (unsigned)offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (unsigned)offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1), /* x32's numbers */
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 0, 4),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (unsigned)offsetof(struct seccomp_data, args[1])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCSTI, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCLINUX, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog program = { (unsigned short)(sizeof code / sizeof code[0]), code };
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program);
#endif
}

/* ---- command lines ---------------------------------------------------------------- */

struct words {
    char *word[CONFINE_MAX_MOUNTS * 3 + 400];
    int count;
};

static void add(struct words *w, const char *a)
{
    if (w->count < (int)(sizeof w->word / sizeof w->word[0]) - 1)
        w->word[w->count++] = (char *)a;
    w->word[w->count] = NULL;
}

static void add3(struct words *w, const char *a, const char *b, const char *c)
{
    add(w, a);
    add(w, b);
    if (c)
        add(w, c);
}

/* Inside the sandbox, before the command: no new user namespace, whose
 * capabilities would let a test remount what it sees (clone3's flags cannot
 * be read by a filter, so clone3 is "not there": the C library then uses
 * clone). bubblewrap has made its own namespaces by then. */
void confine_refuse_user_namespaces(void)
{
#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__)) && defined(SYS_clone3)
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (unsigned)offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (unsigned)offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_NEWUSER, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog program = { (unsigned short)(sizeof code / sizeof code[0]), code };
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program);
#endif
}

/* ---- the level --------------------------------------------------------------- */

const char *confine_level_name(enum confine_level level)
{
    switch (level) {
    case CONFINE_NAMESPACES: return "namespaces";
    case CONFINE_UID: return "uid";
    case CONFINE_NONE: return "none";
    }
    return "none";
}

static bool on_path(const char *program)
{
    const char *path = getenv("PATH");
    char candidate[PATH_MAX];
    for (const char *dir = path ? path : "/usr/bin:/bin"; *dir;) {
        size_t length = strcspn(dir, ":");
        snprintf(candidate, sizeof candidate, "%.*s/%s", (int)length, dir, program);
        if (access(candidate, X_OK) == 0)
            return true;
        dir += length + (dir[length] == ':');
    }
    return false;
}

void confine_drop_privileges(long uid)
{
    if (geteuid() != 0 || uid <= 0)
        return;
    if (setgroups(0, NULL) != 0 || setgid((gid_t)uid) != 0 || setuid((uid_t)uid) != 0)
        _exit(126);
}

/* bubblewrap's namespaces: as root, made by bubblewrap with its privileges
 * (no user namespace, which would map the sandbox's users to root), the
 * sandbox uid taken inside, by the shim; as anyone else, in a user namespace. */
static void add_namespaces(struct words *w);

/* Can bubblewrap make its namespaces here? */
static bool bubblewrap_works(void)
{
    if (!on_path("bwrap"))
        return false;
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
        static struct words words;
        add(&words, "bwrap");
        add_namespaces(&words);
        add3(&words, "--ro-bind", "/", "/");
        add3(&words, "--proc", "/proc", "--");
        add(&words, "true");
        execvp("bwrap", words.word);
        _exit(127);
    }
    int status = 0;
    return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

enum confine_level confine_probe(long sandbox_uid, char *why, size_t size)
{
    bool root = geteuid() == 0;
    const char *cached = getenv("KIT_CONFINE_LEVEL");
    enum confine_level level = CONFINE_NONE;
    if (cached && strcmp(cached, "namespaces") == 0)
        level = CONFINE_NAMESPACES;
    else if (cached && strcmp(cached, "uid") == 0 && root)
        level = CONFINE_UID;
    else if (cached == NULL || strcmp(cached, "none") != 0)
        level = bubblewrap_works() ? CONFINE_NAMESPACES : root ? CONFINE_UID : CONFINE_NONE;
    const char *bwrap = on_path("bwrap") ? "bubblewrap cannot make user namespaces here"
                                         : "bubblewrap (bwrap) is not installed";
    if (level == CONFINE_NAMESPACES)
        snprintf(why, size, "%s", "");
    else if (level == CONFINE_UID)
        snprintf(why, size,
                 "%s: submissions run as uid %ld, which can still read every file readable to all users "
                 "(a kit's solutions/ among them) and see the machine's other processes",
                 bwrap, sandbox_uid);
    else
        snprintf(why, size,
                 "%s and this is not root: submissions run as you, can read and change your files and "
                 "may leave processes behind; only time, CPU, file-size and memory limits hold",
                 bwrap);
    return level;
}

/* ---- the sandbox uid (root) ------------------------------------------------------ */

/* Two grades at once on one machine (two instructors, a grade beside a
 * make test in another copy of the kit) must not share a sandbox uid: the
 * slot's control groups and RLIMIT_NPROC count every process of the uid, and
 * without namespaces every process of it is killed when a run ends. The
 * claimer holds an exclusive lock on /tmp/kit-grade-slot-<uid>.lock while it
 * runs (the descriptor stays open, closed on exec), and takes the next uid
 * while one is held. */
long confine_claim_uid(long uid)
{
    for (long candidate = uid; candidate < uid + 64; candidate++) {
        char path[64];
        snprintf(path, sizeof path, "/tmp/kit-grade-slot-%ld.lock", candidate);
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
            continue;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return candidate;
        close(fd);
    }
    return uid;
}

/* ---- control groups (root) ------------------------------------------------------ */

/* The slot's control groups: one per sandbox uid, so that two grades at once
 * never share them. Memory, tasks and CPU for everything the run starts.
 * cgroup v2 when the unified hierarchy has the controllers, else v1. */
static bool join_v2(const char *dir, const struct confine_spec *spec, const char *pid)
{
    char file[256], value[64];
    if (access("/sys/fs/cgroup/cgroup.controllers", R_OK) != 0)
        return false;
    write_text("/sys/fs/cgroup/cgroup.subtree_control", "+pids +cpu +memory");
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return false;
    snprintf(file, sizeof file, "%s/pids.max", dir);
    snprintf(value, sizeof value, "%ld", spec->tasks > 0 ? spec->tasks : 256);
    bool limited = write_text(file, value);
    if (spec->memory_mb > 0) {
        snprintf(file, sizeof file, "%s/memory.max", dir);
        snprintf(value, sizeof value, "%ld", spec->memory_mb << 20);
        limited = write_text(file, value) && limited;
    }
    snprintf(file, sizeof file, "%s/cgroup.procs", dir);
    return limited && write_text(file, pid);
}

static bool join_v1(const char *controller, const char *setting, const char *value, const char *name,
                    const char *pid)
{
    char dir[192], file[256];
    snprintf(dir, sizeof dir, "/sys/fs/cgroup/%s/%s", controller, name);
    if (access("/sys/fs/cgroup/pids/cgroup.procs", F_OK) != 0 || (mkdir(dir, 0755) != 0 && errno != EEXIST))
        return false;
    snprintf(file, sizeof file, "%s/%s", dir, setting);
    bool limited = value == NULL || write_text(file, value);
    snprintf(file, sizeof file, "%s/cgroup.procs", dir);
    return write_text(file, pid) && limited;
}

/* Returns whether memory is limited by a control group. */
static bool join_slot_cgroups(const struct confine_spec *spec)
{
    char name[64], dir[128], pid[32], tasks[32], memory[32], quota[32];
    snprintf(name, sizeof name, "kit-grade-%ld", spec->sandbox_uid);
    snprintf(dir, sizeof dir, "/sys/fs/cgroup/%s", name);
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    if (join_v2(dir, spec, pid))
        return spec->memory_mb > 0;
    snprintf(tasks, sizeof tasks, "%ld", spec->tasks > 0 ? spec->tasks : 256);
    snprintf(memory, sizeof memory, "%ld", spec->memory_mb << 20);
    long cpus = getenv("KIT_SANDBOX_CPUS") ? atol(getenv("KIT_SANDBOX_CPUS")) : 0;
    snprintf(quota, sizeof quota, "%ld", (cpus > 0 ? cpus : 1) * 100000);
    join_v1("pids", "pids.max", tasks, name, pid);
    join_v1("cpu", "cpu.cfs_quota_us", cpus > 0 ? quota : NULL, name, pid);
    return spec->memory_mb > 0 && join_v1("memory", "memory.limit_in_bytes", memory, name, pid);
}

/* Root: the writable folders become the sandbox uid's, and only its. */
static void hand_over_writable(const struct confine_spec *spec)
{
    for (int i = 0; i < spec->mount_count; i++)
        if (spec->mounts[i].writable && chown(spec->mounts[i].source, (uid_t)spec->sandbox_uid,
                                              (gid_t)spec->sandbox_uid) != 0)
            perror(spec->mounts[i].source);
}

/* ---- bubblewrap's command line ---------------------------------------------------- */

/* The system, read-only: programs, libraries, the compiler, gdb; of /etc
 * only what the loader, the compiler's links and gdb read. */
static void add_system(struct words *w)
{
    static const char *const top[] = { "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", NULL };
    static const char *const etc[] = { "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
                                       "/etc/alternatives", "/etc/localtime", "/etc/hosts", "/etc/gdb",
                                       "/etc/passwd", "/etc/group", "/etc/nsswitch.conf", NULL };
    add3(w, "--ro-bind", "/usr", "/usr");
    for (int i = 0; top[i]; i++) {
        static char targets[6][PATH_MAX];
        ssize_t n = readlink(top[i], targets[i], sizeof targets[i] - 1);
        if (n > 0) { /* merged /usr: /bin -> usr/bin */
            targets[i][n] = '\0';
            add3(w, "--symlink", targets[i], top[i]);
        } else {
            add3(w, "--ro-bind-try", top[i], top[i]);
        }
    }
    for (int i = 0; etc[i]; i++)
        add3(w, "--ro-bind-try", etc[i], etc[i]);
    add3(w, "--proc", "/proc", NULL);
    add3(w, "--dev", "/dev", NULL);
    static const char *const scratch[][2] = { { "/tmp", "67108864" }, { "/var/tmp", "16777216" },
                                               { "/dev/shm", "16777216" } };
    for (int i = 0; i < 3; i++) { /* small, private, writable by anyone (the sandbox uid among them) */
        add3(w, "--perms", "01777", "--size");
        add3(w, scratch[i][1], "--tmpfs", scratch[i][0]);
    }
}

/* What the sandbox sees besides the system: the kit's headers (when the kit
 * is shown) and the caller's mounts, each at its own path. */
struct view {
    struct confine_mount mount[CONFINE_MAX_MOUNTS + 256];
    int count;
};

static void view_add(struct view *view, const char *source, const char *dest, bool writable)
{
    if (view->count < (int)(sizeof view->mount / sizeof view->mount[0]))
        view->mount[view->count++] = (struct confine_mount){ source, dest, writable };
}

/* The kit's headers, each at its own path in an otherwise empty, read-only
 * folder: its solutions, mutants, submissions and results stay invisible. */
static void add_headers_below(struct view *view, const char *dir, int depth)
{
    DIR *folder = opendir(dir);
    for (struct dirent *entry; folder && depth < 4 && (entry = readdir(folder));) {
        if (entry->d_name[0] == '.')
            continue;
        char *path = malloc(PATH_MAX); /* kept: the command line points at it */
        snprintf(path, PATH_MAX, "%s/%s", dir, entry->d_name);
        struct stat info;
        size_t length = strlen(entry->d_name);
        if (lstat(path, &info) == 0 && S_ISDIR(info.st_mode)) {
            add_headers_below(view, path, depth + 1);
            free(path);
        } else if (S_ISREG(info.st_mode) && length > 2 && strcmp(entry->d_name + length - 2, ".h") == 0) {
            view_add(view, path, path, false);
        } else {
            free(path);
        }
    }
    if (folder)
        closedir(folder);
}

static int by_path(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A folder the system's part of the view holds (or is): never made again. */
static bool system_folder(const char *path)
{
    static const char *const roots[] = { "/usr", "/etc", "/proc", "/dev", "/sys", "/bin", "/sbin", "/lib", NULL };
    static const char *const scratch[] = { "/tmp", "/var", "/var/tmp", NULL };
    for (int i = 0; roots[i]; i++) {
        size_t length = strlen(roots[i]);
        if (strncmp(path, roots[i], length) == 0 && (path[length] == '\0' || path[length] == '/'))
            return true;
    }
    for (int i = 0; scratch[i]; i++)
        if (strcmp(path, scratch[i]) == 0)
            return true;
    return false;
}

/* Every folder on the way to a mount, made first and readable to all:
 * bubblewrap would make the ones inside a tmpfs its own alone, and the
 * sandbox uid could not reach what is mounted there. Parents before children. */
static void add_folders(struct words *w, const struct view *view)
{
    static char *folders[8192];
    int count = 0;
    for (int i = 0; i < view->count; i++) {
        const char *dest = view->mount[i].dest;
        for (const char *slash = strchr(dest + 1, '/'); slash && count < 8192; slash = strchr(slash + 1, '/')) {
            char *folder = strndup(dest, (size_t)(slash - dest));
            if (folder && !system_folder(folder))
                folders[count++] = folder;
            else
                free(folder);
        }
    }
    qsort(folders, (size_t)count, sizeof folders[0], by_path);
    for (int i = 0; i < count; i++)
        if (i == 0 || strcmp(folders[i], folders[i - 1]) != 0) {
            add3(w, "--perms", "0755", "--dir");
            add(w, folders[i]);
        }
}

static void add_view(struct words *w, const struct confine_spec *spec)
{
    static struct view view;
    static const char *const parts[] = { "chapters", "lib", "exercises", NULL };
    for (int i = 0; spec->kit_root && parts[i]; i++) {
        char *dir = malloc(PATH_MAX); /* kept: the command line points at it */
        snprintf(dir, PATH_MAX, "%s/%s", spec->kit_root, parts[i]);
        add_headers_below(&view, dir, 0);
    }
    for (int i = 0; i < spec->mount_count; i++)
        view_add(&view, spec->mounts[i].source, spec->mounts[i].dest ? spec->mounts[i].dest : spec->mounts[i].source,
                 spec->mounts[i].writable);
    view_add(&view, own_path(), own_path(), false); /* the shim */
    if (spec->kit_root) {
        add3(w, "--size", "16777216", "--tmpfs");
        add(w, spec->kit_root);
    }
    add_folders(w, &view);
    for (int i = 0; i < view.count; i++)
        add3(w, view.mount[i].writable ? "--bind" : "--ro-bind", view.mount[i].source, view.mount[i].dest);
}

static void add_namespaces(struct words *w)
{
    add3(w, "--unshare-ipc", "--unshare-pid", "--unshare-net");
    add3(w, "--unshare-uts", "--unshare-cgroup-try", NULL);
    if (geteuid() == 0) {
        add3(w, "--cap-add", "CAP_SETUID", NULL); /* for the shim alone, which drops them with root */
        add3(w, "--cap-add", "CAP_SETGID", NULL);
    } else {
        add3(w, "--unshare-user", "--disable-userns", NULL);
    }
}

/* The shim, inside: the sandbox uid (root), the limits, no user namespaces, the command. */
static void add_shim(struct words *w, const struct confine_spec *spec)
{
    static char text[5][32];
    snprintf(text[0], sizeof text[0], "%ld", spec->tasks);
    snprintf(text[1], sizeof text[1], "%ld", spec->cpu_seconds);
    snprintf(text[2], sizeof text[2], "%ld", spec->file_size_mb);
    snprintf(text[3], sizeof text[3], "%ld", spec->address_space_unlimited ? 0 : spec->memory_mb);
    snprintf(text[4], sizeof text[4], "%ld", geteuid() == 0 ? spec->sandbox_uid : 0);
    add3(w, own_path(), "--exec-limited", text[0]);
    add3(w, text[1], text[2], text[3]);
    add3(w, text[4], "--", NULL);
}

static void build_bwrap_words(struct words *w, const struct confine_spec *spec, char *const argv[])
{
    add(w, "bwrap");
    add_namespaces(w);
    add(w, "--die-with-parent");
    add3(w, "--hostname", "kit-sandbox", NULL);
    if (!spec->interactive)
        add(w, "--new-session");
    add_system(w);
    add_view(w, spec);
    if (spec->kit_root)
        add3(w, "--remount-ro", spec->kit_root, NULL);
    add3(w, "--remount-ro", "/dev", NULL); /* (its /dev/shm is a mount of its own: it stays writable) */
    add3(w, "--remount-ro", "/", NULL);
    static char cwd[PATH_MAX]; /* the caller's folder, when the kit shown is it */
    bool in_kit = spec->kit_root && getcwd(cwd, sizeof cwd) && strcmp(cwd, spec->kit_root) == 0;
    add3(w, "--chdir", spec->chdir ? spec->chdir : in_kit ? cwd : "/tmp", NULL);
    add(w, "--");
    add_shim(w, spec);
    for (int i = 0; argv[i]; i++)
        add(w, argv[i]);
}

/* ---- the child ------------------------------------------------------------------- */

/* The limits a confined process runs under; also the shim's work, inside the
 * namespaces, where the count of processes is the sandbox's alone. */
void confine_set_limits(long tasks, long cpu_seconds, long file_size_mb, long address_space_mb)
{
    if (tasks > 0)
        set_limit(RLIMIT_NPROC, tasks);
    if (cpu_seconds > 0)
        set_limit(RLIMIT_CPU, cpu_seconds);
    if (file_size_mb > 0)
        set_limit(RLIMIT_FSIZE, file_size_mb << 20);
    if (address_space_mb > 0)
        set_limit(RLIMIT_AS, address_space_mb << 20);
    set_limit(RLIMIT_CORE, 0);
}

_Noreturn static void enter_confinement(const struct confine_spec *spec, enum confine_level level,
                                        char *const argv[], int output)
{
    if (!spec->interactive)
        setpgid(0, 0);
    if (output >= 0) {
        dup2(output, STDOUT_FILENO);
        dup2(output, STDERR_FILENO);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (spec->interactive)
        signal(SIGINT, SIG_IGN); /* Ctrl-C is gdb's, inside: bubblewrap must live on */
    close_unlisted_fds(spec);
    keep_listed_variables();
    umask(022); /* what a step makes (an object, a test program), the next step's uid reads */
    refuse_terminal_injection();
    if (level == CONFINE_NAMESPACES) { /* bubblewrap, as the caller: the shim drops root inside */
        static struct words words;
        build_bwrap_words(&words, spec, argv);
        execvp("bwrap", words.word);
        _exit(127);
    }
    bool uid_counts_alone = level == CONFINE_UID;
    confine_set_limits(uid_counts_alone ? spec->tasks : 0, spec->cpu_seconds, spec->file_size_mb,
                       spec->address_space_unlimited ? 0 : spec->memory_mb);
    confine_drop_privileges(spec->sandbox_uid);
    if (spec->chdir && chdir(spec->chdir) != 0)
        _exit(126);
    execvp(argv[0], argv);
    fprintf(stderr, "kit-confine: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* ---- supervising ---------------------------------------------------------------- */

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void on_child(int sig)
{
    (void)sig;
}

struct supervision {
    pid_t child;
    enum confine_level level;
    const struct confine_spec *spec;
    int output;          /* read end of the output pipe, or -1 */
    long output_left;    /* bytes still passed on */
    bool output_cut;
    bool timed_out;
};

static void pass_output(struct supervision *s)
{
    char buffer[8192];
    ssize_t n = read(s->output, buffer, sizeof buffer);
    if (n <= 0) {
        close(s->output);
        s->output = -1;
        return;
    }
    long keep = n < s->output_left ? (long)n : s->output_left;
    if (keep > 0 && write(STDOUT_FILENO, buffer, (size_t)keep) < 0)
        s->output_left = 0;
    s->output_left -= keep;
    if (keep < n && !s->output_cut) {
        s->output_cut = true;
        fprintf(stdout, "\n[kit-confine: the output was cut after %ld KB]\n", s->spec->output_kb);
        fflush(stdout);
    }
}

static void stop_everything(const struct supervision *s)
{
    if (s->level == CONFINE_NAMESPACES) /* its pid 1 dies with it, and takes the rest along */
        kill(s->child, SIGKILL);
    else
        kill(-s->child, SIGKILL);
    if (s->level == CONFINE_UID)
        confine_reap_uid(s->spec->sandbox_uid);
}

/* Waits for the child, passing its output on, until it ends, the time is
 * up, or the caller is asked to stop. Returns its wait status. */
static int supervise(struct supervision *s, const sigset_t *waiting_mask)
{
    double deadline = s->spec->wall_seconds > 0 ? now_seconds() + s->spec->wall_seconds : 0;
    bool stopped = false;
    int status = 0;
    while (waitpid(s->child, &status, WNOHANG) != s->child) {
        if (!stopped && (stop_requested || (deadline > 0 && now_seconds() >= deadline))) {
            s->timed_out = !stop_requested;
            stop_everything(s);
            stopped = true;
        }
        double left = deadline > 0 && !stopped ? deadline - now_seconds() : 1.0;
        struct timespec wait = { (time_t)left, (long)((left - (double)(time_t)left) * 1e9) };
        struct pollfd fds = { s->output, POLLIN, 0 };
        if (ppoll(&fds, s->output >= 0 ? 1 : 0, left > 0 ? &wait : NULL, waiting_mask) > 0 && fds.revents)
            pass_output(s);
    }
    return status;
}

/* SIGKILL to each of this process's children. */
static void kill_children(void)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)getpid(), (int)getpid());
    FILE *in = fopen(path, "r");
    for (int child; in && fscanf(in, "%d", &child) == 1;)
        kill(child, SIGKILL);
    if (in)
        fclose(in);
}

/* kit-confine is the run's subreaper: whatever the command leaves behind -
 * a daemon in a session of its own, a pid namespace's first process once its
 * bubblewrap is gone - becomes its child. Kills and reaps them all, round by
 * round (a killed process's children come to it next), until none is left. */
static void end_every_descendant(const struct supervision *s)
{
    if (s->level == CONFINE_UID) /* and any of the uid's that got away */
        confine_reap_uid(s->spec->sandbox_uid);
    for (;;) {
        kill_children();
        if (waitpid(-1, NULL, 0) < 0 && errno == ECHILD)
            return;
    }
}

void confine_reap_uid(long uid)
{
    if (geteuid() != 0 || uid <= 0)
        return;
    pid_t killer = fork();
    if (killer == 0) {
        confine_drop_privileges(uid);
        /* kill(-1) reaches every process of this uid; repeat until none is left */
        for (int i = 0; i < 2000 && kill(-1, SIGKILL) == 0; i++) {
            struct timespec pause = { 0, 1000000 };
            nanosleep(&pause, NULL);
        }
        _exit(0);
    }
    if (killer > 0)
        waitpid(killer, NULL, 0);
}

int confine_run(const struct confine_spec *spec, char *const argv[])
{
    char why[512];
    enum confine_level level = confine_probe(spec->sandbox_uid, why, sizeof why);
    if (geteuid() == 0) {
        join_slot_cgroups(spec);
        hand_over_writable(spec);
    }
    int output[2] = { -1, -1 };
    if (spec->output_kb > 0 && pipe2(output, O_CLOEXEC) != 0)
        return 126 << 8;
    sigset_t blocked, waiting;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGCHLD);
    sigaddset(&blocked, SIGTERM);
    sigaddset(&blocked, SIGHUP);
    if (!spec->interactive)
        sigaddset(&blocked, SIGINT);
    sigprocmask(SIG_BLOCK, &blocked, &waiting);
    signal(SIGCHLD, on_child);
    signal(SIGTERM, on_stop);
    signal(SIGHUP, on_stop);
    signal(SIGINT, spec->interactive ? SIG_IGN : on_stop);
#if defined(PR_SET_CHILD_SUBREAPER)
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); /* a process orphaned by the run is ours to reap */
#endif
    pid_t child = fork();
    if (child == 0)
        enter_confinement(spec, level, argv, output[1]);
    if (output[1] >= 0)
        close(output[1]);
    struct supervision s = { child, level, spec, output[0], spec->output_kb << 10, false, false };
    int status = child > 0 ? supervise(&s, &waiting) : 126 << 8;
    end_every_descendant(&s);
    while (s.output >= 0)
        pass_output(&s);
    if (s.timed_out)
        fprintf(stderr, "kit-confine: stopped after %.0f s, its time limit\n", spec->wall_seconds);
    return s.timed_out ? 124 << 8 : status;
}
