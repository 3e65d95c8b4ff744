"""The do-not-call list (issue #30): every path by which a listed phone could come back to a claim.

lead-intake-api.md "Claim and retry rules" (the claim itself is open: "Transitions into Calling: not
shown"), POST /api/pending-dispositions (the DND disposition), POST /api/leads (a push answers as
the specification says; `do_not_call: true` is an extra field). decisions.md D3 (409 bodies).
"""

import os
import subprocess
import sys
import threading
from datetime import datetime
from pathlib import Path

import pytest

from conftest import ROOT, SECRET, TZ, aware, cli, faketime
from dialerapi.rules.compliance import phones
from dialerapi.rules.dialing import claims
from dialerapi.rules.leads import dialstate

NOW = datetime(2026, 11, 21, 10, 0, 0)
PHONE = "+91 98765 43210"
E164 = 919876543210


@pytest.fixture(autouse=True)
def fixed_now(frozen_clock):
    frozen_clock(NOW)


@pytest.fixture
def agent(floor_agent):
    return floor_agent


def push(client, auth, *leads):
    response = client.post("/api/leads", json={"leads": [
        {"client_name": "Meena Sundaram", "form_type": "home_loan", "priority_id": 2, **lead} for lead in leads]},
        headers=auth)
    assert response.status_code == 201, response.get_json()
    return response.get_json()["leads"]


def dispose(client, auth, oli_id, reason="DND"):
    return client.post("/api/pending-dispositions", json={"oliId": oli_id, "reason": reason}, headers=auth)


def claim_all(run, agent_id=501):
    """Claim progressively until nothing is due: the oli_ids handed out, in order."""
    got = []
    while (row := run(claims.claim_next, agent_id, NOW, tz=TZ)) is not None:
        got.append(row["oli_id"])
    return got


@pytest.mark.parametrize("text, region, number", [
    ("098765-43210", "IN", E164),
    ("9876543210", "IN", E164),
    ("+91 98765 43210", "IN", E164),
    ("919876543210", "IN", E164),      # digits only, as decisions.md D4 stores +91 98765-43210
    ("0091 98765 43210", "IN", E164),
    ("+1 (212) 555-0100", "IN", 12125550100),
    ("12125550100", "IN", 12125550100),   # a US number stored as digits, on an Indian floor
    ("2125550100", "US", 12125550100),
    ("212,5550100", "US", None),
])
def test_a_number_is_stored_in_e164_whatever_its_format(text, region, number):
    if number is None:  # a registry line: its digits, read with the region
        assert phones.e164("".join(c for c in text if c.isdigit()), region) == 12125550100
    else:
        assert phones.e164(text, region) == number


def test_a_dnd_disposition_lists_the_phone_and_a_re_push_is_stored_but_never_claimed(client, auth, run, agent, sql):
    agent()
    push(client, auth, {"oli_id": "CRM-2026-000042", "phone_number": "9876543210"})
    assert dispose(client, auth, "CRM-2026-000042").status_code == 200
    listed = sql.one("SELECT * FROM dialerapi_dnc WHERE phone = %s", E164)
    assert (listed["source"], listed["oli_id"]) == ("dnd", "CRM-2026-000042")
    # Next month the CRM pushes the lead again: the push resets it to Pending as the spec says...
    result, = push(client, auth, {"oli_id": "CRM-2026-000042", "phone_number": "9876543210"})
    assert result["status"] == "updated" and result["do_not_call"] is True
    assert sql.lead("CRM-2026-000042")["dial_status"] == "Pending"
    # ...and no claim hands it out.
    assert claim_all(run) == []


def test_the_dnd_reason_is_a_setting_and_other_reasons_list_nothing(client, auth, run, agent, sql):
    agent()
    push(client, auth, {"oli_id": "A", "phone_number": PHONE}, {"oli_id": "B", "phone_number": "+91 99887 76655"})
    sql("UPDATE sales_dialer_config SET dnd_reasons = 'DND, do not disturb'")
    assert dispose(client, auth, "A", reason="Not interested").status_code == 200
    assert sql.one("SELECT COUNT(*) AS n FROM dialerapi_dnc")["n"] == 0
    assert dispose(client, auth, "B", reason="Do Not Disturb ").status_code == 200
    assert sql.one("SELECT phone FROM dialerapi_dnc")["phone"] == 919988776655


