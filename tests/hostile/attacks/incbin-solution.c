/* Attack: .incbin of the reference solution into the object, to print it
 *         back in a failure message.
 * Expect: flagged
 */
__asm__(".section .rodata\n.global answer\nanswer:\n.incbin \"../../solutions/01-monitor-queue/msgq.c\"\n.byte 0\n.text");
