"""Seeing through commands that run other commands.

`sudo env -i nice -n 5 rm -rf x` runs `rm -rf x`; `find / -exec rm -rf {} +` runs `rm -rf /…`;
`bash -c 'text'`, `eval text`, `trap 'text' EXIT` and `watch 'text'` run a script. Each command
seen is added to the script (the wrappers too: every part must pass the policy), and what runs
code that cannot be read here (`bash -c "$X"`, `curl … | sh`, `source <(…)`) is noted as opaque.
"""

from __future__ import annotations

import re
from dataclasses import replace

from loopwright.safety.shell.parse import Context, SimpleCommand, State, Walker
from loopwright.safety.shell.paths import join_path
from loopwright.safety.shell.words import Word

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "yash", "rbash", "fish",
                    "busybox", "pdksh", "oksh", "tcsh", "csh"})
INTERPRETERS = re.compile(r"^(?:python[\d.]*|pypy[\d.]*|perl[\d.]*|ruby[\d.]*|node|nodejs|deno|"
                          r"bun|php[\d.]*|lua[\d.]*|luajit|Rscript|tclsh[\d.]*|wish|awk|gawk|"
                          r"mawk|jshell|irb|ghci|osascript)$")
# option words that take a value, per wrapper (all other dash words are flags)
_VALUED: dict[str, frozenset[str]] = {
    "env": frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}),
    "sudo": frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "-R",
                       "--user", "--group", "--host", "--prompt", "--close-from", "--chdir",
                       "--role", "--type", "--other-user", "--command-timeout", "--chroot"}),
    "doas": frozenset({"-u", "-C"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "ionice": frozenset({"-c", "-n", "-p", "-P", "-u", "--class", "--classdata"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "stdbuf": frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}),
    "setsid": frozenset(),
    "nohup": frozenset(),
    "time": frozenset({"-f", "-o", "--format", "--output"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset({"-a"}),
    "chroot": frozenset({"--userspec", "--groups"}),
    "taskset": frozenset(),
    "flock": frozenset({"-w", "-E", "--timeout", "--conflict-exit-code"}),
    "xargs": frozenset({"-I", "-L", "-n", "-P", "-s", "-d", "-E", "-a", "--arg-file",
                        "--delimiter", "--max-args", "--max-procs", "--max-chars",
                        "--max-lines", "--replace", "--eof", "--process-slot-var"}),
    "unbuffer": frozenset(),
    "chrt": frozenset(),
    "strace": frozenset({"-o", "-e", "-p", "-s", "-u", "-E", "-P", "-a", "-b", "-I", "-S",
                         "-X"}),
    "ltrace": frozenset({"-o", "-e", "-p", "-s", "-u", "-n", "-a"}),
    "watch": frozenset({"-n", "-q", "--interval", "--equexit"}),
    "caffeinate": frozenset({"-t", "-w"}),
    "systemd-run": frozenset({"-p", "-E", "-u", "--unit", "--property", "--setenv",
                              "--working-directory", "--uid", "--gid", "-M", "-H"}),
    "firejail": frozenset(),
    "nsenter": frozenset({"-t", "--target"}),
    "unshare": frozenset(),
    "runuser": frozenset({"-u", "-g", "-G", "--user", "--group"}),
    "busybox": frozenset(),
    # run their operands as a command too: debuggers, credential and proxy shims, fake roots
    "valgrind": frozenset(),
    "sshpass": frozenset({"-p", "-f", "-d", "-e", "-P"}),
    "torsocks": frozenset({"-u", "-p", "-a", "-P", "--user", "--pass", "--address", "--port"}),
    "proxychains": frozenset({"-f"}),
    "proxychains4": frozenset({"-f"}),
    "fakeroot": frozenset({"-l", "-s", "-i", "--lib", "--faked"}),
    "faketime": frozenset(),
    "dbus-run-session": frozenset({"--config-file", "--dbus-daemon"}),
    "prlimit": frozenset({"-p", "--pid"}),
    "cgexec": frozenset({"-g"}),
    "catchsegv": frozenset(),
    "chronic": frozenset(),
    "nocache": frozenset(),
}
_LEADING_OPERANDS = {"timeout": 1, "chroot": 1, "flock": 1, "taskset": 1, "chrt": 1,
                     "faketime": 1}
_PARALLEL_VALUED = frozenset({"-j", "-P", "--jobs", "-S", "--sshlogin", "-a", "--arg-file",
                              "-d", "--delimiter", "-I", "-E", "-n", "-N", "-L", "--colsep",
                              "--tag-string", "--joblog", "--results", "--tmpdir", "--retries",
                              "--timeout", "--delay", "--load", "--memfree", "--workdir",
                              "--basefile", "-X", "--env"})
_SUPERUSER = frozenset({"sudo", "doas", "pkexec", "run0", "runuser"})
_GIT_VALUED = frozenset({"-c", "-C", "--git-dir", "--work-tree", "--namespace",
                         "--exec-path", "--super-prefix", "--config-env"})
GIT_RUNS_COMMANDS = re.compile(
    r"^(?:alias\..*|core\.(?:pager|editor|sshcommand|fsmonitor|hookspath|gitproxy|askpass)|"
    r".*\.(?:command|cmd|textconv|program|helper|clean|smudge|process)|sequence\.editor|"
    r"protocol\..*\.allow|uploadpack\.packobjectshook|diff\.external|gpg\..*|"
    r"credential\..*|include\..*|includeif\..*)$", re.IGNORECASE)


def expand_command(walker: Walker, command: SimpleCommand, state: State, ctx: Context) -> None:
    """Add `command`, and whatever it runs, to the walker's script."""
    walker.add(command)
    first = command.words[0]
    if first.computed or first.ifs_trick:
        walker.script.note(f"the command word {first.value[:80]!r} is computed when the "
                           "command runs")
        for candidate in first.candidates[1:]:
            variant = replace(command, words=(Word.literal(candidate), *command.words[1:]))
            _dispatch(walker, variant, state, ctx)
    _dispatch(walker, command, state, ctx)


def _dispatch(walker: Walker, command: SimpleCommand, state: State, ctx: Context) -> None:
    name = command.name
    if walker.call_function(command, state, ctx):
        return
    args = list(command.words[1:])
    if name in ("cd", "pushd"):
        _change_directory(command, state)
    elif name == "shopt" and "expand_aliases" in command.argv:
        walker.script.note("alias expansion is turned on, so command words may be replaced")
    elif name in SHELLS:
        _shell(walker, command, args, state, ctx)
    elif name in ("eval",):
        _eval(walker, command, args, state, ctx)
    elif name in ("source", "."):
        _source(walker, command, args)
    elif name == "trap":
        if args and not args[0].computed and args[0].value not in ("-", "") and \
                not args[0].value.startswith("-"):
            walker.run_payload(args[0].value, state, ctx, "trap")
        elif args and args[0].computed:
            walker.script.note("trap runs text made at run time")
    elif name in ("su", "script") or (name == "runuser" and "-c" in command.argv):
        _dash_c(walker, command, args, state, ctx)
    elif name == "sg":
        _sg(walker, command, args, state, ctx)
    elif name == "parallel":
        _parallel(walker, command, args, state, ctx)
    elif name == "find":
        _find(walker, command, args, state, ctx)
    elif name == "git":
        _git(walker, command, args)
    elif name == "watch" and "-x" not in command.argv and "--exec" not in command.argv:
        rest = _after_options(name, args)
        if rest:
            _payload(walker, rest, state, ctx, "watch")
    elif name == "env":
        _env(walker, command, args, state, ctx)
    elif name in _VALUED:
        inner = _after_options(name, args)[_LEADING_OPERANDS.get(name, 0):]
        if name == "xargs":
            inner = inner or [Word.literal("echo")]
            inner = [*inner, Word(value="<input of xargs>", candidates=("",), computed=True)]
        if name == "command" and any(w.value in ("-v", "-V") for w in args):
            return
        if inner:
            _inner(walker, command, inner, state, ctx, name)
    elif INTERPRETERS.match(name):
        _interpreter(walker, command, args)
    elif "/" in command.words[0].value:
        walker.script.script_runs.append((command.words[0], command.cwd))


def _inner(walker: Walker, command: SimpleCommand, words: list[Word], state: State,
           ctx: Context, via: str) -> None:
    label = f"{command.via} → {via}" if command.via else via
    expand_command(walker, command.with_words(words, label), state, ctx)


def _after_options(name: str, args: list[Word]) -> list[Word]:
    """The words after a wrapper's options (and its `--`)."""
    valued = _VALUED.get(name, frozenset())
    index = 0
    while index < len(args):
        value = args[index].value
        if value == "--":
            return args[index + 1:]
        if not value.startswith("-") or value == "-":
            if name in ("nice",) and re.fullmatch(r"-\d+", value):
                index += 1
                continue
            return args[index:]
        if value in valued or (value.startswith("--") and value in valued):
            index += 2
            continue
        index += 1
    return []


def _change_directory(command: SimpleCommand, state: State) -> None:
    args = [w for w in command.words[1:] if not w.value.startswith("-") or w.value == "-"]
    if not args:
        state.cwd = state.home
        return
    target = args[0]
    if target.computed or target.value == "-" or len(target.candidates) > 1:
        state.cwd = None
        return
    state.cwd = join_path(state.cwd, target.value)


def _shell(walker: Walker, command: SimpleCommand, args: list[Word], state: State,
           ctx: Context) -> None:
    if command.name == "busybox":
        if args:
            _inner(walker, command, args, state, ctx, "busybox")
        return
    runs_text = False
    reads_stdin = False
    index = 0
    while index < len(args):
        value = args[index].value
        if value in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            index += 2
            continue
        if value == "--":
            index += 1
            break
        if re.fullmatch(r"[-+][a-zA-Z]+", value):
            runs_text |= value.startswith("-") and "c" in value
            reads_stdin |= value.startswith("-") and "s" in value
            index += 1
            continue
        if value.startswith("--"):
            index += 1
            continue
        break
    operands = args[index:]
    if runs_text:
        if not operands:
            return
        text = operands[0]
        if text.computed:
            walker.script.note(f"{command.name} -c runs text made at run time")
            return
        walker.run_payload(text.value, _with_positional(state, operands[2:]), ctx,
                           f"{command.name} -c")
        return
    if operands and not reads_stdin and operands[0].value not in ("-", "/dev/stdin"):
        script = operands[0]
        if script.process_substitution:
            walker.script.note(f"{command.name} runs code produced by another command")
        elif script.computed:
            walker.script.note(f"{command.name} runs a script whose name is made at run time")
        else:
            walker.script.script_runs.append((script, command.cwd))
        return
    _stdin_code(walker, command, state, ctx)


def _stdin_code(walker: Walker, command: SimpleCommand, state: State, ctx: Context) -> None:
    """A shell that reads its script from standard input."""
    if command.stdin_text is not None:
        walker.run_payload(command.stdin_text, state, ctx, f"{command.name} <<")
        return
    for redirect in command.redirects:
        if redirect.operator == "<":
            if redirect.target.computed or redirect.target.process_substitution:
                walker.script.note(f"{command.name} runs code produced by another command")
            else:
                walker.script.script_runs.append((redirect.target, command.cwd))
            return
    if command.piped:
        walker.script.note(f"code is piped into a shell ({command.name}), so what runs cannot "
                           "be checked")


def _with_positional(state: State, words: list[Word]) -> State:
    inner = state.copy()
    inner.positional = (None if any(w.computed for w in words)
                        else tuple(w.value for w in words))
    return inner


def _payload(walker: Walker, words: list[Word], state: State, ctx: Context, via: str) -> None:
    if any(w.computed for w in words):
        walker.script.note(f"{via} runs text made at run time")
        return
    walker.run_payload(" ".join(w.value for w in words), state, ctx, via)


def _eval(walker: Walker, command: SimpleCommand, args: list[Word], state: State,
          ctx: Context) -> None:
    if any(w.computed for w in args):
        walker.script.note("eval runs text made at run time")
        return
    if args:
        inner = replace(state, depth=state.depth + 1)
        walker.run_text(" ".join(w.value for w in args), inner, replace(ctx, via="eval"))
        state.cwd, state.variables = inner.cwd, inner.variables


def _source(walker: Walker, command: SimpleCommand, args: list[Word]) -> None:
    if not args:
        return
    script = args[0]
    if script.process_substitution or script.computed or script.value in (
            "-", "/dev/stdin") or script.value.startswith(("/dev/fd/", "/proc/self/fd/")):
        walker.script.note(f"{command.name} runs code produced at run time")
        return
    walker.script.script_runs.append((script, command.cwd))


def _dash_c(walker: Walker, command: SimpleCommand, args: list[Word], state: State,
            ctx: Context) -> None:
    """`su -c TEXT`, `su -lc TEXT`, `script -qc TEXT`, `--command=TEXT`: TEXT runs in a shell."""
    for index, word in enumerate(args):
        value = word.value
        if (value in ("-c", "--command") or re.fullmatch(r"-[a-zA-Z]*c", value)) and \
                index + 1 < len(args):
            _payload(walker, [args[index + 1]], state, ctx, command.name)
            return
        if value.startswith("--command="):
            _payload(walker, [Word.literal(value.split("=", 1)[1])], state, ctx, command.name)
            return


def _sg(walker: Walker, command: SimpleCommand, args: list[Word], state: State,
        ctx: Context) -> None:
    """`sg GROUP -c TEXT` and `sg GROUP TEXT` run TEXT in a shell."""
    rest = args[1:] if args and not args[0].value.startswith("-") else args
    if rest[:1] and rest[0].value == "-c":
        rest = rest[1:]
    if rest:
        _payload(walker, rest[:1], state, ctx, "sg")


def _parallel(walker: Walker, command: SimpleCommand, args: list[Word], state: State,
              ctx: Context) -> None:
    """GNU parallel runs `COMMAND ARGUMENT` in a shell for each argument after `:::` (`{}`
    marks where it goes); without a command, each argument is a command line."""
    split = next((i for i, w in enumerate(args) if w.value.startswith(":::")), len(args))
    inner: list[Word] = []
    index = 0
    while index < split:
        option = args[index].value
        if option in _PARALLEL_VALUED:
            index += 2
        elif option.startswith("-"):
            index += 1
        else:
            inner = args[index:split]
            break
    values = [w for w in args[split + 1:] if not w.value.startswith(":::")]
    from_files = split < len(args) and args[split].value.startswith("::::")
    if from_files or not values:
        if not inner:
            walker.script.note("parallel runs command lines it reads at run time")
            return
        values = [Word(value="<argument of parallel>", candidates=("",), computed=True)]
    for argument in values:
        if not inner:
            _payload(walker, [argument], state, ctx, "parallel")
        elif any("{}" in w.value for w in inner):
            _payload(walker, [Word(value=w.value.replace("{}", argument.value),
                                   candidates=tuple(c.replace("{}", argument.value)
                                                    for c in w.candidates),
                                   computed=w.computed or argument.computed) for w in inner],
                     state, ctx, "parallel")
        else:
            _payload(walker, [*inner, argument], state, ctx, "parallel")


def _env(walker: Walker, command: SimpleCommand, args: list[Word], state: State,
         ctx: Context) -> None:
    index = 0
    while index < len(args):
        value = args[index].value
        if value in ("-S", "--split-string") or value.startswith(("-S", "--split-string=")):
            split = (args[index + 1].value if value in ("-S", "--split-string") and
                     index + 1 < len(args) else value.split("=", 1)[-1] if "=" in value
                     else value[2:])
            rest = args[index + 2:] if value in ("-S", "--split-string") else args[index + 1:]
            _payload(walker, [Word.literal(split), *rest], state, ctx, "env -S")
            return
        if value in ("-u", "--unset", "-C", "--chdir"):
            index += 2
            continue
        if value == "--":
            index += 1
            break
        if value.startswith("-") or re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", value):
            index += 1
            continue
        break
    if index < len(args):
        _inner(walker, command, args[index:], state, ctx, "env")


def _find(walker: Walker, command: SimpleCommand, args: list[Word], state: State,
          ctx: Context) -> None:
    roots: list[Word] = []
    index = 0
    while index < len(args) and args[index].value in ("-H", "-L", "-P", "-D", "-O"):
        index += 2 if args[index].value == "-D" else 1
    while index < len(args) and not args[index].value.startswith(("-", "(", "!")):
        roots.append(args[index])
        index += 1
    root_values = tuple(v for w in (roots or [Word.literal(".")]) for v in w.candidates)
    placeholder = Word(value=root_values[0], candidates=root_values, computed=True)
    while index < len(args):
        if args[index].value in ("-exec", "-execdir", "-ok", "-okdir"):
            end = index + 1
            while end < len(args) and args[end].value not in (";", "+"):
                end += 1
            inner = [placeholder if w.value == "{}" else w for w in args[index + 1:end]]
            if inner:
                _inner(walker, command, inner, state, ctx, f"find {args[index].value}")
            index = end
        index += 1


def _git(walker: Walker, command: SimpleCommand, args: list[Word]) -> None:
    index = 0
    while index < len(args) and args[index].value.startswith("-"):
        value = args[index].value
        if value in ("-c", "--config-env") and index + 1 < len(args):
            key = args[index + 1].value.split("=", 1)[0]
            if args[index + 1].computed or GIT_RUNS_COMMANDS.match(key):
                walker.script.note(f"git -c {key} can make git run another command")
        index += 2 if value in _GIT_VALUED else 1


def _interpreter(walker: Walker, command: SimpleCommand, args: list[Word]) -> None:
    operands = [w for w in args if not w.value.startswith("-") or w.value == "-"]
    inline = any(w.value in ("-c", "-e", "-m", "-E", "-r", "--eval", "--command")
                 or re.fullmatch(r"-[a-zA-Z]*[ce]", w.value) for w in args)
    from_stdin = not inline and (not operands or operands[0].value == "-")
    if from_stdin and (command.piped or command.stdin_text is not None):
        walker.script.note(f"code is piped into an interpreter ({command.name}), so what runs "
                           "cannot be checked")
