"""Route a ticket by its words."""
import json
import sys

text = json.load(sys.stdin)["input"].lower()
if "invoice" in text or "refund" in text:
    category = "billing"
elif "crash" in text or "error" in text:
    category = "technical"
else:
    category = "other"
json.dump({"category": category, "ticket": text}, sys.stdout)
