#!/usr/bin/env python3
"""A script agent in Python: one JSON object on stdin, one JSON value on stdout."""
import json, os, sys

request = json.load(sys.stdin)  # agent, input, parameters, dependencies, context, turn, execution, request_parameters
print(f"{os.environ['ENSEMBLE_AGENT']}: turn {os.environ['ENSEMBLE_TURN']}", file=sys.stderr)  # logs go to stderr
name = request["input"].strip()
if not name:
    print(json.dumps({"success": False, "error": "nobody to greet: give an input"}))
else:
    print(json.dumps({"success": True, "data": {"greeting": f"Hello, {name}{request['parameters']['mark']}"}}))
