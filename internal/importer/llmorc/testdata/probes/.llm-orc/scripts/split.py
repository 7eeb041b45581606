#!/usr/bin/env python3
import json
import sys

data = json.load(sys.stdin)
print(json.dumps({"items": data["input"].split(". "), "route": "child"}))
