"""The composition root: a run described as data (`RunSpec`) and composed into an `Agent`, a
`Session` and a `Run` (`build`). The CLI parses its flags into a `RunSpec`; a durable job stores
one as JSON, and a worker runs it without importing the CLI."""
