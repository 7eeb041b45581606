#!/bin/sh
echo out
