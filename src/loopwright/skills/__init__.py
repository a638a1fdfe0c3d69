"""Skills (issue 19): `SKILL.md` folders found in the project, the settings and the user's config
dir; their names and descriptions in the static system prompt, their instructions loaded on demand
by the `skill` tool. See `discovery` (where and how they are found) and `tool` (the listing and
the tool)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopwright.plugins import LoopPlugin, RunView
from loopwright.skills.discovery import Skill, SkillCatalog, SkillRoot, find_skills, skill_roots
from loopwright.skills.tool import loaded_skills, skill_tool, skills_prompt_section

if TYPE_CHECKING:
    from loopwright.tools.base import Tool

__all__ = ["AgentSkills", "Skill", "SkillCatalog", "SkillRoot", "find_skills", "loaded_skills",
           "skill_roots", "skill_tool", "skills_prompt_section"]


class AgentSkills:
    """What an agent gets from its skills: the tool, the prompt section, the read-only roots
    for the file tools, and a plugin reporting skipped skills."""

    def __init__(self, catalog: SkillCatalog, workdir: Path) -> None:
        self.catalog = catalog
        self.workdir = workdir
        self._section = skills_prompt_section(catalog)

    @classmethod
    def from_settings(cls, settings: Any, workdir: Path) -> AgentSkills:
        """Discovery as the settings say (`skills`, `skill_paths`); nothing when off. The
        project's own skills only when the project is trusted with them (`loopwright.trust`)."""
        if not settings.skills:
            return cls(SkillCatalog(), workdir)
        from loopwright.trust import prompt_content_trusted

        trusted = settings.trust_project_files or prompt_content_trusted(workdir)
        roots = skill_roots(workdir, extra_paths=settings.skill_paths or (), project=trusted)
        return cls(find_skills(roots), workdir)

    def tools(self) -> list[Tool]:
        return [skill_tool(self.catalog)] if self.catalog.skills else []

    def prompt_section(self) -> str:
        return self._section

    def read_only_roots(self) -> list[str]:
        return [str(root) for root in self.catalog.read_only_roots(self.workdir)]

    def plugins(self) -> list[LoopPlugin]:
        return [_SkippedSkills(self.catalog.warnings)] if self.catalog.warnings else []


class _SkippedSkills(LoopPlugin):
    """Tells the first run of the agent, once, which skills were skipped and why."""

    def __init__(self, warnings: list[str]) -> None:
        self.warnings = list(warnings)

    async def on_run_start(self, run: RunView) -> None:
        warnings, self.warnings = self.warnings, []
        for warning in warnings:
            run.status("skill_skipped", warning)
