/* Attack: ends the test's main thread with pthread_exit, so that the
 *         process exits with status 0 before any check ran.
 * Expect: zero
 */
#include <pthread.h>
int msgq_create(msgq_t **out, size_t capacity)
{
    (void)out, (void)capacity;
    pthread_exit(NULL);
}
