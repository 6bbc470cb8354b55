"""`loopwright routine …`: the command (`command`), one fire of a routine (`fire`) and how one item runs
as a session of its own (`item`)."""
