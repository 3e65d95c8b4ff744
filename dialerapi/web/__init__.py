"""What every side's HTTP surface shares: who the caller is and what its key opens (auth), agent
tokens (D9), the one error handler (D3), request bodies bounded before they are parsed,
and the field types of the request schemas.

Imports upkeep, the rules and the plumbing; never a side.
"""
