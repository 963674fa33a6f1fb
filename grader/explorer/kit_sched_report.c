/**
 * @file kit_sched_report.c
 * @brief Telling a failed schedule: the replay token, what every thread was
 *        waiting for, and the last steps of the interleaving, numbered, each
 *        with the file and line that made it (from addr2line).
 */
#define _GNU_SOURCE
#include "kit_sched_internal.h"

#include "kit_test.h"

#include <ctype.h>
#include <dirent.h>
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
    bool looked_up;     /* addr2line was asked (it may not have known it: text "?") */
};

static struct place places[MAX_PLACES];
static int nplaces;

/* Behind a system-call filter (a judged test's subject, kit_serve.c) a
 * helper started before it runs addr2line and reads the sources. */
kit_sched_symbolizer_t kit_sched_symbolizer;

static FILE *run_tool(const char *command)
{
    return kit_sched_symbolizer.popen ? kit_sched_symbolizer.popen(command) : popen(command, "r");
}

static void end_tool(FILE *pipe)
{
    if (kit_sched_symbolizer.pclose)
        kit_sched_symbolizer.pclose(pipe);
    else
        pclose(pipe);
}

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

/* Places of another program (kit_sched_foreign_place): each an offset in
 * it, standing here as the address of a byte of this array. */
enum { MAX_FOREIGN = 64 };
static char foreign_bytes[MAX_FOREIGN];
static uint64_t foreign_offsets[MAX_FOREIGN];
static int nforeign;

void *kit_sched_foreign_place(uint64_t offset)
{
    for (int i = 0; i < nforeign; i++)
        if (foreign_offsets[i] == offset)
            return &foreign_bytes[i];
    if (nforeign == MAX_FOREIGN)
        return NULL;
    foreign_offsets[nforeign] = offset;
    return &foreign_bytes[nforeign++];
}

static bool is_foreign(const void *addr)
{
    return (const char *)addr >= foreign_bytes && (const char *)addr < foreign_bytes + MAX_FOREIGN;
}

/* The address addr2line looks up for @p addr in its program's file. */
static unsigned long file_address(void *addr, uintptr_t bias)
{
    if (is_foreign(addr))
        return (unsigned long)foreign_offsets[(const char *)addr - foreign_bytes] - 1;
    return (unsigned long)((uintptr_t)addr - bias - 1);
}

/* A line of a system header ("/usr/include/stdlib.h:364", in the atoi an
 * optimised build inlined) is no place a student changes: the line it was
 * inlined at is. */
static bool system_header(const char *path)
{
    return strncmp(path, "/usr/", 5) == 0;
}

/* One frame addr2line gave for @p place: its function, and its file and
 * line (marked when it is an earlier chapter's reference). */
static void set_place(struct place *place, const char *function, const char *line)
{
    short_place(line, place->text, sizeof place->text);
    snprintf(place->function, sizeof place->function, "%.*s", (int)strcspn(function, "\n"), function);
    snprintf(place->path, sizeof place->path, "%.*s", (int)strcspn(line, " \n"), line);
    size_t used = strlen(place->text);
    if (earlier_reference(place->path))
        snprintf(place->text + used, sizeof place->text - used, " (reference)");
}

/* Look the collected addresses of @p exe (the foreign ones, or this
 * program's) up with one run of addr2line: each its address ("0x..."),
 * then its frames, innermost first (-i: the functions inlined there); the
 * place is the first frame outside the system's headers. */
static void resolve_in(const char *exe, bool foreign)
{
    uintptr_t bias = sched_load_bias();
    int index[MAX_PLACES], n = 0;
    for (int i = 0; i < nplaces; i++)
        if (is_foreign(places[i].addr) == foreign && !places[i].looked_up)
            index[n++] = i; /* (the places wanted since the last look-up: an explainer may ask again) */
    size_t size = 600 + 24 * (size_t)n;
    char *command = n > 0 ? __real_malloc(size) : NULL;
    if (command == NULL)
        return;
    int at = snprintf(command, size, "addr2line -a -f -i -e '%s'", exe);
    for (int k = 0; k < n; k++)
        at += snprintf(command + at, size - (size_t)at, " %#lx", file_address(places[index[k]].addr, bias));
    FILE *pipe = run_tool(command);
    __real_free(command);
    if (pipe == NULL)
        return;
    char function[1024], line[1024];
    int k = -1;
    bool placed = false; /* the current address's place is found */
    while (fgets(function, sizeof function, pipe)) {
        if (strncmp(function, "0x", 2) == 0) { /* the next address */
            k++;
            placed = false;
            continue;
        }
        if (!fgets(line, sizeof line, pipe) || k < 0 || k >= n)
            break;
        if (placed)
            continue;
        set_place(&places[index[k]], function, line);
        placed = !system_header(places[index[k]].path);
    }
    end_tool(pipe);
    for (int i = 0; i < n; i++)
        places[index[i]].looked_up = true;
}

static void resolve_places(void)
{
    char exe[512];
    if (program_file(exe, sizeof exe))
        resolve_in(exe, false);
    if (kit_sched_symbolizer.foreign != NULL)
        resolve_in(kit_sched_symbolizer.foreign, true);
}