def test_a_dnd_filed_during_a_live_call_leaves_the_live_row_alone_and_holds_after_settle(client, auth, run, agent,
                                                                                        sql, make_live):
    """The API never modifies a live row (lead-intake-api.md, States and transitions): the number is
    listed at once, the row's mark waits, and no claim after the settle hands the phone out."""
    agent()
    push(client, auth, {"oli_id": "LIVE", "phone_number": PHONE}, {"oli_id": "TWIN", "phone_number": "9876543210"})
    before = make_live("LIVE")
    assert dispose(client, auth, "LIVE").status_code == 202
    assert sql.lead("LIVE") == before and sql.lead("TWIN")["do_not_call"] == 1
    run(dialstate.settle, "LIVE", "no_answer", NOW, tz=TZ, grace_minutes=10, release_retry_ms=60000, started_at=NOW)
    assert sql.lead("LIVE")["dial_status"] == "Disposed"
    push(client, auth, {"oli_id": "LIVE", "phone_number": PHONE})
    assert claim_all(run) == []
    with pytest.raises(claims.NotClaimable, match="do_not_call"):
        run(claims.claim_lead, 501, "LIVE", NOW, tz=TZ)


def test_the_same_phone_under_a_new_oli_id_in_another_format_is_never_claimed(client, auth, run, agent):
    agent()
    push(client, auth, {"oli_id": "OLD", "phone_number": PHONE})
    dispose(client, auth, "OLD")
    results = push(client, auth, {"oli_id": "NEW-1", "phone_number": "098765-43210"},
                   {"oli_id": "NEW-2", "phone_number": "919876543210"},
                   {"oli_id": "OTHER", "phone_number": "+91 91234 56789"})
    assert [(r["status"], r.get("do_not_call")) for r in results] == [
        ("inserted", True), ("inserted", True), ("inserted", None)]
    assert claim_all(run) == ["OTHER"]


def test_a_listed_lead_moved_to_a_callback_is_never_claimed(client, auth, run, agent):
    agent()
    push(client, auth, {"oli_id": "CB", "phone_number": PHONE})
    dispose(client, auth, "CB")
    response = client.post("/api/pending-callbacks", json={"oliId": "CB", "scheduledAt": "2026-11-21 10:00:00"},
                           headers=auth)
    assert response.status_code == 200
    response = client.post("/api/send-callback-request", json={"oliId": "CB", "scheduledAt": "2026-11-21 09:58:00"},
                           headers=auth)
    assert response.status_code == 200
    assert claim_all(run) == []


def test_predictive_claims_pass_listed_leads_by(client, auth, run, agent):
    agent()
    push(client, auth, {"oli_id": "LISTED", "phone_number": PHONE})
    dispose(client, auth, "LISTED")
    push(client, auth, {"oli_id": "LISTED", "phone_number": PHONE}, {"oli_id": "FREE", "phone_number": "+919123456789"})
    first = run(claims.claim_predictive, NOW, tz=TZ)
    assert first["oli_id"] == "FREE"
    assert run(claims.claim_predictive, NOW, tz=TZ) is None


@pytest.mark.parametrize("mode", ["redial", "inbound"])
def test_a_redial_or_inbound_claim_of_a_listed_phone_is_409_do_not_call(client, auth, engine_auth, agent, mode):
    agent()
    push(client, auth, {"oli_id": "L", "phone_number": PHONE})
    dispose(client, auth, "L")
    response = client.post("/engine/claim", json={"mode": mode, "agent_id": 501, "oli_id": "L", "request_id": "r-1"},
                           headers=engine_auth)
    assert (response.status_code, response.get_json()) == (
        409, {"ok": False, "error": "not_claimable", "reason": "do_not_call"})


def test_an_inbound_call_of_a_listed_phone_may_be_answered_when_the_setting_allows(client, auth, engine_auth, agent,
                                                                                    sql):
    agent()
    push(client, auth, {"oli_id": "L", "phone_number": PHONE})
    dispose(client, auth, "L")
    sql("UPDATE sales_dialer_config SET dnc_allow_inbound = 1")
    inbound = client.post("/engine/claim", json={"mode": "inbound", "agent_id": 501, "oli_id": "L",
                                                 "request_id": "r-1"}, headers=engine_auth)
    assert inbound.status_code == 200 and inbound.get_json()["lead"]["oli_id"] == "L"
    assert sql.lead("L")["isReserved"] == 1


