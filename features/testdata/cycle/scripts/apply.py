"""Apply the plan's steps to the collected items."""
import json
import sys

req = json.load(sys.stdin)
items = list(req["context"]["collect"]["items"])
for step in req["dependencies"]["plan"]["steps"]:
    if step == "dedupe":
        items = list(dict.fromkeys(items))
    elif step == "sort":
        items = sorted(items)
    else:
        json.dump({"success": False, "error": f"unknown step {step!r}"}, sys.stdout)
        sys.exit(0)
json.dump({"round": req["execution"], "result": items}, sys.stdout)
