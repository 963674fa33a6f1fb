/**
 * @file kit_serve.h
 * @brief The subject's server, as the generated table of a chapter's calls
 *        sees it: each row makes one call of the chapter's API from the
 *        words and bytes of a request, and puts its answer in the reply.
 */
#ifndef KIT_SERVE_H
#define KIT_SERVE_H

#include "kit_wire.h"

/** One function of the chapter's API, served. */
typedef struct {
    const char *name;
    uint32_t words; /**< words a request carries */
    /** Make the call; false if the request does not fit the row (a protocol error). */
    bool (*serve)(const kit_wire_t *request, kit_wire_t *reply);
} kit_serve_op_t;

/** The chapter's table (generated: build/.../NN_serve.c). */
extern const kit_serve_op_t kit_serve_ops[];
extern const int kit_serve_nops;

/** A non-NULL pointer the generated code puts in an out-pointer before the
 *  call, to see whether the call set it. */
extern char kit_serve_unset;

/** A function of the test's (@p id, of the table's callback @p type), called
 *  by the code under test on this thread: its message, to add the arguments
 *  to. A thread of the code under test's own takes a mirror channel first
 *  (kit_wire.h), so the test's function runs on a thread of the judge's that
 *  mirrors it. */
kit_wire_t *kit_serve_callback_begin(uint32_t type, uint64_t id);
/** A thread of the code under test's ends: the judge's thread that mirrors it, if any, leaves (kit_wrap.c). */
void kit_serve_thread_ended(void);
/** Send it, serve the calls the test's function makes, and return what it
 *  returned; what it stored through its @p nmore out-pointers into @p more. */
uint64_t kit_serve_callback(kit_wire_t *m, uint64_t *more, uint32_t nmore);
/** A struct the call being served was handed (@p copy, named @p judge by the judge), around the call. */
void kit_serve_ref_push(const void *copy, uint64_t judge);
void kit_serve_ref_pop(void);
/** Two words naming @p ref for the judge: NULL, a struct a call in progress was handed, or another. */
void kit_serve_ref_out(kit_wire_t *m, const void *ref);

/** Before a subject's filter: load what the harness loads lazily (the
 *  first backtrace's library, the clock's page); whether a filter is to be
 *  installed - @p filtered, unless a sanitizer's runtime runs here. */
bool kit_seccomp_prepare(bool filtered);
/** Install the subject's system-call filter (kit_seccomp.c): 0, or an errno value. */
int kit_seccomp_install(int first_channel, int channels);
/** The filter of a subject that talks to a server (chapter 07's workers):
 *  the same list, with reading and writing on any descriptor it holds,
 *  Internet sockets, connect and close; 0, or an errno value. */
int kit_seccomp_install_networked(void);

#endif
