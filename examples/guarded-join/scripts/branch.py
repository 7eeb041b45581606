#!/usr/bin/env python3
"""One branch: turns the router's text into a ticket of its kind."""
import json, sys

request = json.load(sys.stdin)
branch = request["parameters"]["branch"]
text = request["dependencies"]["router"]["text"]
print(json.dumps({"success": True, "data": {"ticket": f"{branch}: {text}"}}))
