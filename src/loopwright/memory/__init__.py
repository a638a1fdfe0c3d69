"""Memory that learns (issue 19): durable facts and preferences extracted at the end of a run
(`learning`), recall by embeddings (`embeddings`), and the background work after the answer
(`background`). The memory files themselves are `loopwright.builtin.memory`."""
