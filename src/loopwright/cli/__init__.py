"""The `loopwright` command line; the entry point is `loopwright.cli.main:main`."""
