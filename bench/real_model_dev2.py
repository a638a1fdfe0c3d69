"""The second dev split of bench/real_model.py (`--split dev2`): realistic agentic tasks to find
general fixes on.

Written and committed before any model ran on them. The first dev split
(bench/real_model_tasks.py) is small tool exercises the old heuristics were tuned on; the
held-out split (bench/real_model_heldout.py) only measures and is never used to find fixes.
This split has the held-out split's kinds — edits across files, running tests, data files
(CSV, JSON, SQLite), tools that fail (one fails once, then works), information nobody has, and
chains of four or more dependent calls — but tasks of its own. A fix found here must make sense
for any model and any task: it is scored again on the held-out split, never here alone.

Code a model writes or runs goes through bubblewrap, as in the held-out split.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

from real_model_heldout import PYTHON, inside_workspace, sandboxed
from real_model_tasks import (
    Checker,
    Task,
    both,
    numbers_in,
    says_all,
    says_amount,
    says_any,
    says_none_of,
)

# the chain tools' world: a package index and a support desk
PACKAGES = {"webkit-lite": ["tinycss", "htmlparse"], "tinycss": ["colorlib"], "htmlparse": [],
            "colorlib": []}
LATEST = {"webkit-lite": "2.4.0", "tinycss": "0.9.3", "htmlparse": "5.1.0", "colorlib": "1.2.2"}
LICENSES = {("tinycss", "0.9.3"): "MPL-2.0", ("tinycss", "0.9.2"): "MIT",
            ("htmlparse", "5.1.0"): "BSD-3-Clause", ("colorlib", "1.2.2"): "Apache-2.0",
            ("webkit-lite", "2.4.0"): "LGPL-3.0"}
SEARCH = {"web": ["webkit-lite"], "css": ["tinycss"], "html": ["htmlparse"], "color": ["colorlib"]}
DEVICES = {"printer-3f": "D-118", "scanner-2b": "D-207"}
REPAIRS = {"D-118": ["R-5501", "R-5517"], "D-207": []}
TECHNICIANS = {"R-5501": "lena.okafor", "R-5517": "marc.duval"}
PHONES = {"lena.okafor": "+44 20 7946 0321", "marc.duval": "+33 1 70 36 12 88"}


def make_tools(workspace: Path) -> dict[str, Callable[..., Any]]:
    """Every tool of the split, bound to `workspace`; each task picks the ones it offers."""
    calls: dict[str, int] = {}

    def inside(path: str) -> Path:
        return inside_workspace(workspace, path)

    def read_file(path: str) -> str:
        """Return the text of a file in the workspace (a path relative to it)."""
        return inside(path).read_text()

    def write_file(path: str, content: str) -> str:
        """Write content to a file in the workspace, replacing what was there."""
        target = inside(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
        return f"wrote {len(content)} characters to {path}"

    def list_files(directory: str = ".") -> list[str]:
        """List every file under a directory of the workspace, as paths relative to it."""
        root = inside(directory)
        return sorted(str(p.relative_to(workspace.resolve())) for p in root.rglob("*")
                      if p.is_file())

    def run_python(code: str) -> str:
        """Run Python code in the workspace (no network) and return its exit status and
        output."""
        return sandboxed(workspace, [PYTHON, "-E", "-s", "-c", code])

    def run_tests() -> str:
        """Run the workspace's unit tests (test_*.py) and return the report."""
        return sandboxed(workspace, [PYTHON, "-E", "-s", "-m", "unittest", "discover", "-s",
                                     ".", "-p", "test_*.py", "-v"])

    def query_db(sql: str) -> list[list[Any]]:
        """Run one read-only SQL query on the workspace's shop.db (SQLite) and return its
        rows."""
        uri = f"file:{inside('shop.db')}?mode=ro"
        with closing(sqlite3.connect(uri, uri=True)) as db:
            return [list(row) for row in db.execute(sql).fetchall()]

    def get_build_status(build: int) -> str:
        """Return the status of a CI build by its number."""
        raise ConnectionError("CI server unreachable (connection refused)")

    def get_quote(symbol: str) -> float:
        """Return the latest share price of a stock symbol, in dollars."""
        calls["get_quote"] = calls.get("get_quote", 0) + 1
        if calls["get_quote"] == 1:
            raise TimeoutError("quote service timed out; try again")
        if symbol.upper() != "ACME":
            raise KeyError(f"unknown symbol {symbol}")
        return 41.37

    def get_temperature(city: str) -> float:
        """Return the current temperature of a city in degrees Celsius."""
        known = {"New York": 7.5, "Boston": 4.0, "Chicago": -2.5}
        if city not in known:
            raise KeyError(f"unknown city {city!r}; known cities: {', '.join(known)}")
        return known[city]

    def find_employee(name: str) -> dict[str, str]:
        """Return the directory entry (team, extension) of an employee by full name."""
        staff = {"Tom Becker": {"team": "sales", "extension": "4410"}}
        if name not in staff:
            raise LookupError(f"no employee named {name}")
        return staff[name]

    def search_packages(query: str) -> list[str]:
        """Return the names of packages whose topic matches a search word."""
        return SEARCH.get(query.lower().strip(), [])

    def get_dependencies(package: str) -> list[str]:
        """Return the direct dependencies of a package, in the order it declares them."""
        if package not in PACKAGES:
            raise KeyError(f"no package {package}")
        return PACKAGES[package]

    def get_latest_version(package: str) -> str:
        """Return the latest released version of a package."""
        if package not in LATEST:
            raise KeyError(f"no package {package}")
        return LATEST[package]

    def get_license(package: str, version: str) -> str:
        """Return the license of one version of a package."""
        if (package, version) not in LICENSES:
            raise KeyError(f"no license on record for {package} {version}")
        return LICENSES[(package, version)]

    def find_device(name: str) -> str:
        """Return the asset id of an office device by its name."""
        if name not in DEVICES:
            raise KeyError(f"no device {name}; devices: {', '.join(DEVICES)}")
        return DEVICES[name]

    def list_repairs(asset_id: str) -> list[str]:
        """Return the ids of a device's repair tickets, oldest first."""
        if asset_id not in REPAIRS:
            raise KeyError(f"no asset {asset_id}")
        return REPAIRS[asset_id]

    def get_repair(ticket: str) -> dict[str, str]:
        """Return a repair ticket: its technician's user name and its state."""
        if ticket not in TECHNICIANS:
            raise KeyError(f"no ticket {ticket}")
        return {"technician": TECHNICIANS[ticket], "state": "closed"}

    def get_phone(user: str) -> str:
        """Return the phone number of a staff member by user name."""
        if user not in PHONES:
            raise KeyError(f"no user {user}")
        return PHONES[user]

    return {f.__name__: f for f in (
        read_file, write_file, list_files, run_python, run_tests, query_db, get_build_status,
        get_quote, get_temperature, find_employee, search_packages, get_dependencies,
        get_latest_version, get_license, find_device, list_repairs, get_repair, get_phone)}


