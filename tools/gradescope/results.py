"""Turn the kit's grading report into Gradescope's results.json.

Usage: python3 results.py REPORT_JSON GRADE_LOG [WORK_DIR [RUBRIC]] > results.json

REPORT_JSON is build/grade/report.json as `make grade` writes it (it may be
missing when grading could not run); GRADE_LOG is what `make grade` printed,
shown to the student as the submission's overall output. WORK_DIR is the
scratch folder the submission was graded in: its name is cut from the text
(exercises/01-monitor-queue/msgq.c, not /tmp/tmp.X/exercises/...), and the
lines naming log files on the grading machine are left out. RUBRIC is
tests/rubric.tsv: a line whose fifth field is one of Gradescope's
visibilities (after_published: shown once grades are published; also
after_due_date, hidden) becomes a test of that visibility, and the overall
output then leaves out every line of the log that tells its result.

The pieces that read the report (readable, load_report, test_title,
test_text, visibilities, without_hidden) serve PrairieLearn's results too
(tools/prairielearn/results.py).
"""
import json
import re
import sys

VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
# The log's lines that tell a score: a chapter's, the total, a row of "Where you stand".
SCORE_LINE = re.compile(r"^(Chapter score: |Score: |\S+\s+\d+/\d+\s)")


def readable(text, work_dir):
    """The text as the student can use it: their own paths, no log files
    of the grading machine."""
    if work_dir:
        text = text.replace(work_dir.rstrip("/") + "/", "")
    machine_only = ("full log:", "the failing schedule, drawn:")
    return "\n".join(line for line in text.split("\n") if not line.strip().startswith(machine_only))


def load_report(report_path, output):
    """The report, and the output with a sentence added when there is none."""
    try:
        with open(report_path, encoding="utf-8", errors="replace") as f:
            return json.load(f), output
    except (OSError, ValueError) as err:
        return {"tests": []}, output + "\nThe grader could not finish (%s): the score is 0." % err


def test_title(test):
    """A rubric line's name as a platform lists it: "01-monitor-queue: race-free"."""
    if test["name"] == "tsan":
        return "%s: race-free" % test["chapter"]
    return "%s: %s" % (test["chapter"], test["name"])


def test_text(test, work_dir):
    """What a rubric line's result says: what it proves, then what went wrong
    and how to debug it, as the terminal shows them."""
    output = test["description"]
    if test["detail"]:
        detail = readable(test["detail"], work_dir)
        # The grader's detail may start with the rubric sentence already.
        if detail.startswith("what it checks: "):
            output = detail
        else:
            output += "\n\n" + detail
    if test.get("debug"):
        output += "\nDebug it in your kit: " + test["debug"]
    if test.get("feedback"):
        output += "\n\nFeedback (no points): " + test["feedback"]
    if test.get("judged") and test.get("subject_word"):
        output += ("\n\nSelf-reported in part: this line rests on what the code under test's own process says "
                   "of its %s; the judge decided the rest." % test["subject_word"])
    return output


def visibilities(rubric_path):
    """{(chapter, test): visibility} of the rubric's lines that are not visible."""
    found = {}
    if not rubric_path:
        return found
    with open(rubric_path, encoding="utf-8", errors="replace") as rubric:
        for line in rubric:
            fields = line.rstrip("\n").split("\t")
            if line.startswith("#") or len(fields) < 5 or not fields[4].strip():
                continue
            if fields[4].strip() not in VISIBILITIES:
                raise SystemExit("%s: %s %s: the fifth field is a visibility (%s), not %r"
                                 % (rubric_path, fields[0], fields[1], ", ".join(VISIBILITIES), fields[4]))
            if fields[4].strip() != "visible":
                found[(fields[0], fields[1])] = fields[4].strip()
    return found


def without_hidden(log, hidden):
    """The log without what tells the result of a hidden line: the line of
    each such test and the lines under it, and every score (which counts
    them)."""
    names = ["race-free" if name == "tsan" else name for _, name in hidden]
    kept, under = [], None
    for line in log.split("\n"):
        indent = len(line) - len(line.lstrip())
        if under is not None and line.strip() and indent > under:
            continue
        under = None
        if any(name in line for name in names):
            under = indent
        elif not SCORE_LINE.match(line.strip()):
            kept.append(line)
    return "\n".join(kept)


def test_entry(number, test, work_dir, visibility):
    """One rubric line as a Gradescope test."""
    return {
        "name": test_title(test),
        "number": number,
        "score": test["earned"],
        "max_score": test["points"],
        "status": "passed" if test["earned"] == test["points"] else "failed",
        "output": test_text(test, work_dir),
        "visibility": visibility,
    }


def main():
    report_path, log_path = sys.argv[1], sys.argv[2]
    work_dir = sys.argv[3] if len(sys.argv) > 3 else ""
    hidden = visibilities(sys.argv[4] if len(sys.argv) > 4 else "")
    with open(log_path, encoding="utf-8", errors="replace") as log:
        output = readable(log.read(), work_dir)
    report, output = load_report(report_path, output)
    tests = []
    per_chapter = {}
    for test in report["tests"]:
        chapter = test["chapter"][:2]
        per_chapter[chapter] = per_chapter.get(chapter, 0) + 1
        visibility = hidden.get((test["chapter"], test["name"]), "visible")
        tests.append(test_entry("%s.%d" % (chapter, per_chapter[chapter]), test, work_dir, visibility))
    shown_later = [t for t in tests if t["visibility"] != "visible"]
    if shown_later:
        output = ("%d tests of this assignment show their results later (once grades are published, or after "
                  "the due date): the log below leaves them out, and the scores.\n\n" % len(shown_later)
                  + without_hidden(output, hidden))
    if report.get("integrity"):
        output = ("INTEGRITY: %s scored 0 for an attempt on the grader (admission refused its files, or the judge "
                  "caught its code at what no code needs): see the lines marked INTEGRITY.\n\n"
                  % ", ".join(report["integrity"])) + output
    results = {
        "score": sum(t["score"] for t in tests),
        "output": output,
        "visibility": "visible",
        # run_autograder's own output is the whole log: the course staff's, while a line is hidden.
        "stdout_visibility": "hidden" if shown_later else "visible",
        "tests": tests,
    }
    json.dump(results, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
