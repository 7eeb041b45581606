#!/usr/bin/env python3
"""llm-orc's routing-demo classifier: statements are topics, the rest questions."""
import json
import re
import sys

data = json.loads(sys.stdin.read())
text = data["input"]
topics, questions = [], []
for s in re.split(r"(?<=[.!?])\s+", text.strip()):
    (questions if s.endswith("?") else topics).append(s)
print(json.dumps({"topics": topics, "questions": questions}))
