"""Whether a tool call may run: permission rules and modes, the pure decision the gate asks for,
auto mode's pure parts, and (in `bash/`) the reader of shell lines those decisions rest on. Pure."""
