"""`gpubench bench`: where should this training job run, and what will the whole job cost?

A short probe of the user's real job runs on every candidate offering; its
steady throughput and measured overhead are extrapolated to the whole job
under each offering's billing rule, then ranked.

Module map:
    candidates   the offerings worth probing (cloud, this machine, SSH hosts)
    plan         the probe plan and the most it can cost, checked against --budget
    run          launch the probes, stop them when steady, collect and estimate
    extrapolate  one probe's figures -> the whole job's hours and billed cost
    rank         the answer: cheapest, fastest, within deadline/budget, frontier
    page         the answer as one self-contained HTML page

The steady-rate statistics (MSER-5, batch means, Student-t) live in
payload.steady: the probe runs them on the instance.
"""
