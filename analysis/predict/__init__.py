"""Predicted throughput, time and cost on GPUs nobody measured the job on (`gpubench predict`).

model.py is the arithmetic (spec ratios), calibration.py what the shipped public tables say about
it, predict.py the command's library function. docs/bench-method.md, section 5, is the method.
"""