def dev2(name: str, kind: str, prompt: str, tools: tuple[str, ...], check: Checker,
         files: dict[str, str] | None = None,
         prepare: Callable[[Path], None] | None = None) -> Task:
    return Task(name, kind, prompt, tools, check, files or {}, toolbox=make_tools,
                prepare=prepare, split="dev2")


LACKS = ("not ", "no ", "n't", "missing", "unavailable", "unknown", "lack", "absent", "unable",
         "cannot", "could not", "unreachable", "refused", "failed", "error")


def says_it_lacks(*invented: str) -> Checker:
    """The answer says the thing is not there, and writes none of the `invented` patterns."""
    def check(output: str, _: Path) -> bool:
        lowered = output.lower()
        return (bool(output.strip()) and any(w in lowered for w in LACKS)
                and not any(re.search(p, output) for p in invented))
    return check


def sandbox_says(code: str, expected: str) -> Checker:
    """Running `code` in the workspace prints `expected` (the workspace is what counts)."""
    def check(_: str, workspace: Path) -> bool:
        out = sandboxed(workspace, [PYTHON, "-E", "-s", "-c", code])
        return out.startswith("exit status 0") and out.rstrip().endswith(expected)
    return check


def file_unchanged(name: str, text: str) -> Checker:
    def check(_: str, workspace: Path) -> bool:
        return (workspace / name).read_text() == text
    return check


