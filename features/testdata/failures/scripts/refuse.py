"""A clean failure through the script protocol's envelope."""
import json
import sys

json.load(sys.stdin)
json.dump({"success": False, "error": "quota exceeded for today"}, sys.stdout)
