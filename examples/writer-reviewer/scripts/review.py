#!/usr/bin/env python3
"""Approve the draft when it mentions everything the brief asks for."""
import json
import sys

request = json.load(sys.stdin)
draft = str(request["dependencies"]["writer"]).lower()
brief = request["context"]["brief"]
missing = [m for m in brief["must_mention"] if m not in draft]
too_long = len(draft.split()) > brief["max_words"]
json.dump({
    "approved": not missing and not too_long,
    "missing": missing,
    "too_long": too_long,
    "round": request["execution"],
}, sys.stdout)
