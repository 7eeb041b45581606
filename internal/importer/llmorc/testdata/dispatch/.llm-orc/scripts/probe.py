#!/usr/bin/env python3
"""A probe: answers the stdin it was given."""
import sys

print(sys.stdin.read())
