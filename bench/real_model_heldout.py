"""The held-out split of bench/real_model.py: realistic agentic tasks nobody tunes on.

Written before any run of any model on them, and never to be used to find fixes: the dev split
(bench/real_model_tasks.py) is where heuristics may be tuned; this split only measures whether
they help out of sample. Edit a task here only to fix a checker that is wrong on its own terms
(and say so in the commit), never because a model fails it.

The kinds a new user brings: edits across files, running a test, data files (CSV, JSON,
SQLite), tools that fail (and one that fails once and then works), information the workspace
does not hold (the model must say so, not invent it) and chains of four or more dependent calls.
Code the model writes or runs goes through bubblewrap: no network, only the workspace writable.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Callable
from contextlib import closing
from functools import partial
from pathlib import Path
from typing import Any

from real_model_tasks import (
    Checker,
    Task,
    both,
    says_all,
    says_amount,
    says_any,
    says_none_of,
)

PYTHON = "/usr/bin/python3"  # the system interpreter (the sandbox binds /usr); run with -E -s: not
# the bench's PYTHONPATH nor a user site
RUN_TIMEOUT = 20.0
OUTPUT_CAP = 4000


def sandboxed(workspace: Path, argv: list[str]) -> str:
    """Run `argv` in `workspace` under bubblewrap (no network, nothing but the workspace
    writable) and return its exit status and output, cut to OUTPUT_CAP characters."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise RuntimeError("the held-out split runs code under bubblewrap: apt install bubblewrap")
    root = str(workspace.resolve())
    command = [bwrap, "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib",
               "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin",
               "--tmpfs", "/tmp", "--bind", root, root, "--dev", "/dev", "--proc", "/proc",
               "--unshare-all", "--die-with-parent", "--new-session", "--chdir", root, "--",
               *argv]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                              check=False)
    except subprocess.TimeoutExpired:
        return f"timed out after {RUN_TIMEOUT:.0f} s"
    output = (done.stdout + done.stderr)[-OUTPUT_CAP:]
    return f"exit status {done.returncode}\n{output}"


def tests_pass(workspace: Path) -> bool:
    return sandboxed(workspace, [PYTHON, "-E", "-s", "-m", "unittest", "discover", "-s", ".", "-p",
                                 "test_*.py"]).startswith("exit status 0")


# --- the data behind the service tools --------------------------------------------------------

CUSTOMERS = {"jane@example.com": "C-2201", "omar@example.com": "C-3310"}
INVOICES = {"C-2201": [("INV-881", "2024-01-14"), ("INV-954", "2024-03-02"),
                       ("INV-912", "2024-02-09")],
            "C-3310": [("INV-700", "2023-12-01")]}
INVOICE_AMOUNTS = {"INV-881": (120.0, "USD"), "INV-954": (340.0, "GBP"),
                   "INV-912": (75.0, "USD"), "INV-700": (990.0, "USD")}
RATES = {("USD", "EUR"): 0.92, ("GBP", "EUR"): 1.15, ("EUR", "USD"): 1.09}
ALERTS = {"A-1187": "billing-api", "A-1190": "search"}
OWNERS = {"billing-api": "payments", "search": "discovery"}
ONCALL = {"payments": "rhea.m", "discovery": "tomas.k"}
CONTACTS = {"rhea.m": "rhea.marsh@corp.example", "tomas.k": "tomas.klein@corp.example"}
TICKETS = {4521: "resolved", 4600: "open"}
ARCHIVED = {4521}


def inside_workspace(workspace: Path, path: str) -> Path:
    """`path` (relative to `workspace`) resolved, refused if it leads out of the workspace."""
    target = (workspace / path).resolve()
    if target != workspace.resolve() and workspace.resolve() not in target.parents:
        raise ValueError(f"{path} is outside the workspace")
    return target


