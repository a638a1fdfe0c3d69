"""Images and PDFs in prompts and tool results.

An `Attachment` is given as a path, bytes or (images) a URL: `image("chart.png")`,
`image(png_bytes)`, `image("https://…/cat.jpg")`, `document("report.pdf")`. Each wire format
renders it its own way (chat `image_url` / `file`, Anthropic `image` / `document` blocks,
Responses `input_image` / `input_file`). Sessions store the bytes once, as a file named by their
SHA-256 in the data directory, and keep only that reference in every row.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import mimetypes
import os
import re
import stat
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from loopwright.errors import ConfigError

Kind = Literal["image", "document"]
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
DOCUMENT_TYPES = frozenset({"application/pdf"})
_MAGIC = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"),
          (b"GIF8", "image/gif"), (b"%PDF-", "application/pdf"))
IMAGE_TOKENS_UNKNOWN = 1_000  # an image whose size cannot be read
PDF_TOKENS_PER_PAGE = 1_500  # text plus the page image, as providers bill a PDF page
# the most bytes a path is read for: past every provider's own limit (Anthropic takes a PDF up
# to 32 MB, OpenAI a file up to 50 MB), so a larger file is refused, never read into memory
MAX_ATTACHMENT_BYTES = 64 << 20
# a SHA-256 as an attachment records it, and as the store names its copy of one
SHA256_HEX = re.compile("[0-9a-f]{64}")


@dataclass(frozen=True, kw_only=True, slots=True)
class Attachment:
    """One image or document. Exactly one of `data`, `path`, `url` says where its bytes are."""

    kind: Kind
    media_type: str
    data: bytes | None = None
    path: str | None = None
    url: str | None = None
    name: str | None = None
    # the SHA-256 of the bytes at `path` when they were attached (or stored): what a path read
    # back from a stored row must still hold to be sent again (`from_dict`)
    sha256: str | None = None
    # `estimate_tokens()` once measured. Kept here, not only per message: the sanitizer's merged
    # copies of a message hold the same objects, so the file is read for it once
    _tokens: int | None = field(default=None, init=False, repr=False, compare=False)
    # decoded from a stored row (`from_dict`): its path is whatever the row says, which a
    # damaged or hostile row may point at a secret or a device, so it is read back only as
    # `_read_back` allows
    _from_row: bool = field(default=False, init=False, repr=False, compare=False)
    # the bytes of such a path once they were found to be the ones attached: what every later
    # request of the run sends, whatever becomes of the file meanwhile
    _verified: bytes | None = field(default=None, init=False, repr=False, compare=False)
    # the SHA-256 of the bytes first read from a path given without one (an `Attachment(path=)`
    # built directly): what its row records, so a resumed session can send the file again
    _first_read_sha256: str | None = field(default=None, init=False, repr=False,
                                           compare=False)
    # the stored session whose row this was read back from (`recorded_in`): the one a warning
    # that it can no longer be sent names, whichever run (maybe one with no store) it is given to
    _session_id: str | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # a digest of another shape would be written into the row, which then reads back as
        # damaged: the session could never be resumed
        if self.sha256 is not None and SHA256_HEX.fullmatch(self.sha256) is None:
            raise ConfigError(f"attachment sha256 {self.sha256[:80]!r}: not a SHA-256 as 64 "
                              "lowercase hex digits")

    def read(self) -> bytes:
        if self.data is not None:
            return self.data
        if self.path is not None:
            if self._from_row:
                return self._checked_bytes(self.path)
            raw = _read_file(self.path, follow_links=True)
            if self.sha256 is None and self._first_read_sha256 is None:
                digest = hashlib.sha256(raw).hexdigest()
                object.__setattr__(self, "_first_read_sha256", digest)  # frozen: a memo
            return raw
        raise ValueError("a URL attachment has no bytes here; send its URL")

    @property
    def stored_session(self) -> str | None:
        """The session whose stored row this attachment was read back from, when known."""
        return self._session_id

    def recorded_in(self, session_id: str) -> None:
        """Note this attachment, read back from a row of `session_id`, as that session's."""
        object.__setattr__(self, "_session_id", session_id)  # frozen: set once, as it is read

    @property
    def digest(self) -> str | None:
        """The SHA-256 a stored row records for this attachment's bytes: the one given (or
        recorded when it was attached), else that of the bytes first read from its path."""
        return self.sha256 or self._first_read_sha256

    @property
    def undigested(self) -> bool:
        """A path given without a digest and not read yet: its row would record none, so
        `stored()` reads it first (a row's own path is not: it is held to what it records)."""
        return (self.path is not None and self.data is None and not self._from_row
                and self.digest is None)

    def base64(self) -> str:
        return base64.b64encode(self.read()).decode("ascii")

    def data_url(self) -> str:
        """The URL to send: the remote one, or the bytes as a `data:` URL."""
        return self.url or f"data:{self.media_type};base64,{self.base64()}"

    @property
    def filename(self) -> str:
        return self.name or (Path(self.path).name if self.path else f"{self.kind}")

    def unavailable(self) -> str | None:
        """Why this attachment, read back from a stored row, cannot be sent again (its file
        edited, moved, deleted or replaced, or never verified); None when it can, or when it
        is not a path read back from a row. Blocking: reads the file."""
        if not self._from_row or self.path is None or self.data is not None:
            return None
        return self.standing().why

    def standing(self) -> Standing:
        """What became of this attachment since it was attached, as a stored row holds it: its
        path read as a resumed session reads it (`_read_back`: nothing read through a link, a
        pipe or a device, the bytes held to the digest recorded). Blocking: reads the file."""
        if self.url is not None:
            return Standing(state="remote", size=None)
        if self.data is not None:
            return Standing(state="same", size=len(self.data))
        assert self.path is not None
        try:
            return Standing(state="same", size=len(self._checked_bytes(self.path)))
        except AttachmentUnavailable as exc:
            return Standing(state="gone" if exc.size_now is None else "changed",
                            size=exc.size_now, why=exc.why)

    def _checked_bytes(self, path: str) -> bytes:
        """The bytes at `path` (this attachment's, read back from a row), once, if they are the
        ones attached (`_read_back`)."""
        raw = self._verified
        if raw is None:
            raw = _read_back(path, self.sha256)
            object.__setattr__(self, "_verified", raw)  # frozen: a memo, not a change
        return raw

    @property
    def measured(self) -> bool:
        """Whether `estimate_tokens()` is known without reading the bytes again."""
        return self._tokens is not None or self.url is not None

    def estimate_tokens(self) -> int:
        """Tokens the attachment costs in a request, roughly (images by their pixel count, as
        Anthropic documents it; PDFs by their page count). Memoised; the first call reads the
        file, so the loop measures attachments in a worker thread first
        (`context.tokens.measure_attachments`)."""
        tokens = self._tokens
        if tokens is None:
            tokens = self._measure()
            object.__setattr__(self, "_tokens", tokens)  # frozen: a memo, not a change
        return tokens

    def _measure(self) -> int:
        if self.url is not None:
            return IMAGE_TOKENS_UNKNOWN
        raw = self.read()
        if self.kind == "document":
            pages = raw.count(b"/Type /Page") - raw.count(b"/Type /Pages") or \
                raw.count(b"/Type/Page") - raw.count(b"/Type/Pages")
            return PDF_TOKENS_PER_PAGE * max(1, pages)
        size = image_size(raw)
        if size is None:
            return IMAGE_TOKENS_UNKNOWN
        width, height = size
        return max(85, min(1_600, width * height // 750))

    def stored(self, directory: Path) -> Attachment:
        """This attachment with its bytes in `directory` (named by their SHA-256) and no inline
        copy; one file however many rows refer to it; a path given without a digest is read
        for one (`digest`). Blocking: call it from a worker thread."""
        if self.data is None:
            if self.undigested:
                self.read()
            return self
        digest = hashlib.sha256(self.data).hexdigest()
        suffix = mimetypes.guess_extension(self.media_type) or ".bin"
        target = directory / f"{digest}{suffix}"
        if not target.exists():
            directory.mkdir(parents=True, exist_ok=True)
            partial = target.with_suffix(target.suffix + f".{os.getpid()}.part")
            partial.write_bytes(self.data)
            os.replace(partial, target)
        return replace(self, data=None, path=str(target), sha256=digest)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "media_type": self.media_type}
        for key in ("path", "url", "name"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.path is not None and self.digest is not None:
            out["sha256"] = self.digest
        if self.data is not None:  # not stored by reference (no store): inline
            out["base64"] = base64.b64encode(self.data).decode("ascii")
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Attachment:
        inline = data.get("base64")
        found = cls(kind=data["kind"], media_type=data["media_type"], path=data.get("path"),
                    url=data.get("url"), name=data.get("name"), sha256=data.get("sha256"),
                    data=base64.b64decode(inline) if isinstance(inline, str) else None)
        object.__setattr__(found, "_from_row", True)  # frozen: set once, as it is made
        return found


@dataclass(frozen=True, kw_only=True, slots=True)
class Standing:
    """What became of an attachment a stored row holds (`Attachment.standing`): `same` (its
    bytes the ones attached, or kept in the row), `changed` (a regular file, other bytes),
    `gone` (deleted, or replaced by what is not read: a link, a pipe, a device; or a row that
    records no digest for the user's file), `remote` (a URL). `size`: its bytes, now."""

    state: Literal["same", "changed", "gone", "remote"]
    size: int | None
    why: str | None = None


class AttachmentUnavailable(ConfigError):
    """A path read back from a stored row that is not sent again: `path`, and `why` not;
    `size_now`, the size of the other bytes it holds when it was read."""

    def __init__(self, path: str, why: str, *, size_now: int | None = None) -> None:
        super().__init__(f"attachment {path} of the stored session is not sent again: {why}. "
                         "Put the file back as it was attached, or continue in a new session")
        self.path = path
        self.why = why
        self.size_now = size_now


def _read_file(path: str, *, follow_links: bool) -> bytes:
    """The bytes of the regular file at `path`, at most `MAX_ATTACHMENT_BYTES`. Opened without
    blocking and looked at before reading, so a pipe or a device (/dev/zero) is refused at
    once instead of hanging or filling memory. A link is followed only when `follow_links`
    (what the user hands over); a path read back from a row was resolved when it was
    attached, so a link there now is a file replaced, and nothing is read through it. Only
    what is a regular file is opened at all: opening a pipe or a device is itself an act (a
    writer waiting on the pipe goes on); what replaces it meanwhile, fstat sees."""
    flags = os.O_RDONLY | os.O_NONBLOCK | (0 if follow_links else os.O_NOFOLLOW)
    try:
        kind = os.stat(path, follow_symlinks=follow_links).st_mode
        if stat.S_ISLNK(kind):
            raise ConfigError(f"attachment {path}: cannot read it: it is a link")
        if not stat.S_ISREG(kind):
            raise ConfigError(f"attachment {path}: not a regular file")
        handle = os.fdopen(os.open(path, flags), "rb")
    except OSError as exc:
        why = "it is a link" if exc.errno == errno.ELOOP and not follow_links else exc.strerror
        raise ConfigError(f"attachment {path}: cannot read it: {why}") from exc
    except ValueError as exc:  # a NUL byte, or a lone surrogate: no file is named so
        raise ConfigError(f"attachment {path}: cannot read it: not a file name ({exc})") from None
    with handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise ConfigError(f"attachment {path}: not a regular file")
        try:  # a regular file may still refuse to be read (/proc/self/mem: EIO)
            raw = handle.read(MAX_ATTACHMENT_BYTES + 1)
        except OSError as exc:
            raise ConfigError(f"attachment {path}: cannot read it: {exc.strerror}") from exc
    if len(raw) > MAX_ATTACHMENT_BYTES:
        raise ConfigError(f"attachment {path}: larger than {MAX_ATTACHMENT_BYTES >> 20} MiB, "
                          "more than any provider takes")
    return raw


def _read_back(path: str, sha256: str | None) -> bytes:
    """The bytes of a path read back from a stored row, sent again only if they are the ones
    attached: the SHA-256 the row recorded, or (a row with none, written before digests were
    recorded) the SHA-256 the file is named by, as the store names its own copies. A row
    without a digest that names any other file (the user's own, since maybe edited; a key, a
    device) gets nothing read from it: nothing could say its bytes are the ones attached."""
    if sha256 is None and SHA256_HEX.fullmatch(Path(path).stem) is None:
        raise AttachmentUnavailable(path, "its row was written before attachments' digests "
                                    "were recorded and it is not the store's own copy, so "
                                    "nothing says it still holds the bytes attached")
    try:
        raw = _read_file(path, follow_links=False)
    except ConfigError as exc:
        raise AttachmentUnavailable(
            path, str(exc).removeprefix(f"attachment {path}: ")) from None
    if hashlib.sha256(raw).hexdigest() != (sha256 or Path(path).stem):
        raise AttachmentUnavailable(path, "its bytes are not the ones attached",
                                    size_now=len(raw))
    return raw


def image(source: str | os.PathLike[str] | bytes, *, media_type: str | None = None,
          name: str | None = None) -> Attachment:
    """An image from a path, bytes or an `http(s)://` URL."""
    return _attachment("image", source, media_type, name)


def document(source: str | os.PathLike[str] | bytes, *, media_type: str | None = None,
             name: str | None = None) -> Attachment:
    """A PDF from a path or bytes."""
    return _attachment("document", source, media_type, name)


def _attachment(kind: Kind, source: str | os.PathLike[str] | bytes, media_type: str | None,
                name: str | None) -> Attachment:
    allowed = IMAGE_TYPES if kind == "image" else DOCUMENT_TYPES
    if isinstance(source, str) and source.startswith(("http://", "https://")):
        if kind != "image":
            raise ConfigError("a document is given as a path or bytes, not a URL")
        guessed = media_type or mimetypes.guess_type(source)[0] or "image/png"
        return Attachment(kind=kind, media_type=guessed, url=source, name=name)
    if isinstance(source, bytes):
        found = media_type or _sniff(source)
        _check(kind, found, allowed, "the bytes")
        return Attachment(kind=kind, media_type=found or "", data=source, name=name)
    path = Path(source).expanduser()
    if not path.is_file():
        raise ConfigError(f"{kind} {path}: no such file")
    resolved = str(path.resolve())
    # once, for its digest: what a resumed session re-sends
    raw = _read_file(resolved, follow_links=True)
    found = media_type or mimetypes.guess_type(path.name)[0]
    if found not in allowed:
        found = media_type or _sniff(raw[:16])
    _check(kind, found, allowed, str(path))
    return Attachment(kind=kind, media_type=found or "", path=resolved,
                      name=name or path.name, sha256=hashlib.sha256(raw).hexdigest())


def _check(kind: Kind, found: str | None, allowed: frozenset[str], what: str) -> None:
    if found not in allowed:
        raise ConfigError(f"{what}: not a supported {kind} ({found or 'unknown type'}); use "
                          f"{', '.join(sorted(allowed))}")


def _sniff(head: bytes) -> str | None:
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return next((kind for magic, kind in _MAGIC if head.startswith(magic)), None)


def image_size(raw: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG, GIF or JPEG header; None when it cannot be read."""
    if raw.startswith(b"\x89PNG") and len(raw) >= 24:
        width, height = struct.unpack(">II", raw[16:24])
        return int(width), int(height)
    if raw.startswith(b"GIF8") and len(raw) >= 10:
        width, height = struct.unpack("<HH", raw[6:10])
        return int(width), int(height)
    if raw.startswith(b"\xff\xd8"):
        return _jpeg_size(raw)
    return None


def _jpeg_size(raw: bytes) -> tuple[int, int] | None:
    at = 2
    while at + 9 < len(raw):
        if raw[at] != 0xFF:
            return None
        marker = raw[at + 1]
        length = struct.unpack(">H", raw[at + 2:at + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", raw[at + 5:at + 9])
            return int(width), int(height)
        at += 2 + length
    return None


def split_attachments(value: Any) -> tuple[list[Attachment], Any]:
    """A tool's return value as (its attachments, the rest): an `Attachment`, or a list or tuple
    mixing attachments with other values."""
    if isinstance(value, Attachment):
        return [value], None
    if isinstance(value, (list, tuple)) and any(isinstance(v, Attachment) for v in value):
        files = [v for v in value if isinstance(v, Attachment)]
        rest = [v for v in value if not isinstance(v, Attachment)]
        return files, ("\n".join(map(str, rest)) if rest else None)
    return [], value


def split_prompt(prompt: str | Sequence[str | Attachment]) -> tuple[str, list[Attachment]]:
    """`run()`'s prompt: text, or a list of text parts and attachments."""
    if isinstance(prompt, str):
        text, attachments = prompt, []
    else:
        text = "\n\n".join(part for part in prompt if isinstance(part, str))
        attachments = [part for part in prompt if isinstance(part, Attachment)]
    if not text.isascii():
        _refuse_lone_surrogates(text)
    return text, attachments


def _refuse_lone_surrogates(text: str) -> None:
    """A lone surrogate (what `errors="surrogateescape"` makes of bytes that are not UTF-8:
    `sys.argv`, file names) cannot be sent: a clear error now, not the run failing on it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ConfigError(
            f"the prompt holds a lone surrogate (U+{ord(text[exc.start]):04X} at character "
            f"{exc.start}), which no provider takes: it is text decoded with "
            "errors='surrogateescape' from bytes that are not UTF-8; decode them with "
            "errors='replace', or from their own encoding") from None


def refuse_unsupported(supports_images: bool, model: str, history: Sequence[Any]) -> None:
    """Images or PDFs for a model whose profile takes none: say so before the request."""
    if supports_images:
        return
    if any(getattr(message, "attachments", None) for message in history):
        raise ConfigError(f"{model} does not take images or documents (its model profile); "
                          "use a model that does, or leave the attachments out")
