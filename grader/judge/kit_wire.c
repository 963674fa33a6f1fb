/**
 * @file kit_wire.c
 * @brief Sending and receiving the judge's and the subject's messages (kit_wire.h).
 */
#define _GNU_SOURCE
#include "kit_wire.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

enum { HEAD = offsetof(kit_wire_t, blob) };

void kit_wire_begin(kit_wire_t *m, uint32_t kind, uint32_t op)
{
    m->kind = kind;
    m->op = op;
    m->nargs = 0;
    m->nbytes = 0;
    m->flags = 0;
    m->unused = 0;
    m->clock[0] = m->clock[1] = 0;
    memset(m->arg, 0, sizeof m->arg); /* the head goes whole: no byte of it unset */
}

bool kit_wire_word(kit_wire_t *m, uint64_t word)
{
    if (m->nargs >= KIT_WIRE_ARGS)
        return false;
    m->arg[m->nargs++] = word;
    return true;
}

bool kit_wire_bytes(kit_wire_t *m, const void *bytes, size_t size)
{
    if (size > KIT_WIRE_BLOB - m->nbytes)
        return false;
    if (size > 0)
        memcpy(m->blob + m->nbytes, bytes, size);
    m->nbytes += (uint32_t)size;
    return true;
}

int kit_wire_send(int fd, const kit_wire_t *m)
{
    size_t size = HEAD + m->nbytes;
    for (;;) {
        ssize_t sent = send(fd, m, size, MSG_NOSIGNAL);
        if (sent == (ssize_t)size)
            return 0;
        if (sent < 0 && errno == EINTR)
            continue; /* a signal came first: send it again, whole */
        return sent < 0 ? errno : EPROTO;
    }
}

int kit_wire_recv(int fd, kit_wire_t *m)
{
    struct iovec part = { m, sizeof *m };
    struct msghdr header = { .msg_iov = &part, .msg_iovlen = 1 };
    ssize_t got;
    do
        got = recvmsg(fd, &header, 0);
    while (got < 0 && errno == EINTR); /* a signal came first: the packet is still there */
    if (got == 0) { /* the other side's end - or a packet of no bytes, which is no message */
        struct pollfd hangup = { fd, POLLRDHUP, 0 };
        return poll(&hangup, 1, 0) == 1 && (hangup.revents & (POLLHUP | POLLRDHUP)) ? EPIPE : EPROTO;
    }
    if (got < 0)
        return errno == ECONNRESET ? EPIPE : errno;
    if ((header.msg_flags & MSG_TRUNC) || got < (ssize_t)HEAD)
        return EPROTO;
    if (m->nargs > KIT_WIRE_ARGS || m->nbytes > KIT_WIRE_BLOB || (size_t)got != HEAD + m->nbytes)
        return EPROTO;
    return 0;
}

const void *kit_wire_take(kit_wire_reader_t *r, size_t size)
{
    if (size > r->m->nbytes - r->at)
        return NULL;
    const void *bytes = r->m->blob + r->at;
    r->at += size;
    return bytes;
}

/* ---- transcripts ------------------------------------------------------------------------ */

/* An entry in a batch's blob: this head, the words, the bytes, padded to 8. */
struct entry_head {
    uint32_t channel, answer, kind, op, nargs, nbytes, flags, unused;
};

bool kit_wire_entry_put(kit_wire_t *batch, uint32_t channel, bool answer, const kit_wire_t *m)
{
    static const unsigned char pad[8];
    struct entry_head head = { channel, answer, m->kind, m->op, m->nargs, m->nbytes, m->flags, 0 };
    size_t size = sizeof head + m->nargs * sizeof m->arg[0] + (m->nbytes + 7) / 8 * 8;
    if (size > KIT_WIRE_BLOB - batch->nbytes)
        return false;
    kit_wire_bytes(batch, &head, sizeof head);
    kit_wire_bytes(batch, m->arg, m->nargs * sizeof m->arg[0]);
    kit_wire_bytes(batch, m->blob, m->nbytes);
    kit_wire_bytes(batch, pad, (8 - m->nbytes % 8) % 8);
    return true;
}

int kit_wire_entry_take(kit_wire_reader_t *r, kit_wire_entry_t *out)
{
    if (r->at == r->m->nbytes)
        return 0;
    struct entry_head head;
    const void *bytes = kit_wire_take(r, sizeof head);
    if (bytes == NULL)
        return -1;
    memcpy(&head, bytes, sizeof head);
    if (head.nargs > KIT_WIRE_ARGS || head.nbytes > KIT_WIRE_BLOB || head.answer > 1)
        return -1;
    const void *words = kit_wire_take(r, head.nargs * sizeof out->m->arg[0]);
    const void *blob = kit_wire_take(r, (head.nbytes + 7) / 8 * 8);
    if (words == NULL || blob == NULL)
        return -1;
    kit_wire_begin(out->m, head.kind, head.op);
    out->m->flags = head.flags;
    out->m->nargs = head.nargs;
    memcpy(out->m->arg, words, head.nargs * sizeof out->m->arg[0]);
    kit_wire_bytes(out->m, blob, head.nbytes);
    out->channel = head.channel;
    out->answer = head.answer;
    return 1;
}

uint32_t kit_wire_names(const kit_wire_t *m, const kit_wire_items_t *items)
{
    if (m->kind == WIRE_SYNC && m->nargs >= 2 && m->op == SYNC_COND_WAIT)
        return 3; /* the condition and its mutex */
    if (m->kind == WIRE_SYNC && m->nargs >= 2)
        return m->op >= SYNC_MUTEX_LOCK && m->op <= SYNC_FORGET ? 1 : 0;
    if (items == NULL)
        return 0;
    if (m->kind == WIRE_CALL && m->op < (uint32_t)items->nops)
        return items->call[m->op];
    if (m->kind == WIRE_REPLY && m->op < (uint32_t)items->nops)
        return items->reply[m->op];
    if (m->kind == WIRE_CALLBACK && m->op < (uint32_t)items->ntypes)
        return items->callback[m->op];
    if (m->kind == WIRE_CALLBACK_DONE && m->op < (uint32_t)items->ntypes && items->done != NULL)
        return items->done[m->op];
    return 0;
}

void kit_wire_namer_reset(kit_wire_namer_t *namer)
{
    for (int i = 0; i < namer->count; i++)
        namer->slot[namer->at[i]] = 0;
    namer->count = 0;
}

uint64_t kit_wire_name(kit_wire_namer_t *namer, uint64_t value)
{
    uint32_t room = 2 * KIT_WIRE_NAMES, i = (uint32_t)((value * 0x9e3779b97f4a7c15ULL) >> 40) & (room - 1);
    for (; namer->slot[i] != 0; i = (i + 1) & (room - 1)) /* at most half full: a free slot ends every probe */
        if (namer->value[namer->slot[i] - 1] == value)
            return namer->slot[i];
    if (namer->count >= KIT_WIRE_NAMES)
        return 0;
    namer->value[namer->count] = value;
    namer->at[namer->count] = i;
    namer->slot[i] = (uint32_t)++namer->count;
    return (uint64_t)namer->count;
}

void kit_wire_rename(kit_wire_namer_t *namer, kit_wire_t *m, uint32_t names)
{
    for (uint32_t w = 0; w < m->nargs; w++)
        if (names & (1u << w))
            m->arg[w] = kit_wire_name(namer, m->arg[w]);
}
