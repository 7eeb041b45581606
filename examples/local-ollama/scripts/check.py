#!/usr/bin/env python3
"""Check the assistant's answer against the stock data."""
import json
import os
import sys

request = json.load(sys.stdin)
with open(os.path.join(os.path.dirname(__file__), "..", "tools", "stock.json")) as f:
    blue = json.load(f)["blue widget"]
best = max(blue, key=blue.get)
answer = request["dependencies"]["inventory_assistant"]
if not isinstance(answer, dict):
    answer = {}
ok = answer.get("warehouse") == best and answer.get("count") == blue[best]
result = {"ok": ok}
if not ok:
    result["feedback"] = (f"Wrong: you said {answer.get('warehouse')!r} with {answer.get('count')!r}. "
                          "Call stock_level for every warehouse and compare the counts.")
json.dump(result, sys.stdout)
