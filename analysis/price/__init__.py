"""Everything analysis computes from prices (docs/architecture.md, Prices); the price data is infra/catalog/'s."""
