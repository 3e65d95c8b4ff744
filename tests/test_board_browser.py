"""The supervisor board at /board/ (issue #49) as a supervisor uses it: Debian's headless Chromium
opens it with a supervisor token while an engine and agents play calls through a real gunicorn
(lead-intake-api.md "Claim and retry rules"; decisions.md D9). The test reads the tiles and rows
from the page and holds them to the database, sees a pause appear and its timer run, and sees a
campaign turn red when its abandon rate passes the limit."""

import json
from datetime import datetime

import pytest
import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from conftest import DEFAULT_NOW, ENGINE_SECRET, SECRET, TZ, mint_token
from dialerapi.rules.campaigns import operations
from wsclient import Client

# Each opens the board in Chromium: over 10 s of setup in make test's parallel run (issue #63), so
# make faults runs them.
pytestmark = [pytest.mark.slow, pytest.mark.long]

ENGINE = {"X-API-Key": ENGINE_SECRET}
# How long the test waits for a change to show: a bound on waiting for the event, not the issue's
# 1 s, which bench/board_bench.py measures (speed is never asserted in a timed test).
CHANGE_SECONDS = 10
LOAD_SECONDS = 10
# The state rule (states.unavailable_reason), written again here in SQL over sales_agents: the
# tiles and rows are held to the database by this, not by the service's own reading.
STATE_SQL = """
SELECT a.id, s.form_type,
  CASE WHEN a.panel_active = 0 THEN 'panel_inactive'
       WHEN COALESCE(a.pause_code, '') <> '' THEN 'paused'
       WHEN a.ami_idle = 0 THEN 'on_call'
       WHEN a.wrapup_until > %s THEN 'wrap_up'
       WHEN a.outbound_blocked = 1 THEN 'outbound_blocked'
       ELSE 'free' END AS state
FROM sales_agents AS a JOIN sales_agent_skills AS s ON s.agent_id = a.id
"""


@pytest.fixture
def floor(sql):
    sql("INSERT INTO sales_agents (id, extension, name) VALUES (501, '4501', 'Kavya Iyer'), (502, '4502', 'Arun Raja'),"
        " (503, '4503', 'Meena Pillai')")
    sql("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (501, 'home_loan'), (502, 'credit_card'),"
        " (503, 'home_loan'), (503, 'credit_card')")
    # One answered call is enough for the limit to judge (abandon_min_answered), so one abandon shows it.
    sql("UPDATE sales_dialer_config SET abandon_min_answered = 1, abandon_limit = 0.03")


@pytest.fixture
def board(browser, live_server):
    def open_board():
        token = requests.post(live_server.url("/api/supervisor-tokens"), json={"name": "Priya"},
                              headers={"X-API-Key": SECRET}, timeout=10).json()["token"]
        browser.get(f"{live_server.base_url}/board/#token={token}")
        wait_for(browser, lambda: browser.find_element(By.ID, "connection").get_attribute("data-state") == "live",
                 LOAD_SECONDS)
        wait_for(browser, lambda: browser.execute_script("return window.DialerBoard.frames") >= 1, LOAD_SECONDS)
        assert token not in browser.current_url
        return token

    yield open_board
    browser.get("about:blank")


def wait_for(browser, condition, seconds=CHANGE_SECONDS):
    WebDriverWait(browser, seconds, 0.05).until(lambda _: condition(), message=(
        f"the page showed rows {page_rows(browser)} and tiles {page_tiles(browser)}"))


def page_rows(browser):
    """{agent_id: {state, pause, time, calls}} as the page shows them, read in one call."""
    rows = browser.execute_script(
        "return Array.from(document.querySelectorAll('#agents tbody tr')).map(tr => ["
        "tr.dataset.agentId, tr.dataset.state, tr.children[4].textContent, tr.children[3].textContent,"
        "tr.children[6].textContent, tr.classList.contains('alert')]);")
    return {int(r[0]): {"state": r[1], "pause": r[2], "time": r[3], "calls": int(r[4]), "alert": r[5]} for r in rows}


