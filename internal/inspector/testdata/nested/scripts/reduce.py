#!/usr/bin/env python3
"""Merges the summaries of the chunks, in order; a chunk whose summary failed is null."""
import json
import sys

req = json.load(sys.stdin)
summaries = req["dependencies"]["summarize"]
lines = [f"{i + 1}. {s}" if s is not None else f"{i + 1}. (no summary: it failed)" for i, s in enumerate(summaries)]
missing = sum(1 for s in summaries if s is None)
json.dump({"report": "\n".join(lines), "parts": len(summaries), "missing": missing}, sys.stdout)
