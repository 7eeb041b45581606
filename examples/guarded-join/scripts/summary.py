#!/usr/bin/env python3
"""The join: runs with whichever branch ran; a skipped branch is null."""
import json, sys

deps = json.load(sys.stdin)["dependencies"]
ran = [deps[name]["ticket"] for name in ("bugfix", "feature") if deps.get(name) is not None]
skipped = [name for name in ("bugfix", "feature") if deps.get(name) is None]
print(json.dumps({"success": True, "data": {"tickets": ran, "skipped": skipped}}))
