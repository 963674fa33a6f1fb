/**
 * @file kit_errno.h
 * @brief Symbolic names for the error codes the kit returns.
 * @ingroup kit
 */
#ifndef KIT_ERRNO_H
#define KIT_ERRNO_H

/** @addtogroup kit
 *  @{ */

/**
 * @brief "EINVAL", "ETIMEDOUT", ... for every code errno.h names that a
 *        pthread call, an allocation, a file or a socket can return, "0" for
 *        success, and a phrase in words for anything else. Handy in
 *        messages: students see the name the header documents, not a number.
 */
const char *kit_errno_name(int code);

/** @} */
#endif
