"""Everything analysis computes from prices, one idea per module (docs/architecture.md, Prices, lists them).

The catalog's own price data (snapshots, billing rules, live-price errors) is infra's, under
infra/catalog/; each cloud's price API client is in infra/<cloud>/prices.py. Everything that talks to a
cloud takes its client as an argument, so tests use botocore's Stubber and a fake HTTP session.
"""
