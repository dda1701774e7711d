"""`gpubench predict`: model.py the spec ratios, calibration.py the shipped tables, predict.py the rows."""
