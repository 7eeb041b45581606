#!/usr/bin/env python3
"""Tool: the stock of one product in one warehouse.

stdin: the arguments object the model sent (already checked against the
tool's JSON Schema). stdout: the result the model sees. A non-zero exit goes
back to the model as an error result, with stderr.
"""
import json
import os
import sys

args = json.load(sys.stdin)
with open(os.path.join(os.path.dirname(__file__), "stock.json")) as f:
    stock = json.load(f)
product = args["product"].strip().lower()
if product not in stock:
    print(f"unknown product {args['product']!r}; known: {', '.join(sorted(stock))}", file=sys.stderr)
    sys.exit(1)
json.dump({"product": product, "warehouse": args["warehouse"],
           "count": stock[product][args["warehouse"]]}, sys.stdout)
