/* Attack: the same as no-sanitize-hides-a-race, for every function at once
 *         and inside a string: a _Pragma that asks clang to put no_sanitize on
 *         every function that follows (gcc ignores it, with a warning). A
 *         check of words that skips strings would miss it; admission reads a
 *         pragma's quoted text too: flagged.
 * Expect: flagged
 */
_Pragma("clang attribute push(__attribute__((no_sanitize(\"thread\"))), apply_to = function)")

size_t msgq_size(msgq_t *q)
{
    (void)q;
    return 0;
}

_Pragma("clang attribute pop")