static void want_place(void *addr)
{
    for (int i = 0; i < nplaces; i++)
        if (places[i].addr == addr)
            return;
    if (addr != NULL && nplaces < MAX_PLACES)
        places[nplaces++] = (struct place){ .addr = addr, .text = "?" };
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
 * that future_is_done called, or with @p place_first "future.c:151 in
 * future_is_done" - outermost last, as addr2line -i lists them. */
static void inlined_frames(void *addr, kit_text_t *t, int most, bool place_first)
{
    char exe[512];
    uintptr_t bias = sched_load_bias();
    if (addr == NULL)
        return;
    if (is_foreign(addr)) { /* a place of another program: a judged subject's */
        if (kit_sched_symbolizer.foreign == NULL)
            return;
        snprintf(exe, sizeof exe, "%s", kit_sched_symbolizer.foreign);
    } else if (!program_file(exe, sizeof exe)) {
        return;
    }
    char command[700];
    snprintf(command, sizeof command, "addr2line -f -i -e '%s' %#lx", exe, file_address(addr, bias));
    FILE *pipe = run_tool(command);
    if (pipe == NULL)
        return;
    char function[512], line[1024], place[96], previous[512] = "";
    int named = 0;
    bool placed = false; /* the frame the access's place names (resolve_in's choice) is passed */
    while (fgets(function, sizeof function, pipe) && fgets(line, sizeof line, pipe)) {
        function[strcspn(function, "\n")] = '\0';
        short_place(line, place, sizeof place);
        /* a function split in parts names itself again */
        if (placed && strcmp(function, previous) != 0 && named++ < most) {
            const char *joint = t->at ? " <- " : ", called from ";
            if (place_first)
                kit_text_put(t, "%s%s in %s", joint, place, function);
            else
                kit_text_put(t, "%s%s (%s)", joint, function, place);
        }
        placed = placed || !system_header(line);
        snprintf(previous, sizeof previous, "%s", function);
    }
    end_tool(pipe);
}

static void inlined_callers(void *addr, kit_text_t *t, int most)
{
    inlined_frames(addr, t, most, false);
}

void kit_describe_inlined_calls(void *pc, char *out, size_t size)
{
    kit_text_t text = { out, size, 0 };
    out[0] = '\0';
    inlined_frames(pc, &text, 3, true);
}

/* One of the race's two accesses: "a write by producer-0 at msgq.c:57 (msgq_put)", and for the
 * one that found it the calls that led there: "called from future_is_done (future.c:151) <- ...". */
static void print_access(const struct sched_race *race, int which, const char *after)
{
    const struct place *place = place_of(race->pc[which]);
    char chain[600] = "";
    kit_text_t text = { chain, sizeof chain, 0 };
    inlined_callers(race->pc[which], &text, RACE_CALLERS);
    for (int i = 0; which == 0 && i < race->ncallers; i++) {
        const struct place *caller = place_of(race->callers[i]);
        if (caller && strcmp(caller->text, "?") != 0)
            kit_text_put(&text, "%s%s (%s)", text.at ? " <- " : ", called from ", caller->function, caller->text);
    }
    fprintf(stderr, "[ race     ]   %s by %s at %s%s%s%s%s%s\n", race->write[which] ? "a write" : "a read",
            race->thread[which], place ? place->text : "?", place && place->function[0] ? " (in " : "",
            place ? place->function : "", place && place->function[0] ? ")" : "", chain, after);
}

/* Whether @p place is in the kit's library (lib/: the map chapter 06's
 * lanes live in, linked instrumented - Makefile, WATCHED_LIB_SRCS - and
 * the latches and gates the tests wait at). */
static bool kit_library(const struct place *place)
{
    return place && (strstr(place->path, "/lib/runtime/") != NULL || strstr(place->path, "/lib/program/") != NULL);
}

/* Whether a place is the tests' or the grader's: a test_*.c, any file of a
 * chapter's folder of tests (tests/06-keyed-executor/keyed_scenarios.c,
 * which calls the code under test for a scenario), a judged chapter's
 * stand-ins (build/.../judged/04-starvation/serve.c, which makes the
 * judge's calls in the subject), or the grader's own kit_*.c (a scenario's
 * threads start in kit_scenario_run.c). */
static bool tests_file(const struct place *place)
{
    if (strncmp(place->text, "test_", 5) == 0 || strncmp(place->text, "kit_", 4) == 0)
        return true;
    static const char *const folders[] = { "/tests/", "/judged/" }; /* a chapter's tests; a judged one's stand-ins */
    for (size_t k = 0; k < sizeof folders / sizeof folders[0]; k++) {
        size_t n = strlen(folders[k]);
        for (const char *at = strstr(place->path, folders[k]); at; at = strstr(at + 1, folders[k]))
            if (isdigit((unsigned char)at[n]) && isdigit((unsigned char)at[n + 1]) && at[n + 2] == '-')
                return true;
    }
    return false;
}

/* Whether the code at @p pc is the student's: a line of it known, not a test's, not an earlier chapter's
 * reference, not the kit's library. */
static bool students_code(void *pc)
{
    const struct place *place = place_of(pc);
    return place && strcmp(place->text, "?") != 0 && strstr(place->text, ":?") == NULL && !tests_file(place) &&
           strstr(place->text, "(reference)") == NULL && !kit_library(place);
}

/* Whether the race's later access was made inside a call of a destroy
 * function (its own function's name, or a caller's, ends in "_destroy"):
 * the contract lets destroy touch the object alone - whoever else did so
 * unordered with it used the object while it was being destroyed. */
static bool in_destroy(const struct sched_race *race)
{
    const struct place *place = place_of(race->pc[0]);
    for (int i = -1; i < race->ncallers; i++) {
        const struct place *p = i < 0 ? place : place_of(race->callers[i]);
        size_t n = p ? strlen(p->function) : 0;
        if (n >= 8 && strcmp(p->function + n - 8, "_destroy") == 0)
            return true;
    }
    return false;
}

/* Which of the race's two accesses to change: the one made with no mutex
 * held (the later one, if its thread held none; else the earlier, which
 * did not hold the mutex the later one held), the student's own code
 * before a test's or a reference's; the use, not the free or the destroy
 * it raced with. */
static int access_to_change(const struct sched_race *race)
{
    if ((race->freeing || in_destroy(race)) && (students_code(race->pc[1]) || kit_library(place_of(race->pc[1]))))
        return 1; /* the free, the destroy may be right: the use that nothing ordered before it is not */
    int which = race->holding == 0 ? 0 : 1;
    if (!students_code(race->pc[which]) && students_code(race->pc[1 - which]))
        which = 1 - which;
    return which;
}

/* "keyed.c:400 (in keyed_active_keys)": the student's call that led into
 * the kit's library to the race's later access, into @p out; false if none. */
static bool students_call_of(const struct sched_race *race, char *out, size_t size)
{
    for (int i = 0; i < race->ncallers; i++)
        if (students_code(race->callers[i])) {
            const struct place *site = place_of(race->callers[i]);
            snprintf(out, size, "%s (in %s)", site->text, site->function);
            return true;
        }
    return false;
}

/* "the access to change: the write by A at bq.c:383 (in reject_by_running), made with no mutex held";
 * an access in a helper the compiler inlined names the call that led there too - "(in
 * claim_join_locked, called from join_workers (mw_core.c:288))" - for a helper that expects its
 * caller to hold the lock is changed at that call. */
static void print_access_to_change(const struct sched_race *race)
{
    int which = access_to_change(race);
    const struct place *place = place_of(race->pc[which]);
    const char *why = in_destroy(race) && which == 1
                          ? "which nothing ordered before the destroy that freed its memory: that thread could still "
                            "reach the object when it was destroyed"
                      : race->freeing && which == 1
                          ? "which nothing ordered before the free of that memory: that thread could still reach it "
                            "once it was freed"
                      : which == 0 && race->holding == 0 ? "made with no mutex held"
                      : which == 1 && race->holding > 0  ? "made without the mutex the other one held"
                                                         : "your code's side of the two";
    char caller[300] = "";
    kit_text_t text = { caller, sizeof caller, 0 };
    if (kit_library(place)) { /* the student's call of it is to change: named where it was kept */
        if (which == 0 && students_call_of(race, caller, sizeof caller))
            fprintf(stderr, "[ race     ]   the access to change: the %s by %s in %s (the kit's library), called "
                    "at %s, %s\n", race->write[which] ? "write" : "read", race->thread[which], place->function,
                    caller, why);
        else
            fprintf(stderr, "[ race     ]   the access to change: the %s by %s in %s (the kit's library): your call "
                    "of %s, %s\n", race->write[which] ? "write" : "read", race->thread[which], place->function,
                    place->function, why);
        return;
    }
    if (place && place->function[0])
        inlined_callers(race->pc[which], &text, 1);
    fprintf(stderr, "[ race     ]   the access to change: the %s by %s at %s%s%s%s%s, %s\n",
            race->write[which] ? "write" : "read", race->thread[which], place ? place->text : "?",
            place && place->function[0] ? " (in " : "", place ? place->function : "", caller,
            place && place->function[0] ? ")" : "", why);
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
    print_access_to_change(&race);
    fprintf(stderr, "[ race     ] (found at step %ld of its schedule; from then on both places were switch points, "
                    "where another thread may run: a lost update, if there is one, is then a choice the search "
                    "makes)\n", race.step);
}

/* ---- Names of mutexes and condition variables --------------------------------------
 * A mutex or a condition variable is named by the expression the code passed
 * for it - `q->not_full`, `q->lock` - read from the source line of the first
 * steps that used it; where no such line can be read (a file the test
 * cannot see, code without lines), by its kind and order of first use in the
 * schedule: M1, C2. The names are the same in every message, step and
 * drawing of one failed schedule. */

static long first_named(void);

#define NAMED_OBJECTS 512
#define NAMING_STEPS 3 /* the first steps of an object whose lines are read for its name */
#define NAME_CHARS 48

static struct {
    int obj;
    char name[NAME_CHARS];
} names[NAMED_OBJECTS];
static int nnames;
static long named_steps = -1; /* the schedule the names are of: its steps ... */
static int64_t named_time;    /* ... and its virtual time at the end */

static const char *known_name(int obj)
{
    for (int i = 0; i < nnames; i++)
        if (names[i].obj == obj)
            return names[i].name[0] ? names[i].name : NULL;
    return NULL;
}

static const char *object_name(int obj, char *out, size_t size)
{
    if (obj < 0)
        return "";
    const char *name = known_name(obj);
    if (name != NULL)
        snprintf(out, size, "%s", name);
    else if (sched.objects[obj].kind == 'S')
        snprintf(out, size, "semaphore S%d", sched.objects[obj].serial);
    else
        snprintf(out, size, "%c%d", sched.objects[obj].kind, sched.objects[obj].serial);
    return out;
}

/* Line @p number of the file at @p path, or false. */
static bool source_line(const char *path, long number, char *out, size_t size)
{
    FILE *in = !path[0] ? NULL : kit_sched_symbolizer.fopen ? kit_sched_symbolizer.fopen(path) : fopen(path, "r");
    if (in == NULL)
        return false;
    long at = 0;
    while (at < number && fgets(out, (int)size, in))
        if (strchr(out, '\n') || feof(in))
            at++;
    fclose(in);
    return at == number;
}

/* The @p index-th argument of the call to @p function on @p line, cleaned
 * to an expression that names an object ("&q->lock" -> "q->lock"), or false. */
static bool call_argument(const char *line, const char *function, int index, char *out, size_t size)
{
    const char *call = line;
    size_t length = strlen(function);
    while ((call = strstr(call, function)) != NULL &&
           ((call > line && (isalnum((unsigned char)call[-1]) || call[-1] == '_')) || call[length] != '('))
        call += length;
    if (call == NULL)
        return false;
    const char *arg = call + length + 1;
    for (int depth = 0, n = 0; *arg && n < index; arg++) { /* skip to the index-th top-level argument */
        depth += (*arg == '(' || *arg == '[') - (*arg == ')' || *arg == ']');
        n += depth == 0 && *arg == ',';
        if (depth < 0)
            return false;
    }
    arg += strspn(arg, " \t&(");
    size_t end = strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.->[]");
    if (end == 0 || end >= size || strchr(",) \t", arg[end]) == NULL || !isalpha((unsigned char)arg[0]))
        return false;
    snprintf(out, size, "%.*s", (int)end, arg);
    return true;
}

/* The name a source line gives object @p obj: a condition variable is the
 * first argument of a wait, signal or broadcast; a mutex the first of a
 * lock or unlock, or the second of a wait (the steps of a spurious wake-up
 * are named after the wait's line). */
static bool name_on_line(int obj, const char *line, char *out, size_t size)
{
    static const char *const cond_calls[] = { "pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_clockwait",
                                              "pthread_cond_signal", "pthread_cond_broadcast", NULL };
    static const char *const mutex_calls[] = { "pthread_mutex_lock", "pthread_mutex_unlock", "pthread_mutex_trylock",
                                               "pthread_mutex_timedlock", NULL };
    char kind = sched.objects[obj].kind;
    for (int i = 0; kind == 'M' && mutex_calls[i]; i++)
        if (call_argument(line, mutex_calls[i], 0, out, size))
            return true;
    for (int i = 0; (kind == 'M' || kind == 'C') && cond_calls[i]; i++)
        if (call_argument(line, cond_calls[i], kind == 'M' ? 1 : 0, out, size))
            return true;
    return false;
}

/* Object @p obj is to be named, once. */
static void want_name(int obj)
{
    if (obj < 0 || obj >= sched.nobjects || nnames == NAMED_OBJECTS)
        return;
    for (int i = 0; i < nnames; i++)
        if (names[i].obj == obj)
            return;
    names[nnames].obj = obj;
    names[nnames++].name[0] = '\0';
}

/* The objects a step names: its own, and for a wait or a wake the mutex
 * (the `other` of any other step is a thread or a result, not an object). */
static void want_step_names(const struct sched_step *step)
{
    if (step->op == OP_CREATE || step->op == OP_JOIN)
        return;
    want_name(step->obj);
    if (step->op == OP_WAIT || step->op == OP_WAKE)
        want_name(step->other);
}

/* One more place that used object number @p n, kept if it is among its
 * first NAMING_STEPS distinct ones. */
static void note_naming_step(long (*at)[NAMING_STEPS], int n, long step)
{
    int k = 0;
    while (k < NAMING_STEPS && at[n][k] >= 0 && sched.steps[at[n][k]].where != sched.steps[step].where)
        k++;
    if (k < NAMING_STEPS && at[n][k] < 0) {
        at[n][k] = step;
        want_place(sched.steps[step].where);
    }
}

/* The first NAMING_STEPS places that used each object to name, in @p at
 * (-1: none), every one of them wanted for addr2line: one pass over the
 * steps, an object's entry found by its number. */
static void naming_places(long (*at)[NAMING_STEPS])
{
    static short entry[SCHED_MAX_OBJECTS]; /* an object's entry in names + 1, or 0 */
    for (int n = 0; n < nnames; n++) {
        entry[names[n].obj] = (short)(n + 1);
        for (int k = 0; k < NAMING_STEPS; k++)
            at[n][k] = -1;
    }
    for (long i = 0; i < sched.nsteps; i++) {
        const struct sched_step *step = &sched.steps[i];
        if (step->op == OP_CREATE || step->op == OP_JOIN)
            continue;
        if (step->obj >= 0 && step->obj < SCHED_MAX_OBJECTS && entry[step->obj])
            note_naming_step(at, entry[step->obj] - 1, i);
        if ((step->op == OP_WAIT || step->op == OP_WAKE) && step->other >= 0 && step->other < SCHED_MAX_OBJECTS &&
            entry[step->other])
            note_naming_step(at, entry[step->other] - 1, i);
    }
    for (int n = 0; n < nnames; n++)
        entry[names[n].obj] = 0;
}

/* An object's name from the lines of its first steps: the first that names
 * a field ("q->not_full") rather than a bare variable, else the first. */
static void name_from_lines(int n, const long *at)
{
    char line[512], found[NAME_CHARS];
    for (int k = 0; k < NAMING_STEPS && at[k] >= 0; k++) {
        const struct place *place = place_of(sched.steps[at[k]].where);
        const char *colon = place ? strrchr(place->path, ':') : NULL;
        char path[512];
        if (colon == NULL || (size_t)(colon - place->path) >= sizeof path)
            continue;
        snprintf(path, sizeof path, "%.*s", (int)(colon - place->path), place->path);
        if (!source_line(path, atol(colon + 1), line, sizeof line) ||
            !name_on_line(names[n].obj, line, found, sizeof found))
            continue;
        if (names[n].name[0] == '\0' || strpbrk(found, ".->["))
            snprintf(names[n].name, sizeof names[n].name, "%s", found);
        if (strpbrk(found, ".->["))
            return;
    }
}

/* Two objects of one name ("q->lock" of two queues): each later one says
 * which of that name it is, "q->lock#2". */
static void tell_apart(int n)
{
    size_t length = strlen(names[n].name);
    int same = 1;
    for (int i = 0; i < n && length > 0; i++)
        same += strcspn(names[i].name, "#") == length && strncmp(names[i].name, names[n].name, length) == 0;
    if (same > 1 && length + 4 < sizeof names[n].name)
        snprintf(names[n].name + length, sizeof names[n].name - length, "#%d", same);
}

/* The object of kind @p kind ('M', 'C') with serial @p serial in this schedule, or -1. */
static int object_of(char kind, long serial)
{
    for (int i = 0; i < sched.nobjects; i++)
        if (sched.objects[i].kind == kind && sched.objects[i].serial == serial)
            return i;
    return -1;
}

/* The object a word "M1" or "C2" at @p at of @p text stands for (its length
 * in @p length), or -1 when the word is no such name. */
static int object_word(const char *text, const char *at, size_t *length)
{
    if ((*at != 'M' && *at != 'C') || !isdigit((unsigned char)at[1]))
        return -1;
    if (at > text && (isalnum((unsigned char)at[-1]) || at[-1] == '_'))
        return -1;
    char *end;
    long serial = strtol(at + 1, &end, 10);
    if (isalnum((unsigned char)*end) || *end == '_')
        return -1;
    *length = (size_t)(end - at);
    return object_of(*at, serial);
}

/* The message the schedule failed with (a misuse the model saw names
 * "C1" and "M1") says the objects' names. */
static void rename_in_message(void)
{
    static char renamed[sizeof sched.message];
    kit_text_t out = { renamed, sizeof renamed, 0 };
    char a[NAME_CHARS];
    for (const char *at = sched.message; *at;) {
        size_t length = 0;
        int obj = object_word(sched.message, at, &length);
        if (obj >= 0 && known_name(obj)) {
            kit_text_put(&out, "%s", object_name(obj, a, sizeof a));
            at += length;
        } else {
            kit_text_put(&out, "%c", *at++);
        }
    }
    snprintf(sched.message, sizeof sched.message, "%s", renamed);
}

/* Names for the objects of the steps from @p first on and of the live
 * threads, read once for each failed schedule. */
static void name_objects(long first)
{
    if (named_steps == sched.nsteps && named_time == sched.now)
        return;
    named_steps = sched.nsteps;
    named_time = sched.now;
    nnames = 0;
    for (long i = first; i < sched.nsteps; i++)
        want_step_names(&sched.steps[i]);
    for (int i = 0; i < sched.nlive; i++) {
        const struct sched_thread *t = sched.threads[sched.live[i]];
        if (t->state == WAITING || t->state == LOCKING || t->state == SEMAPHORE)
            want_name(t->obj);
        if (t->state == WAITING)
            want_name(t->obj2);
    }
    for (const char *at = sched.message; *at; at++) {
        size_t length;
        want_name(object_word(sched.message, at, &length));
    }
    static long at[NAMED_OBJECTS][NAMING_STEPS];
    nplaces = 0;
    naming_places(at);
    resolve_places();
    for (int n = 0; n < nnames; n++) {
        name_from_lines(n, at[n]);
        tell_apart(n);
    }
}

/* ---- What a deadlock means ------------------------------------------------------------
 * Built from the final state, never from the test's topic: who waits on
 * what, and who could have woken them - the last signal of each condition
 * variable a thread sleeps on, and where that signaller stands now. */


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

/* The step at which thread @p id began its last wait before step @p before, or -1. */
static long began_waiting_before(int id, long before)
{
    for (long i = (before < sched.nsteps ? before : sched.nsteps) - 1; i >= 0; i--)
        if (sched.steps[i].thread == id && sched.steps[i].op == OP_WAIT)
            return i;
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

/* The step that ends the critical section of mutex obj that step `begin`
 * opened (a lock, or a wake-up that took the mutex back): its owner's next
 * unlock of it, or wait that lets it go; -1 if it still holds it. */
static long section_end(long begin, int obj)
{
    int thread = sched.steps[begin].thread;
    for (long i = begin + 1; i < sched.nsteps; i++) {
        const struct sched_step *step = &sched.steps[i];
        if (step->thread == thread && ((step->op == OP_UNLOCK && step->obj == obj) ||
                                       (step->op == OP_WAIT && step->other == obj)))
            return i;
    }
    return -1;
}

/* Whether step i opens a critical section of mutex obj. */
static bool opens_section(const struct sched_step *step, int obj)
{
    return (step->op == OP_LOCK && step->obj == obj) || (step->op == OP_WAKE && step->other == obj) ||
           (step->op == OP_TRYLOCK && step->obj == obj && step->other == 0);
}

/* Critical sections of mutex obj after `since`, by other threads than t,
 * that could have changed what t waits for. As a rule, one that ends in a
 * wait found it could not go on and changed nothing, and one that began
 * with a wake-up from t's own condition variable took what t waits for
 * rather than giving it: each listed one begins otherwise and ends in an
 * unlock. Up to `most`, each place once, the latest first. */
static int holders_since(const struct sched_thread *t, int obj, long since, long *out, int most)
{
    int n = 0;
    for (long i = sched.nsteps - 1; i > since && n < most; i--) {
        const struct sched_step *step = &sched.steps[i];
        bool named = false;
        for (int j = 0; j < n; j++)
            named = named || sched.steps[out[j]].where == step->where;
        bool rival = step->op == OP_WAKE && step->obj == t->obj;
        long end = opens_section(step, obj) && step->thread != t->id && !rival ? section_end(i, obj) : -1;
        if (end >= 0 && sched.steps[end].op == OP_UNLOCK && !named)
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

/* A critical section's lines: "bq.c:183-187 in enqueue", or "bq.c:183 in
 * enqueue to bq.c:40 in unlock_it" across functions. */
static void section_text(long begin, char *out, size_t size)
{
    const struct sched_step *step = &sched.steps[begin];
    long end = section_end(begin, step->op == OP_WAKE ? step->other : step->obj);
    const struct place *from = place_of(step->where), *to = end >= 0 ? place_of(sched.steps[end].where) : NULL;
    char first[160], last[160];
    where_text(step->where, first, sizeof first);
    if (from == NULL || to == NULL || strcmp(to->text, "?") == 0 || strcmp(from->text, to->text) == 0) {
        snprintf(out, size, "%s", first);
        return;
    }
    size_t file = strcspn(from->text, ":");
    bool one_function = strcmp(from->function, to->function) == 0 && strncmp(from->text, to->text, file + 1) == 0 &&
                        strchr(from->text, ' ') == NULL && strchr(to->text, ' ') == NULL;
    where_text(sched.steps[end].where, last, sizeof last);
    if (one_function)
        snprintf(out, size, "%.60s-%.20s in %.70s", from->text, to->text + file + 1, from->function);
    else
        snprintf(out, size, "%.75s to %.75s", first, last);
}

/* "; since then main held q->lock at bq.c:183-187 in enqueue (step 12), ..." */
static void name_holders(kit_text_t *x, const struct sched_thread *t, const long *held, int nheld, const char *lead)
{
    char m[NAME_CHARS], there[160];
    for (int i = 0; i < nheld; i++) {
        const struct sched_step *step = &sched.steps[held[i]];
        section_text(held[i], there, sizeof there);
        kit_text_put(x, "%s %s held %s at %s (step %ld)", i == 0 ? lead : ",", sched.threads[step->thread]->name,
            object_name(t->obj2, m, sizeof m), there, held[i] + 1);
    }
}

/* A timed wait still asleep long after its timeout: if it woke before
 * without a signal and waited again, its deadline moves with each wake-up. */
static void explain_moving_deadline(kit_text_t *x, const struct sched_thread *t)
{
    if (t->state != WAITING || t->deadline < 0)
        return;
    long woken = 0;
    for (long i = 0; i < sched.nsteps; i++)
        woken += sched.steps[i].thread == t->id && sched.steps[i].op == OP_WAKE && sched.steps[i].obj == t->obj &&
                 sched.steps[i].how != GO;
    if (woken >= 2)
        kit_text_put(x, "; it is a timed wait, and it woke %ld times without a signal and waited again: a deadline "
            "computed anew after each wake-up moves on for ever - compute it once, before the loop", woken);
}

/* "; main signalled q->not_empty at bq.c:109 in push_locked (step 12), which woke another sleeper ..." */
static void name_wrong_wakeup(kit_text_t *x, long signal, const char *object)
{
    char there[160];
    const struct sched_step *step = &sched.steps[signal];
    where_text(step->where, there, sizeof there);
    kit_text_put(x, "; %s signalled %s at %s (step %ld), which woke another sleeper, not it: a signal wakes one "
        "sleeper, any one - where more than one may go on, or sleepers wait for different things, it takes a "
        "broadcast (or a condition variable for each kind of sleeper)", sched.threads[step->thread]->name, object,
        there, signal + 1);
}

/* The critical sections of t's mutex since the signal (or since it slept)
 * that could have changed what it waits for; false if there is none. */
static bool explain_holders(kit_text_t *x, const struct sched_thread *t, long signal, long since, const char *object)
{
    long held[HOLDERS_NAMED];
    int nheld = t->state == WAITING ? holders_since(t, t->obj2, signal >= 0 ? signal : since, held, HOLDERS_NAMED) : 0;
    if (nheld > 0 && signal >= 0) {
        name_holders(x, t, held, nheld, "; after that");
        kit_text_put(x, " and nobody signalled %s again: if that changed what it waits for, it needs a signal or "
            "broadcast of %s", object, object);
    } else if (nheld > 0) {
        name_holders(x, t, held, nheld, "; since then");
        kit_text_put(x, " and nobody signalled %s after it: whatever changed there for it needs a signal or "
            "broadcast of %s", object, object);
    }
    return nheld > 0;
}

/* " (its last wake-up, by main at ..., step 4, came before it slept)" */
static void explain_last_wakeup(kit_text_t *x, const struct sched_thread *t, long since)
{
    char there[160];
    long wake = last_wake_of(t->obj);
    if (wake < 0 || wake > since)
        return;
    const struct sched_step *step = &sched.steps[wake];
    where_text(step->where, there, sizeof there);
    kit_text_put(x, " (its last wake-up, by %s at %s, step %ld, came before it slept)", sched.threads[step->thread]->name,
        there, wake + 1);
}

#define CHANGES_LOOKED_AT 8

/* The latest write to what sleeper t's wait read (kit_sched_changes.c), of
 * the code the student wrote where there is one (not an earlier chapter's
 * reference), and not by @p rival (the thread a signal for it woke instead,
 * which took what the signal announced): false if there is none. Its place
 * must have been resolved. */
static bool latest_change(const struct sched_thread *t, int rival, struct sched_change *out)
{
    struct sched_change changes[CHANGES_LOOKED_AT];
    int all = t->state == WAITING ? sched_changes_of(t->id, changes, CHANGES_LOOKED_AT) : 0, n = 0;
    for (int i = 0; i < all; i++)
        if (changes[i].thread != rival)
            changes[n++] = changes[i];
    for (int i = 0; i < n; i++) {
        const struct place *place = place_of(changes[i].where);
        if (place && strcmp(place->text, "?") != 0 && strstr(place->text, "(reference)") == NULL) {
            *out = changes[i];
            return true;
        }
    }
    if (n > 0)
        *out = changes[0];
    return n > 0;
}

/* "q->sleepers--;" at @p where, from its source line, or "". */
static void code_at(void *where, char *out, size_t size)
{
    const struct place *place = place_of(where);
    char path[512], line[300];
    out[0] = '\0';
    if (place == NULL)
        return;
    snprintf(path, sizeof path, "%s", place->path);
    char *colon = strrchr(path, ':');
    if (colon == NULL || (*colon = '\0', !source_line(path, atol(colon + 1), line, sizeof line)))
        return;
    const char *code = line + strspn(line, " \t");
    size_t length = strcspn(code, "\n");
    const char *comment = strstr(code, "/*");
    if (comment && (size_t)(comment - code) < length)
        length = (size_t)(comment - code);
    while (length > 0 && (code[length - 1] == ' ' || code[length - 1] == '\t'))
        length--;
    if (length > 0 && length < 90)
        snprintf(out, size, "`%.*s` ", (int)length, code);
}

/* ", called from tpool_shutdown_now (tpool.c:400)": the student's call
 * that led to a change made in a function it called (not inlined there) -
 * the first of the calls kept for it that is the student's, past an earlier
 * chapter's reference, and none past a test's line. */
static void called_from(const struct sched_change *change, kit_text_t *t, int most)
{
    void *sites[SCHED_CHANGE_CALLERS];
    const struct place *own = place_of(change->where);
    int n = sched_changes_callers(change, sites), named = 0;
    for (int i = 0; i < n && named < most; i++) {
        const struct place *site = place_of(sites[i]);
        if (site == NULL || strncmp(site->text, "test_", 5) == 0)
            return; /* not resolved, or the test's call: the change's own function is where it was decided */
        if (students_code(sites[i]) && !(own && strcmp(own->function, site->function) == 0))
            kit_text_put(t, "%s%s (%s)", named++ ? " <- " : ", called from ", site->function, site->text);
    }
}

/* Whether a call of the student's code led to @p change (called_from would name one). */
static bool students_call(const struct sched_change *change)
{
    void *sites[SCHED_CHANGE_CALLERS];
    int n = sched_changes_callers(change, sites);
    for (int i = 0; i < n; i++)
        if (students_code(sites[i]))
            return true;
    return false;
}

/* The places called_from() may name, wanted for addr2line. */
static void want_callers(const struct sched_change *change)
{
    void *sites[SCHED_CHANGE_CALLERS];
    int n = sched_changes_callers(change, sites);
    for (int i = 0; i < n; i++)
        want_place(sites[i]);
}

/* "; since then reader-0 changed what it waits for, `l->waiting_writers--;` at rwl.c:178 in ... (after step 12)" */
static void name_change(kit_text_t *x, const struct sched_change *change, const char *lead)
{
    char code[100], there[460];
    code_at(change->where, code, sizeof code);
    where_text(change->where, there, sizeof there);
    kit_text_t caller = { there + strlen(there), sizeof there - strlen(there), 0 };
    if (strchr(there, ':') != NULL) /* a helper's change: the call that led there, whose code decides on a wake-up */
        inlined_callers(change->where, &caller, 1);
    if (caller.at == 0 && strchr(there, ':') != NULL) /* a helper called, not inlined: the call, if it was kept */
        called_from(change, &caller, 1);
    if (lead[0] == ',' && strstr(lead, "its last change"))
        kit_text_put(x, "%s %sat %s", lead, code, there);
    else
        kit_text_put(x, "%s %s changed what it waits for: %sat %s (after step %ld)", lead,
            sched.threads[change->thread]->name, code, there, change->step);
}

#define AFTER_PLACES 16
#define CALL_AFTER_PLACES 64

/* "ran rwl.c:126 in remove_reader_locked, rwl.c:235 and ": the student's
 * lines among @p places, each line once, leaving out those of @p skip and
 * @p also (the change's, the wait's) and the let-go's own, a function named
 * where it changes - and last if it is not the let-go's. */
static void put_lines(kit_text_t *x, void *const *places, int n, const struct place *let_go, const struct place *skip,
                      const struct place *also)
{
    const struct place *last = NULL;
    for (int i = 0; i < n; i++) {
        const struct place *place = place_of(places[i]);
        if (!students_code(places[i]) || strcmp(place->text, let_go->text) == 0 ||
            (skip && strcmp(place->text, skip->text) == 0) || (also && strcmp(place->text, also->text) == 0) ||
            (last && strcmp(place->text, last->text) == 0))
            continue; /* another's line, one left out, or the line just named */
        if (last && strcmp(last->function, place->function) != 0)
            kit_text_put(x, " in %s", last->function);
        kit_text_put(x, "%s%s", last ? ", " : "ran ", place->text);
        last = place;
    }
    if (last)
        kit_text_put(x, "%s%s and ", strcmp(last->function, let_go->function) != 0 ? " in " : "",
                     strcmp(last->function, let_go->function) != 0 ? last->function : "");
}

/* Lines enough of a way out to reach back past its end (a log line, the
 * unlock, its callers' returns) to the decision. */
enum { STRANDED_LINES = 14 };

/* "tpool.c:146, tpool.c:150 in retire, tpool.c:204 in next_task": the last
 * @p most distinct lines of the student's among @p places (oldest first),
 * a function named where it changes. False if there is none. */
static bool put_last_student_lines(kit_text_t *x, void *const *places, int n, int most)
{
    const struct place *kept[SCHED_RECENT_PLACES];
    int nkept = 0;
    for (int i = n - 1; i >= 0 && nkept < most; i--) {
        const struct place *place = place_of(places[i]);
        bool seen = false;
        for (int k = 0; k < nkept && place; k++)
            seen = seen || strcmp(kept[k]->text, place->text) == 0;
        if (students_code(places[i]) && !seen)
            kept[nkept++] = place;
    }
    for (int k = nkept - 1; k >= 0; k--) { /* oldest first */
        kit_text_put(x, "%s%s", k == nkept - 1 ? "" : ", ", kept[k]->text);
        if (k == 0 || strcmp(kept[k]->function, kept[k - 1]->function) != 0)
            kit_text_put(x, " in %s", kept[k]->function);
    }
    return nkept > 0;
}

/* ", then ran rwl.c:235 and let the mutex go at rwl.c:238 in rwl_read_unlock":
 * what the changer ran after its last write there until it let go
 * (kit_sched_changes.c) - where the code decided not to signal. Nothing if
 * that is not known, or not the student's code. */
static void name_after(kit_text_t *x, const struct sched_change *change)
{
    void *after[AFTER_PLACES];
    int n = sched_changes_after(change, after, AFTER_PLACES);
    if (n < 1 || !students_code(after[n - 1]))
        return;
    const struct place *let_go = place_of(after[n - 1]);
    kit_text_put(x, ", then ");
    put_lines(x, after, n - 1, let_go, place_of(change->where), NULL);
    kit_text_put(x, "let the mutex go at %s%s%s", let_go->text, let_go->function[0] ? " in " : "", let_go->function);
}

/* ", and after it main's timed wait at bq.c:168 in wait_for_item_locked
 * returned ETIMEDOUT: it ran bq.c:164, bq.c:173 in wait_for_item_locked and
 * let the mutex go at bq.c:197 in dequeue" - a change never undone, and the
 * time-out path its thread took after it, where the undoing step was left
 * out. Nothing if none is known. */
static void name_timeout_after(kit_text_t *x, const struct sched_change *change)
{
    void *path[AFTER_PLACES];
    int n = sched_changes_timeout_after(change->thread, change->step, path, AFTER_PLACES);
    if (n < 2 || !students_code(path[0]) || !students_code(path[n - 1]))
        return;
    const struct place *wait = place_of(path[0]), *let_go = place_of(path[n - 1]);
    kit_text_put(x, ", and after it %s's timed wait at %s in %s returned ETIMEDOUT: it ",
                 sched.threads[change->thread]->name, wait->text, wait->function);
    put_lines(x, path + 1, n - 2, let_go, wait, place_of(change->where));
    kit_text_put(x, "let the mutex go at %s in %s", let_go->text, let_go->function);
}

/* Whether thread @p id sleeps in a condition wait now (its undo may come). */
static bool asleep_in_wait(int id)
{
    return id >= 0 && id < sched.nthreads && sched.threads[id] != NULL && sched.threads[id]->state == WAITING;
}

/* Whether two places are one line of code (an inlined helper, or a line the
 * compiler copied, has a place for each copy). */
static bool same_line(void *a, void *b)
{
    const struct place *x = place_of(a), *y = place_of(b);
    return a == b || (x && y && strcmp(x->text, "?") != 0 && strcmp(x->text, y->text) == 0);
}

static const struct sched_undo_ask undo_ask = { asleep_in_wait, same_line };

/* ": after it, that call ran tpool.c:364, tpool.c:310, tpool.c:316 in
 * enqueue and returned without undoing it" - the rest of the call that
 * made @p change, when it went on into the function of @p undo, another,
 * where the other threads undid the same change, and left it out there.
 * False if that call is not known, or did not. */
static bool name_call_after(kit_text_t *x, const struct sched_change *change, void *undo)
{
    void *after[CALL_AFTER_PLACES];
    int n = sched_changes_call_after(change, after, CALL_AFTER_PLACES);
    for (int i = 0; i < n; i++)
        want_place(after[i]);
    resolve_places();
    const struct place *undoing = place_of(undo), *made = place_of(change->where);
    if (undoing == NULL || made == NULL || strcmp(undoing->function, made->function) == 0)
        return false; /* undone in the function that made it: the section's way out tells it */
    bool through = false;
    for (int i = 0; i < n; i++)
        through = through || (place_of(after[i]) && strcmp(place_of(after[i])->function, undoing->function) == 0);
    if (!through)
        return false;
    kit_text_put(x, ": after it, that call ran ");
    if (!put_last_student_lines(x, after, n, STRANDED_LINES))
        return false;
    kit_text_put(x, " and returned without undoing it");
    return true;
}

/* ", and before it slept putter changed what it waits for: `q->sleepers++;`
 * at msgq.c:70 ..., and never undid it (the others' same change was undone
 * at msgq.c:75 in leave_wait_locked): after its wait at msgq.c:91 in
 * msgq_put returned it ran msgq.c:94 and let the mutex go at msgq.c:96 in
 * msgq_put" - a change the sleeper's wait reads that its thread left in
 * place on the way out, though every other thread undid the same change.
 * False (nothing written) if there is none, or it is the latest change and
 * a time-out's path followed it (explain_changed_before names that). */
static bool explain_never_undone(kit_text_t *x, const struct sched_thread *t, long since)
{
    struct sched_change latest, change;
    void *undo, *path[AFTER_PLACES];
    if (!latest_change(t, -1, &latest) || latest.step > since ||
        !sched_changes_never_undone(t->id, &undo_ask, &change, &undo) ||
        (same_line(change.where, latest.where) && sched_changes_timeout_after(change.thread, change.step, path, 2) > 0) ||
        !students_code(change.where) || !students_code(undo))
        return false;
    char code[100], there[200];
    const char *name = sched.threads[change.thread]->name;
    name_change(x, &change, ", and before it slept");
    code_at(undo, code, sizeof code);
    where_text(undo, there, sizeof there);
    kit_text_put(x, ", and never undid it, though every other such change was undone (%sat %s)", code, there);
    int n = sched_changes_wait_after(change.thread, change.step, path, AFTER_PLACES);
    if (n >= 2 && students_code(path[0]) && students_code(path[n - 1])) {
        const struct place *wait = place_of(path[0]), *let_go = place_of(path[n - 1]);
        kit_text_put(x, ": after %s's wait at %s in %s returned, it ", name, wait->text, wait->function);
        put_lines(x, path + 1, n - 2, let_go, wait, place_of(change.where));
        kit_text_put(x, "let the mutex go at %s in %s without undoing it", let_go->text, let_go->function);
    } else if (!name_call_after(x, &change, undo)) {
        name_after(x, &change);
    }
    kit_text_put(x, ": that path must undo it too");
    return true;
}

/* The places explain_never_undone may name, wanted for addr2line. */
static void want_never_undone(const struct sched_thread *t)
{
    void *wanted[2048]; /* the writes' places first: a path left out is only not named */
    int n = t->state == WAITING ? sched_changes_undo_places(t->id, wanted, (int)(sizeof wanted / sizeof wanted[0])) : 0;
    for (int i = 0; i < n; i++)
        want_place(wanted[i]);
}

static void want_after(const struct sched_change *change)
{
    void *after[AFTER_PLACES];
    int n = sched_changes_after(change, after, AFTER_PLACES);
    for (int i = 0; i < n; i++)
        want_place(after[i]);
    n = sched_changes_timeout_after(change->thread, change->step, after, AFTER_PLACES);
    for (int i = 0; i < n; i++)
        want_place(after[i]);
}

/* The change nobody signalled after, for sleeper t: the latest write to
 * what its wait read after @p after (a signal, or when it slept), or the
 * last write of a later critical section of its mutex (whose writes its
 * wait may not have read: a condition that stopped at its first false
 * term). @p *section is that section's first step, or -1. */
static bool unsignalled_change(const struct sched_thread *t, long after, int rival, struct sched_change *out,
                               long *section)
{
    struct sched_change read_change;
    bool changed = latest_change(t, rival, &read_change) && read_change.step > after;
    long held[HOLDERS_NAMED];
    int nheld = t->state == WAITING ? holders_since(t, t->obj2, after, held, HOLDERS_NAMED) : 0;
    *section = -1;
    for (int h = 0; h < nheld; h++) {
        const struct sched_step *step = &sched.steps[held[h]];
        long end = section_end(held[h], step->op == OP_WAKE ? step->other : step->obj);
        if (step->thread == rival)
            continue;
        if ((!changed || read_change.step <= held[h]) && sched_changes_last_in(step->thread, held[h] + 1, end, out)) {
            *section = held[h];
            return true;
        }
        break;
    }
    if (changed)
        *out = read_change;
    return changed;
}

/* "; after that C held kx->lock at keyed.c:185-192 in drop_lane (step 70),
 * its last change there was ...": the latest critical section of sleeper
 * t's mutex after @p change, by another thread (not @p rival), that wrote -
 * what t waits for may have changed there through memory not followed (a
 * library's map, a count kept by code the grader does not instrument), and
 * no signal came after it either. Nothing if there is none. */
static void name_later_section(kit_text_t *x, const struct sched_thread *t, const struct sched_change *change,
                               int rival, const char *object)
{
    char m[NAME_CHARS], there[160];
    long held[HOLDERS_NAMED];
    int nheld = t->state == WAITING ? holders_since(t, t->obj2, change->step, held, HOLDERS_NAMED) : 0;
    for (int h = 0; h < nheld; h++) { /* the latest first */
        const struct sched_step *step = &sched.steps[held[h]];
        long end = section_end(held[h], step->op == OP_WAKE ? step->other : step->obj);
        struct sched_change last;
        if (step->thread == rival || !sched_changes_last_in(step->thread, held[h] + 1, end, &last) ||
            !(students_code(last.where) || students_call(&last)))
            continue;
        section_text(held[h], there, sizeof there);
        kit_text_put(x, "; after that %s held %s at %s (step %ld)", sched.threads[step->thread]->name,
            object_name(t->obj2, m, sizeof m), there, held[h] + 1);
        name_change(x, &last, ", its last change there was");
        name_after(x, &last);
        kit_text_put(x, ", and nobody signalled %s after that either: if that section changed what it waits for (a "
            "call there may change memory the grader does not follow), it needs a signal or broadcast of %s there",
            object, object);
        return;
    }
}

/* The thread the signal at step @p signal chose, or -1. */
static int signalled_thread(long signal)
{
    return signal >= 0 ? sched.steps[signal].other : -1;
}

/* ", and before it slept main changed what it waits for: ... and nothing
 * changed it since": the latest change of what sleeper t waits for, made
 * before it slept, and the time-out path its thread took after it. */
static void explain_changed_before(kit_text_t *x, const struct sched_thread *t, long since)
{
    struct sched_change change;
    if (!latest_change(t, -1, &change) || change.step > since)
        return;
    name_change(x, &change, ", and before it slept");
    name_timeout_after(x, &change);
    kit_text_put(x, ", and nothing changed it since: the step that should undo that change (or wake it) did not run");
}

/* Whether some thread sleeps on condition variable @p cond now. */
static bool someone_sleeps_on(int cond)
{
    for (int i = 0; i < sched.nthreads; i++)
        if (sched.threads[i] != NULL && sched.threads[i]->state == WAITING && sched.threads[i]->obj == cond)
            return true;
    return false;
}

/* "; main signalled l->writer_may_go at rwl.c:236 (step 15) right after
 * that change, and nobody sleeps on it: ... the wrong condition variable":
 * the changer woke another condition variable of the student's, one nobody
 * sleeps on, after the change sleeper t waited for and before it took t's
 * mutex again - the wake-up was likely meant for t: the signal or t's wait
 * names the wrong one. (Where nobody signalled t's own.) */
static void name_other_signal(kit_text_t *x, const struct sched_thread *t, const struct sched_change *change)
{
    char other[NAME_CHARS], at[160], here[160];
    for (long i = change->step; i < sched.nsteps; i++) {
        const struct sched_step *step = &sched.steps[i];
        if (step->thread == change->thread && step->op == OP_LOCK && step->obj == t->obj2)
            return; /* the changer's next section: a wake-up there is for another change */
        if (step->thread != change->thread || (step->op != OP_SIGNAL && step->op != OP_BROADCAST) ||
            step->obj == t->obj || sched.objects[step->obj].kind != 'C' || someone_sleeps_on(step->obj))
            continue;
        if (place_of(step->where) == NULL) { /* (not among the places the story wanted: looked up now) */
            want_place(step->where);
            resolve_places();
        }
        if (!students_code(step->where))
            continue; /* (the test's own latch, an earlier chapter's queue) */
        where_text(step->where, at, sizeof at);
        where_text(t->where, here, sizeof here);
        kit_text_put(x, "; %s %s %s at %s (step %ld) right after that change, and nobody sleeps on %s: if that "
                     "wake-up was meant for %s, one of the two names the wrong condition variable - that %s, or "
                     "%s's wait at %s", sched.threads[step->thread]->name,
                     step->op == OP_SIGNAL ? "signalled" : "broadcast", object_name(step->obj, other, sizeof other),
                     at, i + 1, other, t->name, step->op == OP_SIGNAL ? "signal" : "broadcast", t->name, here);
        return;
    }
}

/* Where sleeper t waits, with the calls that led there: "rwl.c:157 in
 * wait_to_read_locked, called from read_lock (rwl.c:200)". The caller
 * often holds the test that sent it to sleep, where a wait that should not
 * have begun is mended. */
static void sleeper_place(const struct sched_thread *t, char *out, size_t size)
{
    where_text(t->where, out, size);
    if (strchr(out, ':') == NULL)
        return; /* no line to follow */
    kit_text_t calls = { out + strlen(out), size - strlen(out), 0 };
    inlined_callers(t->where, &calls, 1);
    bool caller_known = t->state == WAITING && t->nwait_callers > 0 && students_code(t->wait_callers[0]);
    if (calls.at == 0 && caller_known) { /* called, not inlined: the call, if it was the student's */
        const struct place *site = place_of(t->wait_callers[0]);
        kit_text_put(&calls, ", called from %s (%s)", site->function, site->text);
    }
}
/* The latest critical section of sleeper t's mutex that @p woken, which
 * the signal at step @p signal woke, opened after it with a lock of its
 * own (a later call: it went on past its wait), that wrote, ended in an
 * unlock, and after which nobody signalled t's condition variable: the
 * step that opened it, its last write into @p change; -1 if none. */
static long baton_dropped(const struct sched_thread *t, long signal, int woken, struct sched_change *change)
{
    for (long i = sched.nsteps - 1; woken >= 0 && i > signal; i--) {
        const struct sched_step *step = &sched.steps[i];
        if (step->op == OP_SIGNAL && step->obj == t->obj)
            return -1; /* signalled again after it */
        if (step->thread != woken || step->op != OP_LOCK || step->obj != t->obj2)
            continue;
        long end = section_end(i, t->obj2);
        if (end >= 0 && sched.steps[end].op == OP_UNLOCK && sched_changes_last_in(woken, i + 1, end, change))
            return i;
    }
    return -1;
}

/* "; writer-0 signalled l->writer_may_go at rwl.c:289 ... (step 23), which
 * woke writer-1: writer-1 went on, and later held l->lock at rwl.c:282-292
 * in rwl_write_unlock (step 29), its last change there was ... and nobody
 * signalled l->writer_may_go after it" - the wake-up was not wasted on a
 * sleeper that could not go on: the one woken went on, and later ran the
 * function that had signalled it (the hand-off), which did not pass the
 * wake-up on this time. False (nothing written) if that is not so. */
static bool explain_baton_dropped(kit_text_t *x, const struct sched_thread *t, long signal, const char *object)
{
    struct sched_change change;
    int woken = signalled_thread(signal);
    long section = baton_dropped(t, signal, woken, &change);
    if (section < 0)
        return false;
    want_place(sched.steps[section].where);
    want_place(change.where);
    resolve_places();
    const struct place *signaller = place_of(sched.steps[signal].where), *held = place_of(sched.steps[section].where);
    if (!students_code(change.where) || signaller == NULL || held == NULL ||
        strcmp(signaller->function, held->function) != 0)
        return false; /* not the code that hands the wake-up on (a reader's unlock never wakes readers) */
    char signalled_at[160], there[160], m[NAME_CHARS];
    const char *name = sched.threads[woken]->name;
    where_text(sched.steps[signal].where, signalled_at, sizeof signalled_at);
    section_text(section, there, sizeof there);
    kit_text_put(x, "; %s signalled %s at %s (step %ld), which woke %s: %s went on, and later held %s at %s (step "
                 "%ld)", sched.threads[sched.steps[signal].thread]->name, object, signalled_at, signal + 1, name,
                 name, object_name(t->obj2, m, sizeof m), there, section + 1);
    name_change(x, &change, ", its last change there was");
    name_after(x, &change);
    kit_text_put(x, ", and nobody signalled %s after it: that change needs a signal or broadcast of %s - the one "
                 "woken passes the wake-up on", object, object);
    return true;
}

/* Why sleeper t on object t->obj was not woken, naming the line to change:
 * the change after which nobody signalled (unsignalled_change), or that it
 * was changed before it slept and never undone; or the signal since it
 * slept, which woke another sleeper; else the critical sections of its
 * mutex since (the places of their writes unknown). */
static void explain_sleeper(kit_text_t *x, const struct sched_thread *t)
{
    char a[NAME_CHARS], b[NAME_CHARS], here[480], there[160];
    sleeper_place(t, here, sizeof here);
    const char *object = object_name(t->obj, a, sizeof a);
    long since = began_waiting(t), section;
    kit_text_put(x, "%s sleeps on %s at %s (since step %ld)", t->name, object, here, since + 1);
    long signal = t->state == WAITING ? signal_since(t->obj, since) : -1;
    if (signal >= 0 && explain_baton_dropped(x, t, signal, object)) {
        explain_last_wakeup(x, t, since);
        return;
    }
    if (signal >= 0)
        name_wrong_wakeup(x, signal, object);
    struct sched_change change;
    const char *lead = signal >= 0 ? "; after that" : "; since then";
    if (unsignalled_change(t, signal >= 0 ? signal : since, signalled_thread(signal), &change, &section)) {
        if (section >= 0) {
            section_text(section, there, sizeof there);
            kit_text_put(x, "%s %s held %s at %s (step %ld)", lead, sched.threads[change.thread]->name,
                object_name(t->obj2, b, sizeof b), there, section + 1);
            name_change(x, &change, ", its last change there was");
            name_after(x, &change);
            kit_text_put(x, ", and nobody signalled %s after it: if that section changed what it waits for, it "
                "needs a signal or broadcast of %s there", object, object);
        } else {
            name_change(x, &change, lead);
            name_after(x, &change);
            kit_text_put(x, ", and nobody signalled %s after it: that change needs a signal or broadcast of %s",
                object, object);
        }
        if (signal < 0)
            name_other_signal(x, t, &change);
        name_later_section(x, t, &change, signalled_thread(signal), object);
    } else if (!explain_holders(x, t, signal, since, object) && signal < 0) {
        kit_text_put(x, "; nobody %s %s since", t->state == SEMAPHORE ? "posted" : "signalled", object);
        if (!explain_never_undone(x, t, since))
            explain_changed_before(x, t, since);
    }
    explain_moving_deadline(x, t);
    explain_last_wakeup(x, t, since);
}

/* The places explaining thread t names (explain_thread), wanted for addr2line. */
static void want_sleeper_places(const struct sched_thread *t)
{
    want_place(t->where);
    for (int i = 0; t->state == WAITING && i < t->nwait_callers; i++)
        want_place(t->wait_callers[i]);
    if (t->state != WAITING && t->state != SEMAPHORE)
        return;
    long wake = last_wake_of(t->obj);
    if (wake >= 0)
        want_place(sched.steps[wake].where);
    long since = began_waiting(t);
    long signal = t->state == WAITING ? signal_since(t->obj, since) : -1;
    if (signal >= 0)
        want_place(sched.steps[signal].where);
    long held[HOLDERS_NAMED];
    int nheld = t->state == WAITING ? holders_since(t, t->obj2, signal >= 0 ? signal : since, held, HOLDERS_NAMED) : 0;
    for (int h = 0; h < nheld; h++) {
        const struct sched_step *step = &sched.steps[held[h]];
        long end = section_end(held[h], step->op == OP_WAKE ? step->other : step->obj);
        want_place(step->where);
        if (end >= 0)
            want_place(sched.steps[end].where);
    }
    want_never_undone(t);
    struct sched_change changes[CHANGES_LOOKED_AT], last;
    int nchanges = sched_changes_of(t->id, changes, CHANGES_LOOKED_AT);
    for (int c = 0; c < nchanges; c++) {
        want_place(changes[c].where);
        want_callers(&changes[c]);
        want_after(&changes[c]);
    }
    for (int h = 0; h < nheld; h++) {
        const struct sched_step *step = &sched.steps[held[h]];
        long end = section_end(held[h], step->op == OP_WAKE ? step->other : step->obj);
        if (sched_changes_last_in(step->thread, held[h] + 1, end, &last)) {
            want_place(last.where);
            want_callers(&last);
            want_after(&last);
        }
    }
}

static void explain_thread(kit_text_t *x, const struct sched_thread *t)
{
    char a[NAME_CHARS], here[160];
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

/* The last critical section that changed what sleeper t waits for with no
 * signal after it (explain_sleeper), or -1. */
static long latest_unsignalled_change(const struct sched_thread *t)
{
    if (t->state != WAITING)
        return -1;
    long since = began_waiting(t);
    long signal = signal_since(t->obj, since);
    struct sched_change change;
    long section;
    if (unsignalled_change(t, signal >= 0 ? signal : since, signalled_thread(signal), &change, &section))
        return change.step;
    long held[1];
    return holders_since(t, t->obj2, signal >= 0 ? signal : since, held, 1) > 0 ? held[0] : -1;
}

/* Whether @p name is in @p text as a whole identifier. */
static bool names_identifier(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *at = strstr(text, name); n > 0 && at; at = strstr(at + 1, name)) {
        bool starts = at == text || !(isalnum((unsigned char)at[-1]) || at[-1] == '_');
        if (starts && !isalnum((unsigned char)at[n]) && at[n] != '_')
            return true;
    }
    return false;
}

/* Whether the failure's first line names the call of the code under test
 * that thread t sleeps in ("one of two masters in mw_await ... still
 * blocked"): the sleeper the check waited for. Its place must be resolved. */
static bool in_named_call(const struct sched_thread *t)
{
    const struct place *call = t->calling ? place_of(t->calling) : NULL;
    char first_line[600];
    snprintf(first_line, sizeof first_line, "%.*s", (int)strcspn(sched.message, "\n"), sched.message);
    return call != NULL && call->function[0] && names_identifier(first_line, call->function);
}

/* Of two sleepers, whether t's story says more of the lost wake-up than
 * u's: the one in the call the failure names, then the latest change
 * nobody signalled, then the longest asleep. */
static bool explains_more(const struct sched_thread *t, const struct sched_thread *u)
{
    if (in_named_call(t) != in_named_call(u))
        return in_named_call(t);
    long mine = latest_unsignalled_change(t), theirs = latest_unsignalled_change(u);
    return mine != theirs ? mine > theirs : began_waiting(t) < began_waiting(u);
}

/* The thread whose wait explains the others: a sleeper of the code under
 * test first (the one whose story says most), then a lock cycle, then
 * whoever waits on anything. */
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
        if (rank < best_rank || (rank == 0 && best_rank == 0 && explains_more(t, best))) {
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

void kit_describe_caller(void *pc, char *out, size_t size)
{
    kit_text_t text = { out, size, 0 };
    out[0] = '\0';
    inlined_callers(pc, &text, 1);
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
    char a[NAME_CHARS], second[160], first[160];
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
    name_objects(first_named());
    if (sched.relocked >= 0) {
        explain_relock();
        return;
    }
    if (strncmp(sched.message, "deadlock or lost", 16) != 0)
        return;
    nplaces = 0;
    for (int i = 0; i < sched.nlive; i++)
        want_sleeper_places(sched.threads[sched.live[i]]);
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

void kit_sched_woke_early(void)
{
    if (!kit_sched_active())
        return;
    for (long i = sched.nsteps - 1; i >= 0; i--)
        if (sched.steps[i].thread == sched.current && sched.steps[i].op == OP_WAKE) {
            if (sched.steps[i].how == TIMEOUT) /* only what the steps say: the model's choices are made */
                sched.steps[i].how = SPURIOUS;
            return;
        }
}

void sched_describe_step(const struct sched_step *step, char *out, size_t size)
{
    char a[NAME_CHARS], b[NAME_CHARS];
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
    char a[NAME_CHARS], b[NAME_CHARS];
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
 * <chapter folder>.<test>.svg. An empty KIT_EXPLORE_SVG_DIR draws nothing:
 * a confined grade draws the schedule itself, from the steps in the log
 * (grader_drawing.c), and a path inside the confinement would only mislead. */
static void draw(const char *test, long first, const char *tag)
{
    char path[1024];
    const char *dir = getenv("KIT_EXPLORE_SVG_DIR");
    if (dir != NULL && dir[0] == '\0')
        return;
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

/* The stack of the judge's thread a stand-in stands for (kit_sched_stand_in_frames). */
static void *stand_in_stack[KIT_SCHED_STAND_IN_FRAMES];
static int stand_in_depth, stand_in_thread = -1;

void kit_sched_stand_in_frames(void *const *frames, int n)
{
    stand_in_depth = n < 0 ? 0 : n > KIT_SCHED_STAND_IN_FRAMES ? KIT_SCHED_STAND_IN_FRAMES : n;
    memcpy(stand_in_stack, frames, (size_t)stand_in_depth * sizeof frames[0]);
    stand_in_thread = sched_me() ? sched_me()->id : -1;
}

/* The stack shown for @p t: its own, or the judge's thread's it stands for. */
static void *const *shown_stack(const struct sched_thread *t, int *depth)
{
    bool stands_in = t->id == stand_in_thread && stand_in_depth > 0;
    *depth = stands_in ? stand_in_depth : t->depth;
    return stands_in ? stand_in_stack : t->stack;
}

/* Every live thread's stack but `skip`'s, gdb's way, numbered from first_number. */
static void print_threads(const struct sched_thread *skip, int first_number)
{
    sched_collect_stacks();
    nplaces = 0;
    int depth;
    for (int i = 0; i < sched.nlive; i++) {
        void *const *stack = shown_stack(sched.threads[sched.live[i]], &depth);
        for (int f = 0; f < depth; f++)
            want_place(stack[f]);
    }
    resolve_places();
    for (int i = 0, number = first_number; i < sched.nlive; i++) {
        const struct sched_thread *t = sched.threads[sched.live[i]];
        if (t == skip)
            continue;
        fprintf(stderr, "Thread %d (Thread 0x0 (LWP 0) \"%s\"):\n", first_number > 0 ? number++ : t->id + 1, t->name);
        void *const *stack = shown_stack(t, &depth);
        if (t->id == sched.failer) { /* a failed check, a hang check or a misuse: where it stopped */
            fprintf(stderr, "#0  kit_dump_stacks ()\n");
            print_frames(stack, depth, 1);
        } else if (blocking_call(t) != NULL) {
            fprintf(stderr, "#0  %s ()\n", blocking_call(t));
            print_frames(stack, depth, 1);
        } else {
            print_frames(stack, depth, 0);
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
    stand_in_depth = 0;
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

/* The first step a report shows or draws: its objects are named. */
static long first_named(void)
{
    long kept = steps_to_show() > DRAWN_STEPS ? steps_to_show() : DRAWN_STEPS;
    return sched.nsteps > kept ? sched.nsteps - kept : 0;
}

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
    if (sched.nsteps >= sched.options.max_steps) /* a long scheduled test went on past its record (kit_sched.c) */
        fprintf(stderr, "%s (this schedule went on past its first %ld steps: the steps after those were not kept)\n",
                tag, sched.options.max_steps);
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

/* The code's sleeper whose story explains a hang best (explains_more), or NULL. */
static const struct sched_thread *stuck_sleeper(void)
{
    const struct sched_thread *best = NULL;
    nplaces = 0;
    for (int i = 0; i < sched.nlive; i++)
        want_place(sched.threads[sched.live[i]]->calling);
    resolve_places();
    for (int i = 0; i < sched.nlive; i++) {
        const struct sched_thread *t = sched.threads[sched.live[i]];
        bool sleeper = (t->state == WAITING && !t->harness) || t->state == SEMAPHORE;
        if (sleeper && (best == NULL || explains_more(t, best)))
            best = t;
    }
    return best;
}

/* The sleeper a scenario's "a wait that should not have begun: ... on
 * thread B still waits" names, or NULL. */
static const struct sched_thread *named_sleeper(void)
{
    const char *at = strstr(sched.message, " on thread ");
    if (at == NULL)
        return NULL;
    at += strlen(" on thread ");
    size_t length = strcspn(at, " ");
    for (int i = 0; i < sched.nlive; i++) {
        const struct sched_thread *t = sched.threads[sched.live[i]];
        if (t->state == WAITING && strlen(t->name) == length && strncmp(t->name, at, length) == 0)
            return t;
    }
    return NULL;
}

/* "B began to wait on l->readers_may_go at rwl.c:157 in
 * wait_to_read_locked, called from read_lock (rwl.c:200) (step 24)": a wait
 * the header says never begins for this call, named with the calls that led
 * to it - where the condition that let it begin is. */
static void explain_needless_wait(kit_text_t *x, const struct sched_thread *t)
{
    char a[NAME_CHARS], here[480];
    sleeper_place(t, here, sizeof here);
    kit_text_put(x, "%s began to wait on %s at %s (step %ld): the condition that sent it to sleep there must let "
                 "this call through at once", t->name, object_name(t->obj, a, sizeof a), here, began_waiting(t) + 1);
}

/* Whether the failure is told already: a deadlock's own story, a "why:"
 * an explainer before inserted, or a path the check's own words say must
 * undo a change (a scenario's time-out that left its count raised) - the
 * explainers after it keep quiet. */
static bool told_already(void)
{
    return sched.deadlocked || strstr(sched.message, "\n  why: ") != NULL ||
           strstr(sched.message, "must undo it too") != NULL;
}

/* The "why:" line after the failure message's first line (see explain_hang). */
static void insert_why(const char *why, bool scheduled)
{
    size_t first_line = strcspn(sched.message, "\n");
    static char rest[sizeof sched.message];
    snprintf(rest, sizeof rest, "%s", sched.message + first_line);
    snprintf(sched.message + first_line, sizeof sched.message - first_line, "\n  %s%s", why, rest);
    if (scheduled)
        fprintf(stderr, "[  ERROR   ] --- %s\n", why);
}

/* A schedule that failed as a hang the test saw - a thread "still blocked
 * after" its bound, a scenario's lost wake-up - rather than as the model's
 * deadlock (whose message says it already): why the code's sleeper was not
 * woken, naming the lines to change, follows the message's first line; on
 * a scheduled test, whose message is printed already, as a line of its
 * own beside it, so the failure's first words hold it too. */
static void explain_hang(bool scheduled)
{
    bool needless = strstr(sched.message, "a wait that should not have begun") != NULL;
    if (sched.deadlocked ||
        (!needless && !strstr(sched.message, "still blocked after") && !strstr(sched.message, "lost wake-up")))
        return;
    const struct sched_thread *sleeper = needless ? named_sleeper() : stuck_sleeper();
    if (sleeper == NULL)
        return;
    nplaces = 0;
    want_sleeper_places(sleeper);
    resolve_places();
    char why[1400];
    kit_text_t x = { why, sizeof why, 0 };
    kit_text_put(&x, "why: ");
    if (needless)
        explain_needless_wait(&x, sleeper);
    else
        explain_sleeper(&x, sleeper);
    insert_why(why, scheduled);
}

/* The field a failed check of a value names - "failed" of "s.failed is 2,
 * expected 1" - into @p out; false when the check names no plain field. */
static bool checked_field(const char *message, char *out, size_t size)
{
    size_t length = strcspn(message, " \n");
    if (strncmp(message + length, " is ", 4) != 0 || length == 0 || length >= size)
        return false;
    for (size_t i = 0; i < length; i++)
        if (!isalnum((unsigned char)message[i]) && !strchr("_.->", message[i]))
            return false; /* a call, an index: no field the code writes by that name */
    size_t start = length;
    while (start > 0 && (isalnum((unsigned char)message[start - 1]) || message[start - 1] == '_'))
        start--;
    snprintf(out, size, "%.*s", (int)(length - start), message + start);
    return out[0] != '\0' && !isdigit((unsigned char)out[0]);
}

/* Whether source @p code writes @p field: "p->stats.failed++", "x.failed = ...". */
static bool writes_field(const char *code, const char *field)
{
    size_t n = strlen(field);
    for (const char *at = strstr(code, field); at; at = strstr(at + 1, field)) {
        bool member = at > code && (at[-1] == '.' || at[-1] == '>');
        const char *after = at + n + strspn(at + n, " ");
        bool whole = !isalnum((unsigned char)at[n]) && at[n] != '_';
        bool assigns = strncmp(after, "++", 2) == 0 || strncmp(after, "--", 2) == 0 ||
                       (after[0] == '=' && after[1] != '=') || (strchr("+-*/|&", after[0]) && after[1] == '=');
        if (member && whole && assigns)
            return true;
    }
    return false;
}

/* The write that made the value a failed check of a field read - "s.failed
 * is 2, expected 1", on a scheduled test, after a call that read the code's
 * memory: the one line of the code under test that wrote that field among
 * the latest writes to what the failing thread read since it last took a
 * mutex, into @p out (its place resolved); false if none, or two lines. */
static bool checked_write(const char *field, struct sched_change *out)
{
    char code[100];
    struct sched_change changes[24];
    int n = sched_changes_section_writers(sched.failer, changes, 24), found = -1;
    nplaces = 0;
    for (int i = 0; i < n; i++)
        want_place(changes[i].where);
    resolve_places();
    for (int i = 0; i < n; i++) {
        code_at(changes[i].where, code, sizeof code);
        if (!students_code(changes[i].where) || !writes_field(code, field))
            continue;
        if (found >= 0 && strcmp(place_of(changes[found].where)->text, place_of(changes[i].where)->text) != 0)
            return false; /* two lines write it: no telling which made the value */
        if (found < 0)
            found = i;
    }
    if (found >= 0)
        *out = changes[found];
    return found >= 0;
}

/* A failed check of a value on a scheduled test: "why: the check read
 * `failed`, which the code last wrote at ..." - the write that made it. */
static void explain_check(bool scheduled)
{
    char field[64], code[100], there[160];
    struct sched_change change;
    if (!scheduled || told_already() || sched.failer < 0 || !checked_field(sched.message, field, sizeof field) ||
        !checked_write(field, &change))
        return;
    code_at(change.where, code, sizeof code);
    where_text(change.where, there, sizeof there);
    char why[600];
    snprintf(why, sizeof why, "why: the check read `%s`, which the code last wrote at %s: %s(%s, after step %ld) - the "
             "wrong value was made there, or by what led there", field, there, code,
             sched.threads[change.thread]->name, change.step);
    insert_why(why, scheduled);
}

/* Whether @p text names the line @p place ("bq.c:168"), not a longer number. */
static bool names_place(const char *text, const char *place)
{
    size_t n = strlen(place);
    for (const char *at = strstr(text, place); n > 0 && at; at = strstr(at + 1, place))
        if (!isdigit((unsigned char)at[n]))
            return true;
    return false;
}

/* Whether two ways out of a wait ran the same lines (their places resolved). */
static bool same_path(void *const *a, int na, void *const *b, int nb)
{
    if (na != nb)
        return false;
    for (int i = 0; i < na; i++)
        if (!same_line(a[i], b[i]))
            return false;
    return true;
}

/* The thread, other than the one that failed the check, whose last call of
 * the code under test the check's words name ("the msgq_put blocked when
 * the queue was closed returned 0", the words before what else the
 * message tells of) and waited: the value came from that call. Several such calls (three putters, blocked alike) must have taken
 * the same way out of their waits, or there is no telling which the check
 * read. That way out into @p path, its length into @p n; -1 if there is
 * none. Places are resolved (the calls' functions, then the paths). */
static int returning_thread(void **path, int *n)
{
    void *other[AFTER_PLACES];
    char subject[600]; /* the words that name the call checked, before what else happened: ", but ...", " (after ..." */
    snprintf(subject, sizeof subject, "%.*s", (int)strcspn(sched.message, "\n"), sched.message);
    char *cut = strstr(subject, ", but ");
    if (cut != NULL)
        *cut = '\0';
    if ((cut = strstr(subject, " (after ")) != NULL)
        *cut = '\0';
    int found = -1;
    for (int i = 0; i < sched.nthreads; i++) {
        const struct sched_thread *t = sched.threads[i];
        const struct place *function = t->returned_from ? place_of(t->returned_from) : NULL;
        if (i == sched.failer || function == NULL || !students_code(t->returned_from) ||
            !names_identifier(subject, function->function))
            continue;
        void **into = found < 0 ? path : other;
        int length = sched_changes_wait_after(i, t->call_began, into, AFTER_PLACES);
        if (length < 2)
            continue;
        for (int k = 0; k < length; k++)
            want_place(into[k]);
        resolve_places();
        if (found >= 0 && !same_path(path, *n, other, length))
            return -1; /* two ways out: no telling which made the value */
        if (found < 0) {
            found = i;
            *n = length;
        }
    }
    return found;
}

/* A failed check of what another thread's call returned, where that call
 * waited: "why: msgq_put on putter returned it; after its wait at msgq.c:92
 * in msgq_put returned, it ran msgq.c:89, msgq.c:95, msgq.c:96 and let the
 * mutex go at msgq.c:106 in msgq_put" - the way out of its wait, where what
 * it returned was decided (a copy taken before the wait, read again after
 * it, decides on the state as it was). */
static void explain_returned(bool scheduled)
{
    if (told_already() || sched.failer < 0 || !strstr(sched.message, "returned"))
        return;
    nplaces = 0;
    for (int i = 0; i < sched.nthreads; i++)
        want_place(sched.threads[i]->returned_from);
    resolve_places();
    void *path[AFTER_PLACES];
    int n = 0, who = returning_thread(path, &n);
    if (who < 0 || !students_code(path[0]) || !students_code(path[n - 1]))
        return;
    const struct sched_thread *t = sched.threads[who];
    const struct place *wait = place_of(path[0]), *let_go = place_of(path[n - 1]);
    if (names_place(sched.message, wait->text))
        return; /* the check told that way out already (a time-out that took a wake-up) */
    char why[900];
    kit_text_t x = { why, sizeof why, 0 };
    kit_text_put(&x, "why: %s on %s returned it; after its wait at %s in %s returned, it ",
                 place_of(t->returned_from)->function, t->name, wait->text, wait->function);
    put_lines(&x, path + 1, n - 2, let_go, wait, NULL);
    kit_text_put(&x, "let the mutex go at %s in %s: what it returned was decided on that way out, from what it read "
                 "there or kept from before its wait", let_go->text, let_go->function);
    insert_why(why, scheduled);
}

/* Of the latest writes to what the failing thread read (@p n of @p
 * changes), the student's change that a timed wait's way out left in
 * place: after it its thread waited at that wait, the wait returned
 * ETIMEDOUT, and nothing wrote that memory since. Its time-out's path into
 * @p path, its length (0: none). */
static int left_by_timeout(const struct sched_change *changes, int n, int *which, void **path)
{
    for (int i = 0; i < n; i++) {
        void *wait;
        int k = sched_changes_left_by_timeout(&changes[i], &wait, path, AFTER_PLACES);
        if (k >= 2 && students_code(changes[i].where) && students_code(path[0]) && students_code(path[k - 1]) &&
            same_line(wait, path[0])) {
            *which = i;
            return k;
        }
    }
    return 0;
}

/* "ran rwl.c:176, rwl.c:141 in writer_may_enter_locked, called from
 * wait_to_write_locked (rwl.c:178) and ": the student's lines of a path,
 * each once - @p timed's function's own bare, another's with its name and,
 * for a helper inlined there, the line that called it (the line a branch
 * on its answer is on) - but for @p skip's and @p let_go's. */
static void put_path_with_callers(kit_text_t *x, void *const *path, int n, const struct place *skip,
                                  const struct place *timed, const struct place *let_go)
{
    char said[AFTER_PLACES][200];
    int nsaid = 0;
    for (int i = 0; i < n && nsaid < AFTER_PLACES; i++) {
        const struct place *place = place_of(path[i]);
        if (!students_code(path[i]) || strcmp(place->text, skip->text) == 0 || strcmp(place->text, let_go->text) == 0)
            continue;
        kit_text_t item = { said[nsaid], sizeof said[nsaid], 0 };
        kit_text_put(&item, "%s", place->text);
        if (strcmp(place->function, timed->function) != 0) { /* (the timed wait's own lines go without) */
            kit_text_put(&item, " in %s", place->function);
            kit_text_t caller = { said[nsaid] + item.at, sizeof said[nsaid] - item.at, 0 };
            inlined_callers(path[i], &caller, 1);
        }
        bool again = false;
        for (int j = 0; j < nsaid; j++)
            again = again || strcmp(said[j], said[nsaid]) == 0;
        if (again)
            continue;
        kit_text_put(x, "%s%s", nsaid > 0 ? ", " : "ran ", said[nsaid]);
        nsaid++;
    }
    if (nsaid > 0)
        kit_text_put(x, " and ");
}

/* The places explain_left_by_timeout may name, wanted for addr2line. */
static void want_left_by_timeout(const struct sched_change *changes, int n)
{
    void *path[AFTER_PLACES], *wait;
    for (int i = 0; i < n; i++) {
        want_place(changes[i].where);
        int k = sched_changes_left_by_timeout(&changes[i], &wait, path, AFTER_PLACES);
        for (int j = 0; j < k; j++)
            want_place(path[j]);
        if (k > 0)
            want_place(wait);
    }
}

/* A failed check on a scheduled test whose thread's last call read what a
 * time-out left: "why: the last call before the check read memory whose
 * last change was `l->waiting_writers++;` at rwl.c:167 in
 * wait_to_write_locked (writer, after step 24); after it writer's timed
 * wait at rwl.c:173 in wait_to_write_locked returned ETIMEDOUT: it ran ...
 * and let the mutex go at rwl.c:261 in write_lock without changing it back"
 * - the path a time-out took without undoing its thread's change for the
 * wait, as a hang names it (explain_changed_before). */
static void explain_left_by_timeout(bool scheduled)
{
    struct sched_change changes[24];
    void *path[AFTER_PLACES];
    if (!scheduled || told_already() || sched.failer < 0)
        return;
    int n = sched_changes_section_latest(sched.failer, changes, 24), which = -1;
    nplaces = 0;
    want_left_by_timeout(changes, n);
    resolve_places();
    int k = left_by_timeout(changes, n, &which, path);
    if (k == 0)
        return;
    const struct sched_change *change = &changes[which];
    char why[1400], code[100], there[460];
    kit_text_t x = { why, sizeof why, 0 };
    code_at(change->where, code, sizeof code);
    where_text(change->where, there, sizeof there);
    const struct place *timed = place_of(path[0]), *let_go = place_of(path[k - 1]);
    const char *name = sched.threads[change->thread]->name;
    kit_text_put(&x, "why: the last call before the check read memory whose last change was %sat %s (%s, after step "
                 "%ld); after it %s's timed wait at %s in %s returned ETIMEDOUT: it ", code, there, name,
                 change->step, name, timed->text, timed->function);
    put_path_with_callers(&x, path + 1, k - 2, place_of(change->where), timed, let_go);
    kit_text_put(&x, "let the mutex go at %s in %s without changing it back, and nothing changed it since: if "
                 "that change was made for the wait, the time-out's way out must undo it too",
                 let_go->text, let_go->function);
    insert_why(why, scheduled);
}

/* Whether source @p code lowers something: "x--", "--x", "x -= n". */
static bool lowers(const char *code)
{
    return strstr(code, "--") != NULL || strstr(code, "-=") != NULL;
}

/* "`f->counted_waiters--;` at future.c:259 in wait_for (pool-1, after step 40)" */
static void name_write(kit_text_t *x, const struct sched_change *change)
{
    char code[100], there[460];
    code_at(change->where, code, sizeof code);
    where_text(change->where, there, sizeof there);
    kit_text_t caller = { there + strlen(there), sizeof there - strlen(there), 0 };
    const struct place *place = place_of(change->where);
    bool own_line = strchr(there, ':') != NULL && !kit_library(place);
    if (!own_line) /* an earlier chapter's reference, the kit's library: its function and the calls that led there */
        snprintf(there, sizeof there, "a write in %s (the kit's code)",
                 place && place->function[0] && strcmp(place->function, "??") != 0 ? place->function : "a function");
    caller = (kit_text_t){ there + strlen(there), sizeof there - strlen(there), 0 };
    if (own_line)
        inlined_callers(change->where, &caller, 1);
    if (caller.at == 0 || !own_line)
        called_from(change, &caller, 2);
    kit_text_put(x, "%s%s%s (%s, after step %ld)", code, own_line ? "at " : "", there,
                 sched.threads[change->thread]->name, change->step);
}

/* Whether source @p code raises something: "x++", "++x", "x += n". */
static bool raises(const char *code)
{
    return strstr(code, "++") != NULL || strstr(code, "+=") != NULL;
}

/* "; the write before it, which took it to 0, was ... one raise lowered
 * twice" - or, when both lowerings are one line and another thread raised
 * the count right after, that the raise came too late: the thing counted
 * was out where a thread could finish it before it was counted. */
static void tell_before_and_after(kit_text_t *x, const struct sched_change *change, const struct sched_change *before,
                                  const struct sched_change *after)
{
    char code[100];
    code_at(after->where, code, sizeof code);
    bool late_raise = after->where != NULL && students_code(after->where) && raises(code) &&
                      (before->where == NULL || same_line(before->where, change->where));
    if (late_raise) {
        kit_text_put(x, "; the raise it undid came only after it: ");
        name_write(x, after);
        kit_text_put(x, " - what the count counts was already where another thread could finish it before it was "
                     "counted: raise the count before (in the critical section that makes the work visible, or "
                     "earlier), not after");
        return;
    }
    code_at(before->where, code, sizeof code);
    if (before->where != NULL && (students_code(before->where) ? lowers(code) : students_call(before))) {
        kit_text_put(x, "; the write before it, which took it to 0, was ");
        name_write(x, before);
        kit_text_put(x, ": one raise lowered twice - keep one of the two (each raise is undone once, by one thread)");
    }
}

/* A failure nothing above explained, on a run whose paths were followed,
 * after the student's code lowered a count that was 0 (kit_sched_changes.c
 * keeps each store of 4 or 8 bytes made over a 0; of those, a line that
 * lowers): "why: `f->counted_waiters--;` at future.c:259 ... lowered memory
 * that held 0 ...; the write before it was `f->counted_waiters--;` at
 * future.c:115 in finish_locked ..." - a count lowered twice for one raise
 * names the second lowering, and the first; a count raised too late names
 * the raise that came after. */
static void explain_below_zero(bool scheduled)
{
    struct sched_change change, before, after;
    char code[100], why[1800];
    if (strstr(sched.message, "\n  why: ") != NULL)
        return; /* (a deadlock's story too: a count below zero is a surer cause than where the threads stopped) */
    nplaces = 0;
    for (int b = 0; sched_changes_below_zero(b, &change, &before, &after); b++) {
        const struct sched_change *writes[] = { &change, &before, &after };
        for (int i = 0; i < 3; i++) {
            want_place(writes[i]->where);
            want_callers(writes[i]);
        }
    }
    resolve_places();
    for (int b = 0; sched_changes_below_zero(b, &change, &before, &after); b++) {
        code_at(change.where, code, sizeof code);
        if (students_code(change.where) ? !lowers(code) : !students_call(&change) || !sched_changes_still_below_zero(b))
            continue; /* the student's line that lowers, or a call of the student's into code that took it below 0 */
        kit_text_t x = { why, sizeof why, 0 };
        kit_text_put(&x, "why: ");
        name_write(&x, &change);
        kit_text_put(&x, " lowered memory that held 0: a count taken below zero (an unsigned one wraps to its "
            "largest value) was lowered once more than it was raised");
        tell_before_and_after(&x, &change, &before, &after);
        insert_why(why, scheduled);
        return;
    }
}

/* A failure on a run whose paths were followed, after a wait of the
 * student's returned spuriously and its thread let the mutex go without
 * reading again what the wait's section read (kit_sched_recheck.c): "why:
 * test's wait on q->changed at msgq.c:169 in msgq_destroy returned after a
 * spurious wake-up ... a wait must loop until its condition holds" - the
 * wait is the line to change. */
static void explain_unlooked(bool scheduled)
{
    struct sched_unlooked u;
    if (told_already() || !sched_recheck_found(&u))
        return;
    nplaces = 0;
    want_place(u.wait);
    want_place(u.let_go);
    resolve_places();
    if (!students_code(u.wait))
        return;
    char why[1400], cond[64], wait_at[460], let_go_at[460];
    kit_text_t x = { why, sizeof why, 0 };
    const char *name = sched.threads[u.thread]->name;
    where_text(u.wait, wait_at, sizeof wait_at);
    where_text(u.let_go, let_go_at, sizeof let_go_at);
    object_name(u.cond, cond, sizeof cond);
    kit_text_put(&x, "why: %s's wait on %s at %s returned after a spurious wake-up (after step %ld: no "
             "signal, nothing changed - POSIX allows it), and %s let the mutex go at %s without looking again at "
             "what it waited for: it went on as though that had come. A wait must loop until its condition holds "
             "(a while, not an if)", name, cond, wait_at, u.step, name, let_go_at);
    insert_why(why, scheduled);
}

/* A failed check about futile wake-ups ("... futile wake-up ..." in its
 * words, as the tests of chapters 02 and 08 that count them say), on a
 * schedule that had one: "why: the last futile wake-up: writer-2 was woken
 * by the broadcast at rwl.c:289 in rwl_write_unlock ..." - the wake-up
 * that should have woken fewer is the line to change. */
static void explain_futile(bool scheduled)
{
    if (told_already() || !strstr(sched.message, "futile wake-up") ||
        sched.futile.thread < 0 || sched.futile.thread >= sched.nthreads)
        return;
    nplaces = 0;
    want_place(sched.futile.by);
    want_place(sched.futile.slept);
    resolve_places();
    if (!students_code(sched.futile.by))
        return;
    char why[1200], cond[64], by[460], slept[460];
    kit_text_t x = { why, sizeof why, 0 };
    where_text(sched.futile.by, by, sizeof by);
    where_text(sched.futile.slept, slept, sizeof slept);
    object_name(sched.futile.cond, cond, sizeof cond);
    kit_text_put(&x, "why: the last futile wake-up: %s was woken from %s by the %s at %s, found nothing to do and "
                 "slept again at %s - %s", sched.threads[sched.futile.thread]->name, cond,
                 sched.futile.broadcast ? "broadcast" : "signal", by, slept,
                 sched.futile.broadcast ? "a broadcast wakes every sleeper: where one of them can go on, signal one"
                                        : "a signal should go to a thread that can go on (a condition variable of "
                                          "its own for each kind of sleeper)");
    insert_why(why, scheduled);
}

/* A split section's places, each the student's line: the place itself, or
 * the student's call that led into an earlier chapter's code there. */
struct split_lines {
    void *lock, *look, *let_go, *retake, *use;
    char let_go_at[96]; /* "future.c:158": where the call let the mutex go (a getter's call, if in one) */
    char function[96];  /* the function the call split its section in */
};

static void want_at(const struct sched_at *at)
{
    want_place(at->where);
    for (int i = 0; i < 2; i++)
        want_place(at->sites[i]);
}

/* The student's line of @p at, or NULL. */
static void *students_line(const struct sched_at *at)
{
    if (students_code(at->where))
        return at->where;
    for (int i = 0; i < 2; i++)
        if (students_code(at->sites[i]))
            return at->sites[i];
    return NULL;
}

/* "future.c:158": the line of @p function that the code at @p addr was
 * inlined into (a getter that locks, called there) into @p out, or "". */
static void inlined_into(void *addr, const char *function, char *out, size_t size)
{
    char chain[600] = "", key[120];
    kit_text_t text = { chain, sizeof chain, 0 };
    inlined_callers(addr, &text, 3);
    snprintf(key, sizeof key, " %s (", function);
    const char *at = strstr(chain, key);
    out[0] = '\0';
    if (at != NULL) {
        at += strlen(key);
        snprintf(out, size, "%.*s", (int)strcspn(at, ")"), at);
    }
}

/* @p f's places as the student's lines; false if one has none, or the
 * mutex was let go outside the function that took it again (or a
 * function that one called: a getter that locks, whose call's line is
 * then where it let go). */
static bool split_lines_of(const struct sched_split *f, struct split_lines *out)
{
    *out = (struct split_lines){ students_line(&f->lock), students_line(&f->look), students_line(&f->let_go),
                                 students_line(&f->retake), students_line(&f->use), "", "" };
    if (!(out->lock && out->look && out->let_go && out->retake && out->use))
        return false;
    const struct place *let_go = place_of(out->let_go), *retake = place_of(out->retake);
    snprintf(out->function, sizeof out->function, "%s", retake->function);
    snprintf(out->let_go_at, sizeof out->let_go_at, "%s", let_go->text);
    if (strcmp(let_go->function, retake->function) == 0)
        return true;
    const struct place *call = place_of(f->let_go.sites[0]);
    if (call != NULL && students_code(f->let_go.sites[0]) && strcmp(call->function, retake->function) == 0) {
        snprintf(out->let_go_at, sizeof out->let_go_at, "%s", call->text);
        return true;
    }
    inlined_into(out->let_go, retake->function, out->let_go_at, sizeof out->let_go_at);
    return out->let_go_at[0] != '\0';
}

/* Whether @p later is a line of the same file a few lines after @p earlier
 * (an unlock and the lock right after it, not two sections with a call out
 * between them, such as a task the explorer does not see run). */
static bool lines_after(const char *earlier, void *later)
{
    enum { FEW = 3 };
    const struct place *b = place_of(later);
    const char *colon_a = strrchr(earlier, ':'), *colon_b = b ? strrchr(b->text, ':') : NULL;
    if (colon_a == NULL || colon_b == NULL || colon_a - earlier != colon_b - b->text ||
        strncmp(earlier, b->text, (size_t)(colon_a - earlier)) != 0)
        return false;
    long apart = atol(colon_b + 1) - atol(colon_a + 1);
    return apart > 0 && apart <= FEW;
}

/* Of the split sections found, the one to tell, into @p lines: every place
 * a line of the student's, the mutex let go and taken again in one function
 * (split_lines_of: where the split is to be seen), at different lines (a loop taking its
 * mutex at the same line each turn goes round, it does not split a
 * decision); the lock a few lines after the unlock with nothing the
 * explorer saw run between them (not a worker's task between two
 * sections: the task is the test's code, unseen), or with work between
 * (a lane allocated) when the memory used again was one the first section
 * only looked at; or, wherever the lock is, the second section writing the
 * very memory the first only read (a check, then its act). Then the
 * look's own memory used again before a change seen half made before a
 * thread that merely went on; nothing between; a check
 * before a change of its own; an act before a look. -1 if none. */
static int split_to_tell(const struct sched_split *found, int n, struct split_lines *lines)
{
    enum { NEXT_TO = 4 }; /* accesses between two sections that are one split */
    int best = -1, best_score = -1;
    for (int i = 0; i < n; i++) {
        const struct sched_split *f = &found[i];
        struct split_lines l;
        if (!split_lines_of(f, &l))
            continue;
        bool direct_check = f->looked_only && !f->went_on && !f->half_made;
        bool near = lines_after(l.let_go_at, l.retake) && (f->between <= NEXT_TO || direct_check);
        bool check_then_act = direct_check && f->use_writes;
        if (same_line(l.lock, l.retake) || !(near || check_then_act))
            continue;
        int kind = f->went_on ? 0 : f->half_made ? 1 : 2; /* the look's own memory used again tells most */
        int score = 8 * kind + 4 * near + 2 * (f->looked_only || f->half_made) + f->use_writes;
        if (score > best_score) {
            best = i;
            best_score = score;
            *lines = l;
        }
    }
    return best;
}

/* code_at's "`x` " as "`x`", to stand before a comma. */
static void drop_trailing_space(char *code)
{
    size_t n = strlen(code);
    if (n > 0 && code[n - 1] == ' ')
        code[n - 1] = '\0';
}

/* ", `code`" of the line at @p where, or "". */
static void code_after_comma(void *where, char *out, size_t size)
{
    char code[100];
    code_at(where, code, sizeof code);
    drop_trailing_space(code);
    snprintf(out, size, "%s%s", code[0] ? ", " : "", code);
}

/* "why: one call of mw_submit on A changed memory at ..., let mw->lock go
 * ..., and changed more at ...; in between, B read what the first change
 * left ...": another thread saw the change half made. */
static void tell_half_made(kit_text_t *x, const struct sched_split *f, const struct split_lines *l, const char *mutex)
{
    const char *name = sched.threads[f->thread]->name, *reader = sched.threads[f->change.thread]->name;
    char first[110], more[110], read[110], first_at[460], more_at[460], read_at[460];
    code_after_comma(l->look, first, sizeof first);
    code_after_comma(l->use, more, sizeof more);
    code_after_comma(f->change.where, read, sizeof read);
    where_text(l->look, first_at, sizeof first_at);
    where_text(l->use, more_at, sizeof more_at);
    where_text(f->change.where, read_at, sizeof read_at);
    kit_text_put(x, "why: one call of %s on %s held %s twice: it changed memory at %s%s, let the mutex go at %s, took "
                 "it again at %s and changed more at %s%s; in between, %s read what the first change left, at %s%s "
                 "(after step %ld) - it saw the change half made. A change others must see whole belongs in one "
                 "critical section: make both under one hold of the mutex",
                 l->function, name, mutex, first_at, first, l->let_go_at,
                 place_of(l->retake)->text, more_at, more, reader, read_at, read, f->change.step);
}

/* "why: one call of bq_try_put on A held q->lock twice: it read memory at
 * ..., let the mutex go at ..., took it again at ... and then read that
 * memory at ...; in between, B changed it: ...": a stale look acted on. */
static void tell_stale_look(kit_text_t *x, const struct sched_split *f, const struct split_lines *l, const char *mutex)
{
    const char *name = sched.threads[f->thread]->name;
    char look[110], use[110], look_at[460], use_at[460];
    code_after_comma(l->look, look, sizeof look);
    code_after_comma(l->use, use, sizeof use);
    where_text(l->look, look_at, sizeof look_at);
    where_text(l->use, use_at, sizeof use_at);
    kit_text_put(x, "why: one call of %s on %s held %s twice: it read memory at %s%s, let the mutex go at %s, took it "
                 "again at %s and then %s at %s%s; in between, %s changed what it had read: ",
                 l->function, name, mutex, look_at, look, l->let_go_at,
                 place_of(l->retake)->text,
                 f->went_on ? "went on" : f->use_writes ? "changed that memory" : "used that memory", use_at, use,
                 sched.threads[f->change.thread]->name);
    name_write(x, &f->change);
    kit_text_put(x, ". What %s saw before it let go no longer held when it went on: the look and what it decides "
                 "belong in one critical section - hold the mutex from the check to the change (or look again after "
                 "taking it back)", name);
}

/* A failure on a run whose paths were followed, where one call of the
 * student's held a mutex twice with another thread's change of what it had
 * read, or look at what it had changed, in between (kit_sched_split.c):
 * the line that split the section is the one to change. Told before what
 * the failure's symptom says of a value (it is the cause), after a hang's
 * story. */
static void explain_split(bool scheduled)
{
    struct sched_split found[16];
    struct split_lines lines;
    if (told_already())
        return;
    int n = sched_split_found(found, 16);
    nplaces = 0;
    for (int i = 0; i < n; i++) {
        const struct sched_at *places[] = { &found[i].lock, &found[i].look, &found[i].let_go, &found[i].retake,
                                            &found[i].use };
        for (size_t k = 0; k < sizeof places / sizeof places[0]; k++)
            want_at(places[k]);
        want_place(found[i].change.where);
        want_callers(&found[i].change);
    }
    resolve_places();
    int which = split_to_tell(found, n, &lines);
    if (which < 0)
        return;
    char why[1600], mutex[64];
    kit_text_t x = { why, sizeof why, 0 };
    object_name(found[which].mutex, mutex, sizeof mutex);
    if (found[which].half_made)
        tell_half_made(&x, &found[which], &lines, mutex);
    else
        tell_stale_look(&x, &found[which], &lines, mutex);
    insert_why(why, scheduled);
}

#define STALLS_TOLD 8 /* kit_sched_changes.c keeps as many */

/* The sleeper of the @p back-th latest stall (kit_sched_changes.c) as it
 * was then, asleep in its wait, into @p out; and the steps before it, or -1. */
static long stalled_sleeper(int back, struct sched_thread *out)
{
    long step;
    int id = sched_changes_stall(back, &step);
    if (id < 0 || id >= sched.nthreads || began_waiting_before(id, step) < 0)
        return -1;
    const struct sched_step *wait = &sched.steps[began_waiting_before(id, step)];
    *out = *sched.threads[id];
    out->state = WAITING;
    out->harness = false;
    out->obj = wait->obj;
    out->obj2 = wait->other;
    out->where = wait->where;
    return step;
}

/* Whether sleeper t's story finds a lost wake-up: a signal since it slept
 * that woke another sleeper, or a change after it with no signal after that.
 * (An idle thread that nothing was meant to wake, and that a long time-out
 * woke, has neither.) */
static bool lost_wakeup_found(const struct sched_thread *t)
{
    long since = began_waiting(t), section;
    long signal = signal_since(t->obj, since);
    struct sched_change change;
    return signal >= 0 || unsignalled_change(t, since, -1, &change, &section);
}

/* A check that failed on a schedule where no thread could go on and only a
 * long time-out woke a sleeper of the code under test (the test's bound for
 * "for ever"): a lost wake-up the time-out hid. Why that sleeper was not
 * woken, told as of that moment (the steps after it left out), names the
 * line to change, as for a hang: the latest such sleeper in the student's
 * code (an idle worker of an earlier chapter's pool is not the story), and
 * only when its story finds a lost wake-up. */
static void explain_stall(bool scheduled)
{
    static struct sched_thread sleeper;
    int back = 0;
    long step = -1;
    if (told_already())
        return;
    nplaces = 0;
    for (int b = 0; b < STALLS_TOLD; b++)
        if (stalled_sleeper(b, &sleeper) >= 0)
            want_place(sleeper.where);
    resolve_places();
    for (int b = STALLS_TOLD - 1; b >= 0; b--)
        if (stalled_sleeper(b, &sleeper) >= 0 && students_code(sleeper.where)) {
            back = b;
            step = 0;
        }
    if (step < 0)
        return;
    step = stalled_sleeper(back, &sleeper);
    long all = sched.nsteps;
    sched.nsteps = step;
    sched_changes_as_of_stall(back);
    want_sleeper_places(&sleeper);
    resolve_places();
    if (!lost_wakeup_found(&sleeper)) {
        sched_changes_as_of_stall(-1);
        sched.nsteps = all;
        return;
    }
    char why[1400];
    kit_text_t x = { why, sizeof why, 0 };
    kit_text_put(&x, "why: after step %ld no thread could go on, and only a time-out ended a wait: ", step);
    explain_sleeper(&x, &sleeper);
    sched_changes_as_of_stall(-1);
    sched.nsteps = all;
    insert_why(why, scheduled);
}

/* The field a count raises - "completed" of "mw->count.completed++;" or
 * "p->stats.done += n;" - into @p out; false if @p code raises none. */
static bool raised_field(const char *code, char *out, size_t size)
{
    const char *op = strstr(code, "++");
    if (op == NULL)
        op = strstr(code, "+=");
    if (op == NULL)
        return false;
    const char *end = op;
    while (end > code && end[-1] == ' ')
        end--;
    const char *start = end;
    while (start > code && (isalnum((unsigned char)start[-1]) || start[-1] == '_'))
        start--;
    if (start == end || isdigit((unsigned char)*start))
        return false;
    snprintf(out, size, "%.*s", (int)(end - start), start);
    return true;
}

/* Whether @p line lowers @p field: "q->sleepers--", "mw->pending -= n". */
static bool line_lowers(const char *line, const char *field)
{
    size_t n = strlen(field);
    for (const char *at = strstr(line, field); at; at = strstr(at + 1, field)) {
        bool member = at > line && (at[-1] == '.' || at[-1] == '>');
        const char *after = at + n + strspn(at + n, " ");
        if (member && (strncmp(after, "--", 2) == 0 || strncmp(after, "-=", 2) == 0))
            return true;
    }
    return false;
}

size_t kit_sched_folder_names(const char *path, char *out, size_t size)
{
    DIR *dir = opendir(path);
    size_t n = 0;
    for (struct dirent *entry; dir && (entry = readdir(dir)) != NULL;) {
        size_t length = strlen(entry->d_name);
        if (n + length + 1 > size)
            break;
        memcpy(out + n, entry->d_name, length);
        out[n + length] = '\n';
        n += length + 1;
    }
    if (dir)
        closedir(dir);
    return n;
}

/* The names in folder @p path, a line each, into @p out (ended): here, or
 * from the helper of a subject behind its system-call filter. */
static void folder_names(const char *path, char *out, size_t size)
{
    size_t n = 0;
    FILE *names = kit_sched_symbolizer.folder ? kit_sched_symbolizer.folder(path) : NULL;
    if (names != NULL) {
        n = fread(out, 1, size - 1, names);
        fclose(names); /* (read whole first: the helper's next answer takes its place) */
    } else if (kit_sched_symbolizer.folder == NULL) {
        n = kit_sched_folder_names(path, out, size - 1);
    }
    out[n] = '\0';
}

/* Whether the code in the folder of @p place's file lowers @p field
 * anywhere: a count that goes down again is a gauge (the waiters, the tasks
 * on their way), raised before a wait by design - not a total of things
 * done, which a thread must not count before they are. */
static bool folder_lowers(const struct place *place, const char *field)
{
    static char names[16384];
    char folder[512], file[1024], line[300], *rest = NULL;
    snprintf(folder, sizeof folder, "%s", place->path);
    char *slash = strrchr(folder, '/');
    if (slash == NULL)
        return false;
    *slash = '\0';
    folder_names(folder, names, sizeof names);
    bool lowers = false;
    for (char *name = strtok_r(names, "\n", &rest); name && !lowers; name = strtok_r(NULL, "\n", &rest)) {
        size_t length = strlen(name);
        if (length < 3 || name[length - 2] != '.' || strchr("ch", name[length - 1]) == NULL)
            continue;
        snprintf(file, sizeof file, "%s/%s", folder, name);
        FILE *source = kit_sched_symbolizer.fopen ? kit_sched_symbolizer.fopen(file) : fopen(file, "r");
        while (source && !lowers && fgets(line, sizeof line, source))
            lowers = line_lowers(line, field);
        if (source)
            fclose(source);
    }
    return lowers;
}

/* Whether sleeper t held its wait's mutex from the step after @p step to
 * its wait: a change then and the wait are one critical section. */
static bool held_until_the_wait(const struct sched_thread *t, long step)
{
    long wait = began_waiting(t);
    if (step < 0 || wait < step)
        return false;
    for (long i = step; i < wait; i++) {
        const struct sched_step *s = &sched.steps[i];
        if (s->thread == t->id && ((s->op == OP_UNLOCK && s->obj == t->obj2) || s->op == OP_WAIT))
            return false; /* let go of it (a wait lets go too) */
    }
    return true;
}

/* A count the failed check read, raised by a thread that then began a wait
 * in the same critical section and still waits - the thing counted has not happened
 * yet: "why: `mw->count.completed++;` at mw_core.c:142 in publish_result
 * (worker-1, after step 40) counted it before worker-1 waited at
 * mw_core.c:113 ..., where it still waits". The check's words must name
 * the field, so that a count of waiters, raised before a wait by design,
 * is not told. */
static void explain_early_count(bool scheduled)
{
    struct sched_change changes[24];
    if (told_already() || sched.failer < 0)
        return;
    int n = sched_changes_section_writers(sched.failer, changes, 24);
    nplaces = 0;
    for (int i = 0; i < n; i++)
        want_place(changes[i].where);
    for (int i = 0; i < sched.nlive; i++)
        want_sleeper_places(sched.threads[sched.live[i]]);
    resolve_places();
    for (int i = 0; i < n; i++) {
        const struct sched_thread *t = sched.threads[changes[i].thread];
        char code[100], field[64], here[480];
        code_at(changes[i].where, code, sizeof code);
        if (changes[i].thread == sched.failer || t->state != WAITING || t->harness || !students_code(t->where) ||
            !held_until_the_wait(t, changes[i].step) || !students_code(changes[i].where) ||
            !raised_field(code, field, sizeof field) || !names_identifier(sched.message, field) ||
            folder_lowers(place_of(changes[i].where), field))
            continue;
        char why[1200];
        kit_text_t x = { why, sizeof why, 0 };
        kit_text_put(&x, "why: ");
        name_write(&x, &changes[i]);
        sleeper_place(t, here, sizeof here);
        kit_text_put(&x, " counted it before %s waited at %s, where it still waits: what it counts has not happened "
                     "yet - count it once the wait is over", t->name, here);
        insert_why(why, scheduled);
        return;
    }
}

/* The last thread the code under test created (at a line of the student's,
 * or through the kit's library: kit_thread_create) that has ended, and the
 * step it ended at (into @p ended), once every such thread has ended; else
 * -1. The places of the creations must be resolved. */
static int last_code_thread_ended(long *ended)
{
    bool by_code[SCHED_MAX_THREADS] = { false };
    int last = -1;
    for (long i = 0; i < sched.nsteps; i++) {
        const struct sched_step *step = &sched.steps[i];
        if (step->op == OP_CREATE && step->other >= 0 && step->other < SCHED_MAX_THREADS)
            by_code[step->other] = students_code(step->where) || kit_library(place_of(step->where));
        else if (step->op == OP_EXIT && step->thread >= 0 && step->thread < SCHED_MAX_THREADS &&
                 by_code[step->thread]) {
            last = step->thread;
            *ended = i;
        }
    }
    for (int i = 0; i < sched.nlive; i++)
        if (sched.live[i] < SCHED_MAX_THREADS && by_code[sched.live[i]])
            return -1; /* a thread of the code is still there: it did not end, it was not woken */
    return last;
}

/* Whether a failed check's value is above the one expected: "s.pending is 4, expected 2". */
static bool above_expected(const char *message)
{
    const char *is = strstr(message, " is ");
    long long found, expected;
    return is != NULL && sscanf(is, " is %lld, expected %lld", &found, &expected) == 2 && found > expected;
}

/* A failed check of a count that is too high, on a scheduled test, whose
 * last write was a raise by a call that has returned, the count one the
 * code lowers elsewhere (a gauge: tasks on their way, waiters): "why: the
 * check read `pending`, last raised by `mw->pending++;` at mw_core.c:466
 * in admit ... and lowered by no thread since: after it, that call ran
 * mw_core.c:484, ... and returned" - the way out of the call that raised
 * it, where what it counted did not come to be (a refusal, a time-out) and
 * the raise was not undone. */
static void explain_left_raised(bool scheduled)
{
    char field[64], code[100];
    struct sched_change change;
    if (!scheduled || told_already() || sched.failer < 0 || !checked_field(sched.message, field, sizeof field) ||
        !above_expected(sched.message) || !checked_write(field, &change))
        return;
    code_at(change.where, code, sizeof code);
    void *after[CALL_AFTER_PLACES];
    int n = sched_changes_call_after(&change, after, CALL_AFTER_PLACES);
    if (!raises(code) || n == 0 || !folder_lowers(place_of(change.where), field))
        return;
    want_callers(&change);
    for (int i = 0; i < n; i++)
        want_place(after[i]);
    resolve_places();
    char why[1600];
    kit_text_t x = { why, sizeof why, 0 };
    kit_text_put(&x, "why: the check read `%s`, last raised by ", field);
    name_write(&x, &change);
    kit_text_put(&x, ", and lowered by no thread since: after the raise, that call ran ");
    if (!put_last_student_lines(&x, after, n, STRANDED_LINES))
        return;
    kit_text_put(&x, " and returned. A call that raises a count must lower it again on each way out where what it "
                     "counted does not come to be (a refusal, a time-out, a cancel)");
    insert_why(why, scheduled);
}

/* A task accepted that never ran, or still queued, once every thread the
 * code made has ended (a scenario's check once the calls are quiet): no
 * thread of the code is left to run it. "why: the last of the code's own
 * threads to end was idle-2 (step 57), and the lines it ran last were
 * tpool.c:146, tpool.c:151 in retire ...": the way out that thread took is
 * where the code decided that nothing was left to do. Enough lines to reach
 * back past its way out (a log line, the unlock, its callers' returns) to
 * the decision. */
static void explain_stranded(bool scheduled)
{
    if (told_already() || (!strstr(sched.message, "never ran") && !strstr(sched.message, "no worker left")))
        return;
    nplaces = 0;
    for (long i = 0; i < sched.nsteps; i++)
        if (sched.steps[i].op == OP_CREATE)
            want_place(sched.steps[i].where);
    resolve_places();
    long ended = -1;
    int last = last_code_thread_ended(&ended);
    void *places[SCHED_RECENT_PLACES];
    int n = last >= 0 ? sched_changes_recent(last, places) : 0;
    if (n == 0)
        return;
    for (int i = 0; i < n; i++)
        want_place(places[i]);
    resolve_places();
    char why[1400];
    kit_text_t x = { why, sizeof why, 0 };
    kit_text_put(&x, "why: the last of the code's own threads to end was %s (step %ld), and the lines it ran last "
                 "were ", sched.threads[last]->name, ended + 1);
    if (!put_last_student_lines(&x, places, n, STRANDED_LINES))
        return;
    kit_text_put(&x, ": the way out it took left that task with no thread to run it - the test that let it end there "
                     "must see the task still to come");
    insert_why(why, scheduled);
}

void sched_report(const char *test, const char *strategy, long schedule)
{
    sched_explain_deadlock();
    bool scheduled = schedule < 0; /* an ordinary test on its one schedule */
    name_objects(first_named());
    rename_in_message();
    explain_hang(scheduled);
    explain_stall(scheduled);
    explain_unlooked(scheduled);
    explain_futile(scheduled);
    explain_split(scheduled);
    explain_early_count(scheduled); /* a count made before a wait names the count and the wait, not the count alone */
    explain_left_raised(scheduled);
    explain_check(scheduled); /* a lost wake-up's story, when there is one, explains a wrong value better */
    explain_returned(scheduled);
    explain_left_by_timeout(scheduled);
    explain_below_zero(scheduled);
    explain_stranded(scheduled);
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
    name_objects(first_named());
    rename_in_message();
    fprintf(stderr, "[  ERROR   ] --- %s\n", sched.message);
    sched_print_stacks(sched.message);
    kit_note_stacks_dumped();
    fprintf(stderr, "[  FAILED  ] the test stopped here, on its schedule\n");
    kit_verdict_stopped();
    fflush(stdout);
    fflush(stderr);
    _exit(1);
}
