#!/usr/bin/env python3
"""Reads a child ensemble's deliverable, as llm-orc scripts do."""
import json
import sys

data = json.load(sys.stdin)
response = json.loads(data["dependencies"]["summary"]["response"])
deliverable = response.get("deliverable", response)
if isinstance(deliverable, str):
    deliverable = json.loads(deliverable)
print(json.dumps({"digest": deliverable["summary"][:4]}))