def test_a_lead_written_without_its_phone_facts_is_checked_and_corrected_by_the_claim(client, auth, run, agent, sql):
    """A row pushed by the previous release (or by an engine's SQL) has no phone_e164 and do_not_call 0."""
    agent()
    push(client, auth, {"oli_id": "OLD", "phone_number": PHONE})
    dispose(client, auth, "OLD")
    sql("INSERT INTO sales_master (oli_id, data_id, phone_number, client_name, form_type, priority_id, dial_status,"
        " call_count, isReserved, created_at, updated_at) VALUES ('RAW', UUID(), '919876543210', 'X', 'home_loan',"
        " 2, 'Pending', 0, 0, %s, %s)", NOW, NOW)
    assert sql.lead("RAW")["phone_e164"] is None
    assert claim_all(run) == []
    raw = sql.lead("RAW")
    assert (raw["phone_e164"], raw["do_not_call"], raw["isReserved"]) == (E164, 1, 0)


def test_removing_a_number_makes_its_leads_claimable_again(client, auth, run, agent, database_url):
    agent()
    push(client, auth, {"oli_id": "L", "phone_number": PHONE})
    dispose(client, auth, "L")
    push(client, auth, {"oli_id": "L", "phone_number": PHONE})
    assert claim_all(run) == []
    removed = cli(database_url, "dnc", "remove", "098765-43210", now=NOW)
    assert removed.returncode == 0 and "removed 1" in removed.stdout, removed.stderr
    assert claim_all(run) == ["L"]


@pytest.mark.long
@pytest.mark.slow
def test_dnc_commands_add_count_export_and_refuse_a_bad_number(client, auth, run, agent, database_url, sql):
    agent()
    push(client, auth, {"oli_id": "L", "phone_number": "+1 212 555 0100"})
    added = cli(database_url, "dnc", "add", "+1 (212) 555-0100", "9876543210", "--source", "tps", now=NOW)
    assert added.returncode == 0 and "listed 2 new of 2" in added.stdout, added.stderr
    assert sql.lead("L")["do_not_call"] == 1 and claim_all(run) == []
    assert cli(database_url, "dnc", "count").stdout.strip() == "2"
    exported = cli(database_url, "dnc", "export", "--with-source", now=NOW)
    assert [line.split("\t")[:3] for line in exported.stdout.splitlines()] == [["+12125550100", "tps", ""],
                                                                              ["+919876543210", "tps", ""]]
    assert all(line.split("\t")[3].startswith("2026-11-21 10:00:") for line in exported.stdout.splitlines())
    bad = cli(database_url, "dnc", "add", "12ab", now=NOW)
    assert bad.returncode == 1 and "is not a phone number" in bad.stderr
    assert cli(database_url, "dnc", "count").stdout.strip() == "2"


def test_an_import_is_all_or_nothing_and_reads_registry_lines(client, auth, run, agent, database_url, tmp_path, sql):
    agent()
    push(client, auth, {"oli_id": "US", "phone_number": "+1 212 555 0100"},
         {"oli_id": "IN", "phone_number": PHONE})
    bad = tmp_path / "bad.txt"
    bad.write_text("# US registry extract\n212,5550100\n\nnot a number\n")
    refused = cli(database_url, "dnc", "import", str(bad), "--region", "US", now=NOW)
    assert refused.returncode == 1 and "line 4" in refused.stderr and "nothing was listed" in refused.stderr
    assert sql.one("SELECT COUNT(*) AS n FROM dialerapi_dnc")["n"] == 0
    good = tmp_path / "good.txt"
    good.write_text("# US registry extract\n212,5550100\n\n+91 98765 43210\n212,5550100\n")
    done = cli(database_url, "dnc", "import", str(good), "--region", "US", "--source", "us-dnc", now=NOW)
    assert done.returncode == 0, done.stderr
    assert "5 lines, 3 numbers, 2 newly listed" in done.stdout
    assert {(r["phone"], r["source"]) for r in sql("SELECT phone, source FROM dialerapi_dnc")} == {
        (12125550100, "us-dnc"), (E164, "us-dnc")}
    assert claim_all(run) == []


def test_an_import_refuses_a_line_too_long_before_reading_it_whole(database_url, tmp_path, sql):
    """An input is bounded before it costs work: a 1 MB line without a break is refused at 200 characters."""
    path = tmp_path / "no-breaks.txt"
    path.write_text("9876543210\n" + "9" * 1_000_000)
    refused = cli(database_url, "dnc", "import", str(path), now=NOW)
    assert refused.returncode == 1 and "line 2" in refused.stderr and "nothing was listed" in refused.stderr
    assert sql.one("SELECT COUNT(*) AS n FROM dialerapi_dnc")["n"] == 0


