#!/usr/bin/env bash
# Signs the approved greeting off.
python3 -c 'import json,sys; r=json.load(sys.stdin); print("signed: " + r["context"]["greeter"]["greeting"])'
