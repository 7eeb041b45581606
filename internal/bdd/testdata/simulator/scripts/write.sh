#!/bin/sh
echo "a draft of the release notes"
