"""Add one to the latest value in the context (or start from parameters)."""
import json
import os
import sys

req = json.load(sys.stdin)
ctx = req["context"]
latest = max((v for v in ctx.values() if isinstance(v, dict)), key=lambda v: v["value"], default=None)
value = latest["value"] + 1 if latest else req["parameters"]["start"]
json.dump({
    "value": value,
    "by": os.environ["ENSEMBLE_AGENT"],
    "turn": int(os.environ["ENSEMBLE_TURN"]),
    "execution": int(os.environ["ENSEMBLE_EXECUTION"]),
}, sys.stdout)
