"""Discovery of skill folders from real directories, with hostile SKILL.md files, and
`loopwright skills list`."""

from __future__ import annotations

import json
import os
from pathlib import Path

from typer.testing import CliRunner

from loopwright.skills import find_skills, skill_roots
from loopwright.skills.frontmatter import MAX_DESCRIPTION_CHARS
from loopwright.trust import TrustStore, project_digest


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def skills_dir(project: Path) -> Path:
    return project / ".loopwright" / "skills"


def test_bad_front_matter_is_skipped_with_one_line_each(tmp_path: Path) -> None:
    root = skills_dir(tmp_path)
    write(root / "good" / "SKILL.md", "---\nname: good\ndescription: fine\n---\nbody")
    write(root / "yaml" / "SKILL.md", "---\nname: [unclosed\ndescription: x\n---\n")
    write(root / "none" / "SKILL.md", "# just markdown\n")
    write(root / "open" / "SKILL.md", "---\nname: open\ndescription: never closed\n")
    write(root / "long" / "SKILL.md",
          f"---\nname: long\ndescription: {'x' * (MAX_DESCRIPTION_CHARS + 1)}\n---\n")
    write(root / "huge" / "SKILL.md", "---\n" + "a: b\n" * 5000 + "---\n")
    write(root / "type" / "SKILL.md", "---\nname: 12\ndescription: [a, b]\n---\n")
    write(root / "evil-name" / "SKILL.md", "---\nname: ../../etc\ndescription: d\n---\n")
    write(root / "bomb" / "SKILL.md",  # an alias bomb: must not expand
          "---\na: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
          "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nname: bomb\ndescription: *c\n---\n")
    write(root / "binary" / "SKILL.md", b"---\nname: \xff\xfe\x00\ndescription: d\n---\n")
    os.mkfifo(write(root / "fifo" / "placeholder", "").parent / "SKILL.md")  # must not block
    catalog = find_skills(skill_roots(tmp_path, user_dir=tmp_path / "no-user"))
    assert [s.name for s in catalog.skills] == ["good"]
    by_folder = {Path(w.split(":", 1)[0]).parent.name: w for w in catalog.warnings}
    assert set(by_folder) == {"yaml", "none", "open", "long", "huge", "type", "evil-name",
                              "bomb", "binary"}  # a FIFO is no file: passed over, unread
    assert all("\n" not in w and "skipped" in w for w in catalog.warnings)
    assert "not valid YAML" in by_folder["yaml"]
    assert "no front-matter" in by_folder["none"]
    assert "not closed" in by_folder["open"]
    assert "over the 1,024 limit" in by_folder["long"]
    assert "longer than" in by_folder["huge"]
    assert "no 'name' text" in by_folder["type"]
    assert "may only hold" in by_folder["evil-name"]
    assert "no 'description' text" in by_folder["bomb"]


