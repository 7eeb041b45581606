#!/usr/bin/env python3
"""Splits the run's input into chunks: one per paragraph, long ones cut at sentence ends."""
import json
import re
import sys

req = json.load(sys.stdin)
limit = int(req["parameters"].get("max_chars", 400))
chunks = []
for para in re.split(r"\n\s*\n", req["input"]):
    para = " ".join(para.split())
    if not para:
        continue
    current = ""
    for sentence in re.split(r"(?<=[.!?])\s+", para):
        if current and len(current) + 1 + len(sentence) > limit:
            chunks.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}".strip()
    if current:
        chunks.append(current)
json.dump({"chunks": chunks, "count": len(chunks)}, sys.stdout)
