#!/usr/bin/env python3
"""Formats the explainer's answer as one Markdown line."""
import json
import sys

answer = json.load(sys.stdin)["dependencies"]["explainer"]
print(json.dumps({"success": True, "data": f"**{answer['term']}**: {answer['definition']}"}))
