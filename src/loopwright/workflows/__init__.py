"""Workflows that orchestrate many agents: parallel attempts and their judge."""
