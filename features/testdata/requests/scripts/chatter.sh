#!/usr/bin/env bash
# Requests the worker, but chatter has no triggers_conversation: ignored.
echo '{"agent_requests": [{"target_agent_name": "worker", "parameters": {"task": "chatter", "from_chatter": true}}]}'
