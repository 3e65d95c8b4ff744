"""`dialerapi simulate`: a short floor run against the test database (issue: the floor simulator)."""

import re

import pytest

from conftest import cli


@pytest.mark.parametrize("engine", ["library", "http"])
def test_a_short_simulated_floor(database_url, sql, tmp_path, new_lead, engine):
    new_lead("REAL-1", form_type="home_loan")
    real_before = sql.lead("REAL-1")
    chart = tmp_path / "day.png"
    result = cli(database_url, "simulate", "--agents", "6", "--leads", "120", "--hours", "1.5", "--speed", "0",
                 "--seed", "3", "--chart", str(chart), "--engine", engine)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    calls = int(re.search(rf"engine {engine}: (\d+) calls", out).group(1))
    assert calls > 50
    for heading in ("final dial_status", "attempts per lead", "callbacks honoured on time", "minutes agents were blocked"):
        assert heading in out

    leads = sql("SELECT * FROM sales_master WHERE oli_id LIKE 'SIM%%'")
    assert len(leads) == 120
    assert not [lead for lead in leads if lead["isReserved"]], "no simulated lead is left live"
    statuses = {lead["dial_status"] for lead in leads}
    assert {"Not Connected", "Callback", "Disposed"} <= statuses
    table = dict(re.findall(r"^(Pending|Callback|Not Connected|Disposed|Rejected|Received|Abandoned)\s+(\d+)$", out, re.M))
    assert sum(map(int, table.values())) == 120

    attempts = sql("SELECT COUNT(*) AS n FROM sales_call_attempts WHERE oli_id LIKE 'SIM%%'")[0]["n"]
    assert attempts == calls
    held = sql("SELECT COUNT(*) AS n FROM sales_pending_actions WHERE oli_id LIKE 'SIM%%' AND status = 'applied'"
               " AND applied_at > created_at")[0]["n"]
    assert held > 0, "some CRM actions arrived during live calls and were applied at settle"
    assert sql("SELECT * FROM sales_agents WHERE id > 900000") == [], "simulated agents are removed"
    assert sql("SELECT COUNT(*) AS n FROM sales_missed_activities WHERE oli_id LIKE 'SIM%%'")[0]["n"] > 0
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    through_http = sql("SELECT COUNT(*) AS n FROM dialerapi_engine_replies WHERE request_key LIKE 'settle:SIM%%'")[0]["n"]
    assert through_http == (calls if engine == "http" else 0), "the http engine settles every call through /engine/"
    assert sql.lead("REAL-1") == real_before, "the simulator never touches a lead it did not push"
