#!/usr/bin/env python3
"""The products and warehouses the assistant can ask the stock_level tool about."""
import json
import os
import sys

with open(os.path.join(os.path.dirname(__file__), "..", "tools", "stock.json")) as f:
    stock = json.load(f)
json.dump({"products": sorted(stock), "warehouses": ["north", "south", "east"]}, sys.stdout)
