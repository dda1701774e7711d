"""The studies' published figures and the papers' training schedules (studies.py)."""
