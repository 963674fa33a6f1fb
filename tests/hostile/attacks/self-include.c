/* Attack: a file that includes itself, for a build that never ends.
 * Expect: zero
 */
#include __FILE__
