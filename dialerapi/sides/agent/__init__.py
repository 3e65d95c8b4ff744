"""The agents' side: the /ws socket (its own gunicorn pool), GET /api/missed-activities,
GET /api/pause-reasons, agent tokens for the agent desktop's server and the reference
panel at /panel/ (static files in panel/)."""
