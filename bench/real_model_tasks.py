"""The dev split of bench/real_model.py: small tool tasks with a checker each.

The split heuristics may be tuned on; bench/real_model_heldout.py is the held-out split, never
used to find fixes.

Every task gets a fresh workspace with its files, a few plain-Python tools bound to that
workspace (the same functions go to loopwright and to the peer framework), and a checker that
looks at the final answer and the workspace — never at the stop reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Checker = Callable[[str, Path], bool]

USERS = {"alice": 7, "bob": 12, "carol": 31}
ORDERS = {7: ["book", "lamp"], 12: ["chair"], 31: []}
PRICES = {"book": 15, "lamp": 32, "chair": 49}
STOCK = {"apples": 42, "pears": 17, "plums": 8}


def make_tools(workspace: Path) -> dict[str, Callable[..., Any]]:
    """Every tool of the suite, bound to `workspace`; each task picks the ones it offers."""

    def inside(path: str) -> Path:
        target = (workspace / path).resolve()
        if workspace.resolve() not in target.parents:
            raise ValueError(f"{path} is outside the workspace")
        return target

    def add(a: int, b: int) -> int:
        """Add two integers and return the sum."""
        return a + b

    def subtract(a: int, b: int) -> int:
        """Subtract b from a and return the difference."""
        return a - b

    def multiply(a: int, b: int) -> int:
        """Multiply two integers and return the product."""
        return a * b

    def read_file(path: str) -> str:
        """Return the text of a file in the workspace."""
        return inside(path).read_text()

    def write_file(path: str, content: str) -> str:
        """Write content to a file in the workspace, replacing what was there."""
        inside(path).write_text(content)
        return f"wrote {len(content)} characters to {path}"

    def replace_in_file(path: str, old: str, new: str) -> str:
        """Replace every occurrence of the text old with new in a workspace file."""
        target = inside(path)
        text = target.read_text()
        if old not in text:
            raise ValueError(f"{old!r} does not occur in {path}")
        target.write_text(text.replace(old, new))
        return f"replaced {text.count(old)} occurrence(s) in {path}"

    def list_files() -> list[str]:
        """List the names of the files in the workspace."""
        return sorted(p.name for p in workspace.iterdir() if p.is_file())

    def count_lines(path: str) -> int:
        """Count the lines of a workspace file."""
        return len(inside(path).read_text().splitlines())

    def count_occurrences(path: str, word: str) -> int:
        """Count how many times a word occurs in a workspace file (case-insensitive)."""
        text = inside(path).read_text().lower()
        return len(re.findall(rf"\b{re.escape(word.lower())}\b", text))

    def count_words(text: str) -> int:
        """Count the words in a piece of text."""
        return len(text.split())

    def to_upper(text: str) -> str:
        """Return the text in upper case."""
        return text.upper()

    def reverse_text(text: str) -> str:
        """Return the text reversed, last character first."""
        return text[::-1]

    def celsius_to_fahrenheit(celsius: float) -> float:
        """Convert a temperature from degrees Celsius to degrees Fahrenheit."""
        return celsius * 9 / 5 + 32

    def get_stock(item: str) -> int:
        """Return how many units of an item are in stock."""
        if item.lower() not in STOCK:
            raise KeyError(f"no such item: {item}; known items: {', '.join(STOCK)}")
        return STOCK[item.lower()]

    def lookup_user(name: str) -> int:
        """Return the numeric id of a user, given the user's name."""
        if name.lower() not in USERS:
            raise KeyError(f"no such user: {name}")
        return USERS[name.lower()]

    def get_orders(user_id: int) -> list[str]:
        """Return the items ordered by the user with this numeric id."""
        if user_id not in ORDERS:
            raise KeyError(f"no user with id {user_id}")
        return ORDERS[user_id]

    def get_price(item: str) -> int:
        """Return the price of an item in euros."""
        if item.lower() not in PRICES:
            raise KeyError(f"no price for {item}")
        return PRICES[item.lower()]

    def get_weather(city: str) -> str:
        """Return the current weather for a city."""
        raise ConnectionError("weather service unavailable (HTTP 503)")

    return {f.__name__: f for f in (
        add, subtract, multiply, read_file, write_file, replace_in_file, list_files,
        count_lines, count_occurrences, count_words, to_upper, reverse_text,
        celsius_to_fahrenheit, get_stock, lookup_user, get_orders, get_price, get_weather)}


