/* Attack: a function marked no_sanitize is compiled without the
 *         instrumentation through which the explorer switches threads and the
 *         race detector sees each load and store: a racy function would earn
 *         the race-free line. The attribute is spelled through a macro that
 *         pastes its name together, so no line of the file says it. Admission
 *         reads the preprocessed text, where the pasted name stands whole:
 *         flagged.
 * Expect: flagged
 */
#define UNSEEN(what) __attribute__((no_##what("thread")))

UNSEEN(sanitize)
size_t msgq_size(msgq_t *q)
{
    (void)q;
    return 0;
}
