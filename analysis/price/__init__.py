"""Everything analysis computes from prices (docs/architecture.md, Prices, lists the modules). The catalog's price
data is infra/catalog/'s; each cloud's price API client is infra/<cloud>/prices.py, passed in so tests stub it."""
