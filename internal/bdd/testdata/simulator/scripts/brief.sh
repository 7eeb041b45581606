#!/bin/sh
echo "what changed in 1.2"
