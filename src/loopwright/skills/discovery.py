"""Finding skills: folders holding a `SKILL.md` (front-matter `name` and `description`, then the
instructions), with any files the instructions refer to beside it.

Where, in precedence order (the first skill of a name wins; later ones are listed as shadowed):

1. the project: `.loopwright/skills/`, `.claude/skills/` and `.agents/skills/` in the working
   directory and each parent up to the repository root (closest first);
2. the `skill_paths` setting (relative paths are relative to the working directory);
3. the user's config dir: `~/.config/loopwright/skills/`.

Each root holds one folder per skill. A folder or `SKILL.md` that is a symlink must stay inside
its boundary (the repository for project skills, the root itself otherwise), so a cloned project
cannot point the prompt at a file elsewhere. A skill whose front-matter is unusable is skipped with
a one-line warning.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from loopwright.context.prompt import repository_root
from loopwright.errors import ToolError
from loopwright.safety.protected import SKILL_DIRS, setting_skill_folders
from loopwright.skills.frontmatter import MAX_HEAD_BYTES, SkillFormatError, parse_front_matter

PROJECT_DIRS = SKILL_DIRS  # one list with the protected paths (safety/protected.py)
SKILL_FILE = "SKILL.md"
MAX_FOLDERS_PER_ROOT = 200
MAX_SKILLS = 100


@dataclass(frozen=True, slots=True)
class SkillRoot:
    """A directory of skill folders, where it came from, and what its links may point into."""

    path: Path
    source: str  # "project", "settings" or "user"
    boundary: Path


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    path: Path  # the SKILL.md, symlinks resolved
    root: SkillRoot

    @property
    def directory(self) -> Path:
        return self.path.parent


@dataclass
class SkillCatalog:
    """What discovery found: usable skills (unique names), shadowed ones, and warnings."""

    skills: list[Skill] = field(default_factory=list)
    shadowed: list[Skill] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    roots: list[SkillRoot] = field(default_factory=list)

    def get(self, name: str) -> Skill | None:
        return next((s for s in self.skills if s.name == name), None)

    def read_only_roots(self, workdir: Path) -> list[Path]:
        """Roots holding a skill but lying outside `workdir`: the file tools may read there
        (never write) so that a user's skill can refer to its own files."""
        if not self.skills:  # every run asks: no path resolved on the disk for no skill
            return []
        work = workdir.resolve()
        found: dict[Path, None] = {}
        for skill in self.skills:
            root = skill.root.path.resolve()
            if not (root == work or root.is_relative_to(work)):
                found.setdefault(root, None)
        return list(found)


def skill_roots(workdir: Path, *, extra_paths: Iterable[str] = (),
                user_dir: Path | None = None, project: bool = True) -> list[SkillRoot]:
    """The directories searched, in precedence order (see the module docstring); without the
    project's own when `project` is false (an untrusted project: `loopwright.trust`)."""
    workdir = workdir.resolve()
    roots = project_skill_roots(workdir, repository_root(workdir)) if project else []
    for path in setting_skill_folders(workdir, extra_paths):
        roots.append(SkillRoot(path=path, source="settings", boundary=path.resolve()))
    if user_dir is None:
        from loopwright.config import user_config_dir

        user_dir = user_config_dir()
    user_root = user_dir / "skills"
    roots.append(SkillRoot(path=user_root, source="user", boundary=user_root.resolve()))
    return roots


def project_skill_roots(workdir: Path, repository: Path | None) -> list[SkillRoot]:
    """The project's own skill directories: from `workdir` (resolved) up to `repository`, its
    repository's root (None outside one: `workdir` alone)."""
    roots: list[SkillRoot] = []
    for directory in (workdir, *workdir.parents):
        for name in PROJECT_DIRS:
            roots.append(SkillRoot(path=directory / name, source="project",
                                   boundary=repository or workdir))
        if directory == repository or repository is None:
            break
    return roots


def find_skills(roots: Sequence[SkillRoot]) -> SkillCatalog:
    """Every skill under `roots` (blocking: call it from a worker thread in async code)."""
    catalog = SkillCatalog(roots=list(roots))
    seen_roots: set[Path] = set()
    for root in roots:
        try:
            real = root.path.resolve()
            if real in seen_roots or not root.path.is_dir():
                continue
        except OSError:
            continue
        seen_roots.add(real)
        for skill in _skills_in(root, catalog.warnings):
            if catalog.get(skill.name) is not None:
                catalog.shadowed.append(skill)
            elif len(catalog.skills) >= MAX_SKILLS:
                catalog.warnings.append(f"{skill.path}: skipped, more than {MAX_SKILLS} skills")
            else:
                catalog.skills.append(skill)
    return catalog


def _skills_in(root: SkillRoot, warnings: list[str]) -> list[Skill]:
    try:
        with os.scandir(root.path) as listing:
            folders = [entry for entry in listing if not entry.name.startswith(".")]
    except OSError as exc:
        warnings.append(f"{root.path}: cannot list skills: {exc.strerror or exc}")
        return []
    found: list[Skill] = []
    for entry in sorted(folders, key=lambda e: e.name)[:MAX_FOLDERS_PER_ROOT]:
        candidate = Path(entry.path) / SKILL_FILE
        try:
            if not candidate.is_file():
                continue
            skill = _load(candidate, root)
        except SkillFormatError as exc:
            warnings.append(f"{candidate}: skipped: {exc}")
            continue
        except (OSError, ToolError) as exc:
            warnings.append(f"{candidate}: skipped: cannot read it: {exc}")
            continue
        found.append(skill)
    return found


def _load(candidate: Path, root: SkillRoot) -> Skill:
    real = candidate.resolve()
    if not real.is_relative_to(root.boundary):
        raise SkillFormatError(f"it resolves to {real}, outside {root.boundary}")
    head = read_head(real, root.boundary, MAX_HEAD_BYTES)
    meta = parse_front_matter(head.decode("utf-8", errors="replace"))
    return Skill(name=meta.name, description=meta.description, path=real, root=root)


def read_head(path: Path, boundary: Path, limit: int) -> bytes:
    """At most `limit` bytes of `path`, opened without following a link swapped in since the
    check, and only if it is a regular file inside `boundary` (a FIFO would block)."""
    from loopwright.builtin.workspace import open_checked

    fd = open_checked(path, [boundary], os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not _is_regular(fd):
            raise SkillFormatError("not a regular file")
        chunks: list[bytes] = []
        left = limit
        while left > 0:
            chunk = os.read(fd, min(left, 65_536))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _is_regular(fd: int) -> bool:
    import stat

    return stat.S_ISREG(os.fstat(fd).st_mode)
