#!/bin/sh
# Creates $1, then waits for $2 (made by a twin running at the same time) before answering $3.
# Run one after the other, both would wait out their timeout.
cat > /dev/null
touch "$1"
i=0
while [ ! -e "$2" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -e "$2" ] || exit 1
printf '%s\n' "$3"
