"""Tabs of many visitors at once: each tab's state, fair heavy jobs, a class that follows its lecturer."""
