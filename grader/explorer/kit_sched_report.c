/**
 * @file kit_sched_report.c
 * @brief Telling a failed schedule: the replay token, what every thread was
 *        waiting for, and the last steps of the interleaving, numbered, each
 *        with the file and line that made it (from addr2line).
 */
#define _GNU_SOURCE
#include "kit_sched_internal.h"

#include "kit_test.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void sched_token(char *out, size_t size);
void *__real_malloc(size_t size);
void __real_free(void *block);
int sched_draw_svg(const char *path, const char *title, const char *why, long first);

#define SHOWN_STEPS 30
#define MAX_PLACES (1024 + SCHED_MAX_THREADS * (SCHED_STACK_DEPTH + 1)) /* distinct lines named in one report */

static const char *const op_names[] = {
    [OP_START] = "starts",       [OP_LOCK] = "locks",      [OP_TRYLOCK] = "trylocks", [OP_UNLOCK] = "unlocks",
    [OP_WAIT] = "waits on",      [OP_WAKE] = "wakes from", [OP_SIGNAL] = "signals",   [OP_BROADCAST] = "broadcasts",
    [OP_CREATE] = "creates",     [OP_JOIN] = "joins",      [OP_YIELD] = "yields",     [OP_SLEEP] = "sleeps",
    [OP_AWAIT] = "sees threads asleep",  [OP_EXIT] = "ends",
    [OP_READ] = "reads shared memory", [OP_WRITE] = "writes shared memory", [OP_ATOMIC] = "makes an atomic access",
    [OP_SEM_WAIT] = "waits on", [OP_SEM_POST] = "posts", [OP_SEM_TRY] = "tries",
    [OP_CLOCK] = "sees the wall clock step forward an hour (as NTP may step it)",
};

const char *sched_op_name(enum sched_op op)
{
    return op_names[op];
}

/* ---- Source lines ------------------------------------------------------------------ */

struct place {
    void *addr;
    char text[96];      /* "msgq.c:98" */
    char function[96];  /* "msgq_take" */
    char path[512];     /* the file as compiled, and its line: "/kit/solutions/01-monitor-queue/msgq.c:98" */
};

static struct place places[MAX_PLACES];
static int nplaces;

/* The running program's file, for addr2line; false if it cannot be read. */
static bool program_file(char *exe, size_t size)
{
    ssize_t length = readlink("/proc/self/exe", exe, size - 1);
    if (length <= 0)
        return false;
    exe[length] = '\0';
    return true;
}

/* "/home/x/kit/solutions/01-monitor-queue/msgq.c:98 (discriminator 2)" -> "msgq.c:98" */
static void short_place(const char *line, char *out, size_t size)
{
    const char *slash = strrchr(line, '/');
    const char *name = slash ? slash + 1 : line;
    size_t length = strcspn(name, " \n");
    if (length >= size)
        length = size - 1;
    memcpy(out, name, length);
    out[length] = '\0';
    if (strncmp(out, "??", 2) == 0)
        snprintf(out, size, "?");
}

/* True if the file compiled at @p path is the reference of another chapter
 * than the one this test program tests ("/kit/solutions/02-blocking-queue/
 * bq.c" in build/.../03-thread-pool/test_tpool): code the student did not
 * write, and whose source a student's kit does not hold. */
static bool earlier_reference(const char *path)
{
    const char *in_solutions = strstr(path, "/solutions/");
    if (in_solutions == NULL)
        return false;
    const char *chapter = in_solutions + strlen("/solutions/");
    size_t length = strcspn(chapter, "/");
    const char *program = program_invocation_name;
    const char *slash = strrchr(program, '/');
    const char *folder = slash;
    while (folder && folder > program && folder[-1] != '/')
        folder--;
    return !(folder && (size_t)(slash - folder) == length && strncmp(folder, chapter, length) == 0);
}

/* Look every collected address up with one run of addr2line: its function,
 * and its file and line (marked when it is an earlier chapter's reference). */