@dataclass(frozen=True)
class Task:
    name: str
    kind: str
    prompt: str
    tools: tuple[str, ...]
    check: Checker
    files: dict[str, str] = field(default_factory=dict)
    toolbox: Callable[[Path], dict[str, Callable[..., Any]]] = make_tools
    prepare: Callable[[Path], None] | None = None  # for what is not a text file (a database)
    split: str = "dev"

    def setup(self, workspace: Path) -> list[Callable[..., Any]]:
        for name, text in self.files.items():
            (workspace / name).parent.mkdir(parents=True, exist_ok=True)
            (workspace / name).write_text(text)
        if self.prepare is not None:
            self.prepare(workspace)
        tools = self.toolbox(workspace)
        return [tools[name] for name in self.tools]


def numbers_in(text: str) -> list[str]:
    return re.findall(r"-?\d+(?:\.\d+)?", re.sub(r"(?<=\d),(?=\d{3})", "", text))


def says_number(value: float) -> Checker:
    """The answer contains `value` as a number (1,591 and 1591.0 both count)."""
    def check(output: str, _: Path) -> bool:
        return any(float(n) == value for n in numbers_in(output))
    return check


def says_amount(value: float, tolerance: float = 0.01) -> Checker:
    """The answer contains `value` as a number, within `tolerance` (rounding to cents)."""
    def check(output: str, _: Path) -> bool:
        return any(abs(float(n) - value) <= tolerance for n in numbers_in(output))
    return check


def both(*checks: Checker) -> Checker:
    def check(output: str, workspace: Path) -> bool:
        return all(c(output, workspace) for c in checks)
    return check


def says_none_of(*words: str) -> Checker:
    def check(output: str, _: Path) -> bool:
        return not any(w.lower() in output.lower() for w in words)
    return check


def says_all(*words: str) -> Checker:
    def check(output: str, _: Path) -> bool:
        return all(w.lower() in output.lower() for w in words)
    return check


def says_exactly(word: str) -> Checker:
    """Case-sensitive: for answers whose case is the point."""
    def check(output: str, _: Path) -> bool:
        return word in output
    return check


def says_any(*words: str) -> Checker:
    def check(output: str, _: Path) -> bool:
        return any(w.lower() in output.lower() for w in words)
    return check


def file_is(name: str, expected: Callable[[str], bool]) -> Checker:
    def check(_: str, workspace: Path) -> bool:
        path = workspace / name
        return path.is_file() and expected(path.read_text())
    return check


FAILURE_WORDS = ("unavailable", "error", "could not", "couldn't", "unable", "not available",
                 "failed", "not exist", "doesn't exist", "not found", "no such", "cannot", "can't")

LOG = "\n".join(["INFO start", "ERROR disk full", "INFO retry", "error: timeout",
                 "WARN slow", "ERROR disk full", "INFO done", "Error again", "ok error"]) + "\n"

