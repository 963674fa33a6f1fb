/**
 * @file admit_stage.c
 * @brief Staging a submission: a private copy of the exercise's files only,
 *        each a regular file of sane size, read without following a link.
 *
 * Everything the grade compiles comes from the stage, never from the
 * submission's folder: a symbolic link there (say msgq.c pointing into a
 * kit's solutions/) is refused, not followed, and so is a file that is not
 * plain, too large, or has a #line directive. Each file is opened relative to
 * its folder with O_NOFOLLOW and checked on the open descriptor, so nothing
 * can be swapped between the check and the copy. A file the submission lacks
 * is the exercise's untouched stub: that chapter scores 0, as it would have.
 */
#define _POSIX_C_SOURCE 200809L
#include "admission.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MAX_FILE = 1 << 20, MAX_ENTRIES = 20000, MAX_DEPTH = 8 };

static bool write_file(const char *path, const char *text, size_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    bool ok = fd >= 0 && fchmod(fd, 0644) == 0 && write(fd, text, size) == (ssize_t)size; /* whatever the umask */
    if (fd >= 0)
        close(fd);
    return ok;
}

/* Copies the open file fd (shown to the student as `shown`) to `to`, or
 * reports why it may not be. */
static void copy_checked(int fd, const char *shown, const char *to)
{
    struct stat info;
    if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
        admit_finding("%s: is not a plain file: submit the file itself\n", shown);
        return;
    }
    if (info.st_size > MAX_FILE) {
        admit_finding("%s: is larger than 1 MB: a submission's file is source code\n", shown);
        return;
    }
    char *text = malloc(MAX_FILE + 1);
    ssize_t n = text ? read(fd, text, MAX_FILE + 1) : -1;
    int line = n >= 0 ? admit_line_directive(text, (size_t)n) : 0;
    if (n < 0 || n > MAX_FILE)
        admit_finding("%s: could not be read whole\n", shown);
    else if (line > 0)
        admit_finding("%s:%d: has a #line directive: the grader refuses them, since they could pass the student's "
                     "lines off as the system's\n", shown, line);
    else if (!write_file(to, text, (size_t)n))
        admit_finding("%s: could not be staged (%s)\n", shown, strerror(errno));
    free(text);
}

/* The kit's stub for a file the submission lacks. */
static void copy_stub(const char *stubs, const char *chapter, const char *name, const char *to)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/%s/%s", stubs, chapter, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char *text = malloc(MAX_FILE);
    ssize_t n = text ? read(fd, text, MAX_FILE) : -1;
    if (n >= 0)
        write_file(to, text, (size_t)n);
    free(text);
    close(fd);
}

/* One file, opened in its folder (dir, a descriptor) without following links. */
static void stage_file(int dir, const char *shown, const char *name, const char *to, bool *found)
{
    int fd = dir >= 0 ? openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) : -1;
    *found = fd >= 0 || (dir >= 0 && errno != ENOENT);
    if (fd < 0 && errno == ELOOP)
        admit_finding("%s: is a symbolic link: submit the file itself\n", shown);
    else if (fd < 0 && *found)
        admit_finding("%s: cannot be opened (%s)\n", shown, strerror(errno));
    if (fd < 0)
        return;
    copy_checked(fd, shown, to);
    close(fd);
}

