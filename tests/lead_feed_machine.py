"""A CRM that folds the lead events feed, driven by hypothesis' RuleBasedStateMachine (issue #65
item 7: never a change without its event, proved).

The machine runs random sequences of every public operation that changes a lead: the CRM's pushes,
callbacks (anyone's and personal) and dispositions, during calls and after; the engine's claims
of each mode (progressive, predictive, redial, inbound), connects and settles with each outcome;
an operator's do-not-call adds and removes; the clock moving on; the sweep (held actions, lease
releases, personal callbacks' fallbacks). Five leads share three numbers under an enabled contact
cap of one call an hour, so claims hold leads and originate failures give attempts back.

After every step it checks what a CRM reading the feed (GET /api/lead-events) would believe of each
lead against GET /api/leads/{oli_id} (its `lead`, as the route's function reads it: the five
leads in one transaction, at a third of five requests' cost): the fields the events carry (lead_events.lead_state),
`do_not_call` and `contact_cap`. What the CRM believes is the fold of the events, in feed order,
over what its own requests answered: a push, a callback applied at once (200) or an immediate
callback request is the CRM's own change, which it knows from its request, so the lead read after
it is its new belief; a held callback (202) is not, and must come back as an event. A lead live
on a call is compared once the call ends: its claim is the engine's, told by the end (the call
ended or released). Built on lead-intake-api.md "States and transitions", "Claim and retry rules",
the CRM action endpoints; decisions.md D5 (held actions), D6 (settle, sweep); docs/crm/results.md.
"""

import itertools
from collections import Counter
from datetime import timedelta

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from conftest import DATA_TABLES, DEFAULT_NOW, ENGINE_SECRET, SECRET, TZ, set_clock
from dialerapi.plumbing import migrate
from dialerapi.plumbing.clock import format_wall_clock
from dialerapi.plumbing.db import get_db
from dialerapi.plumbing.limits import limiter
from dialerapi.rules.compliance import do_not_call as dnc
from dialerapi.rules.core.vocabulary import OUTCOMES
from dialerapi.rules.dialing import crm_actions
from dialerapi.rules.events import lead_events
from dialerapi.rules.views import lead as lead_read

NUMBERS = {"919845011111": "+91 98450 11111", "919845022222": "+91 98450 22222", "919845033333": "+91 98450 33333"}
LEADS = {"OLI-1": "919845011111", "OLI-2": "919845011111", "OLI-3": "919845022222", "OLI-4": "919845022222",
         "OLI-5": "919845033333"}
AGENTS = (501, 502)
# The fields of a lead the feed tells (lead_events.lead_state), and two the read derives.
TOLD = ("dial_status", "priority_id", "call_count", "last_dial_result", "disposeRemark", "next_retry_at",
        "callback_scheduled_at", "callback_agent_id")
CRM = {"Authorization": f"Bearer {SECRET}"}
ENGINE = {"Authorization": f"Bearer {ENGINE_SECRET}"}


def believed(known):
    """What the CRM believes the read shows, from its fold `known`: a held lead shows its cap while its
    due time is the one the hold set (docs/crm/results.md, lead.held)."""
    view = {field: known[field] for field in TOLD + ("do_not_call",)}
    due = known["callback_scheduled_at"] if known["dial_status"] == "Callback" else known["next_retry_at"]
    hold = known["hold"]
    view["contact_cap"] = {"cap": hold[0], "frees_at": hold[1]} if hold and due == hold[1] else None
    return view


def as_read(lead):
    view = {field: lead[field] for field in TOLD + ("do_not_call", "contact_cap")}
    return view


