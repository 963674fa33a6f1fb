/**
 * @file kit_sched_report.c
 * @brief Telling a failed schedule: the replay token, what every thread was
 *        waiting for, and the last steps of the interleaving, numbered, each
 *        with the file and line that made it (from addr2line).
 */
#define _GNU_SOURCE
#include "kit_sched_internal.h"

#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void sched_token(char *out, size_t size);
int sched_draw_svg(const char *path, const char *title, const char *why, long first);

#define SHOWN_STEPS 30
#define MAX_PLACES (SHOWN_STEPS + SCHED_MAX_THREADS)

static const char *const op_names[] = {
    [OP_START] = "starts",       [OP_LOCK] = "locks",      [OP_TRYLOCK] = "trylocks", [OP_UNLOCK] = "unlocks",
    [OP_WAIT] = "waits on",      [OP_WAKE] = "wakes from", [OP_SIGNAL] = "signals",   [OP_BROADCAST] = "broadcasts",
    [OP_CREATE] = "creates",     [OP_JOIN] = "joins",      [OP_YIELD] = "yields",     [OP_SLEEP] = "sleeps",
    [OP_AWAIT] = "sees threads asleep",  [OP_EXIT] = "ends",
};

const char *sched_op_name(enum sched_op op)
{
    return op_names[op];
}

/* ---- Source lines ------------------------------------------------------------------ */

struct place {
    void *addr;
    char text[96];
};

static struct place places[MAX_PLACES];
static int nplaces;

static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    *(uintptr_t *)data = (uintptr_t)info->dlpi_addr;
    return 1; /* the first one is the program itself */
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

/* Look every collected address up with one run of addr2line. */
static void resolve_places(void)
{
    char exe[512];
    ssize_t length = readlink("/proc/self/exe", exe, sizeof exe - 1);
    uintptr_t bias = 0;
    dl_iterate_phdr(first_object, &bias);
    if (length <= 0 || nplaces == 0)
        return;
    exe[length] = '\0';
    char command[8192];
    int at = snprintf(command, sizeof command, "addr2line -e '%s'", exe);
    for (int i = 0; i < nplaces && at < (int)sizeof command - 32; i++)
        at += snprintf(command + at, sizeof command - (size_t)at, " %#lx",
                       (unsigned long)((uintptr_t)places[i].addr - bias - 1));
    FILE *pipe = popen(command, "r");
    if (pipe == NULL)
        return;
    char line[1024];
    for (int i = 0; i < nplaces && fgets(line, sizeof line, pipe); i++)
        short_place(line, places[i].text, sizeof places[i].text);
    pclose(pipe);
}

static void want_place(void *addr)
{
    for (int i = 0; i < nplaces; i++)
        if (places[i].addr == addr)
            return;
    if (addr != NULL && nplaces < MAX_PLACES)
        places[nplaces++] = (struct place){ addr, "?" };
}

const char *sched_place_of(void *addr)
{
    for (int i = 0; i < nplaces; i++)
        if (places[i].addr == addr)
            return places[i].text;
    return "";
}

/* ---- The report ---------------------------------------------------------------------- */

static const char *object_name(int obj, char *out, size_t size)
{
    if (obj < 0)
        return "";
    snprintf(out, size, "%c%d", sched.objects[obj].kind, sched.objects[obj].serial);
    return out;
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
    case OP_CREATE:
    case OP_JOIN:
        snprintf(out, size, "%s %s", op_names[step->op], thread);
        break;
    default:
        snprintf(out, size, "%s %s", op_names[step->op], object_name(step->obj, a, sizeof a));
    }
}

void sched_describe_thread(const struct sched_thread *t, char *out, size_t size)
{
    char a[16], b[16];
    switch (t->state) {
    case LOCKING:
        snprintf(out, size, "waits to lock %s (held by %s)", object_name(t->obj, a, sizeof a),
                 sched.objects[t->obj].owner >= 0 ? sched.threads[sched.objects[t->obj].owner]->name : "nobody");
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
        snprintf(out, size, "waits until %d threads are asleep", t->target);
        break;
    case DONE:
        snprintf(out, size, "has ended");
        break;
    default:
        snprintf(out, size, t->id == sched.failer ? "failed the check" : "can run");
    }
}

/* build/tests/03-thread-pool/test_tpool_explore -> 03 */
void sched_chapter_of(char *out, size_t size)
{
    const char *program = program_invocation_name;
    const char *slash = strrchr(program, '/');
    const char *start = slash;
    while (start && start > program && start[-1] != '/')
        start--;
    size_t length = start ? strspn(start, "0123456789") : 0;
    snprintf(out, size, "%.*s", length > 0 ? (int)length : 2, length > 0 ? start : "NN");
}

/* The picture goes next to the test program, or into $KIT_EXPLORE_SVG_DIR
 * (the grader's log folder) named as the grader names the test's log there:
 * <chapter folder>.<test>.svg. */
static void draw(const char *test, long first)
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
        fprintf(stderr, "[ explore  ] Drawn: %s\n", path);
}

void sched_report(const char *test, const char *strategy, long schedule)
{
    static char token[16384];
    sched_token(token, sizeof token);
    long first = sched.nsteps > SHOWN_STEPS ? sched.nsteps - SHOWN_STEPS : 0;
    nplaces = 0;
    for (int i = 0; i < sched.nthreads; i++)
        want_place(sched.threads[i]->where);
    for (long i = first; i < sched.nsteps; i++)
        want_place(sched.steps[i].where);
    resolve_places();
    char line[256];
    fprintf(stderr, "[ explore  ] %s: schedule %ld of %s failed after %ld steps, at virtual time %.3f ms:\n"
                    "[ explore  ]   %s\n",
            test, schedule + 1, strategy, sched.nsteps, (double)sched.now / 1e6, sched.message);
    fprintf(stderr, "[ explore  ] The threads at the end:\n");
    for (int i = 0; i < sched.nthreads; i++) {
        const struct sched_thread *t = sched.threads[i];
        sched_describe_thread(t, line, sizeof line);
        fprintf(stderr, "[ explore  ]   %-14s %-50s %s\n", t->name, line, t->state == DONE ? "" : sched_place_of(t->where));
    }
    fprintf(stderr, "[ explore  ] The last %ld of %ld steps:\n", sched.nsteps - first, sched.nsteps);
    for (long i = first; i < sched.nsteps; i++) {
        const struct sched_step *step = &sched.steps[i];
        sched_describe_step(step, line, sizeof line);
        fprintf(stderr, "[ explore  ] %5ld %-14s %-40s %s\n", i + 1, sched.threads[step->thread]->name, line,
                sched_place_of(step->where));
    }
    draw(test, first);
    char chapter[128];
    sched_chapter_of(chapter, sizeof chapter);
    fprintf(stderr, "[ explore  ] Replay it: make explore CH=%s TEST=%s REPLAY=%s\n", chapter, test, token);
    fprintf(stderr, "[ explore  ]        or: KIT_SCHED=replay:%s %s --run %s\n", token, program_invocation_name,
            test);
}
