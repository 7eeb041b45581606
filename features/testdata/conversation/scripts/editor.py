"""Accept the poem when it has the number of lines the brief asks for."""
import json
import sys

req = json.load(sys.stdin)
ctx = req["context"]
poem = req["dependencies"]["writer"]
lines = [l for l in str(poem).splitlines() if l.strip()]
want = ctx["brief"]["lines"]
out = {
    "accepted": len(lines) == want,
    "round": req["execution"],
    "turn": req["turn"],
    "saw": sorted(ctx),
    "previous_round": (ctx.get("editor") or {}).get("round", 0),
}
if len(lines) != want:
    out["note"] = f"{len(lines)} lines; the brief asks for {want}"
json.dump(out, sys.stdout)