static void resolve_places(void)
{
    char exe[512];
    uintptr_t bias = sched_load_bias();
    if (!program_file(exe, sizeof exe) || nplaces == 0)
        return;
    size_t size = 600 + 24 * (size_t)nplaces;
    char *command = __real_malloc(size);
    if (command == NULL)
        return;
    int at = snprintf(command, size, "addr2line -f -e '%s'", exe);
    for (int i = 0; i < nplaces; i++)
        at += snprintf(command + at, size - (size_t)at, " %#lx", (unsigned long)((uintptr_t)places[i].addr - bias - 1));
    FILE *pipe = popen(command, "r");
    __real_free(command);
    if (pipe == NULL)
        return;
    char function[1024], line[1024];
    for (int i = 0; i < nplaces && fgets(function, sizeof function, pipe) && fgets(line, sizeof line, pipe); i++) {
        short_place(line, places[i].text, sizeof places[i].text);
        snprintf(places[i].function, sizeof places[i].function, "%.*s", (int)strcspn(function, "\n"), function);
        snprintf(places[i].path, sizeof places[i].path, "%.*s", (int)strcspn(line, " \n"), line);
        size_t used = strlen(places[i].text);
        if (earlier_reference(places[i].path))
            snprintf(places[i].text + used, sizeof places[i].text - used, " (reference)");
    }
    pclose(pipe);
}

static void want_place(void *addr)
{
    for (int i = 0; i < nplaces; i++)
        if (places[i].addr == addr)
            return;
    if (addr != NULL && nplaces < MAX_PLACES)
        places[nplaces++] = (struct place){ addr, "?", "", "" };
}

static const struct place *place_of(void *addr)
{
    for (int i = 0; i < nplaces; i++)
        if (places[i].addr == addr)
            return &places[i];
    return NULL;
}

const char *sched_place_of(void *addr)
{
    const struct place *place = place_of(addr);
    return place ? place->text : "";
}

/* ---- A data race ------------------------------------------------------------------- */

/* The functions an optimised build inlined around @p addr, each with the
 * line it was inlined at - "future_is_done (future.c:151)" for a helper
 * that future_is_done called - outermost last, as addr2line -i lists them. */
static void inlined_callers(void *addr, kit_text_t *t)
{
    char exe[512];
    uintptr_t bias = sched_load_bias();
    if (!program_file(exe, sizeof exe) || addr == NULL)
        return;
    char command[700];
    snprintf(command, sizeof command, "addr2line -f -i -e '%s' %#lx", exe, (unsigned long)((uintptr_t)addr - bias - 1));
    FILE *pipe = popen(command, "r");
    if (pipe == NULL)
        return;
    char function[512], line[1024], place[96], previous[512] = "";
    for (int frame = 0; fgets(function, sizeof function, pipe) && fgets(line, sizeof line, pipe); frame++) {
        function[strcspn(function, "\n")] = '\0';
        short_place(line, place, sizeof place);
        /* the first is the access's own function; a function split in parts names itself again */
        if (frame > 0 && strcmp(function, previous) != 0)
            kit_text_put(t, "%s%s (%s)", t->at ? " <- " : ", called from ", function, place);
        snprintf(previous, sizeof previous, "%s", function);
    }
    pclose(pipe);
}

/* One of the race's two accesses: "a write by producer-0 at msgq.c:57 (msgq_put)", and for the
 * one that found it the calls that led there: "called from future_is_done (future.c:151) <- ...". */
static void print_access(const struct sched_race *race, int which, const char *after)
{
    const struct place *place = place_of(race->pc[which]);
    char chain[600] = "";
    kit_text_t text = { chain, sizeof chain, 0 };
    inlined_callers(race->pc[which], &text);
    for (int i = 0; which == 0 && i < race->ncallers; i++) {
        const struct place *caller = place_of(race->callers[i]);
        if (caller && strcmp(caller->text, "?") != 0)
            kit_text_put(&text, "%s%s (%s)", text.at ? " <- " : ", called from ", caller->function, caller->text);
    }
    fprintf(stderr, "[ race     ]   %s by %s at %s%s%s%s%s%s\n", race->write[which] ? "a write" : "a read",
            race->thread[which], place ? place->text : "?", place && place->function[0] ? " (in " : "",
            place ? place->function : "", place && place->function[0] ? ")" : "", chain, after);
}

static void print_lock_inversion(void);

void kit_sched_print_race(void)
{
    print_lock_inversion();
    struct sched_race race;
    if (!kit_sched_raced(&race))
        return;
    nplaces = 0;
    want_place(race.pc[0]);
    want_place(race.pc[1]);
    for (int i = 0; i < race.ncallers; i++)
        want_place(race.callers[i]);
    resolve_places();
    fprintf(stderr, "[ race     ] DATA RACE in %s: two threads touch the same memory, at least one of them writes, "
                    "and nothing orders the two accesses (no mutex held by both around them, no create or join "
                    "between them):\n", race.test);
    print_access(&race, 1, ", first,");
    print_access(&race, 0, ", then, with nothing in between that orders it after the first");
    fprintf(stderr, "[ race     ] (found at step %ld of its schedule; from then on both places were switch points, "
                    "where another thread may run: a lost update, if there is one, is then a choice the search "
                    "makes)\n", race.step);
}

