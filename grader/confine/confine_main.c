/**
 * @file confine_main.c
 * @brief kit-confine: run a command confined (confine.h), from make and scripts.
 *
 *     kit-confine [options] -- COMMAND [ARGS]   run it; exit as it exited
 *     kit-confine --probe                       print the level this machine gives
 *     kit-confine --reap                        root: kill every process of the sandbox uid
 *     kit-confine --slot -- COMMAND [ARGS]      root: claim a sandbox uid for every confined
 *                                               step COMMAND runs (KIT_SANDBOX_UID), and run it
 *
 * Options: --kit DIR (show the kit's headers), --ro PATH, --ro-at SOURCE DEST,
 * --rw DIR, --chdir DIR, --fd N, --uid N, --wall S, --cpu S, --memory MB,
 * --no-address-limit, --file-size MB, --tasks N, --output KB, --interactive.
 * The sandbox uid is KIT_SANDBOX_UID when set, else 64000.
 */
#define _DEFAULT_SOURCE /* realpath */
#include "confine.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static _Noreturn void usage(void)
{
    fprintf(stderr, "usage: kit-confine [--kit DIR] [--ro PATH] [--ro-at SOURCE DEST] [--rw DIR] [--chdir DIR]\n"
                    "                   [--fd N] [--uid N] [--wall S] [--cpu S] [--memory MB] [--no-address-limit]\n"
                    "                   [--file-size MB] [--tasks N] [--output KB] [--interactive] -- COMMAND [ARGS]\n"
                    "       kit-confine --probe | --reap\n");
    exit(2);
}

/* An absolute path, as the kernel names it: bubblewrap mounts nothing relative. */
static const char *absolute(const char *path, bool resolve)
{
    char *result = malloc(2 * PATH_MAX), cwd[PATH_MAX];
    if (resolve && realpath(path, result))
        return result;
    snprintf(result, 2 * PATH_MAX, "%s%s%s", path[0] == '/' ? "" : getcwd(cwd, sizeof cwd) ? cwd : "",
             path[0] == '/' ? "" : "/", path);
    return result;
}

static void add_mount(struct confine_spec *spec, const char *source, const char *dest, bool writable)
{
    if (spec->mount_count == CONFINE_MAX_MOUNTS)
        usage();
    const char *from = absolute(source, true);
    spec->mounts[spec->mount_count++] = (struct confine_mount){ from, dest ? absolute(dest, false) : from, writable };
}

/* Parses the options; returns the index of the command's first word. */
static int parse(int argc, char **argv, struct confine_spec *spec)
{
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        const char *arg = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        bool flag = strcmp(arg, "--interactive") == 0 || strcmp(arg, "--no-address-limit") == 0;
        if (!flag && value == NULL)
            usage();
        if (strcmp(arg, "--interactive") == 0) spec->interactive = true;
        else if (strcmp(arg, "--no-address-limit") == 0) spec->address_space_unlimited = true;
        else if (strcmp(arg, "--kit") == 0) spec->kit_root = value;
        else if (strcmp(arg, "--chdir") == 0) spec->chdir = value;
        else if (strcmp(arg, "--ro") == 0) add_mount(spec, value, NULL, false);
        else if (strcmp(arg, "--rw") == 0) add_mount(spec, value, NULL, true);
        else if (strcmp(arg, "--ro-at") == 0 && i + 2 < argc) { add_mount(spec, value, argv[i + 2], false); i++; }
        else if (strcmp(arg, "--fd") == 0 && spec->keep_fd_count < CONFINE_MAX_FDS)
            spec->keep_fds[spec->keep_fd_count++] = atoi(value);
        else if (strcmp(arg, "--uid") == 0) spec->sandbox_uid = atol(value);
        else if (strcmp(arg, "--wall") == 0) spec->wall_seconds = atof(value);
        else if (strcmp(arg, "--cpu") == 0) spec->cpu_seconds = atol(value);
        else if (strcmp(arg, "--memory") == 0) spec->memory_mb = atol(value);
        else if (strcmp(arg, "--file-size") == 0) spec->file_size_mb = atol(value);
        else if (strcmp(arg, "--tasks") == 0) spec->tasks = atol(value);
        else if (strcmp(arg, "--output") == 0) spec->output_kb = atol(value);
        else usage();
        i += !flag;
    }
    if (i + 1 >= argc)
        usage();
    return i + 1;
}

