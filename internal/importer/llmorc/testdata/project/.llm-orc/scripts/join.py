#!/usr/bin/env python3
"""Runs after a guarded agent that was skipped: it reads the other's response."""
import json
import sys

data = json.load(sys.stdin)
report = json.loads(data["dependencies"]["report"]["response"])
print(json.dumps({"words": report["words"], "dependencies": sorted(data["dependencies"])}))
