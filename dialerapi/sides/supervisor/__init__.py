"""The supervisor's side: the board at /board/, its socket and the agent time report."""
