#!/usr/bin/env bash
# Publish: here, report what would be published and after how many reviews.
python3 -c '
import json, sys
req = json.load(sys.stdin)
print(json.dumps({"published": True, "review_rounds": req["dependencies"]["reviewer"]["round"]}))
'
