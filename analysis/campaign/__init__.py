"""Campaigns: one command launches a benchmark suite on many stacks, follows it, and cleans up.

`python -m analysis campaign up|status|wait|run|schedule` (analysis/campaign/cli.py). The
campaign's state lives in the results bucket (`campaigns/<id>/manifest.json`), not
on the machine that started it, so a restarted laptop or a second machine picks it
up with the campaign id alone.

Modules, one job each:
- selection: stack names and globs -> stacks of the matrix (stacks/ files);
- manifest: the campaign record in the bucket (read, update, write);
- backend: the Pulumi Automation API boundary (tests inject a stand-in);
- launcher: bounded-concurrency launch with one zone retry on capacity errors;
- finish: collect, tear down, report (the analysis functions) and the summary;
- wait: the polling loop;
- schedule: recurring campaign definitions (cron + arguments);
- commands: up, status, wait, run and run_schedule as functions (what anything else calls);
- cli: the `campaign` command line over them (prints, exit codes).

Shared with bench and `status`: analysis.observe (what the bucket says about each stack),
analysis.stack_status (per-stack state, cost so far, waste), analysis.launch_failures (launch
errors -> quota | no-capacity | gpu-not-in-zone | other, retry zones), analysis.progress.
"""
