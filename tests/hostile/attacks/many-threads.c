/* Attack: starts 5000 threads that sleep, to exhaust the machine's tasks.
 * Expect: zero
 */
#include <pthread.h>
#include <unistd.h>
static void *nap(void *arg)
{
    (void)arg;
    sleep(100);
    return NULL;
}
int msgq_create(msgq_t **out, size_t capacity)
{
    for (int i = 0; i < 5000; i++) {
        pthread_t thread;
        if (pthread_create(&thread, NULL, nap, NULL) != 0)
            break;
    }
    (void)out, (void)capacity;
    return ENOSYS;
}
