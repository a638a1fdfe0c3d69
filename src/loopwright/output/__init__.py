"""Structured output: `Agent(output_type=...)` (see `plugin.py` for how it is asked for)."""

from loopwright.output.plugin import OutputMode, StructuredOutput
from loopwright.output.spec import FINAL_TOOL, OutputSpec

__all__ = ["FINAL_TOOL", "OutputMode", "OutputSpec", "StructuredOutput"]
