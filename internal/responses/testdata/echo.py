# Echoes its stdin object and selected environment variables as one JSON object.
import json, os, sys

stdin = sys.stdin.read()
req = json.loads(stdin)
names = (req.get("parameters") or {}).get("env_names", [])
print(json.dumps({
    "raw": stdin,
    "stdin": req,
    "cwd": os.getcwd(),
    "env": {n: os.environ.get(n) for n in names},
}))
