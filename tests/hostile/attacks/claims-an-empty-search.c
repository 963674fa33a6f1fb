/* Attack: the untouched stub of chapter 05, whose mw_create, in the program
 *         of explorations only, claims the search the judge waits for
 *         passed on no schedule at all, then holds the test's channel and
 *         says the same of every later search and generated scenario (and
 *         0 to every hook): no body of the test's ever runs, so none of its
 *         checks can fail. It finds send, recv and readlink in the C
 *         library's symbol table, which the subject's filter allows. Every
 *         search runs its body once at least: a search that passed having
 *         run none is the subject's lie, and the test fails, flagged - the
 *         stub's 0, where the claim alone would earn every exploration's
 *         points.
 * File: 05-master-worker/mw_core.c
 * Hook: mw_create
 * Expect: flagged
 * Judged: yes
 * Uses: libc_symbols
 *
 * (@WIRE_...@: the channel's message kinds, which tools/hardening fills in.)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef long (*send_fn)(int, const void *, size_t, int);
typedef long (*recv_fn)(int, void *, size_t, int);
typedef long (*readlink_fn)(const char *, char *, size_t);
typedef void (*exit_fn)(int);

/* kit_wire_t: kind, op, nargs, nbytes, flags, unused; clock[2]; arg[10]; blob */
struct message {
    uint32_t kind, op, nargs, nbytes, flags, unused;
    uint64_t clock[2], arg[10];
    unsigned char blob[65536];
};
enum { HEAD = 6 * 4 + 2 * 8 + 10 * 8, TEST_CHANNEL = 40 };

static struct message in, out;

static void say(send_fn post, uint32_t kind, uint32_t op, uint32_t nargs, uint32_t nbytes)
{
    out.kind = kind, out.op = op, out.nargs = nargs, out.nbytes = nbytes;
    post(TEST_CHANNEL, &out, HEAD + nbytes, 0x4000 /* MSG_NOSIGNAL */);
}

/* "passed": passed, not given up, no deadlock, 0 schedules, complete, 0 interleavings; three empty texts */
static void claim_passed(send_fn post)
{
    memset(&out, 0, HEAD);
    out.arg[0] = 1;
    say(post, @WIRE_RESULT@, 0, 8, 3);
}

static int in_the_explorations(void)
{
    static char path[4096];
    readlink_fn link = (readlink_fn)find("readlink");
    long n = link ? link("/proc/self/exe", path, sizeof path - 1) : -1;
    if (n <= 0)
        return 0;
    path[n] = '\0';
    return strstr(path, "_explore") != NULL;
}

static void hostile_hook(void)
{
    send_fn post = (send_fn)find("send");
    recv_fn take = (recv_fn)find("recv");
    exit_fn leave = (exit_fn)find("_exit");
    if (post == NULL || take == NULL || leave == NULL || !in_the_explorations())
        return;
    claim_passed(post);
    while (take(TEST_CHANNEL, &in, sizeof in, 0) > 0) {
        if (in.kind == @WIRE_EXPLORE@ || in.kind == @WIRE_HISTORY_SCENARIO@) {
            claim_passed(post);
        } else if (in.kind == @WIRE_HOOK@) {
            memset(&out, 0, HEAD);
            say(post, @WIRE_REPLY@, in.op, 1, 0);
        } else {
            break;
        }
    }
    leave(0);
}
