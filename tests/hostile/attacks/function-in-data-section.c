/* Attack: a function placed in a .data.* section: the test program's
 *         writable data becomes executable (a segment both writable and
 *         executable), where code could be written and then run.
 * Expect: flagged
 */
__attribute__((__section__(".data.hostile"))) static int succeed(void)
{
    return 0;
}
int msgq_create(msgq_t **out, size_t capacity)
{
    (void)out, (void)capacity;
    return succeed();
}
