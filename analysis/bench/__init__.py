"""`gpubench bench`: where should this training job run, and what will the whole job cost?

A short probe of the user's real job runs on every candidate offering; its
steady throughput and measured overhead are extrapolated to the whole job
under each offering's billing rule, then ranked.

Module map:
    candidates   the offerings worth probing (cloud, this machine, SSH hosts)
    plan         the most the probes may cost, checked against --budget
    run          the library entry point: plan, probe every candidate at once, answer
    launch       which probe runs each candidate (cloud, local, SSH)
    probes       run the probes in parallel; clean up on Ctrl-C
    cloud        a cloud probe: a generated Pulumi stack, launched, read, destroyed
    local        a probe on this machine
    ssh          a probe on a host of your own
    readings     what one probe measured, read back from the results bucket
    record       a bench's workspace and record
    live         `gpubench status` and `gpubench logs`
    answer       probe reports -> the `--json` rows and the answer document
    extrapolate  one probe's figures -> the whole job's hours and billed cost
    rank         the answer: cheapest, fastest, within deadline/budget, frontier
    page         the answer as one self-contained HTML page

The steady-rate statistics (MSER-5, batch means, Student-t) live in
payload.steady: the probe runs them on the instance. The method is written
up in docs/bench-method.md.
"""
