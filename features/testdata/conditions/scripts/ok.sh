#!/usr/bin/env bash
echo "\"$ENSEMBLE_AGENT ran\""
