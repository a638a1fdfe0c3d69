"""The `loopwright` command line; the entry point is `loopwright.cli:main`, the commands live in
`loopwright.cli.main`."""

import sys


def main() -> None:
    """Console-script entry point (`loopwright`): `--version` answers without loading the CLI
    framework; everything else goes to `loopwright.cli.main`."""
    if sys.argv[1:] == ["--version"]:
        from loopwright import __version__

        print(f"loopwright {__version__}")
        return
    if sys.argv[1:2] in (["run"], ["chat"]):
        from loopwright.cli.startup import pause_collection

        pause_collection()  # resumed by the command before its agent runs
    from loopwright.cli.main import main as run_cli

    run_cli()
