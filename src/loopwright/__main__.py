"""`python -m loopwright` runs the command line."""

from loopwright.cli.main import main

if __name__ == "__main__":
    main()
