"""SSH stacks: run the gpubench payload on dedicated and on-prem boxes through fabric.

Modules, one job each: `config` (typed stack parsing), `connection` (fabric
connect with clear errors), `checks` (what the host has), `bundle` (the source
the venv runtime copies), `runtimes` (docker | venv plans), `layout` and
`script` (the per-run remote directory and its detached wrapper), `remote`
(find, launch, stop runs), `follow` (stream the log), `transfer` (SFTP fetch,
upload from this machine), `session` (one run of a stack, the library entry `run_ssh_stack`),
`cli` (`python -m infra ssh`). See docs/ssh.md.
"""
