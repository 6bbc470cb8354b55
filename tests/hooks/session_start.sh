#!/bin/sh
# SessionStart: logs its input to $1; plain stdout becomes context for the model.
cat >> "$1"
echo >> "$1"
echo "Project notes from a SessionStart hook: the build command is make check."
