#!/usr/bin/env python3
"""A probe: its output is the stdin it was given."""
import sys

print(sys.stdin.read())
