#!/usr/bin/env python3
"""Extract the requested columns of the sales table (the ensemble's data source)."""
import json
import sys

SALES = [
    {"region": "EMEA", "quarter": "Q3", "revenue": 1_240_000, "growth": 0.12},
    {"region": "AMER", "quarter": "Q3", "revenue": 2_310_000, "growth": 0.04},
    {"region": "APAC", "quarter": "Q3", "revenue": 870_000, "growth": -0.02},
]

request = json.load(sys.stdin)
columns = request["parameters"].get("columns") or list(SALES[0])
rows = [{c: row[c] for c in columns if c in row} for row in SALES]
json.dump({"success": True, "data": {"source": request["input"], "rows": rows}}, sys.stdout)
