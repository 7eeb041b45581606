#!/bin/sh
echo draft
