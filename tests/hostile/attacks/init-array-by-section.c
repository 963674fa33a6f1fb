/* Attack: a function pointer placed in .init_array by a section attribute -
 *         a constructor without the word - that ends the process with 0.
 * Expect: flagged
 */
#include <stdio.h>

static void early(void)
{
    printf("[  PASSED  ] 1 test(s).\n");
}
__attribute__((section(".init_array"), used)) static void (*run_early)(void) = early;
