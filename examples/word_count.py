"""The README's library snippet, as it stands there."""

from loopwright import Agent, tool


@tool
def word_count(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())


agent = Agent("gpt-4o-mini", tools=[word_count])  # or "anthropic:claude-sonnet-4-5", …
print(agent.chat("How many words are in 'the quick brown fox'?"))
