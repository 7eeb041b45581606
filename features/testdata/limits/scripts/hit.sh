#!/usr/bin/env bash
# Hit the ball back: name, turn and execution.
echo "{\"by\": \"$ENSEMBLE_AGENT\", \"turn\": $ENSEMBLE_TURN, \"execution\": $ENSEMBLE_EXECUTION}"
