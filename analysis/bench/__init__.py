"""`gpubench bench`: where should this training job run, and what will the whole job cost?

A short probe of the user's real job runs on every candidate offering; its steady throughput and
measured overhead are extrapolated to the whole job under each offering's billing rule, then ranked.
The modules are listed in docs/architecture.md; the method is written up in docs/bench-method.md.
"""
