/* Attack: a function placed in a .rodata.* section by a section pragma in
 *         its _Pragma form: read-only data becomes executable.
 * Expect: flagged
 */
#define IN_RODATA _Pragma("clang section text=\".rodata.hostile\"")
IN_RODATA
static int succeed(void)
{
    return 0;
}
__attribute__((section(".rodata.hostile2"))) static int succeed_too(void)
{
    return 0;
}
int msgq_create(msgq_t **out, size_t capacity)
{
    (void)out, (void)capacity;
    return succeed() + succeed_too();
}
