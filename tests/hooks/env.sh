#!/bin/sh
# Writes where it ran and the environment a hook gets to $1.
cat > /dev/null
{
  echo "pwd=$(pwd)"
  echo "CLAUDE_PROJECT_DIR=${CLAUDE_PROJECT_DIR:-}"
  echo "LOOPWRIGHT_PROJECT_DIR=${LOOPWRIGHT_PROJECT_DIR:-}"
  echo "CLAUDE_CODE_SESSION_ID=${CLAUDE_CODE_SESSION_ID:-}"
  echo "FROM_SETTINGS=${FROM_SETTINGS:-}"
} > "$1"
