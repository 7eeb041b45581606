#!/usr/bin/env python3
import json
import sys

data = json.load(sys.stdin)
print(json.dumps({"done": data["input"].endswith("+"), "next": None, "seen": data["input"]}))
