"""Errors of a live price refresh (infra/<cloud>/prices.py, analysis/price/), each with its exit code,
so scripts can tell "no credentials" from "the API failed"; the catalog's own errors are in errors.py."""

from __future__ import annotations

from payload import exitcodes


class PricesError(exitcodes.GpubenchError):
    exit_code = exitcodes.REMOTE


class NoCredentials(PricesError):
    """No cloud credentials: nothing was fetched, the shipped snapshots stay."""

    exit_code = exitcodes.MISSING


class PriceFetchError(PricesError):
    """The price API answered with an error, or priced nothing we asked for."""


class SnapshotInvalid(PricesError):
    """The snapshot we built does not load in the catalog; it was not written."""

    exit_code = exitcodes.INVALID
