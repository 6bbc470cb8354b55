"""Workflows that orchestrate many agents: user-written workflow scripts (`runtime`, `journal`,
`scripts`), and parallel attempts' judge."""
