"""`loopwright skills list`: the skills a run in this directory would offer, and where each came
from (project, `skill_paths` setting, user config dir), plus shadowed and skipped ones.

Exit code 0, or 6 for a configuration error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

EXIT_CONFIG = 6

skills_app = typer.Typer(
    help="Skills: SKILL.md folders offered to the model, and where they were found.",
    no_args_is_help=True,
    add_completion=False,
)


@skills_app.command("list")
def list_command(
    json_output: Annotated[bool, typer.Option(
        "--json", help="Print one JSON object per skill instead of a table.")] = False,
) -> None:
    """List the skills found for the current directory and where each one came from."""
    from loopwright.cli.inert import escape_controls
    from loopwright.config import load_settings
    from loopwright.errors import ConfigError
    from loopwright.events import safe_json
    from loopwright.skills import SkillCatalog, find_skills, skill_roots
    from loopwright.trust import prompt_content_trusted

    try:
        settings = load_settings()
    except ConfigError as exc:
        typer.echo(f"configuration error: {exc}", err=True)
        raise typer.Exit(EXIT_CONFIG) from None
    workdir = Path(settings.workdir).expanduser().resolve() if settings.workdir else Path.cwd()
    trusted = settings.trust_project_files or prompt_content_trusted(workdir)
    catalog = find_skills(skill_roots(workdir, extra_paths=settings.skill_paths or (),
                                      project=trusted))
    held = SkillCatalog() if trusted else find_skills(
        [root for root in skill_roots(workdir) if root.source == "project"])
    for warning in [*catalog.warnings, *held.warnings]:
        typer.echo(f"loopwright: {escape_controls(warning)}", err=True)  # folder names
    rows = [_row(s, "offered") for s in catalog.skills]
    rows += [_row(s, "shadowed") for s in catalog.shadowed]
    rows += [_row(s, "untrusted") for s in held.skills]  # an untrusted project's: not loaded
    if json_output:
        for row in rows:
            typer.echo(safe_json(json.dumps(row, ensure_ascii=False)))
        return
    if not settings.skills:
        typer.echo("Skills are switched off (the `skills` setting); these would be offered:")
    if not rows:
        searched = "\n".join(f"  {root.path}" for root in catalog.roots)
        typer.echo(f"No skills found. Searched:\n{searched}\nA skill is a folder with a SKILL.md "
                   "starting with front-matter:\n  ---\n  name: my-skill\n  description: what it "
                   "is for and when to use it\n  ---")
        return
    width = max(len(row["name"]) for row in rows)
    for row in rows:
        note = {"shadowed": "  (shadowed: a skill of this name is found first)",
                "untrusted": "  (not loaded: the project is not trusted; `loopwright trust`)",
                }.get(row["status"], "")
        path = escape_controls(row["path"])  # a folder name may hold a terminal escape
        typer.echo(f"{row['name']:<{width}}  {row['source']:<8}  {path}{note}")
        typer.echo(f"{'':<{width}}  {row['description'][:200]}")


def _row(skill: Any, status: str) -> dict[str, Any]:
    return {"name": skill.name, "description": skill.description, "source": skill.root.source,
            "path": str(skill.path), "status": status}
