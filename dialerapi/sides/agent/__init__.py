"""The agents' side: the /ws socket (its own gunicorn pool, issue #27), GET /api/missed-activities,
GET /api/pause-reasons, agent tokens for the agent desktop's server (issue #28) and the reference
panel at /panel/ (static files in panel/)."""
