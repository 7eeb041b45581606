"""Count the words of the input; "empty" in the input makes it print 0."""
import json
import sys

req = json.load(sys.stdin)
words = 0 if "empty" in req["input"] else len(req["input"].split())
json.dump({"words": words}, sys.stdout)
