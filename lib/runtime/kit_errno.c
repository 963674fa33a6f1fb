/**
 * @file kit_errno.c
 * @brief errno value to name.
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_errno.h"

#include <errno.h>

const char *kit_errno_name(int code)
{
    switch (code) {
    case 0: return "0";
    case EINVAL: return "EINVAL";
    case ETIMEDOUT: return "ETIMEDOUT";
    case ECANCELED: return "ECANCELED";
    case EAGAIN: return "EAGAIN";
    case ENOMEM: return "ENOMEM";
    case EDEADLK: return "EDEADLK";
    case ENOSYS: return "ENOSYS";
    case EBUSY: return "EBUSY";
    case EIO: return "EIO";
    case ENOENT: return "ENOENT";
    case EEXIST: return "EEXIST";
    case EPERM: return "EPERM";
    case ERANGE: return "ERANGE";
    case ECONNREFUSED: return "ECONNREFUSED";
    default: return "E?";
    }
}
