"""This process's resources: one memory budget, and the pool of one process that runs heavy work."""
