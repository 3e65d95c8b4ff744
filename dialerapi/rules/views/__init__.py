"""What the rules answer to a reader: the lead read, "why not now", the floor state, the board.

views.lead   GET /api/leads/{oli_id}
views.why    whether a lead may be claimed now, what holds it, until when
views.floor  the floor per form_type, for pacing (POST /engine/floor)
views.board  the supervisor board's tiles and rows

May import agents and everything below it; independent of dialing.
"""
