"""Rescaling the Spark topology's stateful workers (docs/rescaling.md, "On Spark").

`plan`: which keys' state changes slot in a rescale, from the routings' own owners; `ownership`:
the check that no batch routed a tuple to a worker not holding its key's state; `journal`: a
rescale's progress in the run record, so a driver killed in the middle resumes it;
`stop_the_world`: STOP_THE_WORLD on Spark's own machinery (stop, repartition, restart).
"""
