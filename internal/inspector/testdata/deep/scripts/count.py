#!/usr/bin/env python3
"""Done at the second round: the first's feedback is the second's input."""
import json
import sys

req = json.load(sys.stdin)
json.dump({"done": req["input"] == "again", "feedback": "again", "seen": req["input"]}, sys.stdout)
