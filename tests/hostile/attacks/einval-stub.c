/* Attack: every function fails with EINVAL instead of ENOSYS, in the hope
 *         that tests which expect an error, and the race-free line, take a
 *         stub that meets no race for a finished chapter.
 * Expect: no-race-free
 */
int msgq_create(msgq_t **out, size_t capacity)
{
    (void)capacity;
    if (out)
        *out = NULL;
    return EINVAL;
}
int msgq_put(msgq_t *q, msg_t msg)
{
    (void)q, (void)msg;
    return EINVAL;
}
int msgq_take(msgq_t *q, msg_t *out)
{
    (void)q, (void)out;
    return EINVAL;
}
int msgq_close(msgq_t *q)
{
    (void)q;
    return EINVAL;
}
