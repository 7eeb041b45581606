#!/usr/bin/env python3
"""Stands for one of llm-orc's built-in primitives."""
import json
import sys

data = json.load(sys.stdin)
text = data.get("input", data.get("input_data", ""))
print(json.dumps({"success": True, "data": text.upper()}))
