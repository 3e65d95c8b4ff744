"""The dial state's vocabulary: the statuses, outcomes and call types of lead-intake-api.md
("States and transitions"), the errors the rules raise, and "is this lead live".

core.vocabulary  statuses, outcomes, call types, errors, is_live

Imports only the plumbing; every other sub-package may import it.
"""