/* ---- The report ---------------------------------------------------------------------- */

static const char *object_name(int obj, char *out, size_t size)
{
    if (obj < 0)
        return "";
    if (sched.objects[obj].kind == 'S')
        snprintf(out, size, "semaphore S%d", sched.objects[obj].serial);
    else
        snprintf(out, size, "%c%d", sched.objects[obj].kind, sched.objects[obj].serial);
    return out;
}

/* ---- What a deadlock means ------------------------------------------------------------
 * Built from the final state, never from the test's topic: who waits on
 * what, and who could have woken them - the last signal of each condition
 * variable a thread sleeps on, and where that signaller stands now. */


void kit_text_put(kit_text_t *t, const char *fmt, ...)
{
    if (t->at + 1 >= t->size)
        return;
    va_list args;
    va_start(args, fmt);
    int n = vsnprintf(t->out + t->at, t->size - t->at, fmt, args);
    va_end(args);
    if (n > 0)
        t->at += (size_t)n < t->size - t->at ? (size_t)n : t->size - t->at - 1;
}

/* "bq.c:120 in bq_take" */
static void where_text(void *where, char *out, size_t size)
{
    const struct place *place = place_of(where);
    kit_text_t text = { out, size, 0 }; /* (cut to size) */
    out[0] = '\0';
    if (place == NULL || strcmp(place->text, "?") == 0)
        kit_text_put(&text, "a place without a line");
    else if (place->function[0] && strcmp(place->function, "??") != 0)
        kit_text_put(&text, "%s in %s", place->text, place->function);
    else
        kit_text_put(&text, "%s", place->text);
}

/* Two threads that took two mutexes in opposite orders. */
static void print_lock_inversion(void)
{
    struct sched_lock_inversion inv;
    if (!sched_lock_inverted(&inv))
        return;
    nplaces = 0;
    for (int i = 0; i < 2; i++) {
        want_place(inv.first_at[i]);
        want_place(inv.then_at[i]);
    }
    resolve_places();
    fprintf(stderr, "[ race     ] LOCK ORDER in %s: two mutexes taken in opposite orders - two threads doing it "
                    "at the same moment each hold the mutex the other waits for, a deadlock:\n", inv.test);
    for (int i = 0; i < 2; i++) {
        char first[160], then[160];
        where_text(inv.first_at[i], first, sizeof first);
        where_text(inv.then_at[i], then, sizeof then);
        fprintf(stderr, "[ race     ]   %s held M%d (locked at %s) and locked M%d at %s\n", inv.thread[i],
                inv.serial[i][0], first, inv.serial[i][1], then);
    }
    fprintf(stderr, "[ race     ] (take mutexes in one order everywhere, or never hold one while taking another)\n");
}


/* The last step that could wake a sleeper on object obj (a signal, a
 * broadcast, a post), or -1; and the step at which thread t began to wait. */
static long last_wake_of(int obj)
{
    for (long i = sched.nsteps - 1; i >= 0; i--) {
        enum sched_op op = sched.steps[i].op;
        if (sched.steps[i].obj == obj && (op == OP_SIGNAL || op == OP_BROADCAST || op == OP_SEM_POST))
            return i;
    }
    return -1;
}

static long began_waiting(const struct sched_thread *t)
{
    for (long i = sched.nsteps - 1; i >= 0; i--)
        if (sched.steps[i].thread == t->id && (sched.steps[i].op == OP_WAIT || sched.steps[i].op == OP_SEM_WAIT))
            return i;
    return -1;
}

/* A mutex wait that comes back to t: each holds what the next needs. */
static bool in_lock_cycle(const struct sched_thread *t)
{
    const struct sched_thread *u = t;
    for (int hops = 0; hops <= sched.nlive && u->state == LOCKING; hops++) {
        int owner = sched.objects[u->obj].owner;
        if (owner < 0)
            return false;
        u = sched.threads[owner];
        if (u == t)
            return true;
    }
    return false;
}

/* Steps after `since` where another thread than t locked mutex obj: each
 * could have changed what t waits for. Up to `most` places, each once, the
 * latest first. */
static int holders_since(const struct sched_thread *t, int obj, long since, long *out, int most)
{
    int n = 0;
    for (long i = sched.nsteps - 1; i > since && n < most; i--) {
        const struct sched_step *step = &sched.steps[i];
        bool named = false;
        for (int j = 0; j < n; j++)
            named = named || sched.steps[out[j]].where == step->where;
        if (step->op == OP_LOCK && step->obj == obj && step->thread != t->id && !named)
            out[n++] = i;
    }
    return n;
}

