/* The liar's answers to everything the judge must take on the subject's
 * word (docs/grading.md, "What stays the subject's word"): no data race,
 * nothing ever allocated or leaked, every injected wake-up delivered, no
 * futile wake-up. Linked before the subject's own definitions
 * (SUBJECT_FIRST_OBJS, -Wl,--allow-multiple-definition), they stand for a
 * subject whose every word is a lie (tests/hostile/liar/run). */
#include <stdbool.h>

bool kit_sched_saw_race(void);
long kit_live_allocations(void);
long kit_allocation_calls(void);
long kit_spurious_count(void);
long kit_sched_wakeups(void);
long kit_sched_futile_wakeups(void);
bool kit_sched_woken_spuriously(void);

bool kit_sched_saw_race(void) { return false; }
long kit_live_allocations(void) { return 0; }
long kit_allocation_calls(void) { return 0; }
long kit_spurious_count(void) { return 1000000; }
long kit_sched_wakeups(void) { return 1000; }
long kit_sched_futile_wakeups(void) { return 0; }
bool kit_sched_woken_spuriously(void) { return true; }
