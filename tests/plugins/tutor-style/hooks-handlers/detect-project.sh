#!/bin/bash
# Works out what kind of project this is and leaves it for later commands in $CLAUDE_ENV_FILE.
set -euo pipefail
cd "$CLAUDE_PROJECT_DIR" || exit 1
echo "Looking at the project..."
if [ -f "pyproject.toml" ]; then
  echo "export STACK_KIND=python" >> "$CLAUDE_ENV_FILE"
else
  echo "export STACK_KIND=unknown" >> "$CLAUDE_ENV_FILE"
fi
if [ -d "tests" ]; then
  echo "export STACK_HAS_TESTS='yes, in tests/'" >> "$CLAUDE_ENV_FILE"
fi
exit 0
