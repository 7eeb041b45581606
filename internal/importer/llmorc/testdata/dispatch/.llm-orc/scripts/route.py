#!/usr/bin/env python3
import json
import sys

data = json.load(sys.stdin)
print(json.dumps({"route": "composite" if "deep" in data["input"] else "leaf"}))