#define HOLDERS_NAMED 3

/* The last signal of condition obj after step `since`, or -1. */
static long signal_since(int obj, long since)
{
    for (long i = sched.nsteps - 1; i > since; i--)
        if (sched.steps[i].obj == obj && sched.steps[i].op == OP_SIGNAL)
            return i;
    return -1;
}

/* Why sleeper t on object t->obj was not woken: who held its mutex since it
 * slept without a signal, or that nobody did; and the last wake-up before. */
static void explain_sleeper(kit_text_t *x, const struct sched_thread *t)
{
    char a[16], m[16], here[160], there[160];
    where_text(t->where, here, sizeof here);
    const char *object = object_name(t->obj, a, sizeof a);
    long since = began_waiting(t);
    kit_text_put(x, "%s sleeps on %s at %s (since step %ld)", t->name, object, here, since + 1);
    long held[HOLDERS_NAMED];
    int nheld = t->state == WAITING ? holders_since(t, t->obj2, since, held, HOLDERS_NAMED) : 0;
    for (int i = 0; i < nheld; i++) {
        const struct sched_step *step = &sched.steps[held[i]];
        where_text(step->where, there, sizeof there);
        kit_text_put(x, "%s %s held %s at %s (step %ld)", i == 0 ? "; since then" : ",", sched.threads[step->thread]->name,
            object_name(t->obj2, m, sizeof m), there, held[i] + 1);
    }
    long signal = t->state == WAITING ? signal_since(t->obj, since) : -1;
    if (signal >= 0) {
        const struct sched_step *step = &sched.steps[signal];
        where_text(step->where, there, sizeof there);
        kit_text_put(x, "%s %s signalled %s at %s (step %ld), which woke another sleeper, not it: a signal wakes one "
            "sleeper, any one - where sleepers wait for different things, it takes a broadcast (or a condition "
            "variable for each kind of sleeper)", nheld > 0 ? ";" : "; since then", sched.threads[step->thread]->name,
            object, there, signal + 1);
    } else if (nheld > 0) {
        kit_text_put(x, " and nobody signalled %s: whatever changed there for it needs a signal or broadcast of %s", object,
            object);
    } else {
        kit_text_put(x, "; nobody %s %s since", t->state == SEMAPHORE ? "posted" : "signalled", object);
    }
    long wake = last_wake_of(t->obj);
    if (wake < 0 || wake > since)
        return;
    const struct sched_step *step = &sched.steps[wake];
    where_text(step->where, there, sizeof there);
    kit_text_put(x, " (its last wake-up, by %s at %s, step %ld, came before it slept)", sched.threads[step->thread]->name,
        there, wake + 1);
}

static void explain_thread(kit_text_t *x, const struct sched_thread *t)
{
    char a[16], here[160];
    where_text(t->where, here, sizeof here);
    switch (t->state) {
    case WAITING:
    case SEMAPHORE:
        explain_sleeper(x, t);
        break;
    case LOCKING: {
        int owner = sched.objects[t->obj].owner;
        kit_text_put(x, "%s waits to lock %s at %s, held by %s%s", t->name, object_name(t->obj, a, sizeof a), here,
            owner >= 0 ? sched.threads[owner]->name : "nobody",
            in_lock_cycle(t) ? " - a cycle of threads each holding the mutex the next one needs (take mutexes in "
                               "one order everywhere)"
                             : "");
        break;
    }
    case JOINING:
        kit_text_put(x, "%s waits for %s to end (pthread_join at %s)", t->name, sched.threads[t->target]->name, here);
        break;
    case AWAITING:
        kit_text_put(x, "%s waits until %d thread%s asleep, and fewer are: one that should still sleep has returned (a wait "
            "without a while loop around it returns at any wake-up, a spurious one too)", t->name, t->target,
            t->target == 1 ? " is" : "s are");
        break;
    default:
        kit_text_put(x, "%s is at %s", t->name, here);
    }
}

/* The thread whose wait explains the others: a sleeper of the code under
 * test first, then a lock cycle, then whoever waits on anything. */
static const struct sched_thread *root_of_deadlock(void)
{
    const struct sched_thread *best = NULL;
    int best_rank = 9;
    for (int i = 0; i < sched.nlive; i++) {
        const struct sched_thread *t = sched.threads[sched.live[i]];
        int rank = (t->state == WAITING && !t->harness) || t->state == SEMAPHORE ? 0
                   : t->state == LOCKING && in_lock_cycle(t)                    ? 1
                   : t->state == LOCKING                                        ? 2
                   : t->state == WAITING                                        ? 3
                                                                                : 4;
        if (rank < best_rank) {
            best = t;
            best_rank = rank;
        }
    }
    return best;
}

