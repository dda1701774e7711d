"""`campaign`: launch a set of stacks, watch them, collect, tear down, report (analysis/campaign/).

The stacks a campaign names are checked (globs expanded over stacks/) before anything
else, so a typo is named as a typo before --results, a bucket or Pulumi is needed:
analysis.campaign.commands.up and run check them first."""

from __future__ import annotations

from analysis.campaign.cli import register  # noqa: F401  (the command's parser and functions live there)
