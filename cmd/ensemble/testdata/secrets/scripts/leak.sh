#!/bin/sh
# The key is written here as a script could find it anywhere.
echo "stderr: sk-cli-secret-0123456789" >&2
echo '{"said": "the key is sk-cli-secret-0123456789", "memory": {"k": "sk-cli-secret-0123456789"}}'