void kit_describe_places(void *const *pcs, int n, char (*out)[160])
{
    nplaces = 0;
    for (int i = 0; i < n; i++)
        want_place(pcs[i]);
    resolve_places();
    for (int i = 0; i < n; i++)
        where_text(pcs[i], out[i], sizeof out[i]);
}

bool kit_sched_clock_note(char *out, size_t size)
{
    for (long i = 0; i < sched.nsteps; i++) {
        const struct sched_step *step = &sched.steps[i];
        if (step->op != OP_CLOCK)
            continue;
        char here[160];
        nplaces = 0;
        want_place(step->where);
        resolve_places();
        where_text(step->where, here, sizeof here);
        snprintf(out, size, "on this schedule the wall clock (CLOCK_REALTIME) was set forward an hour at step %ld, "
                 "as NTP may set it, while %s waited at %s with a deadline on that clock: that wait ended at once. "
                 "A timeout that means \"so many ms from now\" is measured on CLOCK_MONOTONIC "
                 "(pthread_condattr_setclock for the condition variable, clock_gettime(CLOCK_MONOTONIC) for the "
                 "deadline)", i + 1, sched.threads[step->thread]->name, here);
        return true;
    }
    return false;
}

/* A thread that locked a mutex it holds: both places. */
static void explain_relock(void)
{
    const struct sched_object *mutex = &sched.objects[sched.relocked];
    const struct sched_thread *t = sched.threads[mutex->owner];
    char a[16], second[160], first[160];
    nplaces = 0;
    want_place(t->where);
    want_place(mutex->locked_at);
    resolve_places();
    where_text(t->where, second, sizeof second);
    where_text(mutex->locked_at, first, sizeof first);
    snprintf(sched.message, sizeof sched.message,
             "%s locks %s at %s, which it already holds - it locked it at %s and has not unlocked it: it waits "
             "for itself for ever (a default mutex cannot be locked twice by one thread)", t->name,
             object_name(sched.relocked, a, sizeof a), second, first);
}

void sched_explain_deadlock(void)
{
    if (!sched.deadlocked || sched.deadlock_explained)
        return;
    sched.deadlock_explained = true;
    if (sched.relocked >= 0) {
        explain_relock();
        return;
    }
    if (strncmp(sched.message, "deadlock or lost", 16) != 0)
        return;
    nplaces = 0;
    for (int i = 0; i < sched.nlive; i++) {
        const struct sched_thread *t = sched.threads[sched.live[i]];
        want_place(t->where);
        if (t->state != WAITING && t->state != SEMAPHORE)
            continue;
        long wake = last_wake_of(t->obj);
        if (wake >= 0)
            want_place(sched.steps[wake].where);
        long held[HOLDERS_NAMED];
        int nheld = t->state == WAITING ? holders_since(t, t->obj2, began_waiting(t), held, HOLDERS_NAMED) : 0;
        for (int h = 0; h < nheld; h++)
            want_place(sched.steps[held[h]].where);
    }
    resolve_places();
    char text[1800];
    kit_text_t x = { text, sizeof text, 0 };
    const struct sched_thread *root = root_of_deadlock();
    kit_text_put(&x, "deadlock or lost wake-up: no thread can go on, and no wait has a deadline that will end it");
    if (root != NULL) {
        kit_text_put(&x, ": ");
        explain_thread(&x, root);
    }
    for (int i = 0; i < sched.nlive; i++) {
        const struct sched_thread *t = sched.threads[sched.live[i]];
        if (t == root)
            continue;
        kit_text_put(&x, "\n      ");
        explain_thread(&x, t);
    }
    snprintf(sched.message, sizeof sched.message, "%s", text);
}

