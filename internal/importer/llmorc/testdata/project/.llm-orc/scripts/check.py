#!/usr/bin/env python3
import json
import sys

data = json.load(sys.stdin)
n = data["input"].count("+")
print(json.dumps({"done": n >= 1, "next": data["input"] + "+"}))
