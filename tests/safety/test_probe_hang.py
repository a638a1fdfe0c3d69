"""A sandbox probe that hangs (bubblewrap stuck under load) times out as "no sandbox" — and
leaves no bubblewrap behind: before, the hung probe lived on, reparented to init."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopwright.safety.sandbox import SandboxPolicy, launch
from shared_helpers import TAG, live_processes, wait_until


async def test_a_hung_probe_is_killed_when_it_times_out(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    marker = f"sleep {TAG}8"
    hanging = tmp_path / "bwrap-that-hangs"
    hanging.write_text(f"#!/bin/sh\nexec {marker}\n")
    hanging.chmod(0o755)
    monkeypatch.setattr(launch, "_PROBE_TIMEOUT", 0.5)
    policy = SandboxPolicy(bwrap=str(hanging))
    answer = await launch.sandbox_availability(policy)
    assert not answer.available
    await wait_until(lambda: not live_processes(marker), "the hung probe is killed", 10.0)
