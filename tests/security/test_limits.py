"""Issue 29, item 4: processes, file size and address space are limited inside the sandbox and its
/tmp is capped. A real fork bomb and a real disk fill end as a tool error, well before the
command's own timeout, and leave nothing running.

Real bubblewrap, the real `bash` tool, small limits. No timed asserts: each command gets a
generous `timeout`, and the error must be the limit's, not the timeout's.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from loopwright import ToolContext, ToolError
from loopwright.config import load_settings
from loopwright.errors import ConfigError
from loopwright.safety.sandbox import SANDBOX_SERVICE, SandboxPolicy, policy_from_settings
from loopwright.safety.sandbox.cgroup import processes_capped_by_kernel
from loopwright.safety.sandbox.policy import SandboxLimits
from loopwright.trust import UntrustedConfigWarning
from shared_helpers import TAG, live_processes, require_component

pytestmark = pytest.mark.usefixtures("needs_bwrap")

GENEROUS = 60  # seconds: far more than a limit needs to act


def context(workdir: Path, **limits: int) -> ToolContext:
    policy = SandboxPolicy(limits=SandboxLimits(**limits))
    return ToolContext(workdir=workdir, services={SANDBOX_SERVICE: policy})


async def run(ctx: ToolContext, command: str, **arguments: Any) -> str:
    from loopwright.builtin import bash

    arguments.setdefault("timeout", GENEROUS)
    result = await bash.invoke(bash.validate({"command": command, **arguments}), ctx)
    assert isinstance(result, str)
    return result


async def test_a_fork_bomb_ends_as_a_tool_error(tmp_path: Path) -> None:
    # a real fork bomb only where the kernel caps it (a pids cgroup, or RLIMIT_NPROC for a user
    # who is not root): uncapped, only the supervisor's 50 ms count would race it, which is not
    # a risk to take on a shared machine (also on CI: this is a property of the host, not a
    # component .ci/run installs)
    if not processes_capped_by_kernel():
        pytest.skip("root without a pids cgroup loopwright may create: the bomb is not capped")
    ctx = context(tmp_path, processes=48)
    bomb = f"bomb() {{ bomb | bomb & }}; bomb; sleep {TAG}7"
    with pytest.raises(ToolError, match=r"process limit \(48, setting sandbox_max_processes\)"
                       ) as caught:
        await run(ctx, bomb)
    assert "timed out" not in str(caught.value)
    assert live_processes(f"sleep {TAG}7") == []  # nothing of it is left running
    assert await run(ctx, "echo still fine") == "still fine\n[exit code 0]"


async def test_many_processes_below_the_limit_run(tmp_path: Path) -> None:
    # must not fire: a command with several processes at once, under the limit
    text = await run(context(tmp_path, processes=48),
                     "for i in $(seq 20); do sleep 0.2 & done; wait; echo all done")
    assert text == "all done\n[exit code 0]"


async def test_filling_the_disk_with_one_file_ends_as_a_tool_error(tmp_path: Path) -> None:
    ctx = context(tmp_path, file_mb=8)
    with pytest.raises(ToolError, match=r"size limit \(8 MiB, setting sandbox_max_file_mb\)"):
        await run(ctx, "cat /dev/zero > fill.bin")
    assert (tmp_path / "fill.bin").stat().st_size <= 8 * 1024 * 1024
    # python ignores SIGXFSZ: the write fails instead, and the command ends on its own
    text = await run(ctx, "python3 -c \"open('big.bin', 'wb').write(bytes(16 << 20))\"")
    assert "File too large" in text and not text.endswith("[exit code 0]")


async def test_filling_the_disk_with_many_files_ends_as_a_tool_error(tmp_path: Path) -> None:
    # each file is under the size limit; the free space the command must leave is set to 16 MiB
    # below what is free now (the rule: stop a command before it takes the disk)
    info = os.statvfs(tmp_path)
    free_mb = info.f_bavail * info.f_frsize >> 20
    ctx = context(tmp_path, file_mb=8, min_free_mb=free_mb - 16)
    with pytest.raises(ToolError, match=r"nearly full .* setting sandbox_min_free_mb"):
        await run(ctx, "for i in $(seq 400); do head -c 1M /dev/zero > fill-$i.bin; done")
    written = len(list(tmp_path.glob("fill-*.bin")))
    assert 0 < written < 400


async def test_files_under_the_size_limit_are_written(tmp_path: Path) -> None:
    text = await run(context(tmp_path, file_mb=8), "head -c 4M /dev/zero > ok.bin; echo done")
    assert text == "done\n[exit code 0]"
    assert (tmp_path / "ok.bin").stat().st_size == 4 * 1024 * 1024


async def test_filling_the_private_tmp_ends_as_a_tool_error(tmp_path: Path) -> None:
    ctx = context(tmp_path, tmp_mb=16)
    with pytest.raises(ToolError, match=r"/tmp is full \(16 MiB, setting sandbox_tmp_mb\)"):
        await run(ctx, "cat /dev/zero > /tmp/fill")
    text = await run(ctx, "head -c 8M /dev/zero > /tmp/half && df -m /tmp | tail -1")
    assert text.endswith("[exit code 0]") and " 16 " in text  # a fresh, capped /tmp each time


async def test_address_space_is_limited(tmp_path: Path) -> None:
    ctx = context(tmp_path, memory_mb=256)
    text = await run(ctx, "python3 -c \"x = bytearray(512 << 20)\"")
    assert "MemoryError" in text and not text.endswith("[exit code 0]")
    assert await run(ctx, "python3 -c \"x = bytearray(32 << 20); print(len(x))\"") == (
        "33554432\n[exit code 0]")


async def test_limits_cannot_be_raised_from_inside(tmp_path: Path) -> None:
    text = await run(context(tmp_path, processes=48, file_mb=8),
                     "ulimit -f unlimited; ulimit -u 100000; ulimit -H -f; ulimit -H -u")
    assert "cannot modify limit" in text
    assert "8192\n50\n" in text  # 8 MiB in KiB; 48 processes for the command, 2 for the sandbox


def test_limits_come_from_the_settings_and_zero_means_none() -> None:
    policy = policy_from_settings(load_settings({"sandbox_max_processes": 0,
                                                 "sandbox_max_file_mb": 10,
                                                 "sandbox_tmp_mb": 64}))
    assert policy.limits == SandboxLimits(processes=0, file_mb=10, tmp_mb=64)
    defaults = policy_from_settings(load_settings()).limits
    assert defaults == SandboxLimits(processes=1024, file_mb=4096, memory_mb=16384, tmp_mb=1024,
                                     min_free_mb=1024)
    with pytest.raises(ConfigError, match="sandbox_max_processes"):
        policy_from_settings(load_settings({"sandbox_max_processes": -1}))


async def test_commands_get_the_default_signal_handling(tmp_path: Path) -> None:
    # the supervisor is Python, which ignores SIGPIPE; the command must not inherit that
    text = await run(context(tmp_path), "yes | head -n 2; echo ${PIPESTATUS[0]}")
    assert text == "y\ny\n141\n[exit code 0]"  # `yes` ended by SIGPIPE, not an error message


def test_groups_left_by_a_killed_loopwright_are_removed() -> None:
    from loopwright.safety.sandbox import cgroup

    parent = cgroup._usable_parent()
    if parent is None:
        pytest.skip("no pids cgroup loopwright may create here")
    orphan = parent / "loopwright-999999999-0"  # no such process can exist (above pid_max)
    orphan.mkdir()
    cgroup._usable_parent.cache_clear()  # the next probe looks again
    assert cgroup.processes_capped_by_kernel()
    assert not orphan.exists()


@pytest.mark.parametrize("line", ["sandbox_max_processes = 0", "sandbox_max_file_mb = 999999",
                                  "sandbox_max_memory_mb = 0", "sandbox_tmp_mb = 65536",
                                  "sandbox_min_free_mb = 0"])
def test_an_untrusted_project_cannot_raise_a_limit(tmp_path: Path, line: str) -> None:
    (tmp_path / "loopwright.toml").write_text(line + "\n")
    with pytest.warns(UntrustedConfigWarning, match=line.split()[0]):
        settings = load_settings(cwd=tmp_path, environ={})
    assert policy_from_settings(settings).limits == SandboxLimits()


def test_an_untrusted_project_may_lower_a_limit(tmp_path: Path) -> None:
    (tmp_path / "loopwright.toml").write_text("sandbox_max_processes = 100\nsandbox_tmp_mb = 64\n"
                                              "sandbox_min_free_mb = 4096\n")
    limits = policy_from_settings(load_settings(cwd=tmp_path, environ={})).limits
    assert (limits.processes, limits.tmp_mb, limits.min_free_mb) == (100, 64, 4096)


async def test_the_default_address_space_leaves_room_for_large_reservations(tmp_path: Path
                                                                           ) -> None:
    # must not fire: a WebAssembly memory reserves about 10 GiB of address space in Node
    require_component(shutil.which("node") is not None, "node: apt-get install nodejs")
    text = await run(context(tmp_path),
                     "node -e \"new WebAssembly.Memory({initial: 1}); console.log('wasm ok')\"")
    assert text == "wasm ok\n[exit code 0]"
