#!/usr/bin/env python3
"""Drafts a release note from the run's input."""
import json, sys

request = json.load(sys.stdin)
title = request["input"].strip() or "Untitled"
print(json.dumps({"title": title, "body": f"{title}. Upgrade with go install."}))
