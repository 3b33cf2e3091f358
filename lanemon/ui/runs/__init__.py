"""The Runs tab: whole / sliced / worker runs of the CPU job, their results
and where each would be placed. Domain: ``lanemon.work``."""
