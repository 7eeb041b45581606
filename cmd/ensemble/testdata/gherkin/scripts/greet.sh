#!/usr/bin/env bash
# Greets the input.
python3 -c 'import json,sys; r=json.load(sys.stdin); print(json.dumps({"greeting": "hello " + r["input"]}))'
