"""`gpubench predict`: calibration.py the spec-ratio model and its shipped tables, predict.py the rows."""
