#!/bin/sh
echo "{}"
