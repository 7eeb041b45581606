"""Extract the requested columns of the sales table."""
import json
import sys

SALES = [
    {"region": "EMEA", "quarter": "Q3", "revenue": 1240000},
    {"region": "AMER", "quarter": "Q3", "revenue": 2310000},
    {"region": "APAC", "quarter": "Q3", "revenue": 870000},
]

req = json.load(sys.stdin)
cols = req["parameters"]["columns"]
rows = [{c: r[c] for c in cols} for r in SALES]
json.dump({"success": True, "data": {"rows": rows, "total": sum(r["revenue"] for r in SALES)}}, sys.stdout)
