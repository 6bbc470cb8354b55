#!/bin/sh
# Starts children that try to outlive the hook, each writing its pid to a file in $1:
# group (same process group), session (own group, same session: job control), setsid (own
# session), double (own session, and its parent gone). Then answers nothing and exits.
cat > /dev/null
dir="$1"
sleep 300 &
echo $! > "$dir/group"
set -m
sh -c 'echo $$ > "$1/session"; exec sleep 300' _ "$dir" &
set +m
setsid sh -c 'echo $$ > "$1/setsid"; exec sleep 300' _ "$dir" > /dev/null 2>&1 < /dev/null &
( setsid sh -c 'echo $$ > "$1/double"; exec sleep 300' _ "$dir" > /dev/null 2>&1 < /dev/null & ) &
while [ ! -s "$dir/group" ] || [ ! -s "$dir/session" ] || [ ! -s "$dir/setsid" ] || [ ! -s "$dir/double" ]; do
  sleep 0.05
done
exit 0
