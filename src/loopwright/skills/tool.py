"""Progressive disclosure: the system prompt lists each skill's name and description only, and the
`skill` tool loads one skill's instructions when the model decides it needs them.

The listing is built once per agent from what discovery found, sorted and bounded, so it belongs
to the static, cacheable prefix of the system prompt. A loaded skill is a tool result, so it is
stored with the session: a resumed run sees it in its history, and loading it again only points
back at it (until compaction summarises it away; then it loads afresh).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path

from loopwright.errors import ToolError
from loopwright.messages import Message
from loopwright.skills.discovery import Skill, SkillCatalog, read_head
from loopwright.tools.base import Tool, ToolContext, tool_from_function

SKILL_TOOL = "skill"
MAX_BODY_BYTES = 100_000
MAX_LISTED_FILES = 50
PROMPT_DESCRIPTION_CHARS = 300
PROMPT_LISTING_CHARS = 12_000
SKILLS_INTRO = (
    "# Skills\n"
    "Skills hold instructions for particular kinds of task. When the task at hand matches a "
    "skill's description, call the `skill` tool with its name to load its instructions before "
    "you start, and follow them; files they mention are in the skill's folder (read them with "
    "the file tools). Available skills:"
)


def skills_prompt_section(catalog: SkillCatalog) -> str:
    """The static prompt section listing every skill ("" without skills), bounded in size."""
    if not catalog.skills:
        return ""
    lines = [SKILLS_INTRO]
    used = len(SKILLS_INTRO)
    left_out: list[str] = []
    for skill in sorted(catalog.skills, key=lambda s: s.name):
        description = skill.description
        if len(description) > PROMPT_DESCRIPTION_CHARS:
            description = description[:PROMPT_DESCRIPTION_CHARS - 1].rstrip() + "…"
        line = f"- {skill.name}: {description}"
        if used + len(line) + 1 > PROMPT_LISTING_CHARS:
            left_out.append(skill.name)
            continue
        lines.append(line)
        used += len(line) + 1
    if left_out:
        lines.append(f"- (without descriptions, to keep this short): {', '.join(left_out)}")
    return "\n".join(lines)


def skill_header(skill: Skill) -> str:
    return f'<skill name="{skill.name}">'


def loaded_skills(history: Sequence[Message]) -> list[str]:
    """Names of the skills whose instructions are in `history` (loaded by the `skill` tool)."""
    names: list[str] = []
    for message in history:
        if message.role == "tool" and message.name == SKILL_TOOL and not message.is_error \
                and message.content.startswith('<skill name="'):
            name = message.content[len('<skill name="'):].split('"', 1)[0]
            if name not in names:
                names.append(name)
    return names


def skill_tool(catalog: SkillCatalog) -> Tool:
    """The `skill` tool over `catalog`."""

    async def skill(name: str, ctx: ToolContext) -> str:
        """Load the full instructions of a skill listed under "Skills" in your instructions.

        Args:
            name: the skill's name, exactly as listed.
        """
        chosen = catalog.get(name.strip())
        if chosen is None:
            known = ", ".join(s.name for s in catalog.skills) or "(none)"
            raise ToolError(f"no skill named {name!r}; the skills are: {known}")
        if ctx.run is not None and chosen.name in loaded_skills(ctx.run.history):
            ctx.status("skill_loaded", f"skill {chosen.name} is already loaded",
                       name=chosen.name, source=chosen.root.source, already_loaded=True)
            return (f"The skill {chosen.name!r} is already loaded earlier in this conversation; "
                    "follow those instructions.")
        text = await asyncio.to_thread(render_skill, chosen, Path(ctx.workdir))
        ctx.status("skill_loaded", f"loaded skill {chosen.name} ({chosen.root.source})",
                   name=chosen.name, source=chosen.root.source, path=str(chosen.path),
                   already_loaded=False)
        return text

    return tool_from_function(skill, name=SKILL_TOOL, read_only=True, core=True)


def render_skill(skill: Skill, workdir: Path) -> str:
    """The skill's instructions, where its folder is, and the files beside them."""
    from loopwright.skills.frontmatter import parse_front_matter

    raw = read_head(skill.path, skill.root.boundary, MAX_BODY_BYTES + 1)
    text = raw[:MAX_BODY_BYTES].decode("utf-8", errors="replace").removeprefix("\ufeff")
    body = text[parse_front_matter(text).body_offset:].strip()
    if len(raw) > MAX_BODY_BYTES:
        body += (f"\n[… cut at {MAX_BODY_BYTES:,} bytes; read {skill.path} with the file tools "
                 "for the rest]")
    folder = _shown(skill.directory, workdir)
    files = _files_beside(skill.directory)
    listing = "\n".join(f"- {folder}/{f}" for f in files[:MAX_LISTED_FILES]) or "(none)"
    if len(files) > MAX_LISTED_FILES:
        listing += "\n- (more files: list the folder to see them all)"
    return (f"{skill_header(skill)}\nFolder: {folder}\n\n{body}\n\n"
            f"Files in the skill's folder (read them with the file tools when the instructions "
            f"refer to them):\n{listing}\n</skill>")


def _shown(path: Path, workdir: Path) -> str:
    try:
        return str(path.relative_to(workdir.resolve()))
    except ValueError:
        return str(path)


def _files_beside(directory: Path) -> list[str]:
    found: list[str] = []
    for current, dirs, files in os.walk(directory):  # links are not followed
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        base = Path(current).relative_to(directory)
        for name in sorted(files):
            if name != "SKILL.md" or base != Path("."):
                found.append(str(base / name) if base != Path(".") else name)
            if len(found) > MAX_LISTED_FILES:
                return found
    return found
