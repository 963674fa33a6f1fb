/* Attack: route 1 on chapter 06, whose tasks run in the judge on threads
 *         that mirror the pool's workers and whose executors the judge
 *         holds by handle: the untouched stub, whose keyed_create first
 *         walks from rand to the C library's symbol table, moves the pass
 *         token between the descriptors a test process inherits with
 *         splice, and exits. Judged, the code runs in the subject, which
 *         holds no token and whose filter kills it at splice: the stub's 0,
 *         flagged.
 * File: 06-keyed-executor/keyed.c
 * Hook: keyed_create
 * Expect: flagged
 * Judged: yes
 * Uses: libc_symbols
 */
static void hostile_hook(void)
{
    move_token_and_leave();
}
