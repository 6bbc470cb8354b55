"""Scale-out: goal loops as DBOS workflows taken from queues by `loopwright worker` processes,
each model call and each tool call a recorded step. Imported only when a durable store is named
(`--store URL`); nothing here is on the start-up path of `loopwright -p`."""
