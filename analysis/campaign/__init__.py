"""Campaigns: a suite launched on many stacks, followed and cleaned up; the state lives in the results
bucket (`campaigns/<id>/manifest.json`), so any machine picks it up with the campaign id alone."""