void sched_describe_step(const struct sched_step *step, char *out, size_t size)
{
    char a[16], b[16];
    const char *thread = step->other >= 0 && step->other < sched.nthreads ? sched.threads[step->other]->name : "";
    static const char *const how_text[] = { [GO] = "signalled", [TIMEOUT] = "timed out", [SPURIOUS] = "spurious" };
    switch (step->op) {
    case OP_WAIT:
        snprintf(out, size, "waits on %s, unlocking %s", object_name(step->obj, a, sizeof a),
                 object_name(step->other, b, sizeof b));
        break;
    case OP_WAKE:
        snprintf(out, size, "wakes from %s (%s), holds %s", object_name(step->obj, a, sizeof a),
                 how_text[step->how], object_name(step->other, b, sizeof b));
        break;
    case OP_SIGNAL:
        snprintf(out, size, "signals %s%s%s", object_name(step->obj, a, sizeof a),
                 step->other >= 0 ? ", waking " : " (no waiter)", thread);
        break;
    case OP_TRYLOCK:
        snprintf(out, size, "trylocks %s: %s", object_name(step->obj, a, sizeof a), step->other ? "busy" : "got it");
        break;
    case OP_SEM_WAIT:
    case OP_SEM_TRY:
        snprintf(out, size, "%s %s: %s", op_names[step->op], object_name(step->obj, a, sizeof a),
                 step->other == 0 ? "takes it" : step->other == ETIMEDOUT ? "times out" : "it is 0");
        break;
    case OP_CLOCK:
        snprintf(out, size, "%s", op_names[step->op]);
        break;
    case OP_CREATE:
    case OP_JOIN:
        snprintf(out, size, "%s %s", op_names[step->op], thread);
        break;
    default: { /* a start, an end, a yield have no object */
        const char *object = object_name(step->obj, a, sizeof a);
        snprintf(out, size, "%s%s%s", op_names[step->op], object[0] ? " " : "", object);
    }
    }
}

void sched_describe_thread(const struct sched_thread *t, char *out, size_t size)
{
    char a[16], b[16];
    switch (t->state) {
    case LOCKING:
        if (sched.objects[t->obj].owner >= 0)
            snprintf(out, size, "waits to lock %s (held by %s)", object_name(t->obj, a, sizeof a),
                     sched.threads[sched.objects[t->obj].owner]->name);
        else
            snprintf(out, size, "is about to lock %s (free)", object_name(t->obj, a, sizeof a));
        break;
    case WAITING:
        snprintf(out, size, "waits on %s (to relock %s)%s", object_name(t->obj, a, sizeof a),
                 object_name(t->obj2, b, sizeof b), t->woken ? ", signalled" : ", no signal will come");
        break;
    case JOINING:
        snprintf(out, size, "joins %s", sched.threads[t->target]->name);
        break;
    case SLEEPING:
        snprintf(out, size, "sleeps");
        break;
    case AWAITING:
        snprintf(out, size, "waits until %d thread%s asleep", t->target, t->target == 1 ? " is" : "s are");
        break;
    case QUIETING:
        snprintf(out, size, "waits until no other thread can go on");
        break;
    case SEMAPHORE:
        snprintf(out, size, "waits on %s (it is 0)%s", object_name(t->obj, a, sizeof a),
                 t->deadline >= 0 ? ", until its deadline" : "");
        break;
    case DONE:
        snprintf(out, size, "has ended");
        break;
    default:
        snprintf(out, size, t->id == sched.failer ? "failed the check" : "can run");
    }
}

/* What a printed make command needs to run this test again on the same
 * code: "CH=03" from build/.../03-thread-pool/test_tpool_explore, and what
 * the grader graded (KIT_MAKE_ARGS: SUBMISSION=dir, EARLIER=mine, ...). */
static char scenario[16]; /* kit_sched_replay_scenario() */

void kit_sched_replay_scenario(const char *number)
{
    snprintf(scenario, sizeof scenario, "%s", number ? number : "");
}

void sched_make_args(char *out, size_t size)
{
    const char *program = program_invocation_name;
    const char *slash = strrchr(program, '/');
    const char *start = slash;
    while (start && start > program && start[-1] != '/')
        start--;
    size_t length = start ? strspn(start, "0123456789") : 0;
    const char *graded = getenv("KIT_MAKE_ARGS");
    snprintf(out, size, "CH=%.*s%s%s%s%s", length > 0 ? (int)length : 2, length > 0 ? start : "NN",
             graded && graded[0] ? " " : "", graded ? graded : "", scenario[0] ? " SCENARIO=" : "", scenario);
}

/* The picture goes next to the test program, or into $KIT_EXPLORE_SVG_DIR
 * (the grader's log folder) named as the grader names the test's log there:
 * <chapter folder>.<test>.svg. */
