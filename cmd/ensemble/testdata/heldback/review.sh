#!/bin/sh
echo "{\"approved\": false}"
