#!/usr/bin/env python3
"""A tiny MCP server on stdio: one JSON-RPC message a line, in and out.

It answers initialize, ping, tools/list and tools/call, with two tools over
the glossary in $GLOSSARY_FILE: list_terms and define. Any MCP server works
the same way in mcp_servers (npx, uvx, a binary...); this one needs only
python3, so that the example runs offline.
"""
import json
import os
import sys

with open(os.environ["GLOSSARY_FILE"]) as f:
    GLOSSARY = json.load(f)

TOOLS = [
    {"name": "list_terms", "description": "The terms the glossary defines.",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "define", "description": "The glossary's definition of one term.",
     "inputSchema": {"type": "object", "required": ["term"], "additionalProperties": False,
                     "properties": {"term": {"type": "string", "description": "a term, e.g. quorum"}}}},
]


def call(name, args):
    """Returns (text, is_error)."""
    if name == "list_terms":
        return ", ".join(sorted(GLOSSARY)), False
    term = args.get("term", "").strip().lower()
    if term not in GLOSSARY:
        return f"no entry for {term!r}; known terms: {', '.join(sorted(GLOSSARY))}", True
    return GLOSSARY[term], False


def answer(msg):
    method, params = msg.get("method"), msg.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "glossary", "version": "1"}}
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        text, is_error = call(params.get("name"), params.get("arguments") or {})
        return {"content": [{"type": "text", "text": text}], "isError": is_error}
    raise LookupError(method)


for line in sys.stdin:
    if not line.strip():
        continue
    msg = json.loads(line)
    if "id" not in msg:  # a notification (initialized, cancelled): no answer
        continue
    try:
        reply = {"jsonrpc": "2.0", "id": msg["id"], "result": answer(msg)}
    except LookupError as e:
        reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": f"method not found: {e}"}}
    print(json.dumps(reply), flush=True)
