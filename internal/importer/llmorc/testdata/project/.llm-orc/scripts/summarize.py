#!/usr/bin/env python3
import json
import sys

data = json.load(sys.stdin)
print(json.dumps({"summary": data["input"][:40]}))