static void draw(const char *test, long first, const char *tag)
{
    char path[1024];
    const char *dir = getenv("KIT_EXPLORE_SVG_DIR");
    const char *slash = strrchr(program_invocation_name, '/');
    const char *folder = slash;
    while (folder && folder > program_invocation_name && folder[-1] != '/')
        folder--;
    if (dir != NULL && folder != NULL)
        snprintf(path, sizeof path, "%s/%.*s.%s.svg", dir, (int)(slash - folder), folder, test);
    else if (dir != NULL)
        snprintf(path, sizeof path, "%s/%s.svg", dir, test);
    else
        snprintf(path, sizeof path, "%.*s%s.svg", slash ? (int)(slash - program_invocation_name + 1) : 0,
                 program_invocation_name, test);
    if (sched_draw_svg(path, test, sched.message, first) == 0)
        fprintf(stderr, "%s Drawn: %s\n", tag, path);
}

/* ---- Stacks ------------------------------------------------------------------------
 * Every thread of a schedule but the running one is parked at a switch
 * point; the stack it had when it blocked was recorded then. They are
 * printed as gdb prints `thread apply all bt`, between the markers the
 * grading runner cuts out (kit_dump_stacks() does the same with gdb on
 * real threads), so a hang on a schedule reads like a hang anywhere. */

/* The pthread call a blocked thread is in, as a student knows it. */
static const char *blocking_call(const struct sched_thread *t)
{
    switch (t->state) {
    case LOCKING: return "pthread_mutex_lock";
    case WAITING: return t->deadline >= 0 ? "pthread_cond_timedwait" : "pthread_cond_wait";
    case JOINING: return "pthread_join";
    case SLEEPING:
    case QUIETING:
    case AWAITING: return "nanosleep";
    case SEMAPHORE: return t->deadline >= 0 ? "sem_timedwait" : "sem_wait";
    default: return NULL;
    }
}

/* Frames with a function and a file: not the context's first frame
 * (sched_boot, hand-written), nor the C library's. */
static void print_frames(void *const *stack, int depth, int first_number)
{
    for (int i = 0; i < depth; i++) {
        const struct place *place = place_of(stack[i]);
        if (place != NULL && place->function[0] != '\0' && strcmp(place->function, "??") != 0 &&
            strncmp(place->path, "??", 2) != 0)
            fprintf(stderr, "#%d  %s () at %s\n", first_number + i, place->function, place->path);
    }
}

/* Every live thread's stack but `skip`'s, gdb's way, numbered from first_number. */
static void print_threads(const struct sched_thread *skip, int first_number)
{
    sched_collect_stacks();
    nplaces = 0;
    for (int i = 0; i < sched.nlive; i++)
        for (int f = 0; f < sched.threads[sched.live[i]]->depth; f++)
            want_place(sched.threads[sched.live[i]]->stack[f]);
    resolve_places();
    for (int i = 0, number = first_number; i < sched.nlive; i++) {
        const struct sched_thread *t = sched.threads[sched.live[i]];
        if (t == skip)
            continue;
        fprintf(stderr, "Thread %d (Thread 0x0 (LWP 0) \"%s\"):\n", first_number > 0 ? number++ : t->id + 1, t->name);
        if (t->id == sched.failer) { /* a failed check, a hang check or a misuse: where it stopped */
            fprintf(stderr, "#0  kit_dump_stacks ()\n");
            print_frames(t->stack, t->depth, 1);
        } else if (blocking_call(t) != NULL) {
            fprintf(stderr, "#0  %s ()\n", blocking_call(t));
            print_frames(t->stack, t->depth, 1);
        } else {
            print_frames(t->stack, t->depth, 0);
        }
    }
    fflush(stderr);
}

void sched_print_stacks(const char *why)
{
    fprintf(stderr, "[ stacks   ] begin: %s\n", why);
    print_threads(NULL, 0);
    fprintf(stderr, "[ stacks   ] end\n");
    fflush(stderr);
}

void kit_sched_print_parked_threads(int first_number)
{
    if (sched_me() == NULL)
        return;
    fprintf(stderr, "(and the other threads of the schedule, where they wait for their turn:)\n");
    print_threads(sched_me(), first_number);
}

/* Steps a report lists: the last SHOWN_STEPS, or as KIT_STEPS says ("all",
 * or a number) - for a failure whose cause lies further back. */
static long steps_to_show(void)
{
    const char *text = getenv("KIT_STEPS");
    if (text && strcmp(text, "all") == 0)
        return sched.nsteps;
    long wanted = text ? atol(text) : 0;
    return wanted > 0 ? wanted : SHOWN_STEPS;
}

/* The picture draws at most this many of the last steps. */
#define DRAWN_STEPS 200

/* The places (file:line) the report names: every live thread's, every shown step's. */
static void name_places(long first)
{
    nplaces = 0;
    for (int i = 0; i < sched.nlive; i++)
        want_place(sched.threads[sched.live[i]]->where);
    for (long i = first; i < sched.nsteps; i++)
        want_place(sched.steps[i].where);
    resolve_places();
}

