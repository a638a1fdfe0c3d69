"""Streaming holdback cost: microseconds per text delta while text streams through the filter
that keeps call markup out of what the user sees (wire/text_calls/holdback.py).

Cases: ordinary prose with brackets and braces (shown as it streams), a 110 KB bare-JSON call held
whole, and the same call inside <tool_call> tags; 4-character deltas. Before the incremental
region scan, the 110 KB held call took 84 s; target: linear, well under 50 µs per delta.

    python bench/text_holdback.py
"""

from __future__ import annotations

import json
import time

from loopwright.wire.text_calls import MarkupFilter

TARGET_US = 50.0


def _cases() -> dict[str, str]:
    content = "\n".join(f"def f{i}(x):\n    return {{'a': [x]}}" for i in range(3000))
    call = json.dumps({"name": "write_file", "arguments": {"path": "a.py", "content": content}})
    prose = "Ordinary prose with a list:\n- item [one]\n- item {two} and `code`\n" * 400
    return {"prose": prose, "held_json_call": call,
            "tagged_call": f"<tool_call>\n{call}\n</tool_call>"}


def main() -> None:
    worst = 0.0
    for name, text in _cases().items():
        shown: list[str] = []
        markup = MarkupFilter(shown.append, known=lambda: ["write_file"])
        deltas = [text[i:i + 4] for i in range(0, len(text), 4)]
        started = time.perf_counter()
        for delta in deltas:
            markup(delta)
        per_delta = (time.perf_counter() - started) / len(deltas) * 1e6
        worst = max(worst, per_delta)
        print(f"{name:16} {len(text):>7} chars {len(deltas):>6} deltas {per_delta:7.1f} µs/delta")
    print(f"worst {worst:.1f} µs/delta (target < {TARGET_US:.0f})")


if __name__ == "__main__":
    main()
