#!/usr/bin/env python3
"""Run the coder's slugify against a few cases; say what failed, for the next round."""
import json
import sys

request = json.load(sys.stdin)
code = str(request["dependencies"]["coder"])
task = request["input"].split("\n\nPrevious round:")[0]
cases = {"Hello World": "hello-world", "  Ensemble  Runs Fast ": "ensemble-runs-fast"}
failures = []
scope = {}
try:
    exec(code, scope)  # the example's code comes from its responses file
    for title, want in cases.items():
        got = scope["slugify"](title)
        if got != want:
            failures.append(f"slugify({title!r}) gave {got!r}, want {want!r}")
except Exception as e:  # noqa: BLE001 - any error is a failed test
    failures.append(f"the code failed: {e}")
json.dump({
    "tests_pass": not failures,
    "failures": failures,
    "review": request["dependencies"]["critic"],
    "feedback": task + "\n\nPrevious round:\n" + "\n".join(failures),
}, sys.stdout)
