"""Write the tables of docs/settings.md from the one definition of the settings
(`src/loopwright/settings.py`: each field's type, default, concern and doc).

    python docs/settings_reference.py            # rewrite the tables in docs/settings.md
    python docs/settings_reference.py --check    # exit 1 when the file is not up to date

Each concern's section is what stands between `<!-- settings: KEY -->` and `<!-- /settings -->`:
its heading (with the table a loopwright.toml may group them in) and its table, both generated.
Everything outside the markers is written by hand.
tests/test_docs.py checks that the committed file is what this script writes.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from pathlib import Path
from typing import Any

from loopwright.settings import CONCERNS, Concern, Settings

PAGE = Path(__file__).resolve().parent / "settings.md"
BLOCK = re.compile(r"<!-- settings: (?P<key>[a-z_]+) -->\n.*?<!-- /settings -->", re.DOTALL)


def shown_default(setting: dataclasses.Field[Any]) -> str:
    """The default as the table shows it: the setting's own words when it is worked out at run
    time, else the value as it is written in loopwright.toml."""
    if setting.metadata["shown"] is not None:
        return str(setting.metadata["shown"])
    if setting.default_factory is not dataclasses.MISSING:
        value = setting.default_factory()
    else:
        value = setting.default
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if value is None:
        return "`None`"
    if isinstance(value, str):
        return f"`{value}`"
    if value == []:
        return "`[]`"
    if value == {}:
        return "`{}`"
    return f"`{value!r}`"


def section(concern: Concern) -> str:
    """One concern's heading and table."""
    rows = []
    for setting in dataclasses.fields(Settings):
        if setting.metadata.get("concern") != concern:
            continue
        cells = (f"`{setting.name}`", shown_default(setting), setting.metadata["doc"])
        if any("|" in cell or "\n" in cell for cell in cells):
            raise SystemExit(f"{setting.name}: a table cell may hold no '|' and no line break")
        rows.append("| " + " | ".join(cells) + " |")
    if not rows:
        raise SystemExit(f"concern {concern.key!r} has no settings")
    return (f"<!-- settings: {concern.key} -->\n## {concern.title} `[{concern.key}]`\n\n"
            "| setting | default | meaning |\n|---|---|---|\n" + "\n".join(rows) +
            "\n<!-- /settings -->")


def undocumented() -> list[str]:
    """Settings without a concern of `CONCERNS` or without a doc."""
    return [setting.name for setting in dataclasses.fields(Settings)
            if setting.metadata.get("concern") not in CONCERNS
            or not setting.metadata.get("doc")]


def rewrite(page: str) -> str:
    """`page` with every concern's section generated anew; a concern without its markers, or
    markers naming no concern, is an error."""
    missing = undocumented()
    if missing:
        raise SystemExit(f"settings without a concern or a doc: {', '.join(missing)}")
    by_key = {concern.key: concern for concern in CONCERNS}
    found = [match["key"] for match in BLOCK.finditer(page)]
    unknown = sorted(set(found) - set(by_key))
    absent = [key for key in by_key if key not in found]
    if unknown or absent or len(found) != len(set(found)):
        raise SystemExit(f"{PAGE.name}: markers for unknown concerns {unknown}, none for "
                         f"{absent}, or one concern twice ({found})")
    return BLOCK.sub(lambda match: section(by_key[match["key"]]), page)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="only check that the page is up to date")
    args = parser.parse_args()
    page = PAGE.read_text(encoding="utf-8")
    fresh = rewrite(page)
    if args.check:
        if fresh != page:
            sys.exit(f"{PAGE} is out of date: run python docs/settings_reference.py")
        return
    PAGE.write_text(fresh, encoding="utf-8")
    print(f"wrote {PAGE}")


if __name__ == "__main__":
    main()
