/**
 * @file kit_anchor.c
 * @brief The place a replay token counts its racing places from.
 *
 * A token names the places where a schedule found racing accesses (each a
 * switch point from then on) by their distance from kit_code_anchor(). This
 * object is linked immediately before the code under test in every test
 * program - one process or a judged test's subject - so a distance names
 * the same instruction in both, and stays the same when the kit's own code
 * (the explorer, the harness, the server) grows or shrinks around it.
 */
void kit_code_anchor(void);

__attribute__((noinline, used)) void kit_code_anchor(void)
{
    __asm__ volatile(""); /* a function of its own, never folded into another */
}
