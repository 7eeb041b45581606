#!/usr/bin/env python3
"""Answers its stdin, as text and re-encoded with llm-orc's spacing, and INPUT_TEXT."""
import json
import os
import sys

raw = sys.stdin.read()
print(json.dumps({"stdin": json.dumps(json.loads(raw)), "input_text": os.environ.get("INPUT_TEXT")}))
