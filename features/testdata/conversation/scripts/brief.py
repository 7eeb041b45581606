"""The brief: what the poem must be."""
import json
import sys

req = json.load(sys.stdin)
json.dump({"topic": req["input"], "lines": 3}, sys.stdout)
