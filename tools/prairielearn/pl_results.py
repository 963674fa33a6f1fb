"""Turn the kit's grading report into PrairieLearn's results.json.

Usage: python3 pl_results.py REPORT_JSON GRADE_LOG [WORK_DIR] > results.json

The same report, log and scratch folder as Gradescope's results.py, which
this reads them with (the same words for each rubric line, the student's own
paths). PrairieLearn's format (its external grading): "gradable", "score"
from 0 to 1, "message", "output", and one test per rubric line with "name",
"description", "points", "max_points", "message" (the first line of what went
wrong) and "output". A submission is not gradable - no points awarded or
lost, no attempt counted - only when the grader itself could not finish;
a file that does not compile scores 0. The file stays under PrairieLearn's
1 MB limit: the longest texts are cut, each saying so.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "gradescope")]  # beside it in a course; in the kit, tools/gradescope/
sys.dont_write_bytecode = True
import results as gradescope  # noqa: E402 (after the path above)

LIMIT = 1_000_000  # PrairieLearn's limit on results.json, in bytes
CUT = "\n[... cut: PrairieLearn takes 1 MB of results; the whole log is in your kit: make grade]"


def first_line(test, work_dir):
    """What went wrong, in a line: the first line of the detail that is not
    the rubric sentence or the seed; empty for a test that passed."""
    if test["earned"] == test["points"]:
        return ""
    for line in gradescope.readable(test["detail"] or "", work_dir).split("\n"):
        if line.strip() and not line.startswith(("what it checks: ", "SEED=")):
            return line.strip()
    return "not passed"


def pl_test(test, work_dir):
    return {
        "name": gradescope.test_title(test),
        "description": test["description"],
        "points": test["earned"],
        "max_points": test["points"],
        "message": first_line(test, work_dir),
        "output": gradescope.test_text(test, work_dir),
    }


def within_limit(results):
    """The results, their longest texts cut until the whole is under the limit."""
    texts = [results] + results["tests"]
    while len(json.dumps(results).encode()) > LIMIT:
        longest = max(texts, key=lambda entry: len(entry["output"]))
        keep = max(len(longest["output"]) // 2, 200)
        if keep >= len(longest["output"]):
            break
        longest["output"] = longest["output"][:keep] + CUT
    return results


def main():
    report_path, log_path = sys.argv[1], sys.argv[2]
    work_dir = sys.argv[3] if len(sys.argv) > 3 else ""
    with open(log_path, encoding="utf-8", errors="replace") as log:
        output = gradescope.readable(log.read(), work_dir)
    report, output = gradescope.load_report(report_path, output)
    tests = [pl_test(test, work_dir) for test in report["tests"]]
    earned = sum(t["points"] for t in tests)
    most = sum(t["max_points"] for t in tests)
    if not tests:
        results = {"gradable": False, "format_errors": ["The grader could not finish: nothing was scored."],
                   "message": "The grader could not finish: this submission was not graded.", "output": output,
                   "tests": []}
    else:
        message = "%d of %d points." % (earned, most)
        if report.get("integrity"):
            message += (" INTEGRITY: %s scored 0 for an attempt on the grader (admission refused its files, "
                        "or the judge caught its code at what no code needs): see the lines marked INTEGRITY."
                        % ", ".join(report["integrity"]))
        results = {"gradable": True, "score": earned / most if most else 0.0, "message": message,
                   "output": output, "tests": tests}
    json.dump(within_limit(results), sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
