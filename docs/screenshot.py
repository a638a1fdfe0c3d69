"""Render a captured terminal screen (tmux `capture-pane -e`: text with ANSI colours) to a PNG.

The README's screenshot is made from the terminal test's own capture, so it shows what the tests
assert a person sees:

    LOOPWRIGHT_SCREENSHOT=/tmp/chat.ansi python -m pytest tests/cli/test_tmux.py -k chat
    python docs/screenshot.py /tmp/chat.ansi docs/chat.png

Needs Pillow (`pip install -e ".[screenshot]"`) and a monospace TrueType font (Debian's
fonts-dejavu-core; another one with `--font PATH`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont
from rich.color import Color
from rich.console import Console
from rich.terminal_theme import MONOKAI
from rich.text import Text

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
BOLD_FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono-Bold.ttf"
BACKGROUND = (24, 24, 27)
FOREGROUND = (228, 228, 231)
SIZE = 15
PADDING = 16


def rgb(color: Color | None, default: tuple[int, int, int]) -> tuple[int, int, int]:
    if color is None or color.is_default:
        return default
    triplet = color.get_truecolor(MONOKAI)
    return (triplet.red, triplet.green, triplet.blue)


def render(ansi: str, font_path: str, bold_path: str) -> Image.Image:
    # parsed whole, then split: tmux writes a style once and it holds across line ends
    lines = Text.from_ansi(ansi.rstrip("\n")).split("\n")
    while lines and not lines[-1].plain.strip():
        lines.pop()
    font = ImageFont.truetype(font_path, SIZE)
    bold = ImageFont.truetype(bold_path, SIZE) if Path(bold_path).exists() else font
    cell = int(font.getlength("M") + 0.5)
    height = int(SIZE * 1.35)
    columns = max((len(line.plain) for line in lines), default=1)
    image = Image.new("RGB", (columns * cell + 2 * PADDING, len(lines) * height + 2 * PADDING),
                      BACKGROUND)
    draw = ImageDraw.Draw(image)
    console = Console()
    for row, text in enumerate(lines):
        y = PADDING + row * height
        for column, char in enumerate(text.plain):
            style = text.get_style_at_offset(console, column)
            x = PADDING + column * cell
            if style.bgcolor is not None and not style.bgcolor.is_default:
                draw.rectangle((x, y, x + cell, y + height), fill=rgb(style.bgcolor, BACKGROUND))
            if char.strip():
                colour = rgb(style.color, FOREGROUND)
                if style.dim:  # halfway to the background, as terminals show faint text
                    colour = (_mix(colour[0], BACKGROUND[0]), _mix(colour[1], BACKGROUND[1]),
                              _mix(colour[2], BACKGROUND[2]))
                draw.text((x, y), char, font=bold if style.bold else font, fill=colour)
    return image


def _mix(value: int, background: int) -> int:
    return int(value * 0.55 + background * 0.45)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("capture", type=Path, help="the ANSI capture (capture-pane -e)")
    parser.add_argument("png", type=Path, help="the PNG to write")
    parser.add_argument("--font", default=FONT, help="monospace TrueType font")
    parser.add_argument("--bold-font", default=BOLD_FONT, help="its bold face")
    args = parser.parse_args()
    image = render(args.capture.read_text(encoding="utf-8"), args.font, args.bold_font)
    image.save(args.png, optimize=True)
    print(f"wrote {args.png} ({image.width}×{image.height})")


if __name__ == "__main__":
    main()
