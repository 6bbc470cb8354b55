"""The Agent SDK's side of the command line: its flags (`flags`), stream-json input with the
control channel (`mode`, `channel`, `requests`), what goes to stdout (`emit`) and context usage
(`usage`)."""
