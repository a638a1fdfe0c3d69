"""llama.cpp's own HTTP server (the `xllamacpp` wheel, extra `loopwright[local]`) in a child
process on 127.0.0.1, so its CPU time is never the caller's and it dies with the caller.

The child is this module run as a program (`python -m loopwright.local.server MODEL_PATH …`): it
starts the server, prints `READY <address>` and lives until its stdin closes.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import IO

INSTALL_HINT = "pip install 'loopwright[local]'"


def xllamacpp_importable() -> bool:
    return importlib.util.find_spec("xllamacpp") is not None


class LlamaCppServer:
    """llama.cpp's HTTP server on 127.0.0.1 in a child process, with the model's own (jinja) chat
    template. Use as a context manager; `base_url` ends in `/v1`. The child exits when its stdin
    closes, so it never outlives this process.

    One thread by default: on a CPU shared with other work, llama.cpp's spinning thread barrier
    made 2 threads 5-10x slower than 1 (measured on the 2-core CI machine under load)."""

    def __init__(self, model_path: Path, *, ctx_size: int = 4096, threads: int = 1,
                 startup_timeout: float = 300.0, log_path: Path | None = None,
                 embeddings: bool = False) -> None:
        self.model_path = model_path
        self.embeddings = embeddings  # serve /v1/embeddings (mean-pooled) instead of chat
        self.ctx_size = ctx_size
        self.threads = threads
        self.startup_timeout = startup_timeout
        self.log_path = log_path
        self.root_url = ""
        self._process: subprocess.Popen[str] | None = None
        self._log: IO[bytes] | None = None
        self._own_log = False

    @property
    def base_url(self) -> str:
        return self.root_url + "/v1"

    def start(self) -> LlamaCppServer:
        if not xllamacpp_importable():
            raise RuntimeError(f"xllamacpp (llama.cpp) is not installed: {INSTALL_HINT}")
        if self.log_path is None:
            handle, name = tempfile.mkstemp(prefix="llamacpp-", suffix=".log")
            os.close(handle)
            self.log_path = Path(name)
            self._own_log = True
        log = self._log = self.log_path.open("wb")
        command = [sys.executable, "-m", "loopwright.local.server", str(self.model_path),
                   "--ctx-size", str(self.ctx_size), "--threads", str(self.threads),
                   *(["--embeddings"] if self.embeddings else [])]
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=log, text=True)
        try:
            self.root_url = self._read_ready()
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def _read_ready(self) -> str:
        assert self._process is not None and self._process.stdout is not None
        lines: list[str] = []
        stdout = self._process.stdout
        reader = threading.Thread(target=lambda: lines.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(self.startup_timeout)
        line = lines[0].strip() if lines else ""
        if not line.startswith("READY "):
            raise RuntimeError(f"llama.cpp server did not start ({line or 'no output'}); "
                               f"log tail: {self.log_tail()}")
        return line.split(" ", 1)[1]

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.root_url + "/health", timeout=5) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        raise RuntimeError(f"llama.cpp server at {self.root_url} never became healthy")

    def log_tail(self, lines: int = 5) -> str:
        if self.log_path is None:
            return ""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return " | ".join(text.strip().splitlines()[-lines:])

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            if process.stdin is not None:
                process.stdin.close()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._own_log and self.log_path is not None:
            self.log_path.unlink(missing_ok=True)
            self.log_path, self._own_log = None, False

    def __enter__(self) -> LlamaCppServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def _serve(model_path: str, ctx_size: int, threads: int, embeddings: bool = False) -> int:
    """The child: start llama.cpp's server in this process, report, live until stdin closes."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = model_path
    params.n_ctx = ctx_size
    params.n_parallel = 1
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.use_jinja = True  # the chat template stored in the GGUF file
    if embeddings:  # a chat GGUF pools no embedding by itself; OpenAI's API wants one vector
        params.embedding = True
        params.pooling_type = xllamacpp.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # a free port, reported back by listening_address
    server = xllamacpp.Server(params)
    print(f"READY {server.listening_address}", flush=True)
    sys.stdin.read()
    return 0


def main(argv: list[str] | None = None) -> int:
    """The child process: `MODEL_PATH [--ctx-size N] [--threads N] [--embeddings]`."""
    parser = argparse.ArgumentParser(prog="python -m loopwright.local.server")
    parser.add_argument("model_path")
    parser.add_argument("--ctx-size", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--embeddings", action="store_true",
                        help="serve /v1/embeddings instead of chat")
    args = parser.parse_args(argv)
    return _serve(args.model_path, args.ctx_size, args.threads, args.embeddings)


if __name__ == "__main__":
    raise SystemExit(main())
