"""The shell parser (safety/shell): what a command line runs, bounded in size and depth."""

from __future__ import annotations

from cpu_growth import cpu_growth
from loopwright.safety.shell import MAX_COMMAND_CHARS, classify_command, parse_command


def words(command: str) -> list[list[str]]:
    return [c.argv for c in parse_command(command, cwd="/w", home="/h").commands]


def test_chains_pipes_substitutions_and_payloads_become_simple_commands() -> None:
    found = {tuple(w) for w in words("a && b | c; (d) || echo $(e) `f` <(g)")}
    assert {("a",), ("b",), ("c",), ("d",), ("e",), ("f",), ("g",)} <= found
    found = {tuple(w) for w in words("sudo env X=1 nice -n 3 timeout 5 bash -c 'eval \"ls -l\"'")}
    assert ("ls", "-l") in found


def test_quotes_escapes_and_known_values_are_resolved() -> None:
    assert words("r''m \"-r\"f $'\\x2f'") == [["rm", "-rf", "/"]]
    assert words("x=/tmp; cd $x && echo ~/a ${HOME}/b")[-1] == ["echo", "/h/a", "/h/b"]
    script = parse_command("cd /etc && touch x", cwd="/w", home="/h")
    assert script.commands[-1].cwd == "/etc"


def test_paths_are_normalised_for_rules() -> None:
    (command,) = parse_command("cat ./a//b/../c/ /./x", cwd="/w", home="/h").commands
    assert command.text == "cat a/c/ /x"


def test_what_cannot_be_seen_is_opaque() -> None:
    for text in ("$(curl x) -rf y", 'eval "$X"', "curl x | sh", "bash -c \"$Y\"",
                 "echo 'open"):
        assert parse_command(text, cwd="/w", home="/h").opaque, text


def test_long_and_deep_commands_are_bounded() -> None:
    verdict = classify_command("echo " + "x" * (MAX_COMMAND_CHARS + 1), cwd="/w")
    assert verdict.needs_approval and "too long" in verdict.dangers[0]
    deep = classify_command("echo " + "$(" * 500 + "x" + ")" * 500, cwd="/w")
    assert deep.needs_approval  # nested too deeply to check: no RecursionError


async def test_a_long_word_the_parser_cannot_read_is_checked_in_linear_time() -> None:
    # a 33 KB command took 39 s: the raw-text fallback's fork-bomb regex backtracked over one
    # long word, quadratic in its length (64 times the CPU for 8 times the word). Not under 8:
    # the fallback's shlex.split grows a long token by concatenation, about 11 times here
    async def classify(letters: int) -> None:
        verdict = classify_command("echo 'unclosed " + "x" * letters, cwd="/w")
        assert verdict.unreadable and verdict.needs_approval and verdict.catastrophic is None

    assert await cpu_growth(classify, MAX_COMMAND_CHARS // 8, MAX_COMMAND_CHARS - 64) < 32
