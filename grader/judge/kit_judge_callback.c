/**
 * @file kit_judge_callback.c
 * @brief Functions of the test's that the code under test calls back: each
 *        goes to the subject as an id, never as an address, and runs here,
 *        on the test's thread whose call the code under test was serving
 *        (kit_judge.h).
 *
 * DESIGN: the subject calls a stand-in function of its own for each id;
 * that stand-in sends WIRE_CALLBACK on the channel of the thread it runs on
 * - the stand-in of one test thread, which waits here for its call's reply -
 * and serves that channel until WIRE_CALLBACK_DONE. So the test's function
 * runs on the very thread that made the call, and the calls it makes go out
 * on the same channel, as nested calls the subject's thread serves while it
 * waits. A function of the code under test's own (a built-in policy's
 * reject) comes back as a word the judge keeps, behind a forwarder of the
 * judge's that the test holds: handed back, it goes as that word; called by
 * the test, it asks the subject to call the function the word names.
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_judge.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kit_test.h"

int __real_pthread_mutex_lock(pthread_mutex_t *mutex);
int __real_pthread_mutex_unlock(pthread_mutex_t *mutex);

_Static_assert(sizeof(void (*)(void)) == sizeof(uint64_t), "a function is one word of the channel");

struct function {
    uint64_t fn;    /* what the test holds: its function, or the judge's stand-in value */
    uint64_t word;  /* what the channel says: KIT_WIRE_CALLBACK | id, or the subject's word */
    int type;       /* the table's callback type (for a test's function) */
};
/* The test's functions (index = id) and the code under test's, each kept
 * once; guarded by functions_lock: the test's threads hand them out at once. */
static struct function tests[KIT_WIRE_CALLBACKS], theirs[256];
static int ntests, ntheirs;
static pthread_mutex_t functions_lock = PTHREAD_MUTEX_INITIALIZER;

/* (called with functions_lock held) */
static const struct function *known(uint64_t fn, int type)
{
    for (int i = 0; i < ntests; i++)
        if (tests[i].fn == fn && tests[i].type == type)
            return &tests[i];
    for (int i = 0; i < ntheirs; i++)
        if (theirs[i].fn == fn && theirs[i].type >= 0)
            return &theirs[i];
    return NULL;
}

uint64_t kit_judge_function_out(int type, uint64_t fn)
{
    if (fn == 0)
        return 0;
    __real_pthread_mutex_lock(&functions_lock);
    const struct function *f = known(fn, type);
    uint64_t word = f != NULL ? f->word : 0;
    if (f == NULL && ntests < KIT_WIRE_CALLBACKS) {
        word = KIT_WIRE_CALLBACK | (uint64_t)ntests;
        tests[ntests++] = (struct function){ fn, word, type };
    }
    __real_pthread_mutex_unlock(&functions_lock);
    if (word == 0)
        kit_fail_at(__FILE__, __LINE__, "the test hands the code under test more than %d functions of its own: "
                    "more than the judge's channel names", KIT_WIRE_CALLBACKS);
    return word;
}

uint64_t kit_judge_function_in(int type, uint64_t word, const char *call)
{
    if (word == 0)
        return 0;
    uint64_t fn = 0;
    __real_pthread_mutex_lock(&functions_lock);
    if (word & KIT_WIRE_CALLBACK) {
        uint64_t id = word & ~KIT_WIRE_CALLBACK;
        if (id < (uint64_t)ntests && tests[id].type == type)
            fn = tests[id].fn;
    } else {
        int slot = 0;
        for (int i = 0; i < ntheirs && fn == 0; i++) {
            if (theirs[i].word == word && theirs[i].type == type)
                fn = theirs[i].fn;
            slot += theirs[i].type == type;
        }
        if (fn == 0 && slot < KIT_WIRE_CALLBACKS && ntheirs < 256) {
            fn = kit_judge_callback_types[type].forwarder(slot);
            theirs[ntheirs++] = (struct function){ fn, word, type };
        }
    }
    __real_pthread_mutex_unlock(&functions_lock);
    if (fn == 0)
        kit_judge_violation("%s gave back a function the judge never handed out (word %#llx)", call,
                            (unsigned long long)word);
    return fn;
}

uint64_t kit_judge_their_word(int type, int slot)
{
    uint64_t word = 0;
    __real_pthread_mutex_lock(&functions_lock);
    for (int i = 0, seen = 0; i < ntheirs && word == 0; i++)
        if (theirs[i].type == type && seen++ == slot)
            word = theirs[i].word;
    __real_pthread_mutex_unlock(&functions_lock);
    return word;
}

uint64_t kit_judge_callback_function(int type, uint64_t word)
{
    uint64_t fn = 0;
    __real_pthread_mutex_lock(&functions_lock);
    uint64_t id = word & ~KIT_WIRE_CALLBACK;
    if ((word & KIT_WIRE_CALLBACK) && id < (uint64_t)ntests && tests[id].type == type)
        fn = tests[id].fn;
    __real_pthread_mutex_unlock(&functions_lock);
    if (fn == 0)
        kit_judge_violation("a call of a function of the test's by an id the judge never handed out (%#llx, "
                            "as a %s)", (unsigned long long)word, kit_judge_callback_types[type].name);
    return fn;
}

