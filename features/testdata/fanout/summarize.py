"""A fan-out instance: reads its item, index and count from stdin."""
import json
import sys

req = json.load(sys.stdin)
if req["item"] == "bad":
    print("cannot summarize this one", file=sys.stderr)
    sys.exit(3)
json.dump({"summary": req["item"].upper(), "position": f'{req["index"] + 1}/{req["count"]}', "agent": req["agent"]}, sys.stdout)
