"""Subagents: a sub-task handed to an agent loop of its own, with a fresh context (`definitions`
says which agents exist; `tool` is the `Agent` tool that starts one)."""
