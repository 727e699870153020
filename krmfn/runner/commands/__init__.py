"""The command line of plan, apply, diff and status: flags, input, signals, exit codes and printers;
`context.py` what they share.
"""
