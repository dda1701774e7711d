"""SSH stacks: run the gpubench payload on dedicated and on-prem boxes through fabric; `session` is
the library entry (`run_ssh_stack`), `cli` the command. Modules: docs/architecture.md; use: docs/ssh.md."""

SUMMARY = "run the payload on a dedicated/on-prem box over SSH and upload its results"  # `gpubench --help` too
