#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
json.dump({"agent": req["agent"], "input": req["input"]}, sys.stdout)
