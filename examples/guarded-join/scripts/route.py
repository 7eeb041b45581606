#!/usr/bin/env python3
"""Routes the input: "bug: ..." to the bug branch, "feature: ..." to the feature branch."""
import json, sys

text = json.load(sys.stdin)["input"].strip()
kind, _, rest = text.partition(":")
route = kind.strip().lower() if kind.strip().lower() in ("bug", "feature") else "none"
print(json.dumps({"success": True, "data": {"route": route, "text": rest.strip() or text}}))
