"""What the project tells the agent: memory files (and, later, skills and commands)."""
