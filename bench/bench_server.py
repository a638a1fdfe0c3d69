"""The benchmarks' fake model server, run as its own process: it answers with a tool call until
the request already carries ROUNDS tool results, then with a final answer, each reply DELAY
seconds late (`bench_server.py [ROUNDS] [DELAY]`)."""

from __future__ import annotations

import sys
import time
from typing import Any

from loopwright.testing import FakeModelServer, RecordedRequest, Reply, call


def tool_results_in(body: dict[str, Any]) -> int:
    if "messages" in body:
        count = 0
        for message in body["messages"]:
            if message.get("role") == "tool":
                count += 1
            elif isinstance(message.get("content"), list):
                count += sum(1 for b in message["content"] if b.get("type") == "tool_result")
        return count
    return sum(1 for item in body.get("input") or [] if item.get("type") == "function_call_output")


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    delay = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0

    def handler(request: RecordedRequest) -> Reply:
        done = tool_results_in(request.body or {})
        if done < rounds:
            return Reply(tool_calls=[call("lookup", {"key": f"k{done}"})], delay=delay)
        return Reply(text="All lookups are done.", delay=delay)

    with FakeModelServer(handler=handler, record_requests=False) as server:
        print(f"READY {server.base_url}", flush=True)
        while True:
            time.sleep(3600)


if __name__ == "__main__":
    main()
