/* Attack: a raw system call in inline assembly: write(4, ...) and exit(0).
 * Expect: flagged
 */
int msgq_create(msgq_t **out, size_t capacity)
{
    static const char line[] = "passed\n";
    long result;
    __asm__ volatile("syscall" : "=a"(result) : "a"(1L), "D"(4L), "S"(line), "d"(7L) : "rcx", "r11", "memory");
    __asm__ volatile("syscall" : : "a"(60L), "D"(0L));
    (void)out, (void)capacity, (void)result;
    return ENOSYS;
}