def page_pools(browser):
    """{pool: {"level", figure: text}} of the caller-ID pool tiles as the page shows them."""
    pools = browser.execute_script(
        "return Array.from(document.querySelectorAll('#pools .pool')).map(t => [t.dataset.pool, t.dataset.level,"
        "Object.fromEntries(Array.from(t.querySelectorAll('[data-figure]')).map(d => [d.dataset.figure, d.textContent]))]);")
    return {name: {"level": level, **figures} for name, level, figures in pools}


def page_tiles(browser):
    """{form_type: {"level", figure: text}} as the page shows them."""
    tiles = browser.execute_script(
        "return Array.from(document.querySelectorAll('#tiles .tile')).map(t => [t.dataset.formType, t.dataset.level,"
        "Object.fromEntries(Array.from(t.querySelectorAll('[data-figure]')).map(d => [d.dataset.figure, d.textContent]))]);")
    return {name: {"level": level, **figures} for name, level, figures in tiles}


def database_floor(sql, live_server):
    """(states per agent, counts per form_type and state) from sales_agents at the server's now."""
    now = requests.get(live_server.url("/api/board"), headers={"Authorization": f"Bearer {supervisor(live_server)}"},
                       timeout=10).json()["floor"]["at"]
    wall = datetime.fromisoformat(now.replace("Z", "+00:00")).astimezone(TZ).replace(tzinfo=None)
    rows = sql(STATE_SQL, wall)
    states = {row["id"]: row["state"] for row in rows}
    counts = {}
    for row in rows:
        counts.setdefault(row["form_type"], {}).setdefault(row["state"], 0)
        counts[row["form_type"]][row["state"]] += 1
    return states, counts


def supervisor(live_server):
    return requests.post(live_server.url("/api/supervisor-tokens"), json={"name": "check"},
                         headers={"X-API-Key": SECRET}, timeout=10).json()["token"]


def engine(live_server, operation, body):
    response = requests.post(live_server.url(f"/engine/{operation}"), json=body, headers=ENGINE, timeout=10)
    assert response.status_code == 200, (operation, response.text)
    return response.json()


