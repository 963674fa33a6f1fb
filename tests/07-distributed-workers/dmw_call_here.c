/**
 * @file dmw_call_here.c
 * @brief In one process (make debug, make tsan, valgrind): a call's process
 *        is the forked copy of the test, which makes the call itself.
 */
#include "dmw_call.h"

_Noreturn void dmw_call_start(const dmw_call_t *call, const int request[2], int report_fd)
{
    (void)request;
    dmw_call_run_here(call, report_fd);
}
