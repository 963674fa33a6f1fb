"""Turn the kit's grading report into Gradescope's results.json.

Usage: python3 results.py REPORT_JSON GRADE_LOG > results.json

REPORT_JSON is build/grade/report.json as `make grade` writes it (it may be
missing when grading could not run); GRADE_LOG is what `make grade` printed,
shown to the student as the submission's overall output.
"""
import json
import sys


def test_entry(number, test):
    """One rubric line as a Gradescope test."""
    if test["name"] == "tsan":
        name = "%s: race-free under ThreadSanitizer" % test["chapter"]
    else:
        name = "%s: %s" % (test["chapter"], test["name"])
    output = test["description"]
    if test["detail"]:
        output += "\n\n" + test["detail"]
    if test.get("debug"):
        output += "\nDebug it in your kit: " + test["debug"]
    return {
        "name": name,
        "number": number,
        "score": test["earned"],
        "max_score": test["points"],
        "status": "passed" if test["earned"] == test["points"] else "failed",
        "output": output,
        "visibility": "visible",
    }


def main():
    report_path, log_path = sys.argv[1], sys.argv[2]
    with open(log_path, encoding="utf-8", errors="replace") as log:
        output = log.read()
    try:
        with open(report_path, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError) as err:
        report = {"tests": []}
        output += "\nThe grader could not finish (%s): the score is 0." % err
    tests = []
    per_chapter = {}
    for test in report["tests"]:
        chapter = test["chapter"][:2]
        per_chapter[chapter] = per_chapter.get(chapter, 0) + 1
        tests.append(test_entry("%s.%d" % (chapter, per_chapter[chapter]), test))
    results = {
        "score": sum(t["score"] for t in tests),
        "output": output,
        "visibility": "visible",
        "stdout_visibility": "visible",
        "tests": tests,
    }
    json.dump(results, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
