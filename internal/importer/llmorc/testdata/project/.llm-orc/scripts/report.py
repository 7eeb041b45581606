#!/usr/bin/env python3
import json
import sys

data = json.load(sys.stdin)
counts = json.loads(data["dependencies"]["per-topic"]["response"])
print(json.dumps({"success": True, "data": {"words": sum(c["words"] for c in counts)}}))
