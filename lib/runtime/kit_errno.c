/**
 * @file kit_errno.c
 * @brief errno value to name.
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_errno.h"

#include <errno.h>
#include <stddef.h>

/* Every code a pthread call, an allocation, a file or a socket - and so
 * the kit or a student's code - can return, by the name a man page uses. */
static const struct {
    int code;
    const char *name;
} names[] = {
    { EINVAL, "EINVAL" }, { ETIMEDOUT, "ETIMEDOUT" }, { ECANCELED, "ECANCELED" }, { EAGAIN, "EAGAIN" },
    { ENOMEM, "ENOMEM" }, { EDEADLK, "EDEADLK" }, { ENOSYS, "ENOSYS" }, { EBUSY, "EBUSY" }, { EIO, "EIO" },
    { ENOENT, "ENOENT" }, { EEXIST, "EEXIST" }, { EPERM, "EPERM" }, { ERANGE, "ERANGE" },
    { ECONNREFUSED, "ECONNREFUSED" }, { EFAULT, "EFAULT" }, { EINTR, "EINTR" }, { EBADF, "EBADF" },
    { ESRCH, "ESRCH" }, { EACCES, "EACCES" }, { ENOSPC, "ENOSPC" }, { EMFILE, "EMFILE" }, { ENFILE, "ENFILE" },
    { EPIPE, "EPIPE" }, { EOVERFLOW, "EOVERFLOW" }, { ENOTSUP, "ENOTSUP" }, { EALREADY, "EALREADY" },
    { EINPROGRESS, "EINPROGRESS" }, { ECONNRESET, "ECONNRESET" }, { ENOTCONN, "ENOTCONN" },
    { EHOSTUNREACH, "EHOSTUNREACH" }, { ENETUNREACH, "ENETUNREACH" }, { EADDRINUSE, "EADDRINUSE" },
    { EPROTO, "EPROTO" }, { EMSGSIZE, "EMSGSIZE" }, { ENOTDIR, "ENOTDIR" }, { EISDIR, "EISDIR" },
    { ENAMETOOLONG, "ENAMETOOLONG" }, { ENOTEMPTY, "ENOTEMPTY" }, { EROFS, "EROFS" }, { EFBIG, "EFBIG" },
    { ECHILD, "ECHILD" }, { E2BIG, "E2BIG" }, { ENOEXEC, "ENOEXEC" }, { EDOM, "EDOM" }, { ENOLCK, "ENOLCK" },
    { EOWNERDEAD, "EOWNERDEAD" }, { ENOTRECOVERABLE, "ENOTRECOVERABLE" }, { ENOTSOCK, "ENOTSOCK" },
    { ESPIPE, "ESPIPE" }, { ENXIO, "ENXIO" }, { ENODEV, "ENODEV" }, { EXDEV, "EXDEV" }, { ETXTBSY, "ETXTBSY" },
    { EMLINK, "EMLINK" }, { ENOBUFS, "ENOBUFS" }, { EADDRNOTAVAIL, "EADDRNOTAVAIL" }, { ELOOP, "ELOOP" },
    { ENOTTY, "ENOTTY" }, { EILSEQ, "EILSEQ" }, { EBADMSG, "EBADMSG" }, { EIDRM, "EIDRM" },
};

const char *kit_errno_name(int code)
{
    if (code == 0)
        return "0";
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].code == code)
            return names[i].name;
    if (code < 0)
        return "a negative number (error codes are positive: return EINVAL, not -EINVAL)";
    return "an error number no errno.h name has";
}
