"""Context economy: the system prompt, reminders, token accounting, pruning and compaction."""
