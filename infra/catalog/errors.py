"""Catalog errors. Each message names the bad value and what to do instead."""

from __future__ import annotations


class CatalogError(ValueError):
    """Bad catalog data or a request the catalog cannot answer."""


class UnknownOffering(CatalogError):
    def __init__(self, offering_id: str, suggestions: list[str]):
        self.offering_id = offering_id
        self.suggestions = suggestions
        hint = f" Did you mean: {', '.join(suggestions)}?" if suggestions else ""
        super().__init__(f"unknown offering {offering_id!r}.{hint} List them with `gpubench offers`")


class NoPrice(CatalogError):
    """No snapshot prices this offering/market on the requested date."""