def test_a_skill_linking_out_of_the_project_is_skipped(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    secret = write(tmp_path / "elsewhere" / "SKILL.md",
                   "---\nname: leak\ndescription: outside\n---\nSECRET")
    skills_dir(project).mkdir(parents=True)
    (skills_dir(project) / "leak").symlink_to(secret.parent)
    shared = write(project / "shared" / "inside" / "SKILL.md",
                   "---\nname: inside\ndescription: linked within the repo\n---\n")
    (skills_dir(project) / "inside").symlink_to(shared.parent)
    catalog = find_skills(skill_roots(project, user_dir=tmp_path / "no-user"))
    assert [s.name for s in catalog.skills] == ["inside"]
    assert any("outside" in w and "leak" in w for w in catalog.warnings)


def test_project_skills_are_found_up_to_the_repository_root(tmp_path: Path) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    write(tmp_path / "repo" / ".agents" / "skills" / "top" / "SKILL.md",
          "---\nname: top\ndescription: at the root\n---\n")
    write(tmp_path / ".claude" / "skills" / "above" / "SKILL.md",  # above the repository
          "---\nname: above\ndescription: not searched\n---\n")
    sub = tmp_path / "repo" / "pkg"
    write(sub / ".claude" / "skills" / "near" / "SKILL.md",
          "---\nname: near\ndescription: closest\n---\n")
    catalog = find_skills(skill_roots(sub, user_dir=tmp_path / "no-user"))
    assert [s.name for s in catalog.skills] == ["near", "top"]


def test_skills_list_shows_each_skill_and_where_it_came_from(
        tmp_path: Path, isolated_home: Path, monkeypatch: object) -> None:
    from loopwright.cli.main import app

    write(skills_dir(tmp_path) / "a" / "SKILL.md", "---\nname: alpha\ndescription: A\n---\n")
    write(isolated_home / ".config" / "loopwright" / "skills" / "b" / "SKILL.md",
          "---\nname: beta\ndescription: B\n---\n")
    write(isolated_home / ".config" / "loopwright" / "skills" / "c" / "SKILL.md",
          "---\nname: alpha\ndescription: shadowed\n---\n")
    write(isolated_home / ".config" / "loopwright" / "skills" / "d" / "SKILL.md", "broken")
    TrustStore().trust(tmp_path.resolve(), project_digest(tmp_path))  # the project's own count
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        runner = CliRunner()
        table = runner.invoke(app, ["skills", "list"])
        rows = runner.invoke(app, ["skills", "list", "--json"])
    finally:
        os.chdir(cwd)
    assert table.exit_code == 0, table.output
    assert "alpha" in table.stdout and "project" in table.stdout and "user" in table.stdout
    assert "shadowed" in table.stdout
    assert "no front-matter" in table.stderr
    parsed = [json.loads(line) for line in rows.stdout.splitlines()]
    assert [(r["name"], r["source"], r["status"]) for r in parsed] == [
        ("alpha", "project", "offered"), ("beta", "user", "offered"),
        ("alpha", "user", "shadowed")]


def test_skills_list_marks_an_untrusted_projects_skills_as_not_loaded(
        tmp_path: Path, isolated_home: Path) -> None:
    from loopwright.cli.main import app

    write(skills_dir(tmp_path) / "a" / "SKILL.md", "---\nname: alpha\ndescription: A\n---\n")
    write(isolated_home / ".config" / "loopwright" / "skills" / "c" / "SKILL.md",
          "---\nname: alpha\ndescription: the user's\n---\n")
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        table = CliRunner().invoke(app, ["skills", "list"])
        rows = CliRunner().invoke(app, ["skills", "list", "--json"])
    finally:
        os.chdir(cwd)
    assert "not loaded: the project is not trusted" in table.stdout
    parsed = [json.loads(line) for line in rows.stdout.splitlines()]
    assert [(r["name"], r["source"], r["status"]) for r in parsed] == [
        ("alpha", "user", "offered"), ("alpha", "project", "untrusted")]


def test_control_characters_never_reach_the_prompt_or_the_terminal(
        tmp_path: Path, isolated_home: Path) -> None:
    """A description with a terminal escape (YAML allows `\\e` in double quotes) or a bidi
    override is skipped with a one-line warning; a folder name with one is shown escaped."""
    from loopwright.cli.main import app

    root = skills_dir(tmp_path)
    write(root / "esc" / "SKILL.md", '---\nname: esc\ndescription: "ok\\e]0;pwned\\a\\e[2J"\n---\n')
    write(root / "bidi" / "SKILL.md", '---\nname: bidi\ndescription: "a\\u202eb"\n---\n')
    write(root / "evil\x1b[2Jdir" / "SKILL.md", "---\nname: fine\ndescription: fine\n---\n")
    write(root / "evil\x1b[2Jbad" / "SKILL.md", "no front-matter")
    catalog = find_skills(skill_roots(tmp_path, user_dir=tmp_path / "no-user"))
    assert [s.name for s in catalog.skills] == ["fine"]
    assert any("esc" in w and "control" in w for w in catalog.warnings), catalog.warnings
    assert any("bidi" in w and "control" in w for w in catalog.warnings), catalog.warnings
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        table = CliRunner().invoke(app, ["skills", "list"])
    finally:
        os.chdir(cwd)
    assert table.exit_code == 0, table.output
    assert "fine" in table.stdout and "\\x1b[2Jdir" in table.stdout
    assert "\x1b" not in table.stdout + table.stderr and "\x07" not in table.stderr
