"""The rows of docs/performance.md's table of current figures, read from each bench's results file.

One function a bench: it takes the JSON the bench wrote (bench-results-*.json) and yields `Row`s,
one per target the bench measures. The targets and their goals are the benches' own (each bench's
docstring says why); this module only words them, so the table says exactly what the bench checked.
"""

from dataclasses import asdict, dataclass

PYTHON = ".venv/bin/python"
DEVDB = f"scripts/devdb.sh with {PYTHON}"


@dataclass(frozen=True)
class Row:
    """One target: `figure` what this release measured, `reference` what it is measured beside
    (the least code doing the same work, the rule switched off, or the release before; "" when
    the target is absolute), `goal` the target, `met` whether the bench found it met (None: a
    figure with no target)."""

    target: str
    figure: str
    reference: str
    goal: str
    met: bool | None

    def as_dict(self):
        return asdict(self)


def num(value):
    """A latency as the table gives it: three figures at most (wrk reports microseconds)."""
    if value >= 100:
        return f"{round(value):,}"
    return f"{round(value, 1 if value >= 10 else 2):g}"


def ms(figures, p50="p50_ms", p99="p99_ms"):
    return f"p99 {num(figures[p99])} ms (p50 {num(figures[p50])})"


def intake(r):
    push, memory, checks = r["push"], r["memory"], r["checks"]
    same, new = push["same"], push["new"]
    yield Row("push, 500-lead batches of leads already stored", f"{same['service']['leads_per_s']:,} leads/s",
              f"the least code: {same['reference']['leads_per_s']:,} leads/s",
              f"service / least code >= {r['targets']['same_over_reference']} (is {same['service_over_reference']})",
              same["service_over_reference"] >= r["targets"]["same_over_reference"])
    yield Row("push, 500-lead batches of new leads", f"{new['service']['leads_per_s']:,} leads/s",
              f"a plain INSERT: {new['raw']['leads_per_s']:,} leads/s",
              f"service / INSERT >= {r['targets']['new_over_raw']} (is {new['service_over_raw']})",
              new["service_over_raw"] >= r["targets"]["new_over_raw"])
    service, previous = memory["service"], memory["previous"]
    yield Row("memory per HTTP worker, idle and after 100,000 new numbers",
              f"{service['idle_mb']} MB / {service['after_mb']} MB",
              f"release before: {previous['idle_mb']} MB / {previous['after_mb']} MB",
              f"<= {r['targets']['idle_mb']} MB / <= {r['targets']['after_mb']} MB",
              service["idle_mb"] <= r["targets"]["idle_mb"] and service["after_mb"] <= r["targets"]["after_mb"])
    floor = r["floor_state"]
    yield Row("floor state (POST /engine/floor) with 30 days of call history", ms(floor["service"]),
              f"release before: {ms(floor['previous'])}", f"p99 < {r['targets']['floor_p99_ms']} ms",
              floor["service"]["p99_ms"] < r["targets"]["floor_p99_ms"])
    crm = r["crm_actions_at_200_rps"]
    worst = max(crm["service"], key=lambda endpoint: crm["service"][endpoint]["p99_ms"])
    met = all(check["met"] for name, check in checks.items() if name.endswith("at 200/s"))
    yield Row("CRM actions at 200 requests/s with 1,000 panels open (the slowest of three)",
              f"{worst}: {ms(crm['service'][worst])}", f"release before: {ms(crm['previous'][worst])}",
              "p99 < 25 ms each", met)


def service(r):
    for name, p in r["push"].items():
        if not name.endswith("inside"):
            continue
        kind = name.split(",")[0]
        yield Row(f"push of {kind} leads with 1,000 agent panels open", f"{p['service']['leads_per_s']:,} leads/s",
                  f"the least code: {p['reference']['leads_per_s']:,} leads/s",
                  f"service / least code >= {r['push']['target_ratio']} (is {p['ratio']}), p99 <= "
                  f"{r['push']['target_p99_ratio']}x (is {p['p99_ratio']})", p["target_met"])


def lead_import(r):
    i = r["import"]
    yield Row(f"lead list import, {r['rows']:,}-row CSV", f"{i['leads_per_s']:,} leads/s in {i['peak_rss_mb']} MB",
              f"the HTTP push: {r['http_push']['reference_leads_per_s']:,} leads/s",
              f"import / push >= 0.8 (is {r['ratio']}), < 150 MB, every reject in the rejects file",
              r["target_met"])


