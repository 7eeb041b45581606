#!/usr/bin/env python3
"""A fan-out instance: llm-orc gives it one chunk."""
import json
import os
import sys

from _words import count_words

data = json.load(sys.stdin)
label = json.loads(os.environ.get("AGENT_PARAMETERS", "{}")).get("label")
print(json.dumps({"success": True, "data": {
    "label": label, "chunk": data["input"], "words": count_words(data["input"]),
    "index": data["chunk_index"], "of": data["total_chunks"]}}))
