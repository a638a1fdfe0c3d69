"""`module:function` checkers the batch tests name (importable: pytest puts this directory on
sys.path)."""

from __future__ import annotations

from loopwright.batch import CheckInput, Verdict


def shouts(sample: CheckInput) -> tuple[bool, str]:
    return sample.output.isupper(), f"output {sample.output!r}"


async def wrote_expected(sample: CheckInput) -> Verdict:
    written = (sample.workdir / "out.txt").read_text(encoding="utf-8")
    return Verdict(passed=written == sample.expected, detail=f"out.txt holds {written!r}")


def breaks(sample: CheckInput) -> bool:
    raise RuntimeError("checker bug")