# --- edits across files ----------------------------------------------------------------------
SETTINGS_PY = "RETRIES = 3\nBACKOFF = 1.5\n"
CLIENT_PY = ("import settings\n\n\ndef attempts():\n    return settings.RETRIES + 1\n")
SYNC_PY = ("from settings import RETRIES\n\n\ndef plan():\n    return ['try'] * RETRIES\n")
NAMES_PY = "def full_name(first, last):\n    return f'{first} {last}'\n"
BADGE_PY = ("from names import full_name\n\n\ndef badge(first, last):\n"
            "    return 'Badge: ' + full_name(first, last)\n")

# --- running tests ---------------------------------------------------------------------------
GEOMETRY = ("def rectangle_area(width, height):\n    return width * height\n\n\n"
            "def circle_circumference(radius):\n    return 3.14159 * radius * radius\n")
TEST_GEOMETRY = ("import unittest\n\nfrom geometry import circle_circumference, "
                 "rectangle_area\n\n\nclass GeometryTest(unittest.TestCase):\n"
                 "    def test_rectangle(self):\n        self.assertEqual(rectangle_area(3, 4), "
                 "12)\n\n    def test_circumference(self):\n"
                 "        self.assertAlmostEqual(circle_circumference(3), 18.84954, places=4)\n")
INVENTORY = ("def restock(stock, amount):\n    return stock + amount\n\n\n"
             "def sell(stock, amount):\n    if amount > stock:\n"
             "        raise ValueError('not enough stock')\n    return stock - amount\n")
TEST_INVENTORY = ("import unittest\n\nfrom inventory import restock, sell\n\n\n"
                  "class InventoryTest(unittest.TestCase):\n"
                  "    def test_restock(self):\n        self.assertEqual(restock(2, 3), 5)\n\n"
                  "    def test_sell(self):\n        self.assertEqual(sell(5, 2), 3)\n\n"
                  "    def test_oversell(self):\n        with self.assertRaises(ValueError):\n"
                  "            sell(1, 2)\n\n"
                  "    def test_sell_all(self):\n        self.assertEqual(sell(4, 4), 1)\n")

# --- data ------------------------------------------------------------------------------------
RAINFALL = ("station,month,mm\nnorth,jan,80\nsouth,jan,42\nnorth,feb,64\nsouth,feb,38\n"
            "north,mar,71\nsouth,mar,35\n")
STAFF_JSON = json.dumps([
    {"name": "Ines", "team": "platform", "on_leave": False},
    {"name": "Karl", "team": "platform", "on_leave": True},
    {"name": "Wen", "team": "platform", "on_leave": False},
    {"name": "Zoe", "team": "mobile", "on_leave": False},
], indent=2)


def make_shop(workspace: Path) -> None:
    with closing(sqlite3.connect(workspace / "shop.db")) as db:
        db.execute("create table products (name text, category text, price real)")
        db.executemany("insert into products values (?, ?, ?)", [
            ("rake", "garden", 24.0), ("hose", "garden", 18.5), ("shears", "garden", 31.0),
            ("lamp", "home", 45.0), ("rug", "home", 19.0), ("gloves", "garden", 9.5)])
        db.commit()


NUMBERS_TXT = "12\n7\n30\n-4\n15\n"
SERVICE_JSON = json.dumps({"name": "billing", "port": 8443, "workers": 4}, indent=2)

