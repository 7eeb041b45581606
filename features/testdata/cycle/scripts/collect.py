"""Collect the numbers named in the request."""
import json
import sys

req = json.load(sys.stdin)
items = [int(x) for x in str(req["context"]["request"]).split() if x.isdigit()]
json.dump({"batch": req["execution"], "items": items}, sys.stdout)
