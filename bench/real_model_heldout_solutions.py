"""Checks the held-out split's checkers, not a model: each must accept a hand-written correct
solution and reject the untouched workspace with an empty answer.

    python bench/real_model_heldout_solutions.py

Run it after editing a checker; it calls the split's own tools, so the sandbox runs too.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from real_model_heldout import TASKS, make_tools
from real_model_tasks import Task

Tools = dict[str, Callable[..., Any]]
MARCH = "select count(*) from orders where placed like '2024-03-%'"


def edit(tools: Tools, path: str, old: str, new: str) -> None:
    tools["write_file"](path, tools["read_file"](path).replace(old, new))


def rename(tools: Tools) -> str:
    for path in ("utils.py", "main.py", "report.py"):
        edit(tools, path, "calc_total", "compute_total")
    return "Renamed in the three files."


def bump(tools: Tools) -> str:
    for path in ("pyproject.toml", "widget/__init__.py"):
        edit(tools, path, "1.4.2", "1.5.0")
    return "Bumped to 1.5.0."


def move_constant(tools: Tools) -> str:
    tools["write_file"]("config.py", tools["read_file"]("config.py") + "TIMEOUT = 30\n")
    edit(tools, "app.py", "TIMEOUT = 30\n\n", "")
    edit(tools, "app.py", '"timeout": TIMEOUT', '"timeout": config.TIMEOUT')
    return "Moved."


def fix_mean(tools: Tools) -> str:
    tools["replace_in_file"]("mathx.py", "(len(values) - 1)", "len(values)")
    return tools["run_tests"]()


def slugify(tools: Tools) -> str:
    tools["write_file"]("textutils.py", tools["read_file"]("textutils.py")
                        + '\n\ndef slugify(text):\n    return "-".join(text.lower().split())\n')
    return tools["run_tests"]()


def to_csv(tools: Tools) -> str:
    return tools["run_python"](
        "import csv, json\nrows = json.load(open('contacts.json'))\n"
        "with open('contacts.csv', 'w', newline='') as f:\n    out = csv.writer(f)\n"
        "    out.writerow(['name', 'email'])\n"
        "    out.writerows([r['name'], r['email']] for r in rows)\n")


def flaky(tools: Tools) -> str:
    with contextlib.suppress(TimeoutError):  # the service fails once per run
        tools["get_exchange_rate"]("USD", "EUR")
    return f"{250 * tools['get_exchange_rate']('USD', 'EUR'):.2f} EUR"


def deploy(tools: Tools) -> str:
    try:
        return str(tools["deploy"]("production"))
    except PermissionError as exc:
        return f"The deploy failed: {exc}"


SOLUTIONS: dict[str, Callable[[Tools], str]] = {
    "rename_function": rename,
    "version_bump": bump,
    "move_constant": move_constant,
    "add_requirement": lambda t: t["write_file"](
        "requirements.txt", "attrs==23.2.0\nclick==8.1.7\nhttpx==0.27.0\nrich==13.7.1\n"),
    "fix_failing_test": fix_mean,
    "which_test_fails": lambda t: "test_parse_date fails: it reads DD/MM as MM/DD.",
    "implement_slugify": slugify,
    "csv_region_total": lambda t: "The north region sold 2,000.00 in total.",
    "csv_top_revenue": lambda t: "anvil (4,200)",
    "json_admins": lambda t: "ines@corp.example and mei@corp.example",
    "json_to_csv": to_csv,
    "json_set_retries": lambda t: t["replace_in_file"]("settings.json", '"retries": 3',
                                                       '"retries": 5'),
    "sql_march_orders": lambda t: str(t["sql"](MARCH)[0][0]) + " orders",
    "flaky_rate": flaky,
    "deploy_denied": deploy,
    "archived_ticket": lambda t: f"Ticket 4521 is {t['get_archived_ticket'](4521)}.",
    "wrong_path": lambda t: "host: " + t["read_file"]("config/database.yml").split()[3],
    "missing_cost": lambda t: "inventory.csv has no price or cost column, so I cannot tell.",
    "missing_phone": lambda t: "team.json has no phone number for Dana Whitfield.",
    "missing_notes": lambda t: "There are no meeting notes here, only todo.txt and budget.csv.",
    "pointer_chain": lambda t: "The access code is PELICAN-77.",
    "invoice_chain": lambda t: f"{t['convert_currency'](340, 'GBP', 'EUR')} EUR",
    "alert_chain": lambda t: "Email rhea.marsh@corp.example (on call for payments).",
    "log_error_meaning": lambda t: "E1042: the payment gateway rejected the connection.",
    "count_todos": lambda t: "There are 4 TODO comments.",
}


def check_solutions(tasks: list[Task], solutions: dict[str, Callable[[Tools], object]],
                    make_tools: Callable[[Path], Tools], split: str) -> int:
    """Each task's checker against its solution (must accept) and against the untouched
    workspace with an empty answer (must reject); prints what is wrong, 1 if anything is."""
    wrong: list[str] = []
    for task in tasks:
        for solve in (solutions[task.name], None):
            workspace = Path(tempfile.mkdtemp(prefix=f"lw-{split}-check-"))
            try:
                task.setup(workspace)
                answer = str(solve(make_tools(workspace))) if solve else ""
                if task.check(answer, workspace) != (solve is not None):
                    verdict = ("rejects the solution" if solve
                               else "accepts the untouched workspace")
                    wrong.append(f"{task.name}: {verdict}")
            finally:
                shutil.rmtree(workspace)
    print("\n".join(wrong) or f"all {len(tasks)} checkers accept their solution and reject "
          "the untouched workspace")
    return 1 if wrong else 0


def main() -> int:
    return check_solutions(TASKS, SOLUTIONS, make_tools, "heldout")


if __name__ == "__main__":
    sys.exit(main())
