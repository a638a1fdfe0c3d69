"""Shell command text → the simple commands it would run, read with the tree-sitter bash grammar.

`parse_command("cd / && r''m -rf *")` gives two `SimpleCommand`s, the second with the words
`rm -rf *` running in `/`. Chains, pipelines, subshells, `$(…)`, backticks, process substitution,
loops, functions (inlined where they are called), here-documents fed to a shell, and the payloads
of `bash -c` / `sh -c` / `eval` / `source` / `trap` / `watch` / `env -S` / `su -c` are all opened;
wrappers (`env`, `sudo`, `nice`, `timeout`, `xargs`, `find -exec`, …) are seen through by
`loopwright.safety.shell.wrappers`. Whatever cannot be seen (a command word computed at run time,
`eval` of a variable, code piped into a shell, text the grammar cannot read) is listed in
`Script.opaque`, so that the policy asks the user instead of guessing.

Parsing is bounded: text over `MAX_COMMAND_CHARS`, nesting deeper than `MAX_NODE_DEPTH` and more
than `MAX_COMMANDS` commands make the script opaque rather than slow.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from loopwright.safety.shell.paths import normalise_path_word
from loopwright.safety.shell.words import (
    Piece,
    Word,
    c_escapes,
    double_quoted_text,
    echo_output,
    printf_output,
    unquoted_word,
)

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

MAX_COMMAND_CHARS = 32 * 1024
MAX_NODE_DEPTH = 120
MAX_NESTED_SCRIPTS = 6
MAX_COMMANDS = 2_000
MAX_INLINED_CALLS = 5
_STATEMENTS = frozenset({
    "command", "pipeline", "list", "subshell", "compound_statement", "redirected_statement",
    "if_statement", "while_statement", "for_statement", "c_style_for_statement", "case_statement",
    "function_definition", "variable_assignment", "variable_assignments", "declaration_command",
    "unset_command", "negated_command", "test_command",
})
_UNREADABLE = ("the shell parser cannot read the command (a syntax error or an unfinished "
               "quote)")
_WRITE_OPERATORS = frozenset({">", ">>", ">|", "&>", "&>>", ">&"})


@dataclass(frozen=True)
class Redirect:
    """One redirection: `>` / `>>` / `<` / `&>` … and its target word."""

    operator: str
    target: Word

    @property
    def writes(self) -> bool:
        return self.operator in _WRITE_OPERATORS and not self.target.value.isdigit()


@dataclass(frozen=True)
class SimpleCommand:
    """One command as it would be started: its words after expansion, where it runs and what
    feeds its standard input."""

    words: tuple[Word, ...]
    redirects: tuple[Redirect, ...] = ()
    cwd: str | None = None  # None when a `cd` to an unknown place came before it
    piped: bool = False  # stdin is a pipe or text computed at run time
    stdin_text: str | None = None  # a literal here-document or here-string fed to stdin
    spawns: bool = False  # part of a pipeline or sent to the background
    via: str = ""  # how it was reached: "bash -c", "eval", "sudo", "find -exec", …
    source: str = ""  # the text it came from

    @property
    def name(self) -> str:
        """The command word without its directory (`/usr/bin/rm` → `rm`)."""
        return posixpath.basename(self.words[0].value) if self.words else ""

    @property
    def argv(self) -> list[str]:
        return [word.value for word in self.words]

    @property
    def text(self) -> str:
        """Words joined by single spaces, quotes removed and path-like words normalised: the
        text policy rules are matched against."""
        parts = [normalise_path_word(word.value) for word in self.words]
        parts += [f"{r.operator} {normalise_path_word(r.target.value)}" for r in self.redirects]
        return " ".join(parts)

    def with_words(self, words: list[Word], via: str) -> SimpleCommand:
        return replace(self, words=tuple(words), via=via)


@dataclass
class Script:
    """Everything a command line would run, and what could not be seen."""

    commands: list[SimpleCommand] = field(default_factory=list)
    opaque: list[str] = field(default_factory=list)
    fork_bomb: str | None = None
    unreadable: bool = False
    script_runs: list[tuple[Word, str | None]] = field(default_factory=list)  # (file, cwd)

    def note(self, reason: str) -> None:
        if reason not in self.opaque:
            self.opaque.append(reason)


@lru_cache(maxsize=1)
def _parser() -> Parser:
    """The bash grammar, loaded by the first command parsed: an agent that runs none, and the
    CLI before its first request, never pay for it."""
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


@dataclass
class State:
    """What earlier commands of the same line established: directory, variables, functions."""

    cwd: str | None
    home: str
    variables: dict[str, tuple[str, ...]] = field(default_factory=dict)
    functions: dict[str, Node] = field(default_factory=dict)
    positional: tuple[str, ...] | None = ()
    calls: tuple[tuple[str, bool], ...] = ()  # inlined function calls: (name, spawned)
    depth: int = 0  # nested scripts (bash -c inside bash -c …)

    def copy(self) -> State:
        return replace(self, variables=dict(self.variables), functions=dict(self.functions))


@dataclass(frozen=True)
class Context:
    """How the statement being walked is run: its input, whether it is spawned, by what."""

    redirects: tuple[Redirect, ...] = ()
    piped: bool = False
    stdin_text: str | None = None
    spawns: bool = False
    via: str = ""


def parse_command(command: str, *, cwd: str | None, home: str) -> Script:
    """The simple commands of `command` as run in `cwd` by a user whose home is `home`."""
    script = Script()
    walker = Walker(script)
    walker.run_text(command, State(cwd=cwd, home=home), Context())
    return script


class Walker:
    """Walks syntax trees, collecting simple commands into one `Script`."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self._source = b""

    # --- entry points ---

    def run_text(self, text: str, state: State, ctx: Context) -> None:
        """Parse and walk a whole script (the command line, or a nested payload)."""
        if len(text) > MAX_COMMAND_CHARS:
            self._unreadable(f"the command is longer than {MAX_COMMAND_CHARS:,} characters, "
                             "too long to check")
            return
        if state.depth > MAX_NESTED_SCRIPTS:
            self._unreadable("shell commands nested too deeply to check")
            return
        source = text.encode("utf-8", errors="surrogateescape")
        tree = _parser().parse(source)
        saved, self._source = self._source, source
        try:
            if tree.root_node.has_error:
                self._unreadable(_UNREADABLE)
            self._walk(tree.root_node, state, ctx, 0)
        finally:
            self._source = saved

    def run_payload(self, text: str, state: State, ctx: Context, via: str) -> None:
        """A payload run by a new shell: same directory, none of the caller's variables."""
        fresh = State(cwd=state.cwd, home=state.home, calls=state.calls, depth=state.depth + 1)
        self.run_text(text, fresh, replace(ctx, via=via, redirects=()))

    # --- statements ---

    def _walk(self, node: Node, state: State, ctx: Context, level: int) -> None:
        if level > MAX_NODE_DEPTH:
            self._unreadable("the command is nested too deeply to check")
            return
        if len(self.script.commands) > MAX_COMMANDS:
            self._unreadable(f"the command runs more than {MAX_COMMANDS} commands")
            return
        kind = node.type
        if kind == "ERROR" or node.is_missing:
            self._unreadable(_UNREADABLE)
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, node, state, ctx, level)
        else:
            self._sequence(node, state, ctx, level)

    def _sequence(self, node: Node, state: State, ctx: Context, level: int) -> None:
        """Children one after another (`;`, `&&`, `||`, newlines); `&` spawns the one before."""
        children = node.children
        for index, child in enumerate(children):
            if not child.is_named:
                continue
            background = index + 1 < len(children) and children[index + 1].type == "&"
            child_ctx = replace(ctx, spawns=True) if background and not ctx.spawns else ctx
            self._walk(child, state, child_ctx, level + 1)

    def _subshell(self, node: Node, state: State, ctx: Context, level: int) -> None:
        self._sequence(node, state.copy(), ctx, level)

    def _pipeline(self, node: Node, state: State, ctx: Context, level: int) -> None:
        parts = [child for child in node.children if child.is_named]
        for index, part in enumerate(parts):
            part_ctx = replace(ctx, spawns=ctx.spawns or len(parts) > 1,
                               piped=ctx.piped if index == 0 else True,
                               stdin_text=ctx.stdin_text if index == 0 else None)
            self._walk(part, state.copy() if len(parts) > 1 else state, part_ctx, level + 1)

    def _redirected(self, node: Node, state: State, ctx: Context, level: int) -> None:
        redirects = list(ctx.redirects)
        piped, stdin_text = ctx.piped, ctx.stdin_text
        after: list[Node] = []
        for child in node.children:
            if child.type == "file_redirect":
                redirect = self._file_redirect(child, state, level)
                if redirect is not None:
                    redirects.append(redirect)
            elif child.type == "heredoc_redirect":
                text, computed = self._heredoc(child, state, level)
                stdin_text, piped = (None, True) if computed else (text, False)
                # tree-sitter puts the rest of a pipeline (`cat <<EOF | sh`) inside the redirect
                after.extend(c for c in child.children if c.type in _STATEMENTS)
            elif child.type == "herestring_redirect":
                piped, stdin_text = self._herestring(child, state, level)
        body = node.child_by_field_name("body")
        body_ctx = replace(ctx, redirects=tuple(redirects), piped=piped, stdin_text=stdin_text)
        if body is not None:
            self._walk(body, state, body_ctx, level + 1)
        for statement in after:
            self._walk(statement, state.copy(), replace(ctx, piped=True, stdin_text=None,
                                                        spawns=True), level + 1)

    def _file_redirect(self, node: Node, state: State, level: int) -> Redirect | None:
        operator = next((c.type for c in node.children if not c.is_named), ">")
        target = node.child_by_field_name("destination")
        if target is None:
            named = [c for c in node.children if c.is_named and c.type != "file_descriptor"]
            target = named[-1] if named else None
        if target is None:
            return None
        return Redirect(operator=operator, target=self.word(target, state, level + 1))

    def _heredoc(self, node: Node, state: State, level: int) -> tuple[str, bool]:
        """The here-document's text, and whether it expands anything at run time."""
        start = next((c for c in node.children if c.type == "heredoc_start"), None)
        body = next((c for c in node.children if c.type == "heredoc_body"), None)
        if body is None:
            return "", False
        quoted = start is not None and any(q in self._text(start) for q in "'\"\\")
        expands = not quoted and any(c.is_named for c in body.children)
        if expands:
            for child in body.children:
                if child.is_named:
                    self.word(child, state, level + 1)  # runs the substitutions inside
        return self._text(body), expands

    def _herestring(self, node: Node, state: State, level: int) -> tuple[bool, str | None]:
        named = [c for c in node.children if c.is_named]
        if not named:
            return False, None
        word = self.word(named[-1], state, level + 1)
        return (True, None) if word.computed else (False, word.value + "\n")

    def _command(self, node: Node, state: State, ctx: Context, level: int) -> None:
        words: list[Word] = []
        redirects = list(ctx.redirects)
        piped, stdin_text = ctx.piped, ctx.stdin_text
        for index, child in enumerate(node.children):
            field_name = node.field_name_for_child(index)
            if child.type == "variable_assignment":
                self._value_of_assignment(child, state, level)  # runs its substitutions
            elif field_name == "name" or field_name == "argument":
                target = child.named_children[0] if child.type == "command_name" else child
                words.extend(self._split(self.word(target, state, level + 1)))
            elif child.type == "herestring_redirect":
                piped, stdin_text = self._herestring(child, state, level)
            elif child.type == "file_redirect":
                redirect = self._file_redirect(child, state, level)
                if redirect is not None:
                    redirects.append(redirect)
        if not words:
            return
        command = SimpleCommand(words=tuple(words), redirects=tuple(redirects), cwd=state.cwd,
                                piped=piped, stdin_text=stdin_text, spawns=ctx.spawns,
                                via=ctx.via, source=self._text(node))
        from loopwright.safety.shell.wrappers import expand_command  # they import this module

        expand_command(self, command, state, ctx)

    def add(self, command: SimpleCommand) -> None:
        self.script.commands.append(command)

    def call_function(self, command: SimpleCommand, state: State, ctx: Context) -> bool:
        """Inline a call to a function defined earlier in the line; True if it was one."""
        body = state.functions.get(command.name)
        if body is None or "/" in command.words[0].value:
            return False
        names = [name for name, _ in state.calls]
        if command.name in names:
            cycle = state.calls[names.index(command.name):]
            if command.spawns or any(spawned for _, spawned in cycle):
                self.script.fork_bomb = (f"the function {command.name!r} starts copies of "
                                         "itself in a pipeline or in the background")
            return True
        if len(state.calls) >= MAX_INLINED_CALLS:
            self.script.note("functions call each other too deeply to check")
            return True
        inner = state.copy()
        arguments = command.words[1:]
        inner.positional = (None if any(w.computed for w in arguments)
                            else tuple(w.value for w in arguments))
        inner.calls = (*state.calls, (command.name, command.spawns or ctx.spawns))
        self._walk(body, inner, replace(ctx, via=f"function {command.name}"), 0)
        return True

    # --- assignments, functions, loops ---

    def _assignment(self, node: Node, state: State, ctx: Context, level: int) -> None:
        name_node = node.child_by_field_name("name")
        if name_node is None:
            return
        name = self._text(name_node)
        value = self._value_of_assignment(node, state, level)
        if value is None or value.computed:
            state.variables.pop(name, None)
        else:
            state.variables[name] = value.candidates

    def _value_of_assignment(self, node: Node, state: State, level: int) -> Word | None:
        value = node.child_by_field_name("value")
        if value is None:
            return Word.literal("")
        if value.type == "array":
            for child in value.named_children:
                self.word(child, state, level + 1)
            return None
        return self.word(value, state, level + 1)

    def _declaration(self, node: Node, state: State, ctx: Context, level: int) -> None:
        for child in node.named_children:
            if child.type == "variable_assignment":
                self._assignment(child, state, ctx, level + 1)
            elif child.type == "variable_name":
                state.variables.pop(self._text(child), None)
            else:
                self.word(child, state, level + 1)

    def _unset(self, node: Node, state: State, ctx: Context, level: int) -> None:
        for child in node.named_children:
            state.variables.pop(self._text(child), None)
            state.functions.pop(self._text(child), None)

    def _function(self, node: Node, state: State, ctx: Context, level: int) -> None:
        name = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        if name is not None and body is not None:
            state.functions[self._text(name)] = body

    def _for(self, node: Node, state: State, ctx: Context, level: int) -> None:
        variable = node.child_by_field_name("variable")
        values: list[str] = []
        computed = False
        has_in = any(child.type == "in" for child in node.children)
        for index, child in enumerate(node.children):
            if node.field_name_for_child(index) == "value":
                word = self.word(child, state, level + 1)
                computed |= word.computed or word.glob
                values.extend(word.candidates)
        if not has_in:
            computed = state.positional is None
            values = list(state.positional or ())
        if variable is not None:
            name = self._text(variable)
            if computed or not values:
                state.variables.pop(name, None)
            else:
                state.variables[name] = tuple(dict.fromkeys(values))[:16]
        body = node.child_by_field_name("body")
        if body is not None:
            self._walk(body, state, ctx, level + 1)

    # --- words ---

    def word(self, node: Node, state: State, level: int) -> Word:
        """The value of a word node (running the substitutions inside it)."""
        piece = Piece()
        self._into(node, piece, state, level, quoted=False)
        return piece.build()

    def _into(self, node: Node, piece: Piece, state: State, level: int, *, quoted: bool) -> None:
        if level > MAX_NODE_DEPTH:
            self._unreadable("the command is nested too deeply to check")
            piece.add_unknown(self._text(node))
            return
        kind = node.type
        text = self._text(node)
        if kind == "word" and not quoted:
            values, glob = unquoted_word(text, state.home)
            piece.glob |= glob
            piece.add(values, text)
        elif kind in ("word", "number", "string_content", "regex", "extglob_pattern"):
            piece.add((double_quoted_text(text) if quoted else text,), text)
        elif kind == "raw_string":
            piece.add((text[1:-1],), text)
        elif kind == "ansi_c_string":
            piece.add((c_escapes(text[2:-1]),), text)
        elif kind in ("string", "translated_string"):
            self._string(node, piece, state, level)
        elif kind == "concatenation":
            self._concatenation(node, piece, state, level, quoted=quoted)
        elif kind in ("simple_expansion", "expansion"):
            self._expansion(node, piece, state, quoted=quoted)
        elif kind == "command_substitution":
            self._substitution(node, piece, state, level, quoted=quoted)
        elif kind == "process_substitution":
            self._walk_inner(node, state, level)
            piece.process_substitution = True
            piece.add_unknown(text)
        else:  # arithmetic, brace ranges, arrays, …: unknown value; run what is inside
            for child in node.named_children:
                self._into(child, Piece(), state, level + 1, quoted=True)
            piece.add_unknown(text)

    def _concatenation(self, node: Node, piece: Piece, state: State, level: int, *,
                       quoted: bool) -> None:
        """Parts one after another; adjacent bare words are joined first, because the grammar
        splits a brace list (`/{usr,etc}`) into several of them."""
        bare: list[str] = []

        def flush() -> None:
            if bare:
                values, glob = unquoted_word("".join(bare), state.home)
                piece.glob |= glob
                piece.add(values, "".join(bare))
                bare.clear()

        for child in node.children:
            if child.type == "word" and not quoted:
                bare.append(self._text(child))
                continue
            flush()
            self._into(child, piece, state, level + 1, quoted=quoted)
        flush()

    def _string(self, node: Node, piece: Piece, state: State, level: int) -> None:
        position = node.start_byte + (2 if self._text(node).startswith("$") else 1)
        end = node.end_byte - 1
        for child in node.children:
            if not child.is_named:
                continue
            if child.start_byte > position:
                gap = self._source[position:child.start_byte].decode("utf-8", "surrogateescape")
                piece.add((double_quoted_text(gap),), gap)
            self._into(child, piece, state, level + 1, quoted=True)
            position = child.end_byte
        if end > position:
            gap = self._source[position:end].decode("utf-8", "surrogateescape")
            piece.add((double_quoted_text(gap),), gap)

    def _expansion(self, node: Node, piece: Piece, state: State, *, quoted: bool) -> None:
        text = self._text(node)
        named = node.named_children
        name = self._text(named[0]) if named and named[0].type in (
            "variable_name", "special_variable_name") else None
        operator = node.child_by_field_name("operator")
        piece.expanded = True
        if not quoted:
            piece.unquoted_expansion = True
        if name == "IFS" and not quoted:
            piece.ifs_trick = True
            piece.add((" ",), text)
            return
        values = self._variable(name, state) if name else None
        if text.startswith("${!") or (operator is not None and values is None
                                      and self._text(operator) not in (":-", "-", ":=", "=")):
            values = None
        elif operator is not None and values is not None:
            if self._text(operator) not in (":-", "-", ":=", "="):
                values = None  # ${X#prefix} and friends: not evaluated here
        elif operator is not None and self._text(operator) in (":-", "-", ":=", "="):
            default = next((c for c in named[1:]), None)
            fallback = Piece()
            if default is not None:
                self._into(default, fallback, state, 0, quoted=quoted)
            piece.computed = True
            piece.add(("", *fallback.build().candidates), text)
            return
        if values is None:
            piece.add_unknown(text)
        else:
            piece.add(values, text)

    def _variable(self, name: str, state: State) -> tuple[str, ...] | None:
        if name == "HOME":
            return (state.home,)
        if name == "PWD":
            return (state.cwd,) if state.cwd else None
        if name in state.variables:
            return state.variables[name]
        if name.isdigit() and name != "0":
            index = int(name) - 1
            if state.positional is None:
                return None
            return (state.positional[index] if index < len(state.positional) else "",)
        if name in ("@", "*") and state.positional is not None:
            return (" ".join(state.positional),)
        return None

    def _substitution(self, node: Node, piece: Piece, state: State, level: int, *,
                      quoted: bool) -> None:
        """`$(…)` / backticks: run the commands inside; the value is known only for a plain
        `echo` / `printf` of literal words (`$(printf rm)` is `rm`)."""
        before = len(self.script.commands)
        self._walk_inner(node, state, level)
        added = self.script.commands[before:]
        piece.expanded = True
        piece.unquoted_expansion |= not quoted
        if len(added) == 1 and not any(w.computed for w in added[0].words):
            args = added[0].argv[1:]
            value = (echo_output(args) if added[0].name == "echo" else
                     printf_output(args) if added[0].name == "printf" else None)
            if value is not None:
                piece.computed = True
                piece.add((value.rstrip("\n"),), self._text(node))
                return
        piece.add_unknown(self._text(node))

    def _walk_inner(self, node: Node, state: State, level: int) -> None:
        inner = state.copy()
        for child in node.named_children:
            self._walk(child, inner, Context(), level + 1)

    def _split(self, word: Word) -> list[Word]:
        """Unquoted expansions split on whitespace: `x="rm -rf"; $x /` is three words."""
        if not word.unquoted_expansion or not any(
                ch.isspace() for ch in word.value):
            return [word]
        return [Word(value=part, candidates=(part,), computed=word.computed, expanded=True,
                     glob=word.glob, ifs_trick=word.ifs_trick) for part in word.value.split()]

    # --- helpers ---

    def _text(self, node: Node) -> str:
        return self._source[node.start_byte:node.end_byte].decode("utf-8", "surrogateescape")

    def _unreadable(self, reason: str) -> None:
        self.script.unreadable = True
        self.script.note(reason)


_HANDLERS: dict[str, Any] = {
    "subshell": Walker._subshell,
    "pipeline": Walker._pipeline,
    "redirected_statement": Walker._redirected,
    "command": Walker._command,
    "variable_assignment": Walker._assignment,
    "declaration_command": Walker._declaration,
    "unset_command": Walker._unset,
    "function_definition": Walker._function,
    "for_statement": Walker._for,
    "comment": lambda *args: None,
    "heredoc_body": lambda *args: None,
}