TASKS: list[Task] = [
    # edits across files
    dev2("rename_constant", "edit files", "Rename the constant RETRIES in settings.py to "
         "MAX_RETRIES, and update every file that uses it so the code still works.",
         ("list_files", "read_file", "write_file", "run_python"),
         sandbox_says("import settings, client, sync; assert not hasattr(settings, 'RETRIES'); "
                      "print(client.attempts(), len(sync.plan()), settings.MAX_RETRIES)",
                      "4 3 3"),
         {"settings.py": SETTINGS_PY, "client.py": CLIENT_PY, "sync.py": SYNC_PY}),
    dev2("add_parameter", "edit files", "Give full_name in names.py an optional parameter "
         "title (default empty) that is put before the name with a space when given, and make "
         "badge in badge.py accept and pass the same optional title.",
         ("read_file", "write_file", "run_python"),
         sandbox_says("from badge import badge; from names import full_name; "
                      "print(full_name('Ada', 'Byron'), '|', badge('Ada', 'Byron', title='Dr'))",
                      "Ada Byron | Badge: Dr Ada Byron"),
         {"names.py": NAMES_PY, "badge.py": BADGE_PY}),
    # running tests
    dev2("fix_the_bug", "run tests", "The tests in this project fail. Run them, find the bug "
         "in geometry.py and fix it (do not change the tests).",
         ("run_tests", "read_file", "write_file"),
         both(sandbox_says("import io, unittest; r = unittest.TextTestRunner(stream=io."
                           "StringIO()).run(unittest.defaultTestLoader.loadTestsFromName("
                           "'test_geometry')); print(len(r.failures) + len(r.errors), "
                           "r.testsRun)", "0 2"),
              file_unchanged("test_geometry.py", TEST_GEOMETRY)),
         {"geometry.py": GEOMETRY, "test_geometry.py": TEST_GEOMETRY}),
    dev2("test_counts", "run tests", "Run the unit tests. How many tests passed and how many "
         "failed?", ("run_tests",),
         lambda out, _: bool(re.search(r"\b3\b[^.\n]*pass", out, re.I)
                             and re.search(r"\b1\b[^.\n]*fail", out, re.I)),
         {"inventory.py": INVENTORY, "test_inventory.py": TEST_INVENTORY}),
    # data files
    dev2("csv_station_total", "data", "In rainfall.csv, what was the total rainfall in mm at "
         "the north station over the three months?", ("read_file", "run_python"),
         says_amount(215, 0), {"rainfall.csv": RAINFALL}),
    dev2("json_available", "data", "According to staff.json, who in the platform team is not "
         "on leave?", ("read_file",),
         both(says_all("Ines", "Wen"), says_none_of("Karl", "Zoe")), {"staff.json": STAFF_JSON}),
    dev2("sqlite_garden", "data", "How many garden products in shop.db cost more than 20?",
         ("query_db",), both(says_amount(2, 0), says_none_of("3 garden", "three")),
         prepare=make_shop),
    dev2("sum_to_file", "data", "Add up the numbers in numbers.txt and write the total to "
         "total.txt.", ("read_file", "write_file", "run_python"),
         lambda _, ws: (ws / "total.txt").is_file()
         and [float(n) for n in numbers_in((ws / "total.txt").read_text())] == [60.0],
         {"numbers.txt": NUMBERS_TXT}),
    # tools that fail
    dev2("ci_down", "tool fails", "Did CI build 512 pass?", ("get_build_status",),
         both(says_it_lacks(), says_none_of("it passed", "build passed", "was successful",
                                            "succeeded"))),
    dev2("quote_retry", "tool fails", "What is ACME's share price right now?", ("get_quote",),
         says_amount(41.37)),
    dev2("city_name", "tool fails", "What is the temperature in NYC?", ("get_temperature",),
         says_amount(7.5)),
    # missing information
    dev2("missing_setting", "missing information", "How many threads does the billing service "
         "use, according to service.json?", ("read_file",),
         says_it_lacks(r"\b(?:[1-35-9]|[1-9]\d+)\s*threads"), {"service.json": SERVICE_JSON}),
    dev2("missing_employee", "missing information", "What is Priya Shah's phone extension?",
         ("find_employee",), says_it_lacks(r"\b\d{3,5}\b")),
    # chains of four or more dependent calls
    dev2("license_chain", "chain", "Search the package index for 'css', take the first "
         "dependency of the package you find, and tell me the license of that dependency's "
         "latest version.", ("search_packages", "get_dependencies", "get_latest_version",
                             "get_license"),
         both(says_any("Apache-2.0", "Apache 2.0"), says_none_of("MPL", "MIT"))),
    dev2("repair_chain", "chain", "Who repaired printer-3f most recently? Give me their phone "
         "number.", ("find_device", "list_repairs", "get_repair", "get_phone"),
         both(says_any("+33 1 70 36 12 88", "70 36 12 88"), says_none_of("7946"))),
]
