#!/usr/bin/env python3
"""Print the facts the summary is written from.

The request on stdin is a JSON object: the run's input, the outputs of the
agents this one depends on, and more. Print one JSON value on stdout; write
logs to stderr.
"""
import json
import sys

request = json.load(sys.stdin)
print("gathering facts for:", request["input"], file=sys.stderr)
json.dump({"tickets": 3, "solved": 2, "open": ["billing"]}, sys.stdout)
