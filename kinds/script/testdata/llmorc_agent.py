#!/usr/bin/env python3
"""A script written for llm-orc, unchanged: it reads llm-orc's ScriptAgentInput
(or a fan-out chunk) on stdin and its parameters from AGENT_PARAMETERS."""
import json
import os
import sys

data = json.load(sys.stdin)
params = json.loads(os.environ.get("AGENT_PARAMETERS", "{}"))
if "chunk_index" in data:
    print(json.dumps({"success": True, "data": {
        "agent": data["agent_name"], "chunk": data["input"],
        "index": data["chunk_index"], "total": data["total_chunks"],
        "base": data["base_input"], "label": params.get("label")}}))
    sys.exit(0)
deps = data.get("dependencies", {})
facts = json.loads(deps["facts"]["response"])
print(json.dumps({"success": True, "data": {
    "agent": data["agent_name"], "text": data["input_data"],
    "env_text": os.environ.get("INPUT_TEXT"),
    "region": facts["region"], "note": deps["note"]["response"],
    "status": deps["note"]["status"], "label": params.get("label")}}))
