"""This process's resources: one memory budget, memory shared with the heavy-work child, and that child."""
