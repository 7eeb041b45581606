#!/usr/bin/env bash
echo "{\"ok\": \"$ENSEMBLE_AGENT\", \"turn\": $ENSEMBLE_TURN}"
