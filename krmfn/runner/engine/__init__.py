"""The step engine: apply a plan step by step, Job policy and logs, waiting, concurrency groups, and the
dry-run differ.
"""
