/* Attack: declares the harness's own functions and calls them: the fault
 *         injection off, the failing check forgotten.
 * Expect: flagged
 */
void kit_fail_allocation(long nth);
void kit_skip_caller_stack(void);
int msgq_create(msgq_t **out, size_t capacity)
{
    kit_fail_allocation(0);
    kit_skip_caller_stack();
    (void)out, (void)capacity;
    return ENOSYS;
}