/* Leaves the way the command left: its exit status, or its signal. */
static _Noreturn void leave_like(int status)
{
    if (WIFSIGNALED(status)) {
        signal(WTERMSIG(status), SIG_DFL);
        raise(WTERMSIG(status));
        exit(128 + WTERMSIG(status));
    }
    exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

/* The shim, inside the namespaces: the sandbox uid when it runs as root, the
 * limits, no user namespaces, then the command. */
static _Noreturn void exec_limited(int argc, char **argv)
{
    if (argc < 9 || strcmp(argv[7], "--") != 0)
        usage();
    confine_drop_privileges(atol(argv[6]));
    confine_set_limits(atol(argv[2]), atol(argv[3]), atol(argv[4]), atol(argv[5]));
    confine_refuse_user_namespaces();
    execvp(argv[8], argv + 8);
    fprintf(stderr, "kit-confine: cannot run %s: %s\n", argv[8], strerror(errno));
    exit(127);
}

/* The steps of one build (preprocess, compile, rewrite the object) share
 * their work folder: run apart, each would claim the first free slot, and a
 * step could get another uid than the one that wrote the folder's files
 * while a grade beside it holds a slot. So make debug and make explore run
 * the build under one slot, held (its lock) until the command ends. */
static _Noreturn void run_in_a_slot(char **command, long first_uid)
{
    if (geteuid() == 0 && getenv("KIT_SANDBOX_UID") == NULL) {
        char text[32];
        snprintf(text, sizeof text, "%ld", confine_claim_uid(first_uid));
        setenv("KIT_SANDBOX_UID", text, 1);
    }
    pid_t child = fork();
    if (child == 0) {
        execvp(command[0], command);
        fprintf(stderr, "kit-confine: cannot run %s: %s\n", command[0], strerror(errno));
        _exit(127);
    }
    int status = 1 << 8;
    while (child > 0 && waitpid(child, &status, 0) < 0 && errno == EINTR)
        continue;
    leave_like(status);
}

int main(int argc, char **argv)
{
    const char *uid_text = getenv("KIT_SANDBOX_UID");
    struct confine_spec spec = { .sandbox_uid = uid_text ? atol(uid_text) : 64000, .tasks = 256,
                                 .file_size_mb = 64 };
    if (argc > 1 && strcmp(argv[1], "--exec-limited") == 0)
        exec_limited(argc, argv);
    if (argc == 2 && strcmp(argv[1], "--probe") == 0) {
        char why[512];
        enum confine_level level = confine_probe(spec.sandbox_uid, why, sizeof why);
        printf("%s%s%s\n", confine_level_name(level), why[0] ? ": " : "", why);
        return level == CONFINE_NAMESPACES ? 0 : 1;
    }
    if (argc > 3 && strcmp(argv[1], "--slot") == 0 && strcmp(argv[2], "--") == 0)
        run_in_a_slot(argv + 3, spec.sandbox_uid);
    if (argc == 2 && strcmp(argv[1], "--reap") == 0) {
        confine_reap_uid(spec.sandbox_uid);
        return 0;
    }
    int command = parse(argc, argv, &spec);
    if (uid_text == NULL && geteuid() == 0) /* run alone (make debug, explore): a slot of its own */
        spec.sandbox_uid = confine_claim_uid(spec.sandbox_uid);
    leave_like(confine_run(&spec, argv + command));
}