def make_tools(workspace: Path) -> dict[str, Callable[..., Any]]:
    """The held-out split's tools, bound to `workspace`; each task offers a few of them. A new
    set each run: the flaky exchange-rate service keeps its one failure per run."""
    flaky = {"calls": 0}

    def inside(path: str) -> Path:
        return inside_workspace(workspace, path)

    def read_file(path: str) -> str:
        """Return the text of a file in the workspace (path relative to the workspace)."""
        return inside(path).read_text()

    def write_file(path: str, content: str) -> str:
        """Write content to a file in the workspace, creating or replacing it."""
        target = inside(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
        return f"wrote {len(content)} characters to {path}"

    def replace_in_file(path: str, old: str, new: str) -> str:
        """Replace every occurrence of the exact text old with new in a workspace file."""
        target = inside(path)
        text = target.read_text()
        if old not in text:
            raise ValueError(f"the text {old!r} does not occur in {path}")
        target.write_text(text.replace(old, new))
        return f"replaced {text.count(old)} occurrence(s) in {path}"

    def list_files(directory: str = ".") -> list[str]:
        """List every file under a workspace directory, recursively, as relative paths."""
        base = inside(directory)
        return sorted(str(p.relative_to(workspace.resolve())) for p in base.rglob("*")
                      if p.is_file() and p.suffix != ".pyc")

    def run_tests() -> str:
        """Run the project's unit tests (every test_*.py) and return the test runner's output."""
        return sandboxed(workspace, [PYTHON, "-E", "-s", "-m", "unittest", "discover", "-v",
                                     "-s", ".", "-p", "test_*.py"])

    def run_python(code: str) -> str:
        """Run a Python 3 program in the workspace directory and return its exit status and
        output (stdout and stderr). No network access."""
        return sandboxed(workspace, [PYTHON, "-E", "-s", "-c", code])

    def sql(query: str) -> list[list[Any]]:
        """Run a read-only SQL query on the SQLite database shop.db and return the rows."""
        uri = f"file:{inside('shop.db')}?mode=ro"
        with closing(sqlite3.connect(uri, uri=True)) as db:
            return [list(row) for row in db.execute(query).fetchmany(200)]

    def get_exchange_rate(base: str, quote: str) -> float:
        """Return how many units of the quote currency one unit of the base currency buys."""
        flaky["calls"] += 1
        if flaky["calls"] == 1:
            raise TimeoutError("rates service timed out; the request may be retried")
        pair = (base.upper(), quote.upper())
        if pair not in RATES:
            raise KeyError(f"no rate for {pair[0]}/{pair[1]}")
        return RATES[pair]

    def deploy(environment: str) -> str:
        """Deploy the current build to an environment (staging or production)."""
        if environment.lower() == "production":
            raise PermissionError("deploying to production needs an approval token, and none "
                                  "is configured for this account")
        return f"deployed build 5.2.0 to {environment}"

    def get_ticket(ticket_id: int) -> str:
        """Return the status of a support ticket."""
        if ticket_id in ARCHIVED:
            raise LookupError(f"ticket {ticket_id} is archived; use get_archived_ticket")
        if ticket_id not in TICKETS:
            raise KeyError(f"no ticket {ticket_id}")
        return TICKETS[ticket_id]

    def get_archived_ticket(ticket_id: int) -> str:
        """Return the final status of an archived support ticket."""
        if ticket_id not in ARCHIVED:
            raise KeyError(f"ticket {ticket_id} is not archived")
        return TICKETS[ticket_id]

    def find_customer(email: str) -> str:
        """Return the customer id for an email address."""
        if email.lower() not in CUSTOMERS:
            raise KeyError(f"no customer with email {email}")
        return CUSTOMERS[email.lower()]

    def list_invoices(customer_id: str) -> list[dict[str, str]]:
        """List a customer's invoices: id and issue date of each."""
        if customer_id not in INVOICES:
            raise KeyError(f"no customer {customer_id}")
        return [{"invoice_id": i, "date": d} for i, d in INVOICES[customer_id]]

    def get_invoice(invoice_id: str) -> dict[str, Any]:
        """Return the amount and currency of an invoice."""
        if invoice_id not in INVOICE_AMOUNTS:
            raise KeyError(f"no invoice {invoice_id}")
        amount, currency = INVOICE_AMOUNTS[invoice_id]
        return {"invoice_id": invoice_id, "amount": amount, "currency": currency}

    def convert_currency(amount: float, from_currency: str, to_currency: str) -> float:
        """Convert an amount of money from one currency to another at today's rate."""
        pair = (from_currency.upper(), to_currency.upper())
        if pair not in RATES:
            raise KeyError(f"no rate for {pair[0]}/{pair[1]}")
        return round(amount * RATES[pair], 2)

    def get_alert(alert_id: str) -> dict[str, str]:
        """Return the monitoring alert with this id: which service raised it."""
        if alert_id.upper() not in ALERTS:
            raise KeyError(f"no alert {alert_id}")
        return {"alert_id": alert_id.upper(), "service": ALERTS[alert_id.upper()]}

    def get_service_owner(service: str) -> str:
        """Return the team that owns a service."""
        if service not in OWNERS:
            raise KeyError(f"unknown service {service}")
        return OWNERS[service]

    def get_oncall(team: str) -> str:
        """Return the username of the person on call for a team this week."""
        if team not in ONCALL:
            raise KeyError(f"unknown team {team}")
        return ONCALL[team]

    def get_contact(username: str) -> str:
        """Return the email address of a user."""
        if username not in CONTACTS:
            raise KeyError(f"unknown user {username}")
        return CONTACTS[username]

    return {f.__name__: f for f in (
        read_file, write_file, replace_in_file, list_files, run_tests, run_python, sql,
        get_exchange_rate, deploy, get_ticket, get_archived_ticket, find_customer,
        list_invoices, get_invoice, convert_currency, get_alert, get_service_owner, get_oncall,
        get_contact)}


# --- checkers ----------------------------------------------------------------------------------

def workspace_check(test: Callable[[Path], bool]) -> Checker:
    """A check of the workspace alone; a file the model left unreadable counts as a failure."""
    def check(_: str, workspace: Path) -> bool:
        try:
            return test(workspace)
        except (OSError, ValueError, UnicodeDecodeError):
            return False
    return check


LACK_WORDS = ("not ", "no ", "n't", "missing", "unavailable", "unknown", "lack", "absent",
              "without", "cannot", "unable")


def says_it_lacks(*invented: str) -> Checker:
    """The answer says the information is not there and contains none of the `invented`
    patterns (regexes of what a made-up value would look like)."""
    def check(output: str, _: Path) -> bool:
        lowered = output.lower()
        return (any(w in lowered for w in LACK_WORDS)
                and not any(re.search(p, output) for p in invented))
    return check


# --- the workspaces --------------------------------------------------------------------------

SHOP_UTILS = '''def calc_total(items):
    """Sum of price * quantity over (price, quantity) pairs."""
    return sum(price * quantity for price, quantity in items)
'''
SHOP_MAIN = '''from utils import calc_total

CART = [(2.5, 4), (10.0, 1)]
print("total:", calc_total(CART))
'''
SHOP_REPORT = '''import utils


def daily(carts):
    return [utils.calc_total(cart) for cart in carts]
'''

MATHX = '''def mean(values):
    """The arithmetic mean of a non-empty list of numbers."""
    return sum(values) / (len(values) - 1)


def clamp(value, low, high):
    return max(low, min(value, high))
'''
TEST_MATHX = '''import unittest

from mathx import clamp, mean


class MathTest(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(mean([2, 4, 6]), 4)

    def test_mean_single(self):
        self.assertEqual(mean([5]), 5)

    def test_clamp(self):
        self.assertEqual(clamp(12, 0, 10), 10)


if __name__ == "__main__":
    unittest.main()
'''

DATES = '''from datetime import date


def parse_date(text):
    """Parse DD/MM/YYYY."""
    month, day, year = text.split("/")
    return date(int(year), int(month), int(day))


def iso(d):
    return d.isoformat()
'''
TEST_DATES = '''import unittest
from datetime import date

from dates import iso, parse_date


class DatesTest(unittest.TestCase):
    def test_iso(self):
        self.assertEqual(iso(date(2024, 2, 1)), "2024-02-01")

    def test_parse_date(self):
        self.assertEqual(parse_date("25/12/2023"), date(2023, 12, 25))

    def test_parse_date_type(self):
        self.assertIsInstance(parse_date("01/01/2020"), date)
'''

TEXTUTILS = '''def shout(text):
    return text.upper() + "!"
'''
TEST_TEXTUTILS = '''import unittest

from textutils import shout, slugify


class TextTest(unittest.TestCase):
    def test_shout(self):
        self.assertEqual(shout("hi"), "HI!")

    def test_slugify(self):
        self.assertEqual(slugify("Hello Big World"), "hello-big-world")
'''

APP_PY = '''import config

TIMEOUT = 30


def fetch_settings():
    return {"timeout": TIMEOUT, "region": config.REGION}


if __name__ == "__main__":
    print(fetch_settings())
'''
CONFIG_PY = 'REGION = "eu-west-1"\n'

SALES_CSV = ("date,region,amount\n2024-04-01,north,1200.50\n2024-04-01,south,800.00\n"
             "2024-04-02,north,310.25\n2024-04-03,east,99.99\n2024-04-03,north,489.25\n"
             "2024-04-04,south,150.00\n")
Q3_CSV = ("product,units,unit_price\nanvil,120,35.00\nbucket,900,4.50\nchisel,300,12.00\n"
          "drill,45,89.00\n")  # revenue: anvil 4200, bucket 4050, chisel 3600, drill 4005
USERS_JSON = json.dumps({"users": [
    {"name": "Ines", "email": "ines@corp.example", "roles": ["admin", "dev"]},
    {"name": "Karl", "email": "karl@corp.example", "roles": ["dev"]},
    {"name": "Mei", "email": "mei@corp.example", "roles": ["support", "admin"]},
    {"name": "Pavel", "email": "pavel@corp.example", "roles": ["support"]}]}, indent=2)
CONTACTS_JSON = json.dumps([
    {"name": "Ada Byron", "email": "ada@example.org", "city": "London"},
    {"name": "Alan Turing", "email": "alan@example.org", "city": "Wilmslow"},
    {"name": "Grace Hopper", "email": "grace@example.org", "city": "Arlington"}], indent=2)
SETTINGS_JSON = json.dumps({"name": "ingest", "retries": 3, "timeout": 12.5,
                            "endpoints": ["a.internal", "b.internal"]}, indent=2)
INVENTORY_CSV = ("item,quantity,supplier\nbolts M6,1200,Brandt\nwashers,800,Brandt\n"
                 "hinges,150,Okafor & Sons\n")
TEAM_JSON = json.dumps({"team": "platform", "members": [
    {"name": "Dana Whitfield", "role": "lead", "email": "dana@corp.example"},
    {"name": "Eli Park", "role": "engineer", "email": "eli@corp.example",
     "phone": "+44 20 7946 0123"}]}, indent=2)
APP_LOG = "\n".join([
    "2024-06-01 10:00:01 INFO start", "2024-06-01 10:00:05 ERROR E1042 upstream refused",
    "2024-06-01 10:01:00 ERROR E2001 disk quota",
    "2024-06-01 10:02:10 ERROR E1042 upstream refused", "2024-06-01 10:03:33 WARN slow response",
    "2024-06-01 10:04:00 ERROR E1042 upstream refused",
    "2024-06-01 10:05:12 ERROR E3100 bad token", "2024-06-01 10:06:00 INFO done"]) + "\n"
ERRORS_MD = ("# Error codes\n\n| code | meaning |\n|---|---|\n"
             "| E1042 | the payment gateway rejected the connection (check its allow-list) |\n"
             "| E2001 | the disk quota of the worker is exhausted |\n"
             "| E3100 | an API token expired |\n")


def make_shop_db(workspace: Path) -> None:
    with closing(sqlite3.connect(workspace / "shop.db")) as db:
        db.execute("create table orders (id integer primary key, customer text, placed text, "
                   "total real)")
        rows = [(1, "ann", "2024-02-27", 19.5), (2, "bo", "2024-03-01", 5.0),
                (3, "ann", "2024-03-11", 42.0), (4, "cy", "2024-03-30", 13.25),
                (5, "bo", "2024-04-02", 8.0), (6, "di", "2024-03-19", 61.0),
                (7, "cy", "2023-03-15", 9.0)]
        db.executemany("insert into orders values (?, ?, ?, ?)", rows)
        db.commit()


def _renamed(workspace: Path) -> bool:
    sources = {p.name: p.read_text() for p in workspace.glob("*.py")}
    return (not any("calc_total" in text for text in sources.values())
            and "def compute_total(" in sources.get("utils.py", "")
            and "compute_total" in sources.get("main.py", "")
            and "utils.compute_total" in sources.get("report.py", "")
            and "total: 20.0" in sandboxed(workspace, [PYTHON, "-E", "-s", "main.py"]))


def _fixed_mean(workspace: Path) -> bool:
    return ((workspace / "test_mathx.py").read_text() == TEST_MATHX and tests_pass(workspace))


def _slugify_added(workspace: Path) -> bool:
    return ((workspace / "test_textutils.py").read_text() == TEST_TEXTUTILS
            and "def shout" in (workspace / "textutils.py").read_text()
            and tests_pass(workspace))


def _timeout_moved(workspace: Path) -> bool:
    app, config = (workspace / "app.py").read_text(), (workspace / "config.py").read_text()
    run = sandboxed(workspace, [PYTHON, "-E", "-s", "app.py"])
    return (re.search(r"^TIMEOUT\s*=\s*30\s*$", config, re.M) is not None
            and re.search(r"^TIMEOUT\s*=", app, re.M) is None
            and "REGION" in config and "'timeout': 30" in run and "eu-west-1" in run)


def _version_bumped(workspace: Path) -> bool:
    pyproject = (workspace / "pyproject.toml").read_text()
    init = (workspace / "widget" / "__init__.py").read_text()
    return ('version = "1.5.0"' in pyproject and '__version__ = "1.5.0"' in init
            and "1.4.2" not in pyproject + init and 'name = "widget"' in pyproject
            and "def greet" in init)


def _contacts_csv(workspace: Path) -> bool:
    rows = list(csv.reader(io.StringIO((workspace / "contacts.csv").read_text())))
    rows = [[cell.strip() for cell in row] for row in rows if row]
    return rows == [["name", "email"], ["Ada Byron", "ada@example.org"],
                    ["Alan Turing", "alan@example.org"], ["Grace Hopper", "grace@example.org"]]


def _retries_set(workspace: Path) -> bool:
    expected = json.loads(SETTINGS_JSON) | {"retries": 5}
    return bool(json.loads((workspace / "settings.json").read_text()) == expected)


def _requirement_added(workspace: Path) -> bool:
    lines = [line.strip() for line in (workspace / "requirements.txt").read_text().splitlines()
             if line.strip()]
    return lines == ["attrs==23.2.0", "click==8.1.7", "httpx==0.27.0", "rich==13.7.1"]


TODO_FILES = {
    "src/app/__init__.py": "# TODO: export the public names\n",
    "src/app/core.py": "def run():\n    # TODO: handle errors\n    pass\n# TODO: add retries\n",
    "src/app/cli.py": "import sys\n\n\ndef main():\n    # TODO parse --verbose\n    return 0\n",
    "src/app/notes.md": "TODO: not a Python file, do not count\n",
    "README.md": "TODO: write the readme\n",
}

HeldOut = partial(Task, toolbox=make_tools, split="heldout")

TASKS: list[Task] = [
    # edits across files
    HeldOut("rename_function", "edit across files", "Rename the function calc_total to "
         "compute_total everywhere in this project (utils.py, main.py and report.py), so "
         "main.py still runs.", ("list_files", "read_file", "replace_in_file", "write_file",
                                 "run_python"),
         workspace_check(_renamed),
         {"utils.py": SHOP_UTILS, "main.py": SHOP_MAIN, "report.py": SHOP_REPORT}),
    HeldOut("version_bump", "edit across files", "Bump the package version from 1.4.2 to 1.5.0. "
         "It is recorded in pyproject.toml and in widget/__init__.py.",
         ("list_files", "read_file", "replace_in_file", "write_file"),
         workspace_check(_version_bumped),
         {"pyproject.toml": '[project]\nname = "widget"\nversion = "1.4.2"\n',
          "widget/__init__.py": '__version__ = "1.4.2"\n\n\ndef greet():\n    return "hi"\n'}),
    HeldOut("move_constant", "edit across files", "Move the TIMEOUT constant from app.py into "
         "config.py, and make app.py use config.TIMEOUT instead. app.py must still run.",
         ("read_file", "write_file", "replace_in_file", "run_python"),
         workspace_check(_timeout_moved), {"app.py": APP_PY, "config.py": CONFIG_PY}),
    HeldOut("add_requirement", "edit file", "Add httpx==0.27.0 to requirements.txt. The file is "
         "kept in alphabetical order; keep it that way.", ("read_file", "write_file"),
         workspace_check(_requirement_added),
         {"requirements.txt": "attrs==23.2.0\nclick==8.1.7\nrich==13.7.1\n"}),
    # running tests
    HeldOut("fix_failing_test", "run a test", "The tests in test_mathx.py fail. Find the bug in "
         "mathx.py, fix it (do not change the tests), and run the tests to check they pass.",
         ("read_file", "replace_in_file", "write_file", "run_tests"),
         workspace_check(_fixed_mean), {"mathx.py": MATHX, "test_mathx.py": TEST_MATHX}),
    HeldOut("which_test_fails", "run a test", "Run the test suite. Which test fails, and why?",
         ("run_tests", "read_file"), says_all("test_parse_date"),
         {"dates.py": DATES, "test_dates.py": TEST_DATES}),
    HeldOut("implement_slugify", "run a test", "test_textutils.py expects a slugify function in "
         "textutils.py that lowercases the text and joins the words with hyphens. Add it "
         "(keep shout), then run the tests.",
         ("read_file", "write_file", "replace_in_file", "run_tests"),
         workspace_check(_slugify_added),
         {"textutils.py": TEXTUTILS, "test_textutils.py": TEST_TEXTUTILS}),
    # data files
    HeldOut("csv_region_total", "data file", "What is the total amount of the north region's "
         "sales in sales.csv?", ("read_file", "run_python"), says_amount(2000.0),
         {"sales.csv": SALES_CSV}),
    HeldOut("csv_top_revenue", "data file", "In q3.csv, which product brought in the most "
         "revenue (units times unit price)?", ("read_file", "run_python"),
         both(says_any("anvil"), says_none_of("bucket", "chisel", "drill")), {"q3.csv": Q3_CSV}),
    HeldOut("json_admins", "data file", "Which users in users.json have the admin role? Give "
         "their email addresses.", ("read_file", "run_python"),
         both(says_all("ines@corp.example", "mei@corp.example"),
              says_none_of("karl@", "pavel@")), {"users.json": USERS_JSON}),
    HeldOut("json_to_csv", "data file", "Write the name and email of every contact in "
         "contacts.json to a new file contacts.csv, with the header row name,email.",
         ("read_file", "write_file", "run_python"), workspace_check(_contacts_csv),
         {"contacts.json": CONTACTS_JSON}),
    HeldOut("json_set_retries", "data file", "In settings.json, set retries to 5. Leave every "
         "other setting as it is.", ("read_file", "write_file", "replace_in_file"),
         workspace_check(_retries_set), {"settings.json": SETTINGS_JSON}),
    HeldOut("sql_march_orders", "data file", "How many orders in shop.db were placed in March "
         "2024?", ("sql",), says_amount(4, 0), prepare=make_shop_db),
    # tools that fail
    HeldOut("flaky_rate", "tool fails", "Convert 250 US dollars to euros at the current exchange "
         "rate.", ("get_exchange_rate",), says_amount(230.0, 0.5)),
    HeldOut("deploy_denied", "tool fails", "Deploy the app to production.", ("deploy",),
         both(says_any("approval", "permission", "denied", "not allowed"),
              says_none_of("deployed build", "successfully deployed", "has been deployed"))),
    HeldOut("archived_ticket", "tool fails", "What is the status of support ticket 4521?",
         ("get_ticket", "get_archived_ticket"), says_any("resolved")),
    HeldOut("wrong_path", "tool fails", "What database host is configured? The setting is in the "
         "config file.", ("read_file", "list_files"), says_any("db-7.internal.example"),
         {"config/database.yml": "adapter: postgres\nhost: db-7.internal.example\nport: 5433\n",
          "config/logging.yml": "level: info\n"}),
    # missing information
    HeldOut("missing_cost", "missing information", "What is the total cost of the stock listed in "
         "inventory.csv?", ("read_file", "run_python"),
         says_it_lacks(r"[$€£]\s?\d", r"(?i)\d\s?(?:eur|usd|euros|dollars)\b"),
         {"inventory.csv": INVENTORY_CSV}),
    HeldOut("missing_phone", "missing information", "What is Dana Whitfield's phone number? It "
         "should be in team.json.", ("read_file",),
         says_it_lacks(r"\d{3}[\s-]?\d{4}", r"7946"), {"team.json": TEAM_JSON}),
    HeldOut("missing_notes", "missing information", "Summarise yesterday's meeting notes from the "
         "workspace.", ("list_files", "read_file"),
         both(says_it_lacks(), says_none_of("discussed", "agreed", "decided")),
         {"todo.txt": "- renew domain\n- order toner\n", "budget.csv": "item,eur\ntoner,80\n"}),
    # chains of four or more dependent calls
    HeldOut("pointer_chain", "chain", "Start at start.txt and follow the directions in the files "
         "to find the access code. What is it?", ("read_file",), says_any("PELICAN-77"),
         {"start.txt": "The next step is written in docs/next.txt.\n",
          "docs/next.txt": "Open data/where.json and read its 'file' key.\n",
          "data/where.json": json.dumps({"file": "vault/code.txt", "note": "not the code"}),
          "vault/code.txt": "access code: PELICAN-77\n"}),
    HeldOut("invoice_chain", "chain", "How much was the most recent invoice of the customer "
         "jane@example.com, converted to euros?",
         ("find_customer", "list_invoices", "get_invoice", "convert_currency"),
         says_amount(391.0, 0.5)),
    HeldOut("alert_chain", "chain", "Alert A-1187 fired. Whom should I email about it? Find the "
         "service, its owning team, who is on call for that team, and give me their email "
         "address.", ("get_alert", "get_service_owner", "get_oncall", "get_contact"),
         both(says_any("rhea.marsh@corp.example"), says_none_of("tomas"))),
    HeldOut("log_error_meaning", "chain", "Which error code occurs most often in logs/app.log, "
         "and what does it mean according to docs/errors.md?",
         ("list_files", "read_file", "run_python"),
         both(says_any("E1042"), says_any("gateway", "allow-list", "allow list")),
         {"logs/app.log": APP_LOG, "docs/errors.md": ERRORS_MD}),
    HeldOut("count_todos", "chain", "How many TODO comments are there in the Python files under "
         "src/? Count only .py files.", ("list_files", "read_file", "run_python"),
         says_amount(4, 0), TODO_FILES),
]
