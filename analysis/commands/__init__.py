"""One module per `python -m analysis` subcommand.

Each module defines `register(subparsers)`, which adds its parser and sets
`func` to a callable taking the parsed args and returning an exit code. The
CLI discovers the modules here, so adding a command is adding a file. Keep
`register` cheap: import heavy libraries inside the command's function.
"""
