"""The results a class's grading leaves in build/grade-all, as tools/grade-all
writes them, read the one way tools/gradebook, tools/class-report and
tools/similarity read them.

OUT/class: each student's report folder and submission folder's name,
NUL-separated, in the class's order; OUT/chapters: the chapters graded; per
student, OUT/<report>/submission (the name), graded (once the grade is over)
and scores.tsv (chapter, earned, max, ok or refused).
"""
import os

TEXT = {"encoding": "utf-8", "errors": "surrogateescape"}  # a folder's name is bytes, kept as they are


def csv_field(text):
    """A text field a spreadsheet shows as text: quoted, its quotes doubled,
    and a leading = + - @ (or a tab or carriage return, which spreadsheets
    also read as the start of a formula) made text by a leading apostrophe."""
    text = text.replace('"', '""')
    if text[:1] in ("=", "+", "-", "@", "\t", "\r"):
        text = "'" + text
    return '"%s"' % text


def read_class(out):
    """[(report folder, submission folder's name)] in the class's order."""
    try:
        fields = (out / "class").read_bytes().split(b"\0")
    except OSError:
        raise SystemExit("gradebook: no class was graded in %s (make grade-all SUBMISSIONS=dir)" % out)
    fields = [field.decode(**TEXT) for field in fields[:-1]]
    return list(zip(fields[0::2], fields[1::2]))


def read_scores(folder, name):
    """{chapter: (earned, max, refused)} of a student's grade, or None when
    the student was not graded (not yet, or the folder holds another's)."""
    try:
        if (folder / "submission").read_text(**TEXT) != name or not (folder / "graded").exists():
            return None
    except OSError:
        return None
    scores = {}
    try:
        lines = (folder / "scores.tsv").read_text(**TEXT).splitlines()
    except OSError:
        return scores  # the grade left no scores (its grade.log says why): zero
    for line in lines:
        fields = line.split("\t")
        if len(fields) == 4 and fields[1].isdigit() and fields[2].isdigit():
            scores[fields[0]] = (int(fields[1]), int(fields[2]), fields[3] == "refused")
    return scores


def write(path, text):
    """A file written whole, then put in place."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, **TEXT)
    os.replace(partial, path)


def printable(name):
    """A name as a terminal or a page may show it: each unprintable
    character (a byte that is not UTF-8 among them) as '?'."""
    return "".join(c if c.isprintable() else "?" for c in name)