def test_the_board_follows_the_floor_as_calls_are_played(board, browser, floor, live_server, sql, new_lead):
    for agent_id in (501, 502, 503):
        engine(live_server, "agent-state", {"agent_id": agent_id, "panel_active": True, "ami_idle": True})
    engine(live_server, "agent-state", {"agent_id": 503, "panel_active": False})
    board()

    # The rows and tiles as the page shows them are the database's (wrap-ups are none here, so
    # the server's moment does not matter to the rule).
    wait_for(browser, lambda: {k: v["state"] for k, v in page_rows(browser).items()} ==
             {501: "free", 502: "free", 503: "panel_inactive"})
    states, counts = database_floor(sql, live_server)
    assert {k: v["state"] for k, v in page_rows(browser).items()} == states
    tiles = page_tiles(browser)
    for form_type, by_state in counts.items():
        for state in ("free", "on_call", "wrap_up", "paused", "outbound_blocked", "panel_inactive"):
            assert int(tiles[form_type][state]) == by_state.get(state, 0), (form_type, state)
    assert {tile["level"] for tile in tiles.values()} == {"green"}

    # An engine plays a call on home_loan: the agent goes on it, the row and the tile follow.
    new_lead("OLI-HL-1", form_type="home_loan")
    claimed = engine(live_server, "claim", {"mode": "progressive", "agent_id": 501, "request_id": "c-1"})["lead"]
    engine(live_server, "agent-state", {"agent_id": 501, "ami_idle": False})
    engine(live_server, "call-connected", {"oli_id": "OLI-HL-1", "agent_id": 501, "request_id": "m-1"})
    wait_for(browser, lambda: page_rows(browser)[501]["state"] == "on_call"
             and page_tiles(browser)["home_loan"]["on_call"] == "1")
    engine(live_server, "settle", {"oli_id": "OLI-HL-1", "outcome": "answered", "agent_id": 501, "call_id": "x-1", "started_at": claimed["reserved_at"],
                                   "reservation_id": claimed["reservation_id"]})
    engine(live_server, "agent-state", {"agent_id": 501, "ami_idle": True, "wrapup_seconds": 0})
    wait_for(browser, lambda: page_rows(browser)[501] | {"time": None} == {
        "state": "free", "pause": "", "time": None, "calls": 1, "alert": False})

    # An agent pauses from the panel's socket: the row says so and its timer runs.
    token = mint_token(live_server.base_url, 502)
    panel = Client.connect(live_server.base_url.replace("http://", "ws://") + f"/ws?token={token}")
    try:
        for _ in range(3):
            panel.receive(timeout=5)
        panel.send(json.dumps({"event": "agent.pause", "data": {"code": "tea"}}))
        wait_for(browser, lambda: page_rows(browser)[502]["state"] == "paused"
                 and page_rows(browser)[502]["pause"] == "tea")
        first = page_rows(browser)[502]["time"]
        wait_for(browser, lambda: page_rows(browser)[502]["time"] != first)
        assert page_rows(browser)[502]["time"] > first, "the pause's timer counts up"
        assert page_tiles(browser)["credit_card"]["paused"] == "1"

        # A predictive call on credit_card is answered with no agent free and abandoned: one
        # answered, one abandoned, a rate of 100% against 3%: the campaign turns red.
        panel.send(json.dumps({"event": "agent.resume", "data": {}}))
        wait_for(browser, lambda: page_rows(browser)[502]["state"] == "free")
        assert page_tiles(browser)["credit_card"]["level"] == "green", "no call of credit_card answered yet"
        new_lead("OLI-CC-1", form_type="credit_card")
        claimed = engine(live_server, "claim", {"mode": "predictive", "form_type": "credit_card", "request_id": "p-1"})
        engine(live_server, "agent-state", {"agent_id": 502, "ami_idle": False})
        assert engine(live_server, "bridge", {"oli_id": "OLI-CC-1", "request_id": "b-1"})["agent_id"] is None
        engine(live_server, "settle", {"oli_id": "OLI-CC-1", "outcome": "abandoned", "call_id": "x-2", "started_at": claimed["lead"]["reserved_at"],
                                       "reservation_id": claimed["lead"]["reservation_id"]})
        wait_for(browser, lambda: page_tiles(browser)["credit_card"]["level"] == "red")
        assert "today 100.00%" in page_tiles(browser)["credit_card"]["abandon_rates"]
        assert "OVER THE LIMIT" in page_tiles(browser)["credit_card"]["abandon_rates"]
    finally:
        panel.close()
    spent = browser.execute_script("return window.DialerBoard.scriptMs")
    assert spent, "the updates were applied by the page's script"


def test_a_tile_shows_the_leads_each_rule_holds(board, browser, floor, live_server, app, new_lead, command):
    """Issue #68 item 6: the board counts leads held per reason per campaign, as /engine/floor does
    (the minute's count, upkeep.jobs.held_counts_tick)."""
    from dialerapi.upkeep import jobs

    new_lead("OLI-HL-1", form_type="home_loan", phone_number="+91 98450 11111")
    new_lead("OLI-HL-2", form_type="home_loan", phone_number="+91 98450 22222")
    new_lead("OLI-CC-1", form_type="credit_card", phone_number="+91 98450 33333")
    for number in ("+91 98450 11111", "+91 98450 22222"):
        assert command("dnc", "add", number).exit_code == 0
    assert jobs.held_counts_tick(app) == 2
    board()
    wait_for(browser, lambda: page_tiles(browser)["home_loan"].get("leads_held") == "held: 2 do-not-call")
    assert "leads_held" not in page_tiles(browser)["credit_card"], "a tile names only the rules holding a lead"


