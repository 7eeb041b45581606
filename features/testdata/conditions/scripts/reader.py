"""Report the producer's shell-looking text as it arrived, and whether
anything ran it (it would have created the file "pwned" here)."""
import json
import os
import sys

req = json.load(sys.stdin)
json.dump({
    "received": req["dependencies"]["producer"]["shell"],
    "pwned": os.path.exists("pwned"),
}, sys.stdout)
