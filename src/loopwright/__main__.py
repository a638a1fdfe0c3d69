"""`python -m loopwright` runs the command line."""

from loopwright.cli import main

if __name__ == "__main__":
    main()
