/* Attack: route 1 on chapter 07, whose workers are processes: the untouched
 *         stub, whose dmw_worker_run first walks from rand to the C
 *         library's symbol table, moves the pass token between the
 *         descriptors a test process inherits with splice, and exits. In
 *         one process the worker is the test itself, or a forked copy of it
 *         that holds its descriptors: 24 of 66 (the stub's 0), nothing
 *         flagged. Judged,
 *         every call runs in the subject program, which holds no token and
 *         whose filter kills it at splice: the stub's 0, flagged.
 * File: 07-distributed-workers/dmw_worker.c
 * Hook: dmw_worker_run
 * Expect: flagged
 * Judged: yes
 * Uses: libc_symbols
 */
static void hostile_hook(void)
{
    move_token_and_leave();
}
