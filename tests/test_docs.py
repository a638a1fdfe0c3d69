"""The docs in `docs/` are written from the code; these checks keep them from drifting."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import re
import subprocess
import typing
from pathlib import Path
from types import ModuleType

import pytest

from loopwright import events
from loopwright.result import StopReason
from loopwright.settings import CONCERNS, Settings

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
OUTSIDE = ".." + "/shared"  # spelt in two parts so this file does not match itself


def test_every_setting_is_documented() -> None:
    text = (DOCS / "settings.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", text, flags=re.MULTILINE))
    names = {f.name for f in dataclasses.fields(Settings)}
    assert names - documented == set(), "add a row for each new setting to docs/settings.md"
    assert documented - names == set(), "docs/settings.md lists settings that do not exist"


def settings_reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("settings_reference",
                                                  DOCS / "settings_reference.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def test_the_settings_tables_are_written_from_the_settings() -> None:
    """Issue 31: each setting declares its concern and doc once (`settings.py`); the page's
    tables, one per concern in that order, are what docs/settings_reference.py writes."""
    script = settings_reference()
    page = (DOCS / "settings.md").read_text(encoding="utf-8")
    assert script.undocumented() == []
    assert script.rewrite(page) == page, "run python docs/settings_reference.py"
    headings = re.findall(r"<!-- settings: [a-z_]+ -->\n## (.+)", page)
    assert headings == [f"{concern.title} `[{concern.key}]`" for concern in CONCERNS]
    for setting in dataclasses.fields(Settings):
        section = page.split(f"<!-- settings: {setting.metadata['concern'].key} -->", 1)[1]
        assert f"| `{setting.name}` |" in section.split("<!-- /settings -->", 1)[0]


def test_a_stale_or_broken_settings_page_is_refused() -> None:
    script = settings_reference()
    page = (DOCS / "settings.md").read_text(encoding="utf-8")
    stale = page.replace("| `max_turns` | `90` |", "| `max_turns` | `80` |")
    assert stale != page and script.rewrite(stale) == page  # a hand edit is written over
    without = re.sub(r"<!-- settings: sandbox -->.*?<!-- /settings -->", "", page,
                     flags=re.DOTALL)
    with pytest.raises(SystemExit, match="none for \\['sandbox'\\]"):
        script.rewrite(without)
    with pytest.raises(SystemExit, match="unknown concerns \\['nothing'\\]"):
        script.rewrite(page + "\n<!-- settings: nothing -->\n<!-- /settings -->\n")


def test_every_event_type_and_stop_reason_is_documented() -> None:
    text = (DOCS / "events.md").read_text(encoding="utf-8")
    types = {field.default for cls in typing.get_args(events.Event)
             for field in dataclasses.fields(cls) if field.name == "type"}
    assert types, "no event types found"
    for name in types:
        assert f"| `{name}` |" in text, f"event {name!r} missing from docs/events.md"
    for reason in typing.get_args(StopReason):
        assert f"`{reason}`" in text, f"stop reason {reason!r} missing from docs/events.md"


def test_every_status_kind_is_documented_and_nothing_else() -> None:
    text = (DOCS / "events.md").read_text(encoding="utf-8")
    section = text.split("## Status kinds", 1)[1].split("\n## ", 1)[0]
    documented = re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.MULTILINE)
    assert sorted(documented) == sorted(typing.get_args(events.StatusKind))
    assert len(documented) == len(set(documented))


def test_nothing_in_the_repo_points_outside_it() -> None:
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    offenders = []
    for name in tracked:
        path = ROOT / name
        if path.suffix not in {".md", ".py", ".toml", ".txt", ".json", ".sh", ""}:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if OUTSIDE in text or "shared" + "/DESIGN" in text:
            offenders.append(name)
    assert offenders == []


def test_architecture_doc_names_modules_that_exist() -> None:
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    src = ROOT / "src" / "loopwright"
    for ref in set(re.findall(r"(?<![/\w])([a-z_]+/[a-z_]+\.py)\b", text)):
        where = ROOT / ref if ref.startswith(("tests/", "examples/")) else src / ref
        assert where.is_file(), f"docs/architecture.md names {ref}, which does not exist"


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(found, name):
                return False
            found = getattr(found, name)
        return True
    return False


@pytest.mark.parametrize("document", [ROOT / "README.md", *sorted(DOCS.glob("*.md"))],
                         ids=lambda path: path.name)
def test_every_dotted_python_name_in_the_docs_exists(document: Path) -> None:
    """docs/events.md named `events.to_dict()` / `events.from_dict()`, which do not exist (they
    are `event_to_dict` / `event_from_dict`)."""
    text = document.read_text(encoding="utf-8")
    names = set(re.findall(r"`[^`\n]*?\b(loopwright(?:\.\w+)+)", text))
    names |= {f"loopwright.{name}" for name in re.findall(r"`(events\.\w+)\(", text)}
    missing = sorted(name for name in names
                     if not name.endswith(".toml") and not _resolves(name))
    assert missing == []
