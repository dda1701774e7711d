"""Everything analysis computes from prices, one idea per module.

- `billed`: the cost model: what a duration on an offering is billed under
  its billing rule (`cost_of`, `billed`: the one formula bench and report use too, `billed_seconds`, `quote`, `CostError`).
- `runs`: prices each collected run (billed and training cost, the price's
  source and date) for the results table and report.
- `monthly`: the monthly bill of a recurring benchmark and of the leak
  sweeper (`monthly_bill`, `sweeper_bill`).
- `age`: the warning when the newest catalog price an answer used is old.
- `estimate`: a stack's cost estimated from its collected runs (queries the
  results table `collect` writes; infra computes the estimate from the data).
- `local`: this machine's hourly price (the demo's and `bench --local`'s).
- `spot`: a run's price over its own window, at the spot price it paid.
- `snapshot`: render, validate, write and diff a dated price snapshot.
- `refresh`: one `prices refresh` of a provider and region, end to end.
- `skypilot`: a dated snapshot converted from SkyPilot's public catalog
  (`python -m analysis.price.skypilot`).

The catalog's own price data (snapshots, billing rules, live-price errors)
is infra's, under infra/catalog/; each cloud's price API client is in
infra/<cloud>/prices.py. Everything that talks to a cloud takes its client
as an argument, so tests use botocore's Stubber and a fake HTTP session.
"""
