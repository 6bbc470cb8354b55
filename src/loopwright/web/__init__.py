"""`loopwright serve`: a local web view of the stores — sessions, schedules, cost — rendered on the
server, escaped byte for byte, with a live transcript over server-sent events. Layer 5."""