class LeadFeed(RuleBasedStateMachine):
    """Set `app` and `sql` (the tests' Sql) on a subclass before running it."""

    app = None
    sql = None
    seen = Counter()  # event types folded, over every example of a run

    @initialize()
    def floor(self):
        limiter.reset()
        self.sql.empty(DATA_TABLES)
        migrate.seed_rows(self.sql.conn)
        self.now = DEFAULT_NOW
        set_clock(self.now)
        self.client = self.app.test_client()
        self.ids = itertools.count()
        self.after = "0"
        self.known = {}
        self.calls = {}  # oli_id -> (call_type, agent_id or None, reservation_id) of the claims made
        self.sql("UPDATE sales_dialer_config SET max_tries = 3")
        self.sql("INSERT INTO dialerapi_contact_caps (name, max_attempts, window_seconds, enabled)"
                 " VALUES ('one-an-hour', 1, 3600, 1)")
        for agent_id in AGENTS:
            self.sql("INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle) VALUES (%s, %s, 'Agent', 1, 1)",
                     agent_id, str(4000 + agent_id))
            self.sql("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (%s, 'home_loan')", agent_id)
        for oli_id in LEADS:
            self.push_lead(oli_id)

    # The CRM

    def push_lead(self, oli_id, callback_minutes=None):
        """A push of a fresh lead (priority 2), or of a callback `callback_minutes` from now (priority 1)."""
        was_live = self.live(oli_id)
        lead = {"oli_id": oli_id, "phone_number": NUMBERS[LEADS[oli_id]], "client_name": "Meena Sundaram",
                "form_type": "home_loan", "priority_id": 2}
        if callback_minutes is not None:
            lead.update(priority_id=1, callback_scheduled_at=self.wall(callback_minutes))
        answer = self.client.post("/api/leads", json=lead, headers=CRM)
        assert answer.status_code in (200, 201), answer.get_json()
        if not was_live:
            self.believe_read(oli_id)

    @rule(oli_id=st.sampled_from(sorted(LEADS)), callback_minutes=st.sampled_from([None, 10]))
    def push(self, oli_id, callback_minutes):
        self.push_lead(oli_id, callback_minutes)

    @rule(oli_id=st.sampled_from(sorted(LEADS)), minutes=st.sampled_from([-5, 20, 90]),
          owner=st.sampled_from([None, 501]), held_if_live=st.booleans())
    def callback(self, oli_id, minutes, owner, held_if_live):
        self.file_callback(oli_id, minutes, owner, held_if_live)

    @precondition(lambda self: self.calls)
    @rule(data=st.data(), minutes=st.sampled_from([-5, 20]), owner=st.sampled_from([None, 501]))
    def callback_during_call(self, data, minutes, owner):
        self.file_callback(data.draw(st.sampled_from(sorted(self.calls))), minutes, owner, True)

    def file_callback(self, oli_id, minutes, owner, held_if_live):
        body = {"oliId": oli_id, "scheduledAt": self.wall(minutes)}
        if owner is not None:
            body["callbackAgentId"] = owner
        path = "/api/pending-callbacks" if held_if_live else "/api/send-callback-request"
        answer = self.client.post(path, json=body, headers=CRM)
        assert answer.status_code in (200, 202, 409), answer.get_json()
        if answer.status_code == 200:
            self.believe_read(oli_id)

    @rule(oli_id=st.sampled_from(sorted(LEADS)), reason=st.sampled_from(["Not interested", "DND"]))
    def dispose(self, oli_id, reason):
        self.file_disposition(oli_id, reason)

    @precondition(lambda self: self.calls)
    @rule(data=st.data(), reason=st.sampled_from(["Not interested", "DND"]))
    def dispose_during_call(self, data, reason):
        self.file_disposition(data.draw(st.sampled_from(sorted(self.calls))), reason)

    def file_disposition(self, oli_id, reason):
        answer = self.client.post("/api/pending-dispositions", json={"oliId": oli_id, "reason": reason}, headers=CRM)
        assert answer.status_code in (200, 202), answer.get_json()

    # The engine

    def claim(self, body, call_type, agent_id=None):
        answer = self.client.post("/engine/claim", json={"request_id": self.request_id(), **body}, headers=ENGINE)
        assert answer.status_code in (200, 409), answer.get_json()
        lead = answer.get_json().get("lead") if answer.status_code == 200 else None
        if lead:
            self.calls[lead["oli_id"]] = (call_type, agent_id, lead["reservation_id"])

    @rule(agent_id=st.sampled_from(AGENTS))
    def claim_progressive(self, agent_id):
        self.claim({"mode": "progressive", "agent_id": agent_id}, "outbound", agent_id)

    @rule(ahead=st.booleans())
    def claim_predictive(self, ahead):
        self.claim({"mode": "predictive", "ahead": ahead}, "outbound")

    @rule(agent_id=st.sampled_from(AGENTS), oli_id=st.sampled_from(sorted(LEADS)),
          mode=st.sampled_from(["redial", "inbound"]), customer_request=st.booleans())
    def claim_named(self, agent_id, oli_id, mode, customer_request):
        body = {"mode": mode, "agent_id": agent_id, "oli_id": oli_id}
        if mode == "redial":
            body["customer_request"] = customer_request
        self.claim(body, mode, agent_id)

    @precondition(lambda self: self.calls)
    @rule(data=st.data())
    def connect(self, data):
        oli_id = data.draw(st.sampled_from(sorted(self.calls)))
        call_type, agent_id, _ = self.calls[oli_id]
        answer = self.client.post("/engine/call-connected", json={
            "oli_id": oli_id, "agent_id": agent_id or AGENTS[0], "request_id": self.request_id(),
            "call_type": "redial" if call_type == "redial" else "outbound"}, headers=ENGINE)
        assert answer.status_code in (200, 409), answer.get_json()

    @precondition(lambda self: self.calls)
    @rule(data=st.data(), outcome=st.sampled_from(sorted(OUTCOMES)), with_agent=st.booleans())
    def settle(self, data, outcome, with_agent):
        oli_id = data.draw(st.sampled_from(sorted(self.calls)))
        call_type, agent_id, reservation_id = self.calls.pop(oli_id)
        body = {"oli_id": oli_id, "outcome": outcome, "started_at": self.wall(-1), "call_type": call_type,
                "reservation_id": reservation_id, "call_id": self.request_id()}
        if with_agent or agent_id is not None:
            body["agent_id"] = agent_id or AGENTS[1]
        answer = self.client.post("/engine/settle", json=body, headers=ENGINE)
        assert answer.status_code in (200, 409), answer.get_json()  # 409: the sweep released it first

    # The operator, the clock and the sweep

    @rule(number=st.sampled_from(sorted(NUMBERS)), listed=st.booleans())
    def do_not_call(self, number, listed):
        with self.app.app_context():
            if listed:
                get_db().run(dnc.add, [number], "cli", self.now)
            else:
                get_db().run(dnc.remove, [number], self.now)

    @rule(minutes=st.sampled_from([1, 31, 61, 241]), swept=st.booleans())
    def advance(self, minutes, swept):
        """Time passes, and the sweep runs at its end when `swept` (as the scheduler would have)."""
        self.now += timedelta(minutes=minutes)
        set_clock(self.now)
        if swept:
            self.sweep()

    @rule()
    def sweep(self):
        with self.app.app_context():
            crm_actions.sweep(get_db(), self.now, TZ, config=self.app.config)

    # What the CRM believes

    @invariant()
    def every_lead_reads_as_its_events_tell(self):
        if not hasattr(self, "known"):
            return
        while True:
            page = self.client.get("/api/lead-events", query_string={"after": self.after, "limit": 1000},
                                   headers=CRM).get_json()
            for event in page["events"]:
                self.fold(event)
            if page["next"] == self.after:
                break
            self.after = page["next"]
        with self.app.app_context():
            leads = get_db().run(lambda conn: {oli_id: lead_read.read_lead(conn, oli_id, None, 1, TZ)["lead"]
                                               for oli_id in LEADS})
        for oli_id, lead in leads.items():
            if lead["live"]:
                continue
            read, folded = as_read(lead), believed(self.known[oli_id])
            assert read == folded, (f"{oli_id} at {self.now}: the read says "
                                    f"{ {k: v for k, v in read.items() if folded[k] != v} }, the feed "
                                    f"{ {k: v for k, v in folded.items() if read[k] != v} }")

    def fold(self, event):
        type(self).seen[event["type"]] += 1
        known, data = self.known[event["oli_id"]], event["data"]
        known.update(data.get("lead", {}))
        if event["type"] == lead_events.HELD:
            known["hold"] = (data["cap"], data["frees_at"])
        elif event["type"] == lead_events.HOLD_ENDED:
            known["hold"] = None
        elif event["type"] in (lead_events.DO_NOT_CALL, lead_events.DO_NOT_CALL_REMOVED):
            known["do_not_call"] = event["type"] == lead_events.DO_NOT_CALL

    def believe_read(self, oli_id):
        """The CRM's own change: what the read shows now is what it believes."""
        lead = self.read(oli_id)
        cap = lead["contact_cap"]
        self.known[oli_id] = {**as_read(lead), "hold": cap and (cap["cap"], cap["frees_at"])}

    # Plumbing

    def read(self, oli_id):
        answer = self.client.get(f"/api/leads/{oli_id}", query_string={"limit": 1}, headers=CRM)
        assert answer.status_code == 200, answer.get_json()
        return answer.get_json()["lead"]

    def live(self, oli_id):
        rows = self.sql("SELECT dial_status = 'Calling' AND isReserved = 1 AS live FROM sales_master WHERE oli_id = %s",
                        oli_id)
        return bool(rows and rows[0]["live"])

    def wall(self, minutes):
        return format_wall_clock(self.now + timedelta(minutes=minutes))

    def request_id(self):
        return f"step-{next(self.ids)}"
