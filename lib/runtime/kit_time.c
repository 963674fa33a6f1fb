/**
 * @file kit_time.c
 * @brief Monotonic clock, deadline arithmetic, monotonic condition variables.
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_time.h"

#include <errno.h>

#define NS_PER_MS 1000000L
#define NS_PER_S 1000000000L
/* About 68 years: longer waits are "forever" for every practical purpose. */
#define FOREVER_S 2147483647L

int64_t kit_now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * NS_PER_S + now.tv_nsec;
}

double kit_elapsed_ms(int64_t start_ns)
{
    return (double)(kit_now_ns() - start_ns) / 1e6;
}

int kit_deadline_after(long timeout_ms, struct timespec *deadline)
{
    if (timeout_ms < 0 || deadline == NULL)
        return EINVAL;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    /* Split into seconds and nanoseconds before adding, and cap the seconds,
     * so that even LONG_MAX milliseconds cannot overflow time_t. */
    long add_s = timeout_ms / 1000;
    if (add_s > FOREVER_S)
        add_s = FOREVER_S;
    deadline->tv_sec = now.tv_sec + (time_t)add_s;
    deadline->tv_nsec = now.tv_nsec + (timeout_ms % 1000) * NS_PER_MS;
    if (deadline->tv_nsec >= NS_PER_S) {
        deadline->tv_nsec -= NS_PER_S;
        deadline->tv_sec += 1;
    }
    return 0;
}

int kit_cond_init(pthread_cond_t *cond)
{
    pthread_condattr_t attr;
    int err = pthread_condattr_init(&attr);
    if (err != 0)
        return err;
    err = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (err == 0)
        err = pthread_cond_init(cond, &attr);
    pthread_condattr_destroy(&attr);
    return err;
}

static void sleep_ns(int64_t ns)
{
    struct timespec left = { .tv_sec = (time_t)(ns / NS_PER_S), .tv_nsec = (long)(ns % NS_PER_S) };
    /* nanosleep reports the time still to sleep when a signal cuts it short. */
    while (nanosleep(&left, &left) == -1 && errno == EINTR)
        ;
}

void kit_sleep_ms(long ms)
{
    if (ms > 0)
        sleep_ns((int64_t)ms * NS_PER_MS);
}

void kit_sleep_us(long us)
{
    if (us > 0)
        sleep_ns((int64_t)us * 1000);
}
