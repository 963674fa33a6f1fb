/**
 * @file escape.c
 * @brief What a submission would try if the gate let it: each attack on the
 *        confinement alone, run under kit-confine by tools/hardening.
 *
 * `escape ATTACK KIT` exits 0 when the confinement held - the attack could
 * not read, write, signal or outlive what it aimed at - and 1, saying what
 * got through, when it did not. Attacks that leave something behind (a
 * daemon, a file) are checked from outside too, by tools/hardening.
 */
#define _GNU_SOURCE /* setsid, memfd-free tricks, TIOCSTI */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kit;

static int held(const char *what)
{
    printf("held: %s\n", what);
    return 0;
}

static int broke(const char *what)
{
    printf("BROKE: %s\n", what);
    return 1;
}

/* Nothing of the kit but its headers, nothing of the machine's secrets. */
static int read_secrets(void)
{
    const char *relative[] = { "solutions/01-monitor-queue/msgq.c", "tests/rubric.tsv", "tests/mutants",
                               "build/grade-all", "build/grade", ".git/config", NULL };
    const char *absolute[] = { "/etc/shadow", "/root", "/home", "/run/lock", "/var/lib", "/sys", NULL };
    char path[4096];
    for (int i = 0; relative[i]; i++) {
        snprintf(path, sizeof path, "%s/%s", kit, relative[i]);
        if (access(path, F_OK) == 0)
            return broke(path);
    }
    for (int i = 0; absolute[i]; i++)
        if (access(absolute[i], R_OK) == 0 && open(absolute[i], O_RDONLY) >= 0)
            return broke(absolute[i]);
    for (int pid = 2; pid < 4194304; pid = pid < 100 ? pid + 1 : pid * 2) { /* the grader's own processes */
        snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
        FILE *in = fopen(path, "r");
        char command[256] = "";
        if (in && fgets(command, sizeof command, in) && (strstr(command, "kit-grade") || strstr(command, "make")))
            return broke(path);
        if (in)
            fclose(in);
    }
    return held("no solution, rubric, report, other submission, secret or grader's process is visible");
}

/* Nothing outside the private /tmp is writable. */
static int write_outside(void)
{
    char path[4096];
    const char *places[] = { "/", "/usr", "/etc", "/var", "/dev", NULL };
    snprintf(path, sizeof path, "%s/kit-hostile-was-here", kit);
    if (open(path, O_WRONLY | O_CREAT, 0644) >= 0)
        return broke(path);
    for (int i = 0; places[i]; i++) {
        snprintf(path, sizeof path, "%s/kit-hostile-was-here", places[i]);
        if (open(path, O_WRONLY | O_CREAT, 0644) >= 0)
            return broke(path);
    }
    if (open("/tmp/kit-hostile-inside", O_WRONLY | O_CREAT, 0644) < 0)
        return broke("its own /tmp is not writable");
    return held("only its private /tmp is writable");
}

/* A daemon that would rewrite the verdict after the grade. */
static int daemon_outlives(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        setsid();
        if (fork() == 0) {
            sleep(3);
            printf("BROKE: a daemon outlived its confinement\n");
            fflush(stdout);
            _exit(0);
        }
        _exit(0);
    }
    return held("daemon started (tools/hardening checks it is gone)");
}

/* The grader above, killed by its test. */
static int kill_parent(void)
{
    kill(getppid(), SIGKILL);
    kill(1, SIGKILL);
    kill(-1, SIGKILL);
    return held("kill sent (tools/hardening checks the grader lived)");
}

/* Characters pushed into the grader's terminal would run in its shell. */
static int inject_terminal(void)
{
    for (int fd = 0; fd < 3; fd++) {
        char c = '#';
        if (ioctl(fd, TIOCSTI, &c) == 0)
            return broke("TIOCSTI pushed input into the terminal");
    }
    return held("TIOCSTI refused");
}

/* A port of the grading machine, reachable from a test? */
static int reach_network(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = htons(22) };
    inet_pton(AF_INET, "10.0.2.2", &address.sin_addr);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&address, sizeof address) == 0)
        return broke("reached another machine");
    return held("no network beyond its own loopback");
}

/* What the grader's environment held (a token, a key) must not be here. */
static int read_environment(void)
{
    extern char **environ;
    for (char **v = environ; *v; v++)
        if (strstr(*v, "HARDENING_SECRET_TOKEN") || strstr(*v, "KIT_RESULT"))
            return broke(*v);
    return held("the environment holds listed variables only");
}

/* Inherited descriptors beyond 0, 1, 2 (and those the grader passes). */
static int inherited_fds(void)
{
    for (int fd = 3; fd < 256; fd++)
        if (fcntl(fd, F_GETFD) >= 0 && fd != 3 && fd != 4)
            return broke("a descriptor of the grader was inherited");
    return held("no descriptor but the listed ones");
}

static int fork_bomb(void)
{
    for (int i = 0; i < 100000; i++)
        if (fork() < 0)
            return held("fork refused at the limit");
    return broke("100000 processes");
}

static int eat_memory(void)
{
    size_t total = 0;
    for (int i = 0; i < 64; i++) {
        char *block = malloc(64 << 20);
        if (block == NULL)
            return held("memory refused at the limit");
        memset(block, 1, 64 << 20);
        total += 64 << 20;
    }
    return broke("4 GB allocated and touched");
}

static int flood_output(void)
{
    char line[4096];
    memset(line, 'x', sizeof line - 1);
    line[sizeof line - 1] = '\n';
    for (long i = 0; i < 200000; i++) /* 800 MB */
        if (fwrite(line, 1, sizeof line, stdout) != sizeof line)
            return held("the output was cut");
    return held("800 MB written (tools/hardening checks what was kept)");
}

static int fill_tmp(void)
{
    FILE *out = fopen("/tmp/kit-hostile-fill", "w");
    static char block[1 << 20];
    for (int i = 0; out && i < 4096; i++)
        if (fwrite(block, 1, sizeof block, out) != sizeof block)
            return held("the private /tmp is small");
    return broke("4 GB written to /tmp");
}

int main(int argc, char **argv)
{
    static const struct { const char *name; int (*attack)(void); } attacks[] = {
        { "read-secrets", read_secrets }, { "write-outside", write_outside }, { "daemon", daemon_outlives },
        { "kill-parent", kill_parent }, { "inject-terminal", inject_terminal }, { "network", reach_network },
        { "environment", read_environment }, { "inherited-fds", inherited_fds }, { "fork-bomb", fork_bomb },
        { "eat-memory", eat_memory }, { "flood-output", flood_output }, { "fill-tmp", fill_tmp }, { NULL, NULL } };
    if (argc != 3) {
        fprintf(stderr, "usage: escape ATTACK KIT\n");
        return 2;
    }
    kit = argv[2];
    signal(SIGXFSZ, SIG_IGN);
    for (int i = 0; attacks[i].name; i++)
        if (strcmp(argv[1], attacks[i].name) == 0)
            return attacks[i].attack();
    fprintf(stderr, "escape: no attack %s\n", argv[1]);
    return 2;
}
