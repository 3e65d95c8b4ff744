"""Campaigns for the CRM (docs/crm/campaigns.md): read them, change their
settings, pause and resume them. The CRM key changes; the supervisor role reads (web.auth).
Every change is kept with the credential that made it and told as a campaign.* event.

Imports the rules, the plumbing and web, never another side.
"""

from flask import Blueprint, g

from dialerapi.plumbing import clock, limits
from dialerapi.plumbing.db import get_db
from dialerapi.rules.campaigns import operations
from dialerapi.rules.config import dialer as dialer_config
from dialerapi.sides.crm import schemas
from dialerapi.web.auth import CRM, SUPERVISOR, opens
from dialerapi.web.requests import db_timezone, json_body, load

campaigns_bp = Blueprint("campaigns", __name__)
FORM_TYPE = schemas.CampaignPath()


def _form_type(form_type):
    return load(FORM_TYPE.load, {"form_type": form_type})["form_type"]


def _campaign(conn, form_type, now, tz, known=True):
    config = dialer_config.load_config(conn)
    if known:
        operations.require_known(conn, config, form_type)
    return {**operations.view(config, form_type, now, tz), "history": operations.history(conn, form_type)}


@campaigns_bp.get("/api/campaigns")
@opens(CRM, SUPERVISOR)
@limits.crm_reads
def list_campaigns():
    """Every campaign the floor knows (its agents' skills and the campaigns set), in form_type order.

    200 {ok, campaigns: [{form_type, state, open, closed_reason, restriction_note, next_open_at
    ('YYYY-MM-DD HH:MM:SS' DB_TIMEZONE), predictive, settings, effective, updated_at, updated_by}]}.
    """
    tz = db_timezone()

    def read(conn):
        config = dialer_config.load_config(conn)
        now = clock.now(tz)
        return [operations.view(config, form_type, now, tz) for form_type in operations.form_types(conn, config)]

    return {"ok": True, "campaigns": get_db().run(read)}


@campaigns_bp.get("/api/campaigns/<path:form_type>")
@opens(CRM, SUPERVISOR)
@limits.crm_reads
def read_campaign(form_type):
    """One campaign as list_campaigns shows it, with `history`: its changes, newest first (when,
    by which credential, old and new). 404 unknown_campaign."""
    tz = db_timezone()
    return {"ok": True, "campaign": get_db().run(_campaign, _form_type(form_type), clock.now(tz), tz)}


@campaigns_bp.patch("/api/campaigns/<path:form_type>")
@limits.crm_actions
def update_campaign(form_type):
    """Change a campaign's settings (a JSON merge patch: a setting set to null goes back to the
    floor's) and, with `state`, its state; all or nothing. 200 {ok, campaign}; 400
    validation_failed naming each wrong setting (docs/operations/campaigns.md lists them)."""
    form_type, patch, tz = _form_type(form_type), json_body(), db_timezone()

    def change(conn):
        now = clock.now(tz)
        operations.update(conn, form_type, patch, now, g.caller.role)
        return _campaign(conn, form_type, now, tz, known=False)

    return {"ok": True, "campaign": get_db().run(change)}


@campaigns_bp.post("/api/campaigns/<path:form_type>/pause")
@limits.crm_actions
def pause_campaign(form_type):
    """Pause a campaign: no new claim of its leads from the moment this answers (live calls, held
    actions, settles and callbacks' clocks go on). 200 {ok, campaign}; pausing a paused one changes nothing."""
    return _switch(operations.pause, form_type)


@campaigns_bp.post("/api/campaigns/<path:form_type>/resume")
@limits.crm_actions
def resume_campaign(form_type):
    """Resume a paused (or ended) campaign: its leads are claimed again. 200 {ok, campaign}."""
    return _switch(operations.resume, form_type)


def _switch(action, form_type):
    form_type, tz = _form_type(form_type), db_timezone()

    def change(conn):
        now = clock.now(tz)
        action(conn, form_type, now, g.caller.role)
        return _campaign(conn, form_type, now, tz, known=False)

    return {"ok": True, "campaign": get_db().run(change)}
