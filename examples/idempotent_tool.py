"""A tool with a side effect that must happen once: it records its idempotency key with the
effect (docs/architecture.md). The ledger is a SQLite file; its calls run off the event loop."""

import asyncio
import dataclasses
import sqlite3

from loopwright import Agent, ToolContext, tool


@dataclasses.dataclass
class Sent:
    number: int


class Ledger:
    """Invoices sent, each with the key of the call that sent it, in one SQLite table."""

    def __init__(self, path: str) -> None:
        self.path = path
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE IF NOT EXISTS invoices (number INTEGER PRIMARY KEY, "
                       "key TEXT UNIQUE, customer TEXT, amount INTEGER)")

    async def find(self, key: str) -> Sent | None:
        return await asyncio.to_thread(self._find, key)

    async def send(self, customer: str, amount: int, *, key: str) -> int:
        return await asyncio.to_thread(self._send, customer, amount, key)

    def keys(self) -> list[str]:
        with sqlite3.connect(self.path) as db:
            return [key for (key,) in db.execute("SELECT key FROM invoices")]

    def _find(self, key: str) -> Sent | None:
        with sqlite3.connect(self.path) as db:
            row = db.execute("SELECT number FROM invoices WHERE key = ?", (key,)).fetchone()
        return Sent(row[0]) if row else None

    def _send(self, customer: str, amount: int, key: str) -> int:
        with sqlite3.connect(self.path) as db:  # the effect and its key in one transaction
            cursor = db.execute("INSERT INTO invoices (key, customer, amount) VALUES (?, ?, ?)",
                                (key, customer, amount))
            return cursor.lastrowid or 0


ledger = Ledger("ledger.db")


@tool
async def send_invoice(customer: str, amount: int, ctx: ToolContext) -> str:
    """Send an invoice."""
    done = await ledger.find(ctx.idempotency_key)
    if done is not None:
        return f"already sent: invoice {done.number}"  # the first attempt took effect
    number = await ledger.send(customer, amount, key=ctx.idempotency_key)  # effect + key
    return f"sent invoice {number}"


async def main() -> None:
    agent = Agent("gpt-4o-mini", tools=[send_invoice], store="sessions.db")
    print((await agent.run("Invoice ACME 120 euros.")).output)
    (key,) = ledger.keys()  # what a resumed run's repeated call would be given
    print(await send_invoice("ACME", 120, ToolContext(idempotency_key=key)))


asyncio.run(main())