@pytest.mark.long
@pytest.mark.slow
def test_a_large_import_runs_in_bounded_memory(database_url, tmp_path, sql):
    """The peak memory of `dnc import` is the same for 20,000 and 200,000 numbers: it reads a batch at a time."""
    def peak_kib(count, prefix):
        path = tmp_path / f"list-{count}.txt"
        with open(path, "w") as out:
            for i in range(count):
                out.write(f"{prefix}{i:08d}\n")
        environment = faketime.environment({**os.environ, "DATABASE_URL": database_url, "WS_SECRET": SECRET},
                                           at=aware(NOW))
        # A wrapper whose only child is the import, so its children's peak is the import's.
        measure = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], stdout=sys.stderr);"
                   "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, done.returncode)")
        result = subprocess.run([sys.executable, "-c", measure, str(Path(sys.executable).with_name("dialerapi")),
                                 "dnc", "import", str(path)], cwd=ROOT, env=environment, capture_output=True,
                                text=True, timeout=600)
        peak, code = result.stdout.split()
        assert code == "0", result.stderr
        assert (f"read {count:,} lines" in result.stderr) == (count % 100000 == 0), result.stderr
        assert f"{count:,} numbers, {count:,} newly listed" in result.stderr
        return int(peak)

    small, large = peak_kib(20000, 98), peak_kib(200000, 97)
    assert sql.one("SELECT COUNT(*) AS n FROM dialerapi_dnc")["n"] == 220000
    assert large < small * 1.15 + 4096, (small, large)


def test_sixteen_pushes_racing_a_dnd_disposition_never_get_the_phone_claimed(app, client, auth, run, agent, sql):
    """16 actors at once: 15 push the phone under new oli_ids in assorted formats while one files DND."""
    agent()
    push(client, auth, {"oli_id": "DND-ME", "phone_number": PHONE})
    formats = [PHONE, "098765-43210", "9876543210", "919876543210", "0091 98765 43210"]
    start = threading.Barrier(16)
    errors = []

    def actor(i):
        try:
            own = app.test_client()
            start.wait()
            if i == 0:
                assert dispose(own, auth, "DND-ME").status_code == 200
            else:
                push(own, auth, {"oli_id": f"RACE-{i}", "phone_number": formats[i % len(formats)]},
                     {"oli_id": f"SAFE-{i}", "phone_number": f"+9191234{i:05d}"})
        except Exception as exc:  # counted, not lost with the thread
            errors.append(repr(exc))

    threads = [threading.Thread(target=actor, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    got = claim_all(run)
    assert sorted(got) == sorted(f"SAFE-{i}" for i in range(1, 16))
    # And the claim's filter agrees with the list for every lead of the phone, whichever committed first.
    assert {row["do_not_call"] for row in sql("SELECT do_not_call FROM sales_master WHERE phone_e164 = %s",
                                                    E164)} == {1}


@pytest.mark.clock
def test_health_and_metrics_show_the_list_size_and_the_leads_each_rule_holds(client, auth, sql, frozen_clock):
    """Issue #30 item 5; decisions.md D8 (/health's metrics). At 10:00 wall-clock in DB_TIMEZONE,
    New York may or may not be awake, so the window is set to one hour around now in DB_TIMEZONE:
    a lead of DB_TIMEZONE's own zone is inside it whatever the zone."""
    push(client, auth, {"oli_id": "L1", "phone_number": PHONE}, {"oli_id": "L2", "phone_number": "098765-43210"},
         {"oli_id": "SHIP", "phone_number": "+870 7712 34567"}, {"oli_id": "NY", "phone_number": "+1 212 555 0100"})
    dispose(client, auth, "L1")
    sql("UPDATE sales_dialer_config SET obey_calling_window = 1, calling_window_start = '09:30:00',"
        " calling_window_end = '10:30:00'")
    ny_open = phones.window_open(("America/New_York",), aware(NOW), datetime(1, 1, 1, 9, 30).time(),
                                 datetime(1, 1, 1, 10, 30).time(), TZ)
    body = client.get("/health", headers=auth).get_json()["metrics"]
    # L1 was disposed (Disposed is not a claim state), L2 is held by the list, SHIP is open.
    assert body["do_not_call"] == {"numbers": 1, "leads_held": 1}
    assert body["calling_window"] == {"obeyed": True, "window": "09:30-10:30", "leads_outside": 0 if ny_open else 1}
    metrics = client.get("/metrics", headers=auth).get_data(as_text=True)
    assert "dialerapi_dnc_numbers 1.0" in metrics
    assert 'dialerapi_leads_held{rule="do_not_call"} 1.0' in metrics
    assert f'dialerapi_leads_held{{rule="outside_calling_window"}} {0.0 if ny_open else 1.0}' in metrics
