/* Attack: a line marker (the preprocessor's own `# 1 "file" 1 3` form,
 *         which GCC also reads in sources) that enters a "system header".
 * Expect: flagged
 */
# 1 "/usr/include/x86_64-linux-gnu/bits/hostile.h" 1 3
static void nothing(void)
{
    __asm__ volatile("nop");
}
