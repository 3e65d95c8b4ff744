"""The supervisor's side (issue #49): the board at /board/, its socket and the agent time report."""