def claim(r):
    c, ref = r["claim_ms"], r["reference_round_trip_ms"]
    yield Row(f"progressive claim in process, {r['leads']:,} leads", ms(c, "p50", "p99"),
              f"SELECT 1: {ms(ref, 'p50', 'p99')}", f"p99 < {r['target_p99_ms']} ms", r["target_met"])
    floor = r["busy_floor"]
    yield Row(f"claims on a busy floor, {floor['agents']} agents at once", f"{floor['claims_per_s']} claims/s, "
              f"{ms(floor)}", "", "no empty answer while leads are due (was "
              f"{floor['empty_answers_while_leads_were_due']})", floor["empty_answers_while_leads_were_due"] == 0)
    for name, label in (("claim", "claim over HTTP (POST /engine/claim)"),
                        ("settle", "settle over HTTP (POST /engine/settle)"),
                        ("floor", "floor state over HTTP (POST /engine/floor)")):
        h = r["http"][name]
        yield Row(label, f"{ms(h)} at {round(h['rate_per_s'])} requests/s", "", f"p99 < {h['target_p99_ms']} ms",
                  h["target_met"])


def ratio_row(target, on, off, off_label, ratio, goal_ratio, met):
    return Row(target, ms(on), f"{off_label}: {ms(off)}", f"p99 <= {goal_ratio}x (is {ratio})", met)


def caller_ids(r):
    yield ratio_row(f"claim with caller IDs by local presence, {r['numbers']:,} numbers, in process",
                    r["with_caller_ids"], r["without_caller_ids"], "no caller IDs", r["p99_ratio"],
                    r["target_p99_ratio"], r["target_met"])
    if r.get("http"):
        h = r["http"]
        yield ratio_row("claim with caller IDs over HTTP", h["with_caller_ids"], h["without_caller_ids"],
                        "no caller IDs", h["p99_ratio"], r["target_p99_ratio"], h["p99_ratio"] <= r["target_p99_ratio"])


def worst_moment(r, target):
    worst = max(r["moments"], key=lambda moment: moment["p99_ratio"])
    on = {"p50_ms": worst["claim_on_ms"]["p50"], "p99_ms": worst["claim_on_ms"]["p99"]}
    off = {"p50_ms": worst["claim_off_ms"]["p50"], "p99_ms": worst["claim_off_ms"]["p99"]}
    return ratio_row(f"{target} (the worst of {len(r['moments'])} moments)", on, off, "off",
                     r["worst_p99_ratio"], r["target_ratio"], r["target_met"])


def compliance(r):
    yield worst_moment(r, f"claim with do-not-call ({r['list_numbers']:,} numbers) and calling windows")


def state_rules(r):
    yield worst_moment(r, f"claim with every state rule ({len(r['rules'])} rows)")


def abandon(r):
    for op in ("claim", "settle"):
        on, off = r["figures_ms"]["on"][op], r["figures_ms"]["off"][op]
        ratio = r["p99_ratio_on_off"][op]
        yield ratio_row(f"predictive {op} with the abandon limit, {r['history']['records']:,} call records",
                        {"p50_ms": on["p50"], "p99_ms": on["p99"]}, {"p50_ms": off["p50"], "p99_ms": off["p99"]},
                        "limit off", ratio, r["target_ratio"], ratio <= r["target_ratio"] and r["refused_on"] == 0)


def on_off(target, on_key, off_key, off_label):
    def rows(r):
        yield ratio_row(target, r[on_key], r[off_key], off_label, r["p99_ratio"], r["target_ratio"], r["target_met"])
    return rows


def floor(r):
    events = r["events"]
    yield Row(f"an event to the agent's panel, {r['sockets']:,} sockets open", ms(events), "",
              "p50 < 100 ms, p99 < 250 ms, every event delivered "
              f"({events['delivered']:,} of {events['sent']:,})",
              events["p50_ms"] < 100 and events["p99_ms"] < 250 and events["delivered"] == events["sent"])
    busy, quiet = r["sockets_open"], r["no_sockets"]
    worst = max(busy, key=lambda endpoint: busy[endpoint]["p99_ms"])
    yield Row(f"HTTP with {r['sockets']:,} sockets open (the slowest of {', '.join(busy)})",
              f"{worst}: {ms(busy[worst])}", f"no sockets: {ms(quiet[worst])}", "p99 < 50 ms",
              all(figures["p99_ms"] < 50 and not figures["status_errors"] for figures in busy.values()))


