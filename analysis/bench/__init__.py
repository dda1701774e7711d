"""`gpubench bench`: a short probe of the job on each candidate, extrapolated to the whole job and ranked."""
