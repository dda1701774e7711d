"""Errors of a live price refresh (the fetchers in infra/<cloud>/prices.py, the
refresh and spot pricing in analysis/price/), each with the exit code the CLI
uses, so scripts can tell "no credentials" from "the API failed". Errors of
the catalog itself (unknown offering, no price) are in errors.py."""

from __future__ import annotations

from payload import exitcodes


class PricesError(exitcodes.GpubenchError):
    exit_code = exitcodes.REMOTE


class NoCredentials(PricesError):
    """No cloud credentials: nothing was fetched, the shipped snapshots stay."""

    exit_code = exitcodes.MISSING


class PriceFetchError(PricesError):
    """The price API answered with an error, or priced nothing we asked for."""

    exit_code = exitcodes.REMOTE


class SnapshotInvalid(PricesError):
    """The snapshot we built does not load in the catalog; it was not written."""

    exit_code = exitcodes.INVALID
