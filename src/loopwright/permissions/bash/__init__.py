"""The shell analyser behind the Bash permission decision: bash syntax, the parts of a line,
options read as each program reads them, what a part reads and writes, and the decision for a
whole line. Pure."""
