"""Tools: the tool model, the catalogue, argument repair and validation, and execution."""
