"""One module per `gpubench` subcommand.

Each module defines `register(subparsers)`, which adds its parser and sets
`func` to a callable taking the parsed args and returning an exit code. The
CLI discovers the modules here, so adding a command is adding a file. Keep
`register` cheap: import heavy libraries inside the command's function.

A command is a thin adapter: it parses its arguments, calls one library function
with typed keyword arguments (analysis.report.build.write_report,
analysis.collect.run.collect_results, analysis.teardown.teardown, ...), prints
or emits JSON, and maps the outcome to an exit code. Nothing but the CLI imports
these modules (an import-linter contract in pyproject.toml): other code calls
the library functions.
"""
