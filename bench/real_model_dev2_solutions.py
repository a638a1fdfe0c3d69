"""Checks the dev2 split's checkers, not a model: each must accept a hand-written correct
solution and reject the untouched workspace with an empty answer.

    python bench/real_model_dev2_solutions.py

Run it after editing a checker; it calls the split's own tools, so the sandbox runs too.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable

from real_model_dev2 import TASKS, make_tools
from real_model_heldout_solutions import Tools, check_solutions, edit


def rename_constant(tools: Tools) -> str:
    for path in ("settings.py", "client.py", "sync.py"):
        edit(tools, path, "RETRIES", "MAX_RETRIES")
    return "Renamed RETRIES to MAX_RETRIES in settings.py, client.py and sync.py."


def add_parameter(tools: Tools) -> str:
    tools["write_file"]("names.py", "def full_name(first, last, title=''):\n"
                        "    name = f'{first} {last}'\n"
                        "    return f'{title} {name}' if title else name\n")
    edit(tools, "badge.py", "def badge(first, last):", "def badge(first, last, title=''):")
    edit(tools, "badge.py", "full_name(first, last)", "full_name(first, last, title)")
    return "Done: full_name and badge take an optional title."


def fix_the_bug(tools: Tools) -> str:
    edit(tools, "geometry.py", "3.14159 * radius * radius", "2 * 3.14159 * radius")
    return "circle_circumference computed the area; it is 2 * pi * r now and the tests pass."


def sum_to_file(tools: Tools) -> str:
    total = sum(int(n) for n in tools["read_file"]("numbers.txt").split())
    tools["write_file"]("total.txt", f"{total}\n")
    return f"The total is {total}; written to total.txt."


def chain_license(tools: Tools) -> str:
    [package] = tools["search_packages"]("css")
    first = tools["get_dependencies"](package)[0]
    version = tools["get_latest_version"](first)
    return f"{first} {version} is licensed {tools['get_license'](first, version)}."


def chain_repair(tools: Tools) -> str:
    tickets = tools["list_repairs"](tools["find_device"]("printer-3f"))
    user = tools["get_repair"](tickets[-1])["technician"]
    return f"{user} repaired it last; phone {tools['get_phone'](user)}."


def sqlite_garden(tools: Tools) -> str:
    [[count]] = tools["query_db"]("select count(*) from products where category = 'garden' "
                                  "and price > 20")
    return f"{count} garden products cost more than 20."


def quote_retry(tools: Tools) -> str:
    with contextlib.suppress(TimeoutError):  # it fails once, then works
        tools["get_quote"]("ACME")
    return f"ACME trades at ${tools['get_quote']('ACME')}."


SOLUTIONS: dict[str, Callable[[Tools], str]] = {
    "rename_constant": rename_constant,
    "add_parameter": add_parameter,
    "fix_the_bug": fix_the_bug,
    "test_counts": lambda _: "3 tests passed and 1 failed (test_sell_all).",
    "csv_station_total": lambda _: "The north station recorded 215 mm.",
    "json_available": lambda _: "Ines and Wen.",
    "sqlite_garden": sqlite_garden,
    "sum_to_file": sum_to_file,
    "ci_down": lambda _: "I could not tell: the CI server is unreachable (connection refused).",
    "quote_retry": quote_retry,
    "city_name": lambda t: f"It is {t['get_temperature']('New York')} °C in New York.",
    "missing_setting": lambda _: "service.json does not say how many threads it uses; it "
                                 "only sets 4 workers and port 8443.",
    "missing_employee": lambda _: "There is no employee named Priya Shah in the directory, so "
                                  "I cannot give an extension.",
    "license_chain": chain_license,
    "repair_chain": chain_repair,
}


def main() -> int:
    return check_solutions(TASKS, SOLUTIONS, make_tools, "dev2")


if __name__ == "__main__":
    sys.exit(main())
