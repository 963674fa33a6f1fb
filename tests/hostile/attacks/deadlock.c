/* Attack: locks the same mutex twice on the test's own thread.
 * Expect: zero
 */
#include <pthread.h>
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
int msgq_create(msgq_t **out, size_t capacity)
{
    pthread_mutex_lock(&lock);
    pthread_mutex_lock(&lock);
    (void)out, (void)capacity;
    return ENOSYS;
}
