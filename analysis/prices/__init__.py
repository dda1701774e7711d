"""Live prices: refresh the catalog from the providers' price APIs and price
spot runs at the spot price they actually paid.

- `aws`: AWS Price List (on-demand) and EC2 spot price history.
- `gcp`: GCP Cloud Billing Catalog (Compute Engine SKUs, on-demand and spot).
- `snapshot`: render, validate and write a dated snapshot; diff it against
  the prices it replaces.
- `refresh`: one provider and region end to end (what `prices refresh` runs).
- `spot`: a run's price over its own window (`price_run`, for collect).

Everything that talks to a cloud takes its client as an argument, so tests use
botocore's Stubber and a fake HTTP session instead of the network.
"""

from __future__ import annotations

from infra.catalog.price_errors import NoCredentials, PriceFetchError, PricesError, SnapshotInvalid

__all__ = ["NoCredentials", "PriceFetchError", "PricesError", "SnapshotInvalid"]
