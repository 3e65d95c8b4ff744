"""Background jobs (APScheduler), started with the app under gunicorn when JOBS_ENABLED.

The scheduler is created once here and bound to the app by `init_app`. Jobs that must run in one
process per tick across workers and hosts take a MySQL GET_LOCK (decisions.md D6); per-process
jobs, such as the health checks that feed /healthz, run in every worker.
"""

from datetime import datetime, timezone

from apscheduler.schedulers.background import BackgroundScheduler

from . import health

scheduler = BackgroundScheduler(timezone="UTC", job_defaults={"coalesce": True, "max_instances": 1})


def init_app(app):
    """Add this app's jobs and start the scheduler, unless JOBS_ENABLED is false (CLI, tests)."""
    if not app.config["JOBS_ENABLED"]:
        return
    scheduler.add_job(
        health.check_database, "interval", seconds=health.DB_CHECK_SECONDS, args=[app],
        id="health.database", replace_existing=True, next_run_time=datetime.now(timezone.utc),
    )
    if not scheduler.running:
        scheduler.start()
