#!/bin/sh
echo "published"