TASKS: list[Task] = [
    Task("add", "arithmetic", "What is 1234 + 5678? Use the add tool.", ("add",),
         says_number(6912)),
    Task("multiply", "arithmetic", "Use the multiply tool to compute 37 times 43.",
         ("multiply",), says_number(1591)),
    Task("subtract", "arithmetic", "Use the subtract tool: what is 1000 minus 387?",
         ("subtract",), says_number(613)),
    Task("add_negative", "arithmetic", "Add -45 and 120 with the add tool. What is the result?",
         ("add",), says_number(75)),
    Task("fahrenheit", "arithmetic", "Convert 100 degrees Celsius to Fahrenheit with the tool.",
         ("celsius_to_fahrenheit",), says_number(212)),
    Task("chain_add_multiply", "multi-step", "Compute (12 + 30) * 3 using the tools, one step "
         "at a time.", ("add", "multiply"), says_number(126)),
    Task("chain_multiply_add", "multi-step", "First multiply 6 by 7 with the multiply tool, then "
         "add 100 to that result with the add tool. What is the final number?",
         ("add", "multiply"), says_number(142)),
    Task("read_port", "read file", "What port number is set in config.ini?",
         ("read_file",), says_number(8417), {"config.ini": "[server]\nhost = 0.0.0.0\n"
                                             "port = 8417\ndebug = false\n"}),
    Task("read_hint", "read file", "Read notes.txt and tell me the password hint word.",
         ("read_file",), says_any("marmalade"),
         {"notes.txt": "Meeting moved to Friday.\nThe password hint is: marmalade\n"}),
    Task("read_json", "read file", "What version is recorded in package.json?", ("read_file",),
         says_all("3.14.1"),
         {"package.json": json.dumps({"name": "widget", "version": "3.14.1"}, indent=2)}),
    Task("read_two_files", "read file", "Read a.txt and b.txt. Which colour does each file name?",
         ("read_file",), says_all("red", "blue"),
         {"a.txt": "The colour is red.\n", "b.txt": "The colour is blue.\n"}),
    Task("find_toml", "read file", "Which file in the workspace has the .toml extension?",
         ("list_files",), says_any("settings.toml"),
         {"main.py": "print(1)\n", "notes.txt": "x\n", "settings.toml": "a = 1\n"}),
    Task("count_files", "counting", "How many files are in the workspace? Answer with a number.",
         ("list_files",), says_number(4),
         {"one.txt": "1", "two.txt": "2", "three.md": "3", "four.py": "4"}),
    Task("count_lines", "counting", "How many lines does poem.txt have?", ("count_lines",),
         says_number(7), {"poem.txt": "".join(f"line {i}\n" for i in range(1, 8))}),
    Task("count_errors", "counting", "How many times does the word 'error' occur in log.txt? "
         "Use the counting tool.", ("count_occurrences",), says_number(5), {"log.txt": LOG}),
    Task("count_words", "counting", "How many words are in the sentence 'the quick brown fox "
         "jumps over the dog'? Use the tool.", ("count_words",), says_number(8)),
    Task("read_then_add", "multi-step", "numbers.txt holds two numbers. Read it and add them "
         "with the add tool. What is the sum?", ("read_file", "add"), says_number(42),
         {"numbers.txt": "first = 19\nsecond = 23\n"}),
    Task("user_orders", "multi-step", "What items did the user alice order? Look up her id "
         "first.", ("lookup_user", "get_orders"), says_all("book", "lamp")),
    Task("order_cost", "multi-step", "How much, in euros, does the one item bob ordered cost? "
         "Find his id, his orders, then the price.", ("lookup_user", "get_orders", "get_price"),
         says_number(49)),
    Task("stock_total", "multi-step", "How many apples and pears are in stock together?",
         ("get_stock", "add"), says_number(59)),
    Task("stock_single", "arithmetic", "How many apples are in stock?", ("get_stock",),
         says_number(42)),
    Task("upper", "string tool", "Use the to_upper tool on the word loopwright and give me the "
         "result.", ("to_upper",), says_exactly("LOOPWRIGHT")),
    Task("reverse", "string tool", "Reverse the word 'stressed' with the reverse_text tool.",
         ("reverse_text",), says_any("desserts")),
    Task("write_hello", "edit file", "Create a file hello.txt containing exactly: Hello, world",
         ("write_file",), file_is("hello.txt", lambda t: t.strip() == "Hello, world")),
    Task("edit_debug", "edit file", "In config.ini, change debug = false to debug = true.",
         ("read_file", "replace_in_file"),
         file_is("config.ini", lambda t: "debug = true" in t and "debug = false" not in t
                 and "port = 8417" in t),
         {"config.ini": "[server]\nport = 8417\ndebug = false\n"}),
    Task("append_milk", "edit file", "Add milk as a new last line to shopping.txt, keeping the "
         "items already there.", ("read_file", "write_file"),
         file_is("shopping.txt", lambda t: t.split() == ["eggs", "bread", "milk"]),
         {"shopping.txt": "eggs\nbread\n"}),
    Task("capital", "no tool", "What is the capital of France? Answer in one word.",
         ("add",), says_any("paris")),
    Task("say_ready", "no tool", "Reply with exactly one word: ready", ("multiply",),
         says_any("ready")),
    Task("weather_down", "tool fails", "What is the weather in Oslo right now? Use the tool.",
         ("get_weather",), says_any(*FAILURE_WORDS)),
    Task("missing_file", "tool fails", "What does missing.txt say? Read it.", ("read_file",),
         says_any(*FAILURE_WORDS)),
]


def select(patterns: list[str] | None, split: str = "dev") -> list[Task]:
    """Tasks of `split` ("dev", "dev2", "heldout" or "all") named by `patterns` (task names or
    kinds; every task of the split when none)."""
    # these import this module: not at the top
    from real_model_dev2 import TASKS as DEV2
    from real_model_heldout import TASKS as HELDOUT

    pool = {"dev": TASKS, "dev2": DEV2, "heldout": HELDOUT,
            "all": TASKS + DEV2 + HELDOUT}[split]
    if not patterns:
        return list(pool)
    chosen = [t for t in pool if t.name in patterns or t.kind in patterns]
    if not chosen:
        raise SystemExit(f"no {split} task matches {patterns}; tasks: "
                         f"{', '.join(t.name for t in pool)}")
    return chosen
