/* Attack: the word asm made by pasting two tokens in a macro, so that it
 *         never appears in the source.
 * Expect: flagged
 */
#define GLUE(a, b) a##b
#define INLINE GLUE(__as, m__)
static void nothing(void)
{
    INLINE volatile("nop");
}
int msgq_create(msgq_t **out, size_t capacity)
{
    nothing();
    (void)out, (void)capacity;
    return ENOSYS;
}