static void stage_chapter(int from, const char *to, const char *stubs, const struct stage_chapter *chapter)
{
    char path[2048], shown[2048];
    snprintf(path, sizeof path, "%s/%s", to, chapter->name);
    mkdir(path, 0755);
    chmod(path, 0755);
    int dir = from >= 0 ? openat(from, chapter->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
    if (dir < 0 && errno != ENOENT)
        admit_finding("%s/: is not a folder (a symbolic link?): submit the folder itself\n", chapter->name);
    for (int i = 0; i < chapter->file_count; i++) {
        const char *name = chapter->files[i];
        bool found;
        snprintf(shown, sizeof shown, "%s/%s", chapter->name, name);
        snprintf(path, sizeof path, "%s/%s/%s", to, chapter->name, name);
        stage_file(dir, shown, name, path, &found);
        if (!found && from >= 0 && faccessat(from, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
            fprintf(stderr, "kit-admit: %s is not in the submission, but %s lies at its top: a chapter's files go "
                            "in the chapter's folder, as in exercises/ - graded as the untouched stub\n", shown, name);
        if (!found && stubs)
            copy_stub(stubs, chapter->name, name, path);
    }
    if (dir >= 0)
        close(dir);
}

/* ---- loose files: anywhere in the submission --------------------------------- */

/* The chapter that has an exercise file of this name, or NULL. */
static const struct stage_chapter *chapter_of(const char *name, const struct stage_chapter *chapters, int count)
{
    for (int c = 0; c < count; c++)
        for (int f = 0; f < chapters[c].file_count; f++)
            if (strcmp(chapters[c].files[f], name) == 0)
                return &chapters[c];
    return NULL;
}

struct walk {
    const char *to;
    const struct stage_chapter *chapters;
    int count, entries, staged;
};

/* Stages every file with an exercise's name below dir, at any depth; a
 * later one of the same name replaces an earlier one only from a folder
 * named after its chapter. */
static void walk(int dir, const char *shown, int depth, struct walk *w)
{
    DIR *folder = fdopendir(dir);
    for (struct dirent *entry; folder && (entry = readdir(folder)) && w->entries++ < MAX_ENTRIES;) {
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
            continue;
        char inner[4096], to[2048];
        snprintf(inner, sizeof inner, "%s/%s", shown, entry->d_name);
        int sub = openat(dirfd(folder), entry->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0 && depth < MAX_DEPTH) {
            walk(sub, inner, depth + 1, w);
            continue;
        }
        if (sub >= 0)
            close(sub);
        const struct stage_chapter *chapter = chapter_of(entry->d_name, w->chapters, w->count);
        bool in_its_folder = chapter && strstr(inner, chapter->name) != NULL;
        snprintf(to, sizeof to, "%s/%s/%s", w->to, chapter ? chapter->name : "", entry->d_name);
        if (chapter && (in_its_folder || access(to, F_OK) != 0)) {
            bool found;
            admit_set_chapter(chapter->name);
            stage_file(dirfd(folder), inner + (inner[0] == '/'), entry->d_name, to, &found);
            if (access(to, F_OK) == 0)
                printf("graded: %s (as %s/%s)\n", inner + (inner[0] == '/'), chapter->name, entry->d_name);
            w->staged++;
        }
    }
    if (folder)
        closedir(folder);
}

static void stage_loose(int from, const char *to, const struct stage_chapter *chapters, int count)
{
    char path[2048];
    for (int c = 0; c < count; c++) {
        snprintf(path, sizeof path, "%s/%s", to, chapters[c].name);
        mkdir(path, 0755);
        chmod(path, 0755);
    }
    struct walk w = { to, chapters, count, 0, 0 };
    if (from >= 0)
        walk(dup(from), "", 0, &w);
    if (w.staged == 0)
        printf("No exercise file was found in the submission: upload the files you wrote in exercises/ "
               "(for example msgq.c). The untouched exercises are graded.\n");
}

/* The folder whose NN-name/ folders are staged: `from` itself (the
 * grader's choice, so it may be a link), or in a whole kit its exercises/,
 * which must be a real folder. */
static int open_source(const char *from, bool kit_tree, const struct stage_chapter *chapters, int count)
{
    int root = open(from, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root < 0 || !kit_tree)
        return root;
    int exercises = openat(root, "exercises", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (exercises < 0 && errno == ENOENT)
        return root;
    close(root);
    for (int c = 0; exercises < 0 && c < count; c++) {
        admit_set_chapter(chapters[c].name);
        admit_finding("exercises/: is not a folder (a symbolic link?): submit the folder itself\n");
    }
    return exercises;
}

int admit_stage(const char *from, bool kit_tree, const char *to, const char *stubs,
               const struct stage_chapter *chapters, int count, bool loose)
{
    mkdir(to, 0755);
    chmod(to, 0755); /* the sandbox uid reads the stage, whatever the umask */
    int source = open_source(from, kit_tree, chapters, count);
    if (loose)
        stage_loose(source, to, chapters, count);
    for (int c = 0; c < count; c++) {
        admit_set_chapter(chapters[c].name);
        if (!loose) {
            stage_chapter(source, to, stubs, &chapters[c]);
            continue;
        }
        for (int f = 0; f < chapters[c].file_count; f++) { /* what no folder held: the stub */
            char path[2048];
            snprintf(path, sizeof path, "%s/%s/%s", to, chapters[c].name, chapters[c].files[f]);
            if (access(path, F_OK) != 0 && stubs)
                copy_stub(stubs, chapters[c].name, chapters[c].files[f], path);
        }
    }
    if (source >= 0)
        close(source);
    return admit_finding_count() > 0;
}
