/* Attack: includes a file only root can read, hoping the compiler's error
 *         shows its first line back in the failure details.
 * Expect: zero
 */
#include "/etc/shadow"
