"""`campaign`: launch a set of stacks, watch them, collect, tear down, report (analysis/campaign/)."""


def register(sub) -> None:
    from analysis.campaign.cli import register as register_campaign

    register_campaign(sub)
