"""The serve page's cost of rendering a streamed answer as Markdown, in Debian's Chromium.

An answer of SIZE characters (prose, lists and fenced Python code) streams from the fake model
server in 20-character deltas; the page re-renders it (marked → DOMPurify → highlight.js) at most
once per 60 ms while it streams, and once at the end. Reported per size: the deltas, the
renders the page did, and the main thread's script and layout time for the run (Chromium's
Performance metrics), from the click on Start to the run's end.

    python bench/page_render.py [--sizes 10000,40000,160000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "serve"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from serve_helpers import TOKEN, agent_options, serve_in_thread

from loopwright.serve.app import ServeOptions
from loopwright.store import open_store
from loopwright.testing import FakeModelServer, Reply

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
BLOCK = """## Step {n}

Some prose about step {n}, with `inline code` and a [link](https://example.org/{n}).

- first point of {n}
- second point of {n}

```python
def step_{n}(values: list[int]) -> int:
    total = 0
    for value in values:
        total += value * {n}
    return total
```

"""


def answer(size: int) -> str:
    text, n = "", 0
    while len(text) < size:
        text += BLOCK.format(n=n)
        n += 1
    return text[:size]


def measure(browser: object, size: int, folder: Path) -> dict[str, float]:
    text = answer(size)
    with FakeModelServer([Reply(text, chunk_size=20)]) as fake:
        options = ServeOptions(token=TOKEN, store=open_store(folder / f"{size}.db"),
                               agent_options=agent_options(fake, folder / "work"))
        with serve_in_thread(options) as served:
            context = browser.new_context()  # type: ignore[attr-defined]
            page = context.new_page()
            page.goto(f"{served.url}/?token={TOKEN}")
            page.wait_for_selector("#sessions li", state="attached")
            page.evaluate("""() => { window.renders = 0;
                new MutationObserver((records) => {
                  if (records.some((r) => r.target.classList
                      && r.target.classList.contains('text'))) window.renders += 1; })
                .observe(document.getElementById('timeline'), {childList: true, subtree: true});
              }""")
            cdp = context.new_cdp_session(page)
            cdp.send("Performance.enable")
            before = _metrics(cdp)
            page.fill("#prompt", "write it")
            page.click("#start")
            page.wait_for_selector(".run-state.completed", timeout=120_000)
            after = _metrics(cdp)
            renders = page.evaluate("window.renders")
            context.close()
    return {"size": size, "deltas": -(-size // 20), "renders": renders,
            "script_s": after["ScriptDuration"] - before["ScriptDuration"],
            "layout_s": after["LayoutDuration"] - before["LayoutDuration"]}


def _metrics(cdp: object) -> dict[str, float]:
    found = cdp.send("Performance.getMetrics")["metrics"]  # type: ignore[attr-defined]
    return {m["name"]: m["value"] for m in found}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,40000,160000")
    sizes = [int(s) for s in parser.parse_args().sizes.split(",")]
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright, tempfile.TemporaryDirectory() as tmp:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        print("| answer | deltas | renders | script time | layout time |")
        print("|---:|---:|---:|---:|---:|")
        for size in sizes:
            row = measure(browser, size, Path(tmp))
            print(f"| {row['size']:,} chars | {row['deltas']:,} | {row['renders']:,} | "
                  f"{row['script_s']:.2f} s | {row['layout_s']:.2f} s |")
        browser.close()


if __name__ == "__main__":
    main()
