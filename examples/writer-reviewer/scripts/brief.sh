#!/usr/bin/env bash
# The brief the writer works from: what a good announcement must mention.
cat <<'JSON'
{"must_mention": ["release date", "install", "changelog"], "max_words": 120}
JSON