def test_each_caller_id_pool_shows_its_numbers_and_headroom_and_a_campaigns_empty_pool_is_red(
        board, browser, floor, live_server, command, run):
    """docs/operations/caller-ids.md, "Watched": a tile per pool, its numbers active, at their cap
    and flagged, the calls they may still present today and the campaigns presenting from it; a
    pool a campaign presents from with no active number is red (its leads are passed over)."""
    for number in ("+19195550100", "+19195550101"):
        assert command("caller-ids", "add", number, "--pool", "raleigh").exit_code == 0
    run(operations.update, "home_loan", {"caller_id_pool": "raleigh"}, DEFAULT_NOW, "cli")
    board()
    wait_for(browser, lambda: page_pools(browser).get("raleigh") == {
        "level": "green", "caller_ids": "2 active · 0 at their cap · 0 flagged",
        "headroom_today": "today 150 of 150 calls left · home_loan"})
    assert page_pools(browser)["default"] == {
        "level": "red", "caller_ids": "0 active · 0 at their cap · 0 flagged",
        "headroom_today": "today 0 of 0 calls left: NO ACTIVE NUMBER · credit_card"}, "credit_card's pool is the floor's default"
    assert command("caller-ids", "flag", "+19195550100", "--note", "Spam Likely on one carrier").exit_code == 0
    wait_for(browser, lambda: page_pools(browser)["raleigh"] == {
        "level": "green", "caller_ids": "1 active · 0 at their cap · 1 flagged",
        "headroom_today": "today 75 of 75 calls left · home_loan"})
    assert command("caller-ids", "flag", "+19195550101").exit_code == 0
    wait_for(browser, lambda: page_pools(browser)["raleigh"]["level"] == "red")
    assert page_pools(browser)["raleigh"]["headroom_today"] == "today 0 of 0 calls left: NO ACTIVE NUMBER · home_loan"


@pytest.mark.parametrize("width, height", [(1366, 768), (3840, 2160)])
def test_the_board_fits_a_laptop_and_a_wall_screen(board, browser, floor, live_server, width, height):
    """Usable at 1366x768 and on a wall screen: no sideways scrolling, every column on screen, and
    the text grows with the screen."""
    browser.set_window_size(width, height)
    try:
        board()
        sizes = browser.execute_script(
            "return [document.documentElement.scrollWidth, document.documentElement.clientWidth,"
            " document.querySelector('#agents').getBoundingClientRect().right,"
            " parseFloat(getComputedStyle(document.documentElement).fontSize)];")
        scroll_width, client_width, table_right, font_px = sizes
        assert scroll_width <= client_width and table_right <= client_width, sizes
        assert font_px >= (20 if width > 3000 else 13), sizes
    finally:
        browser.set_window_size(1366, 768)


def test_the_campaign_filter_keeps_its_choice_and_its_options_through_tile_frames(board, browser, floor,
                                                                                  live_server, new_lead):
    """Issue #64: the campaign filter was rebuilt at every tiles frame (19 times in 10 s), closing an
    open dropdown. Its options are the same elements after tile frames that change no campaign, and
    the supervisor's choice stays."""
    board()
    wait_for(browser, lambda: len(browser.find_elements(By.CSS_SELECTOR, "#filter-form-type option")) == 3)
    browser.execute_script("var s = document.getElementById('filter-form-type'); s.value = 'home_loan';"
                           "s.dispatchEvent(new Event('change')); s.options[1].dataset.kept = 'yes';")
    frames = browser.execute_script("return window.DialerBoard.frames")
    for n in range(3):  # leads due change the tiles: a tiles frame each
        new_lead(f"OLI-F-{n}", form_type="credit_card")
        wait_for(browser, lambda n=n: browser.execute_script("return window.DialerBoard.frames") > frames + n)
    kept = browser.execute_script("var s = document.getElementById('filter-form-type');"
                                  "return [s.value, s.options[1].dataset.kept || null, s.options.length];")
    assert kept == ["home_loan", "yes", 3]
    assert set(page_rows(browser)) == {501, 503}, "the filter still applies"


def test_a_refused_board_says_why_and_does_not_retry(browser, live_server):
    browser.get(f"{live_server.base_url}/board/#token=forged.token")
    wait_for(browser, lambda: browser.find_element(By.ID, "connection").get_attribute("data-state") == "refused",
             LOAD_SECONDS)
    assert "not valid" in browser.find_element(By.ID, "problem").text
    browser.get("about:blank")
