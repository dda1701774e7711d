"""`campaign`: launch a set of stacks, watch them, collect, tear down, report (analysis/campaign/).

The stacks a campaign names are checked (globs expanded over stacks/) before anything
else, so a typo is named as a typo before --results, a bucket or Pulumi is needed."""

from __future__ import annotations

# The campaign subcommands that take stack names or globs.
SELECTING = ("up", "run")


def register(sub) -> None:
    from analysis.campaign.cli import register as register_campaign

    register_campaign(sub)
    campaign = sub.choices["campaign"]
    (commands,) = (a for a in campaign._actions if a.choices and "up" in a.choices)
    for name in SELECTING:
        parser = commands.choices[name]
        parser.set_defaults(func=_selection_first(parser.get_default("func")))


def _selection_first(func):
    """Check the stack names and globs, then run the command as it was."""

    def run(args) -> int:
        if getattr(args, "stacks", None) and not getattr(args, "schedule", None):
            from analysis.campaign.commands import project_dir
            from analysis.campaign.selection import select

            select(args.stacks, project_dir(args.project_dir) / "stacks")
        return func(args)

    return run
