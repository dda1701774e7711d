"""gpubench analysis: offerings, costs, and (from collected runs) reports.

Importing this package stays light: no pandas, Pulumi or TensorFlow at import
time, so `python -m analysis offerings` answers instantly.
"""
