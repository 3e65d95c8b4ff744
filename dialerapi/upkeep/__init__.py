"""The service's own upkeep over the rules: the scheduled sweeps and jobs (APScheduler, one run per
tick across hosts), health checks and reports (D8), and metrics.

Imports the rules and the plumbing.
"""
