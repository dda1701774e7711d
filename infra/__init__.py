"""gpubench infrastructure: the Pulumi program, its stack matrix and offline preview. Importing it stays
cheap and Pulumi-free (`analysis` imports `infra.catalog` through it): only the modules that build or
render resources import Pulumi."""