def results(r):
    if "reads" in r:
        lead = r["reads"]["lead"]
        yield Row("the lead read (GET /api/leads/{oli_id})", ms(lead["service"]),
                  f"the least code: {ms(lead['reference'])}", "p99 < 10 ms", lead["service"]["p99_ms"] < 10)
    for name, sides in r.get("hot_paths", {}).items():
        yield ratio_row(f"{name} with two webhook endpoints", sides["service, two"], sides["service, none"],
                        "no endpoint", sides["ratio_two_over_none"], 1.05, sides["target_met"])
    if "delivery" in r:
        d = r["delivery"]
        yield Row(f"webhook delivery, {d['events']:,} events through kills",
                  f"p99 {num(d['healthy_p99_ms'])} ms to a healthy receiver (p50 {num(d['healthy_p50_ms'])}), "
                  f"{d['lost']} lost", "", "none lost, p99 < 1,000 ms", d["target_met"])


def board(r):
    if "board" in r:
        b = r["board"]
        yield Row(f"the floor board, {b['agents']:,} agents", f"first render {num(b['first_render_ms']['max'])} ms, "
                  f"a change on screen p99 {num(b['changes']['p99_ms'])} ms", "",
                  "render < 1,000 ms, a frame's script < 100 ms, every change shown, p99 < 1,000 ms",
                  b["target_met"])
    if "hot" in r:
        worst = max((kind for kind in r["hot"] if kind != "target_met"), key=lambda kind: r["hot"][kind]["ratio"])
        sides = r["hot"][worst]
        yield ratio_row(f"{worst} beside the board's history (the worst of three paths)", sides["service"],
                        sides["previous"], "release before", sides["ratio"], 1.05, r["hot"]["target_met"])
    if "report" in r:
        report = r["report"]
        yield Row(f"agent time report, {report['days']} days of {report['agents']:,} agents",
                  f"{report['report_seconds']['max']} s", "", "< 2 s, login time the sum of its parts",
                  report["target_met"])


def cluster(r):
    push, claims = r["push"], r["claims"]
    yield Row("push of new leads through a 3-node Galera cluster",
              f"{push['three_nodes']['new']['leads_per_s']:,} leads/s",
              f"one node: {push['one_node']['new']['leads_per_s']:,} leads/s", f"none set (ratio {push['new_ratio']})",
              None)
    yield Row(f"claims through a 3-node Galera cluster, {claims['claimers']} at once", ms(claims["three_nodes"]),
              f"one node: {ms(claims['one_node'])}", f"none set (p99 ratio {claims['p99_ratio']})", None)


def make_test(r):
    minutes, seconds = divmod(r["seconds"], 60)
    yield Row("`make test`, the whole suite", f"{minutes} min {seconds:02d} s of pytest, {r['tests']:,} tests", "",
              "every test passes",
              r["passed"])


# The results file each bench writes, the command that reproduces it and its rows, in the table's order.
BENCHES = {
    "bench-results-intake.json": (f"{DEVDB} bench/intake_bench.py", intake),
    "bench-results.json": (f"{DEVDB} bench/service_bench.py", service),
    "bench-results-import.json": (f"{DEVDB} bench/import_bench.py", lead_import),
    "bench-results-claim.json": (f"{DEVDB} bench/claim_bench.py", claim),
    "bench-results-floor.json": (f"{DEVDB} bench/floor_bench.py", floor),
    "bench-results-results.json": (f"{DEVDB} bench/results_bench.py", results),
    "bench-results-board.json": (f"{DEVDB} bench/board_bench.py", board),
    "bench-results-operations.json": (f"{DEVDB} bench/campaign_bench.py",
                                      on_off("claim with 200 campaigns", "on", "off", "no campaign")),
    "bench-results-compliance.json": (f"{DEVDB} bench/compliance_bench.py", compliance),
    "bench-results-state-rules.json": (f"{DEVDB} bench/state_rules_bench.py", state_rules),
    "bench-results-caps.json": (f"{DEVDB} bench/caps_bench.py",
                                on_off("claim with contact caps (reg-f-7-in-7)", "on", "off", "caps off")),
    "bench-results-caller-ids.json": (f"{DEVDB} bench/caller_id_bench.py", caller_ids),
    "bench-results-abandon.json": (f"{DEVDB} bench/abandon_bench.py", abandon),
    "bench-results-personal.json": (f"{DEVDB} bench/personal_callback_bench.py",
                                    on_off("claim with 5% personal callbacks", "personal", "none", "none")),
    "bench-results-cluster.json": (f"scripts/devdb.sh with scripts/galera.sh with {PYTHON} bench/cluster_bench.py",
                                   cluster),
    "bench-results-make-test.json": ("make test", make_test),
}
