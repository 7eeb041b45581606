#!/usr/bin/env bash
# Answer the other side, forever: count the volleys.
exec python3 -c '
import json, os, sys
req = json.load(sys.stdin)
print(json.dumps({"by": os.environ["ENSEMBLE_AGENT"], "volley": int(os.environ["ENSEMBLE_TURN"])}))
'
