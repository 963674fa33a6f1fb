/* Attack: loops for ever on the CPU.
 * Expect: zero
 */
int msgq_create(msgq_t **out, size_t capacity)
{
    for (volatile unsigned long i = 0;; i++)
        ;
    (void)out, (void)capacity;
    return ENOSYS;
}