void *kit_judge_callback_pointer(uint64_t word, const char *what)
{
    if (word != 0 && !judge_pointer_sent(word))
        kit_fail_at(__FILE__, __LINE__, "the code under test called the test's %s with a pointer the test never "
                    "gave it: an item that was never put, or one made up", what);
    return (void *)(uintptr_t)word;
}

void kit_judge_item_in(uint64_t word, const char *call)
{
    if (word != 0 && !judge_pointer_sent(word) && !judge_value_made_up(word))
        kit_fail_at(__FILE__, __LINE__, "%s gave back an item the test never put: read from a slot no put wrote, or "
                    "made up", call);
}

uint64_t kit_judge_opaque_out(const void *pointer)
{
    uint64_t value = (uint64_t)(uintptr_t)pointer, word = 0;
    __real_pthread_mutex_lock(&functions_lock);
    for (int i = 0; i < ntheirs && value != 0; i++)
        if (theirs[i].fn == value && theirs[i].type < 0)
            word = theirs[i].word;
    __real_pthread_mutex_unlock(&functions_lock);
    if (word != 0)
        return word;
    kit_judge_pointer_out(pointer);
    return value;
}

void *kit_judge_opaque_in(uint64_t word)
{
    if (word == 0 || judge_pointer_sent(word))
        return (void *)(uintptr_t)word;
    uint64_t value = 0;
    __real_pthread_mutex_lock(&functions_lock);
    for (int i = 0; i < ntheirs && value == 0; i++)
        if (theirs[i].word == word && theirs[i].type < 0)
            value = theirs[i].fn;
    char *stand_in = value == 0 && ntheirs < 256 ? malloc(1) : NULL;
    if (stand_in != NULL) {
        value = (uint64_t)(uintptr_t)stand_in;
        theirs[ntheirs++] = (struct function){ value, word, -1 };
    }
    __real_pthread_mutex_unlock(&functions_lock);
    if (value == 0)
        kit_judge_violation("more values of the code under test's in the structs it gave back than the judge keeps");
    return (void *)(uintptr_t)value;
}

/* ---- structs the test handed by pointer, in the calls in progress on this thread ---- */

/* Kept per channel, not per OS thread: a replay runs the test's threads as
 * contexts of one OS thread (kit_judge_contexts.c), each on its channel. A
 * thread of no channel yet keeps its own. Each thread touches only its own. */
enum { REFS = 8 };
static const void *channel_refs[KIT_WIRE_CHANNELS][REFS];
static int channel_nrefs[KIT_WIRE_CHANNELS];
static _Thread_local const void *own_refs[REFS];
static _Thread_local int own_nrefs;

/* The calling thread's stack of structs, and its count. */
static int *ref_stack(const void ***refs)
{
    int channel = judge_channel();
    if (channel >= 0 && channel < KIT_WIRE_CHANNELS) {
        *refs = channel_refs[channel];
        return &channel_nrefs[channel];
    }
    *refs = own_refs;
    return &own_nrefs;
}

void judge_refs_forget(void)
{
    memset(channel_nrefs, 0, sizeof channel_nrefs);
    own_nrefs = 0;
}

uint64_t kit_judge_ref_push(const void *ref)
{
    const void **refs;
    int *nrefs = ref_stack(&refs);
    if (*nrefs < REFS)
        refs[*nrefs] = ref;
    return (uint64_t)(*nrefs)++;
}

void kit_judge_ref_pop(void)
{
    const void **refs;
    int *nrefs = ref_stack(&refs);
    if (*nrefs > 0)
        (*nrefs)--;
}

const void *kit_judge_ref_in(uint64_t state, uint64_t value, const char *what)
{
    if (state == 0)
        return NULL;
    const void **refs;
    int nrefs = *ref_stack(&refs);
    if (state == 1 && value < (uint64_t)nrefs && value < REFS)
        return refs[value];
    if (state == 1)
        kit_judge_violation("a callback named a struct of the test's that no call in progress was handed");
    kit_fail_at(__FILE__, __LINE__, "the code under test called the test's %s with a struct of its own making, not the one the test "
             "handed it", what);
    return NULL;
}

void judge_run_callback(const kit_wire_t *m)
{
    uint64_t arg[KIT_WIRE_ARGS];
    uint32_t nargs = m->nargs, type = m->op, nbytes = m->nbytes;
    unsigned char blob[256]; /* the structs of the code under test's own it hands the function, as bytes */
    for (uint32_t i = 0; i < nargs && i < KIT_WIRE_ARGS; i++)
        arg[i] = m->arg[i]; /* (the calls the function makes reuse this thread's message) */
    if (type >= (uint32_t)kit_judge_ncallback_types || nargs == 0 || nbytes > sizeof blob)
        kit_judge_violation("a call of a function of the test's of a type the chapter's table does not have (%u), "
                            "or with more bytes than it carries", type);
    memcpy(blob, m->blob, nbytes);
    uint64_t more[KIT_WIRE_CALLBACK_MORE] = { 0 };
    uint64_t ret = kit_judge_callback_types[type].run(arg, nargs, blob, nbytes, more);
    kit_wire_t *done = kit_judge_begin(WIRE_CALLBACK_DONE, type);
    kit_judge_word(done, ret);
    for (uint32_t i = 0; i < kit_judge_callback_types[type].nmore && i < KIT_WIRE_CALLBACK_MORE; i++)
        kit_judge_word(done, more[i]);
    kit_judge_post(done);
}
