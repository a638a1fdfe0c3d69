"""A review check of your own, in the table at a position of its choosing (docs/settings.md)."""

from loopwright import Agent
from loopwright.review import Check, ReviewView, Verdict, send_back


class CitesAFile(Check):
    name = "cites_a_file"
    position = "after:unread_file"  # or "first", "last", "before:NAME"

    async def review(self, view: ReviewView) -> Verdict | None:
        if "README" not in view.answer:
            return send_back("Name the file your answer comes from.", "no file named")
        return None


agent = Agent("qwen2.5-coder-1.5b", review_checks=[CitesAFile()])
print(agent.chat("Which port does the app use?"))  # sent back once if no file is named
