/* Attack: route 1 on chapter 05, whose process functions run in the judge
 *         on threads that mirror the component's workers and whose
 *         components the judge holds by handle: the untouched stub, whose
 *         mw_create first walks from rand to the C library's symbol table,
 *         moves the pass token between the descriptors a test process
 *         inherits with splice, and exits. Judged, the code runs in the
 *         subject, which holds no token and whose filter kills it at
 *         splice: the stub's 0, flagged.
 * File: 05-master-worker/mw_core.c
 * Hook: mw_create
 * Expect: flagged
 * Judged: yes
 * Uses: libc_symbols
 */
static void hostile_hook(void)
{
    move_token_and_leave();
}
