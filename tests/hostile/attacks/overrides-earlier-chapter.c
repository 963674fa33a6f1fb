/* Attack: chapter 03's file defines chapter 02's bq_put, to replace the
 *         reference queue it is graded with by one of its own.
 * File: 03-thread-pool/tpool.c
 * Expect: flagged
 */
int bq_put(bq_t *q, void *item)
{
    (void)q, (void)item;
    return 0;
}
