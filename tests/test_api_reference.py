"""The API reference (docs/api_reference.py, pdoc) builds from the docstrings without a warning,
and documents every public name."""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path

import loopwright

SCRIPT = Path(__file__).resolve().parent.parent / "docs" / "api_reference.py"


def test_the_api_reference_builds_and_documents_every_public_name(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("api_reference", SCRIPT)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    result = script.build(tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Warn" not in result.stdout + result.stderr, result.stdout + result.stderr
    for module in script.MODULES:
        assert (tmp_path / (module.replace(".", "/") + ".html")).is_file(), module
    page = (tmp_path / "loopwright.html").read_text(encoding="utf-8")
    for name in loopwright.__all__:
        assert f'id="{name}"' in page, f"{name} is not in the reference"
    assert "Run to the end and return the result." in page  # Agent.run's docstring
    review = (tmp_path / "loopwright" / "review.html").read_text(encoding="utf-8")
    for name in ("Check", "ReviewView", "Verdict", "send_back"):  # docs/settings.md's example
        assert f'id="{name}"' in review, f"{name} is not in the reference"


# public methods still without a docstring, in modules outside the library surface's own files
# (attachments, messages, plugins, tools): to come off this list as they get one
NOT_YET_DOCUMENTED = frozenset({
    "Attachment.read", "Attachment.base64", "Attachment.filename", "Attachment.to_dict",
    "Attachment.from_dict", "Message.from_dict",
    "RunView.run_id", "RunView.turn", "RunView.settings", "RunView.cancel_requested",
    "ToolCall.to_dict", "ToolContext.approve", "ToolContext.status", "Usage.add",
    "Usage.total_tokens", "Usage.to_dict",
})


def test_every_public_name_and_its_public_methods_have_a_docstring() -> None:
    """`RunHandle.steer` / `.cancel` / `.run_id`, `RunResult.ok` / `.to_dict` and
    `event_to_json` were in the reference with nothing to say."""
    undocumented = []
    for name in loopwright.__all__:
        value = getattr(loopwright, name)
        if not inspect.getdoc(value):
            undocumented.append(name)
        if not inspect.isclass(value):
            continue
        for attribute, member in vars(value).items():
            function = member.fget if isinstance(member, property) else member
            if isinstance(function, classmethod | staticmethod):
                function = function.__func__
            if (not attribute.startswith("_") and callable(function)
                    and not function.__doc__):
                undocumented.append(f"{name}.{attribute}")
    assert sorted(set(undocumented) - NOT_YET_DOCUMENTED) == []
