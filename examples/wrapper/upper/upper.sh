#!/bin/sh
# An ordinary program, nothing BOINC in it: standard input upper-cased to
# standard output, then a line with its arguments.
tr '[:lower:]' '[:upper:]'
echo "arguments: $*"
