import json, sys
json.load(sys.stdin)
print(json.dumps({"runtime": "python-by-extension"}))
