"""`gpubench bench`: probe a job on candidate offerings and extrapolate the whole job's time and cost."""
