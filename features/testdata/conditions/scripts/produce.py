"""Output text crafted to break out of an expression if it were pasted in one."""
import json
import sys

json.load(sys.stdin)
json.dump({"text": 'approve" || true || "', "shell": "$(touch pwned) `touch pwned`"}, sys.stdout)
