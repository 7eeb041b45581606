#!/usr/bin/env python3
"""Named by its bare name: llm-orc finds it in .llm-orc/scripts."""
import json
import sys

data = json.load(sys.stdin)
print(json.dumps({"checked": data["dependencies"]["again"]["response"]}))
