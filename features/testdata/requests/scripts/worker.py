"""Do the requested task: report the parameters it was given."""
import json
import os
import sys

req = json.load(sys.stdin)
params = req["request_parameters"] or {}
json.dump({
    "by": os.environ["ENSEMBLE_AGENT"],
    "task": params.get("task"),
    "size": params.get("size"),
    "requested": req["request_parameters"] is not None,
    "dependencies": sorted(req["dependencies"]),
}, sys.stdout)