/* A message of several lines, each behind the tag: the grader keeps the
 * untagged lines of a log as the failure's words, and these come again
 * in the test's own failure message. */
static void print_tagged(const char *tag, const char *message)
{
    for (const char *line = message; *line;) {
        size_t length = strcspn(line, "\n");
        fprintf(stderr, "%s   %.*s\n", tag, (int)length, line);
        line += length + (line[length] == '\n');
    }
}

/* Where each thread stands at the end, then the steps from `first` on. */
static void print_threads_and_steps(const char *tag, long first)
{
    char line[256];
    print_tagged(tag, sched.message);
    fprintf(stderr, "%s The threads at the end:\n", tag);
    for (int i = 0; i < sched.nlive; i++) {
        const struct sched_thread *t = sched.threads[sched.live[i]];
        sched_describe_thread(t, line, sizeof line);
        fprintf(stderr, "%s   %-14s %-50s %s\n", tag, t->name, line, sched_place_of(t->where));
    }
    if (sched.nthreads > sched.nlive)
        fprintf(stderr, "%s   (and %d thread(s) that have ended)\n", tag, sched.nthreads - sched.nlive);
    fprintf(stderr, "%s The last %ld of %ld steps%s:\n", tag, sched.nsteps - first, sched.nsteps,
            first > 0 ? " (KIT_STEPS=all lists every one)" : "");
    for (long i = first; i < sched.nsteps; i++) {
        const struct sched_step *step = &sched.steps[i];
        sched_describe_step(step, line, sizeof line);
        fprintf(stderr, "%s %5ld %-14s %-40s %s\n", tag, i + 1, sched.threads[step->thread]->name, line,
                sched_place_of(step->where));
    }
}

/* How to see the same schedule again: make debug for a scheduled test (its
 * seed gives it), make explore with the token for an explored one. */
static void print_replay(const char *tag, const char *test, bool scheduled)
{
    static char token[16384];
    char make_args[1200];
    sched_make_args(make_args, sizeof make_args);
    if (scheduled) {
        fprintf(stderr, "%s Replay it: make debug %s TEST=%s (the grade's seed gives the same schedule)\n", tag,
                make_args, test);
        fprintf(stderr, "%s        or: KIT_SCHEDULE_TESTS=%s %s --run %s\n", tag, getenv("KIT_SCHEDULE_TESTS"),
                program_invocation_name, test);
        return;
    }
    sched_token(token, sizeof token);
    fprintf(stderr, "%s Replay it: make explore %s TEST=%s REPLAY=%s\n", tag, make_args, test, token);
    fprintf(stderr, "%s        or: %s%s%sKIT_SCHED=replay:%s %s --run %s\n", tag, scenario[0] ? "KIT_SCENARIO=" : "",
            scenario, scenario[0] ? " " : "", token, program_invocation_name, test);
}

void sched_report(const char *test, const char *strategy, long schedule)
{
    sched_explain_deadlock();
    bool scheduled = schedule < 0; /* an ordinary test on its one schedule */
    const char *tag = scheduled ? "[ schedule ]" : "[ explore  ]";
    long shown = steps_to_show();
    long first = sched.nsteps > shown ? sched.nsteps - shown : 0;
    name_places(first);
    if (scheduled)
        fprintf(stderr, "%s %s: its schedule (%s) failed after %ld steps, at virtual time %.3f ms:\n", tag, test,
                strategy, sched.nsteps, (double)sched.now / 1e6);
    else
        fprintf(stderr, "%s %s: schedule %ld of %s failed after %ld steps, at virtual time %.3f ms:\n", tag, test,
                schedule + 1, strategy, sched.nsteps, (double)sched.now / 1e6);
    print_threads_and_steps(tag, first);
    draw(test, sched.nsteps - first > DRAWN_STEPS ? sched.nsteps - DRAWN_STEPS : first, tag);
    print_replay(tag, test, scheduled);
}

/* A scheduled test that the model itself failed (a deadlock, a misuse of a
 * mutex): say so, show every thread, and end the test process, failed. */
void sched_end_failed_test(void)
{
    sched_explain_deadlock();
    fprintf(stderr, "[  ERROR   ] --- %s\n", sched.message);
    sched_print_stacks(sched.message);
    kit_note_stacks_dumped();
    fprintf(stderr, "[  FAILED  ] the test stopped here, on its schedule\n");
    kit_verdict_stopped();
    fflush(stdout);
    fflush(stderr);
    _exit(1);
}
