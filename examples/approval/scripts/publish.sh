#!/usr/bin/env bash
# Publishes the approved draft: here, prints where it would go.
set -euo pipefail
title=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["context"]["writer"]["title"])')
echo "published: $title"
