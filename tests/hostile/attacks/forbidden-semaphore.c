/* Attack: not an attack on the grader but on the lesson: chapter 01 built on
 *         the library's semaphore instead of a mutex and a condition
 *         variable. imports.allow allows sem_*, the chapter forbids it
 *         (ch01_forbids).
 * Expect: flagged
 */
#include <semaphore.h>
int msgq_create(msgq_t **out, size_t capacity)
{
    sem_t slots;
    if (sem_init(&slots, 0, (unsigned)capacity) != 0)
        return ENOMEM;
    sem_destroy(&slots);
    (void)out;
    return ENOSYS;
}
