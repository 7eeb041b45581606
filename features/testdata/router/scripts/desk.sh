#!/usr/bin/env bash
# A desk answers: it says who it is and which desk handed it the ticket.
python3 -c '
import json, os, sys
req = json.load(sys.stdin)
print(json.dumps({"desk": os.environ["ENSEMBLE_AGENT"], "from": sorted(req["dependencies"])}))
'
