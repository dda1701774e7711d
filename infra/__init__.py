"""gpubench infrastructure: the Pulumi program, its stack matrix and offline preview.

Importing this package must stay cheap and Pulumi-free: `analysis` imports
`infra.catalog` through it. Pulumi is imported only by the modules that build
resources (aws.py, gcp.py, program.py, render.py).
"""
