"""The ApplySet inventory: the parent Secret, its lock, the run records, the app's identity, its members
and pruning.
"""
