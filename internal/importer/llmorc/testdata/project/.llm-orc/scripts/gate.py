#!/usr/bin/env python3
"""Reads its dependency's response string, as llm-orc scripts do."""
import json
import sys

data = json.load(sys.stdin)
classified = json.loads(data["dependencies"]["classifier"]["response"])
print(json.dumps({"ok": len(classified["topics"]) > 0, "route": "summarize"}))
