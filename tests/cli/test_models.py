"""`loopwright models` as a person reads it: the table where it fits, and in a narrow terminal
every model name and URL whole, never cut to "…"; the local servers it scans for (`--scan`) and
the embedded model `--local` runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loopwright.local import CONTEXT_SIZE, DEFAULT_MODEL
from loopwright.local.weights import model_spec, weights_path
from loopwright.testing import FakeModelServer
from shared_helpers import cli_env

MODEL = "qwen2.5-coder-1.5b-instruct"


def _models(tmp_path: Path, columns: int) -> tuple[str, str]:
    """What `models` prints at `columns`, and the server's base URL."""
    with FakeModelServer(context_window=16_384, flavor="llamacpp", model=MODEL) as server:
        done = subprocess.run(
            [sys.executable, "-m", "loopwright", "models", "--model", MODEL, "--base-url",
             server.base_url, "--no-scan"], cwd=tmp_path,
            env=cli_env(tmp_path, COLUMNS=str(columns)), capture_output=True, text=True,
            timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout, server.base_url


@pytest.mark.parametrize("columns", [40, 60])
def test_a_narrow_terminal_gets_each_provider_whole(tmp_path: Path, columns: int) -> None:
    shown, base_url = _models(tmp_path, columns)
    assert "…" not in shown and "┃" not in shown  # no table squeezed to cut cells
    assert f"base URL {base_url}" in shown
    assert all(len(line) <= columns for line in shown.splitlines())
    assert "primary · custom" in shown and f"model    {MODEL}" in shown
    assert "window   16,384 (probe:/props)" in shown


def test_a_wide_terminal_keeps_the_table(tmp_path: Path) -> None:
    shown, base_url = _models(tmp_path, 120)
    assert "Providers and context windows" in shown and "┃ role" in shown
    assert base_url in shown and MODEL in shown and "16,384" in shown and "…" not in shown


def _models_json(tmp_path: Path, *flags: str, **env: str) -> tuple[list[dict[str, Any]], str]:
    """The rows `models --json` prints against a primary on a fake server, and its stderr."""
    with FakeModelServer(context_window=8_192, flavor="vllm", model="m") as primary:
        done = subprocess.run(
            [sys.executable, "-m", "loopwright", "models", "--model", "m", "--base-url",
             primary.base_url, "--json", *flags], cwd=tmp_path, env=cli_env(tmp_path, **env),
            capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()], done.stderr


@pytest.mark.parametrize(("flags", "found"), [((), True), (("--scan",), True),
                                              (("--no-scan",), False)])
def test_scan_looks_for_local_servers_on_their_usual_ports(tmp_path: Path, flags: tuple[str, ...],
                                                           found: bool) -> None:
    with FakeModelServer(context_window=4_096, flavor="llamacpp", model="served") as local:
        rows, stderr = _models_json(tmp_path, *flags, LOOPWRIGHT_LLAMACPP_URL=local.base_url)
    assert [row["role"] for row in rows] == ["primary", *(["local (llamacpp)"] * found)]
    assert stderr == ""


@pytest.mark.parametrize(("flag", "found"), [("--local", True), ("--no-local", False)])
def test_the_old_local_flag_still_scans_and_says_its_new_name(tmp_path: Path, flag: str,
                                                              found: bool) -> None:
    with FakeModelServer(context_window=4_096, flavor="llamacpp", model="served") as local:
        rows, stderr = _models_json(tmp_path, flag, LOOPWRIGHT_LLAMACPP_URL=local.base_url)
    assert [row["role"] for row in rows] == ["primary", *(["local (llamacpp)"] * found)]
    assert stderr == ("loopwright: `models --local/--no-local` is now `--scan/--no-scan` (the "
                      "old name goes in the next release)\n")


def test_help_offers_scan_and_not_the_old_name(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "loopwright", "models", "--help"],
                          cwd=tmp_path, env=cli_env(tmp_path, COLUMNS="120"),
                          capture_output=True, text=True, timeout=60)
    assert "--scan" in done.stdout and "--no-scan" in done.stdout
    options = done.stdout[done.stdout.index("Options"):]
    assert "--local" not in options and "--no-local" not in options


def _cached_weights(directory: Path) -> None:
    """The embedded model's weights as the cache keeps them once verified (a sparse file of
    the right size and its checksum marker: `models` reads no byte of them)."""
    spec = model_spec(DEFAULT_MODEL)
    path = weights_path(spec, directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as weights:
        os.ftruncate(weights.fileno(), spec.size)
    path.with_name(path.name + ".sha256").write_text(spec.sha256)


def test_the_embedded_model_is_a_row_once_its_weights_are_cached(tmp_path: Path) -> None:
    models = tmp_path / "models"
    rows, _ = _models_json(tmp_path, "--no-scan", LOOPWRIGHT_MODELS_DIR=str(models))
    assert [row["role"] for row in rows] == ["primary"]  # not fetched yet: no row
    _cached_weights(models)
    rows, _ = _models_json(tmp_path, "--no-scan", LOOPWRIGHT_MODELS_DIR=str(models))
    assert rows[1] == {"role": "embedded", "tokens": CONTEXT_SIZE,
                       "source": "embedded (--local)",
                       "model": model_spec(DEFAULT_MODEL).title, "provider": "llamacpp",
                       "base_url": "(started by --local)"}
    assert len(rows) == 2


def test_with_no_provider_but_the_embedded_model_the_exit_says_none_was_found(
        tmp_path: Path) -> None:
    _cached_weights(tmp_path / "models")
    done = subprocess.run([sys.executable, "-m", "loopwright", "models", "--json"], cwd=tmp_path,
                          env=cli_env(tmp_path, LOOPWRIGHT_MODELS_DIR=str(tmp_path / "models")),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 6  # `run` without --local finds no provider
    assert [json.loads(line)["role"] for line in done.stdout.splitlines()] == ["embedded"]
    assert "or pass --local for the embedded model" in done.stderr
