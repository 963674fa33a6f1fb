/**
 * @file dmw_subject.c
 * @brief Judged: the subject program of chapter 07 (test_dmw.subject) - the
 *        one program that links the submission. It makes one call, the one
 *        the test hands it (dmw_call.h), and reports what it returned.
 *
 * Before the submission's first instruction it maps the tests' journal and
 * installs its system-call filter: the calls a worker needs to reach the
 * run's Redis server over the network, and its threads, memory and time;
 * nothing that opens a file, executes, forks, traces or reaches another
 * process (grader/subject/kit_seccomp.c). It holds no token of the verdict:
 * the test that started it decides every check.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dmw_call.h"
#include "kit_serve.h"

static dmw_call_t call;

/* Before each command naming a watched key (look_keys[*@p which]): the test
 * makes the call it armed for it, if any, then answers. */
static void ask_the_test(void *which)
{
    dmw_call_message_t look = { .kind = DMW_CALL_LOOK, .look = *(const int *)which };
    char go;
    if (write(DMW_CALL_REPORT_FD, &look, sizeof look) != (ssize_t)sizeof look || read(DMW_CALL_REQUEST_FD, &go, 1) != 1)
        _exit(125); /* the test is gone */
    journal_before_next_command_naming(call.look_keys[look.look], ask_the_test, which); /* and at the next one */
}

static void watch_for_the_test(void)
{
    static int index[JOURNAL_HOOKS];
    for (int i = 0; i < JOURNAL_HOOKS; i++) {
        index[i] = i;
        call.look_keys[i][sizeof call.look_keys[i] - 1] = '\0';
        if (call.look_keys[i][0])
            journal_before_next_command_naming(call.look_keys[i], ask_the_test, &index[i]);
    }
}

static void confine(bool filtered)
{
    if (!kit_seccomp_prepare(filtered))
        return;
    int err = kit_seccomp_install_networked();
    if (err != 0) {
        fprintf(stderr, "[  ERROR   ] --- the code under test's process could not filter its system calls: %s\n",
                strerror(err));
        _exit(4);
    }
}

int main(int argc, char **argv)
{
    bool filtered = argc == 2 && strcmp(argv[1], "--call") == 0;
    if (!filtered && !(argc == 2 && strcmp(argv[1], "--call-unfiltered") == 0)) {
        fprintf(stderr, "%s is started by its test, test_dmw, with the call to make: run test_dmw\n", argv[0]);
        return 2;
    }
    bool handed = read(DMW_CALL_REQUEST_FD, &call, sizeof call) == (ssize_t)sizeof call;
    if (!handed || journal_attach(DMW_CALL_JOURNAL_FD) != 0)
        return 125;
    watch_for_the_test();
    dmw_call_become_its_process(&call);
    confine(filtered);
    dmw_call_make(&call, DMW_CALL_REPORT_FD);
}
