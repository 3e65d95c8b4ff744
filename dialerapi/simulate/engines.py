"""The two ways the simulated dialing engine reaches the rules: the Python library, or POST /engine/.

Both answer the floor (floor.py) in the same shapes: `claim`/`claim_predictive` return
(Claimed or None, refusal reason or None), `bridge` the agent id or None. An agent's progressive
claim that takes a lead also marks the agent busy (the engine originates the call at once), and a
settle of an agent's call marks the agent idle in wrap-up: the library engine does each pair in one
transaction, as an engine built on the library may (a commit per pair fewer), the HTTP
engine posts them one after the other.
"""

from dataclasses import dataclass

from dialerapi.plumbing import clock
from dialerapi.rules.agents import roster
from dialerapi.rules.compliance import abandons
from dialerapi.rules.config import dialer as dialer_config
from dialerapi.rules.dialing import claims
from dialerapi.rules.leads import dialstate


@dataclass
class Claimed:
    oli_id: str
    form_type: str
    previous_dial_status: str
    callback_scheduled_at: object  # naive DB_TIMEZONE datetime or None
    caller_id: dict | None = None  # {number, pool, match} the call presents


class LibraryEngine:
    """An engine written in Python: the claims, agents and dialstate functions, each in a transaction."""

    name = "library"

    def __init__(self, floor):
        self.floor = floor
        self.db = floor.db

    def state(self, agent_id, *, panel_active=None, ami_idle=None, wrapup_seconds=None):
        self.db.run(self._state, agent_id, panel_active=panel_active, ami_idle=ami_idle,
                    wrapup_seconds=wrapup_seconds)

    def _state(self, conn, agent_id, *, panel_active=None, ami_idle=None, wrapup_seconds=None):
        floor = self.floor
        wrapup_until = roster.KEEP if wrapup_seconds is None else roster.wrapup_until(wrapup_seconds, floor.now, floor.tz)
        roster.set_availability(conn, agent_id, panel_active=panel_active, ami_idle=ami_idle, wrapup_until=wrapup_until)

    def _claimed(self, work, *args, **kwargs):
        try:
            row = self.db.run(work, *args, **kwargs)
        except claims.NotClaimable as refusal:
            return None, refusal.reason
        return (row and self.floor.presented(Claimed(row["oli_id"], row["form_type"], row["previous_dial_status"],
                                                     row["callback_scheduled_at"], row["caller_id_choice"]))), None

    def claim(self, agent_id):
        return self._claimed(self._claim_and_dial, agent_id)

    def _claim_and_dial(self, conn, agent_id):
        row = claims.claim_next(conn, agent_id, self.floor.now, tz=self.floor.tz)
        if row:
            self._state(conn, agent_id, ami_idle=False)
        return row

    def claim_predictive(self, ahead, form_type=None):
        return self._claimed(
            lambda conn: claims.claim_predictive(conn, self.floor.now, ahead=ahead, form_type=form_type,
                                                 tz=self.floor.tz))

    def bridge(self, oli_id):
        return self.db.run(roster.bridge, oli_id, self.floor.now)

    def abandons(self):
        """{form_type: {"windows": ...}}: the abandon windows the floor state reports (rules.views.floor,
        ), read alone (abandons.windows: the whole floor state each minute was
        a tenth of the database's work in a run). A form_type missing has none in any window."""
        windows = self.db.run(lambda conn: abandons.windows(conn, self.floor.now, dialer_config.load_config(conn)))
        return {form_type: {"windows": figures} for form_type, figures in windows.items()}

    def connected(self, oli_id, agent_id):
        self.db.run(roster.open_missed_activity, oli_id, agent_id, self.floor.now, self.floor.tz)

    def settle(self, oli_id, outcome, agent_id, started_at, wrapup_seconds=None):
        """Settle the call; with `agent_id`, its agent is then idle, in wrap-up for `wrapup_seconds`."""
        self.db.run(self._settle, oli_id, outcome, agent_id, started_at, wrapup_seconds)

    def _settle(self, conn, oli_id, outcome, agent_id, started_at, wrapup_seconds):
        config = self.floor.app.config
        dialstate.settle(conn, oli_id, outcome, self.floor.now, tz=self.floor.tz,
                         grace_minutes=config["MISSED_ACTIVITY_GRACE_MINUTES"],
                         release_retry_ms=config["RELEASE_RETRY_MS"], agent_id=agent_id, started_at=started_at)
        if agent_id is not None:
            self._state(conn, agent_id, ami_idle=True, wrapup_seconds=wrapup_seconds)


class HttpEngine:
    """An engine in any language: every operation a POST to /engine/ with ENGINE_SECRET, as JSON."""

    name = "http"

    def __init__(self, floor):
        self.floor = floor
        self.headers = {"Authorization": f"Bearer {floor.app.config['ENGINE_SECRET']}"}
        self.requests = 0

    def _post(self, operation, body, expect=(200,)):
        self.requests += 1
        if operation != "agent-state" and operation != "settle":
            body = {**body, "request_id": f"sim-{self.requests}"}
        return self.floor.http(f"/engine/{operation}", body, expect=expect, headers=self.headers).get_json()

    def state(self, agent_id, **fields):
        self._post("agent-state", {"agent_id": agent_id, **{k: v for k, v in fields.items() if v is not None}})

    def _claimed(self, body):
        answer = self._post("claim", body, expect=(200, 409))
        if not answer["ok"]:
            return None, answer.get("reason", answer["error"])
        lead = answer["lead"]
        if lead is None:
            return None, None
        due = lead["callback_scheduled_at"]
        return self.floor.presented(Claimed(lead["oli_id"], lead["form_type"], lead["previous_dial_status"],
                                            due and clock.parse_wall_clock(due, self.floor.tz), answer["caller_id"])), None

    def claim(self, agent_id):
        claimed, refusal = self._claimed({"mode": "progressive", "agent_id": agent_id})
        if claimed is not None:
            self.state(agent_id, ami_idle=False)
        return claimed, refusal

    def claim_predictive(self, ahead, form_type=None):
        return self._claimed({"mode": "predictive", "ahead": ahead, **({"form_type": form_type} if form_type else {})})

    def bridge(self, oli_id):
        return self._post("bridge", {"oli_id": oli_id})["agent_id"]

    def abandons(self):
        self.requests += 1
        state = self.floor.http("/engine/floor", {}, expect=(200,), headers=self.headers).get_json()
        return {group["form_type"]: group["abandons"] for group in state["form_types"]}

    def connected(self, oli_id, agent_id):
        self._post("call-connected", {"oli_id": oli_id, "agent_id": agent_id})

    def settle(self, oli_id, outcome, agent_id, started_at, wrapup_seconds=None):
        # A call_id, as Asterisk's uniqueid would be: without one a settle is known by oli_id and
        # started_at, and a lead released and dialed again within the same second would collide.
        body = {"oli_id": oli_id, "outcome": outcome, "started_at": clock.format_wall_clock(started_at),
                "call_id": f"sim-call-{self.requests + 1}"}
        if agent_id is not None:
            body["agent_id"] = agent_id
        self._post("settle", body)
        if agent_id is not None:
            self.state(agent_id, ami_idle=True, wrapup_seconds=wrapup_seconds)


ENGINES = {engine.name: engine for engine in (LibraryEngine, HttpEngine)}
