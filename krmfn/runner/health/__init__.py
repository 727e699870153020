"""Health: the kstatus rules (status.py) and CEL health checks (healthexprs.py) evaluated in a child
process (celworker.py).
"""
