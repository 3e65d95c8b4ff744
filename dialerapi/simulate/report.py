"""What a run measured, and the means and 95% intervals of K replications.

Every figure is defined in docs/simulator.md "The floor simulator"; its key here is the name used in the
JSON, the CSV files and the text summary. Times are agent-minutes unless a key says seconds; hours
are wall-clock hours in DB_TIMEZONE.
"""

import csv
import statistics
from collections import Counter
from datetime import date
from pathlib import Path

from scipy import stats

from dialerapi.rules.compliance import abandons
from dialerapi.simulate import caller_ids as sim_caller_ids

STATES = ("ringing", "talk", "wrap", "idle", "blocked")
SHARES = ("abandon_rate", "days_over_limit", "hung_up_waiting_rate", "waited_share", "occupancy", "late_filing_share",
          "callbacks_on_time_share", "personal_callbacks_on_time_share", "ordinary_callbacks_on_time_share", "penetration",
          "contact_rate")


def _share(part, whole):
    return round(part / whole, 4) if whole else None


def run_result(floor, database):
    """One run's figures (a JSON-ready dict) from the finished Floor and `database`, the run schema's
    counts at the end: final_status, tries_per_lead, calls_per_lead, dialed and leads."""
    seconds = Counter()
    for agent in floor.agents.values():
        seconds.update(agent.seconds)
    staffed = sum(seconds.values())
    busy = sum(seconds[state] for state in ("ringing", "talk", "wrap"))
    count = floor.count
    callbacks = floor.callback_report(floor.t)
    predictive = floor.scenario.mode == "predictive"
    kpis = {
        **(_law_figures(floor, database["abandon_days"]) if predictive else {}),
        "calls": sum(floor.outcomes.values()),
        "answered": count["answered"],
        "contacts": count["contacts"],
        "hung_up_waiting": count["abandoned"] if predictive else None,
        "hung_up_waiting_rate": _share(count["abandoned"], count["answered"]) if predictive else None,
        "mean_wait_seconds": round(statistics.fmean(floor.waits), 2) if floor.waits else None,
        "waited_share": _share(sum(1 for wait in floor.waits if wait > 0), len(floor.waits)) if predictive else None,
        "calls_per_agent_hour": round(sum(floor.outcomes.values()) / (staffed / 3600), 2) if staffed else None,
        "contacts_per_agent_hour": round(count["contacts"] / (staffed / 3600), 2) if staffed else None,
        "occupancy": _share(busy, staffed),
        **{f"{state}_minutes": round(seconds[state] / 60, 1) for state in STATES},
        "late_filing_share": _share(count["filed_late"], count["contacts"]),
        "callbacks_on_time_share": _share(callbacks["on_time"], callbacks["due"]),
        "personal_callbacks_on_time_share": _share(callbacks["personal"]["on_time"], callbacks["personal"]["due"]),
        "ordinary_callbacks_on_time_share": _share(callbacks["ordinary"]["on_time"], callbacks["ordinary"]["due"]),
        "penetration": _share(database["dialed"], database["leads"]),
        "dialed_listed": count["dialed_listed"],
        "dialed_outside_window": count["dialed_outside_window"] if floor.config.obey_calling_window else None,
        **(_per_skill(floor, database) if predictive else {}),
    }
    return {
        "seed": floor.scenario.seed,
        "kpis": kpis,
        # What contact caps and retries per outcome change (caps_cost compares them).
        "contact": {"calls": kpis["calls"], "leads_contacted": len(floor.contacted),
                    "contact_rate": _share(len(floor.contacted), database["leads"]),
                    "held_by_caps": database["held_by_caps"]},
        "outcomes": dict(sorted(floor.outcomes.items())),
        "filings": {key[6:]: count[key] for key in ("filed_during", "filed_after", "filed_late")}
        | {"unfiled_at_end": count["unfiled_at_end"]},
        "not_dialed": {key[11:]: n for key, n in sorted(count.items()) if key.startswith("not_dialed_")},
        "callbacks": callbacks,
        # The service's abandon count of each day, per form_type and for the floor ("*").
        "abandon_days": [{key: row[key] for key in ("day", "form_type", "calls", "answered", "abandoned", "late_connects",
                                                     "machines", "rate")}
                         for row in database["abandon_days"]] if predictive else [],
        "final_status": database["final_status"],
        "tries_per_lead": database["tries_per_lead"],
        "calls_per_lead": database["calls_per_lead"],
        "hours": [_hour_row(row) for row in floor.hours.values()],
        "agents": [{"agent_id": agent.id, "skills": agent.skills, "calls": agent.calls, "contacts": agent.contacts,
                    **{f"{state}_minutes": round(agent.seconds[state] / 60, 1) for state in STATES}}
                   for agent in floor.agents.values()],
        "dial_status": [{"at": f"{moment:%Y-%m-%d %H:%M:%S}", **counts} for moment, counts in floor.snapshots],
        "caller_id_matches": dict(sorted(floor.caller_id_matches.items())),
        "calls_by_area_code": database["calls_by_area_code"],
    }


def _law_figures(floor, days):
    """The abandon rate as the service and the law count it (outcome abandoned plus
    answered customers an agent took more than abandon_connect_seconds after the answer;
    rules.compliance.abandons), from `days`, the service's day rows of the run (abandons.report): `abandons`
    and `late_connects` (counts), `abandon_rate` (over the run's answered, with the config's
    amd_false_positive_share) and `days_over_limit` (the share of the run's days whose rate was over
    the config's abandon_limit), for the floor, then `abandon_rate[T]` and `days_over_limit[T]` per
    form_type T (what a planner reads first), T's days against its campaign's limit
    (config.of)."""
    config = floor.config
    floor_days = [row for row in days if row["form_type"] == "*"]
    figures = {"abandons": sum(row["abandoned"] for row in floor_days),
               "late_connects": sum(row["late_connects"] for row in floor_days)}
    for name, suffix in [("*", "")] + [(group, f"[{group}]") for group in floor.groups]:
        rows = [row for row in days if row["form_type"] == name]
        rule = config if name == "*" else config.of(name)
        total = abandons.figures(*(sum(row[key] for row in rows) for key in ("answered", "abandoned", "late_connects",
                                                                          "machines")),
                                 share=rule.amd_false_positive_share)
        figures[f"abandon_rate{suffix}"] = total["rate"] if total["answered"] else None
        over = sum(1 for row in rows if row["answered"] and row["rate"] > rule.abandon_limit)
        figures[f"days_over_limit{suffix}"] = _share(over, len(floor.days))
    return figures


def _per_skill(floor, database):
    """Predictive, per form_type, the customers who hung up waiting as the simulator
    counts them (not the law's count, which _law_figures gives): `hung_up_waiting_rate[T]` (over
    T's answered) and `hung_up_waiting_days_over_target[T]`, the share of the run's days on which
    it was over target_abandon (a day with no answered call of T is not over); and
    `predictive_held[T]`, the pacing rounds the abandon limit refused; `paced_progressive[T]`, the
    minutes the `abandon` rule had T dialing progressively."""
    figures = {}
    days = range(len(floor.days))
    for group in floor.groups:
        answered = floor.count[f"answered[{group}]"]
        figures[f"hung_up_waiting_rate[{group}]"] = _share(floor.count[f"abandoned[{group}]"], answered)
    for group in floor.groups:
        over = sum(1 for day in days if _over(floor.day_count[(day, group)], floor.scenario.target_abandon))
        figures[f"hung_up_waiting_days_over_target[{group}]"] = _share(over, len(floor.days))
    for group in floor.groups:
        figures[f"predictive_held[{group}]"] = floor.count[f"held[{group}]"]
        figures[f"paced_progressive[{group}]"] = floor.count[f"paced_progressive[{group}]"]
    return figures


def _over(day, target):
    return day["answered"] > 0 and day["abandoned"] / day["answered"] > target


def _is_share(name):
    return name in SHARES or name.startswith(("abandon_rate[", "days_over_limit[", "hung_up_waiting_rate[",
                                              "hung_up_waiting_days_over_target["))


def _hour_row(row):
    minutes = {f"{state}_minutes": round(row["agent_seconds"][state] / 60, 1) for state in STATES}
    return {key: row.get(key) for key in ("hour", "calls", "answered", "contacts", "abandoned")} | minutes | {
        "retry_backlog": row.get("retry_backlog"), "penetration": row.get("penetration")}


def interval(values, upper=None):
    """Mean and 95% Student-t interval of replication values, cut to what the figure can be (0
    upwards; at most `upper`, 1 for a share), as a few runs of a small floor can give a t-interval
    below 0. The interval is None for one value or when a value is missing (a figure with no
    denominator in some run)."""
    if any(value is None for value in values):
        return {"mean": None, "ci95_low": None, "ci95_high": None, "values": values}
    mean = statistics.fmean(values)
    if len(values) < 2:
        return {"mean": round(mean, 4), "ci95_low": None, "ci95_high": None, "values": values}
    spread = statistics.stdev(values) / len(values) ** 0.5
    low, high = stats.t.interval(0.95, len(values) - 1, loc=mean, scale=spread) if spread else (mean, mean)
    low, high = max(low, 0), high if upper is None else min(high, upper)
    return {"mean": round(mean, 4), "ci95_low": round(low, 4), "ci95_high": round(high, 4), "values": values}


def combine(scenario, runs, without=()):
    """The report of K replications: the scenario, each KPI's mean and 95% interval, per-hour and
    per-agent means, and every run in full; with `without` (the same seeds played without the
    scenario's contact caps and retries per outcome), "caps_cost"."""
    names = list(runs[0]["kpis"])
    hours = {}
    for run in runs:
        for row in run["hours"]:
            hours.setdefault(row["hour"], []).append(row)
    kpis = {name: interval([run["kpis"][name] for run in runs], 1 if _is_share(name) else None) for name in names}
    return {
        # The law's count leads: a planner reads the report's first lines.
        **({"abandons": law_summary(scenario, runs, kpis)} if "abandon_rate" in kpis else {}),
        "scenario": scenario.to_json(),
        "replications": len(runs),
        "kpis": kpis,
        "hours": [_mean_row(label, rows, len(runs)) for label, rows in hours.items()],
        "agents": [_mean_row(agent_rows[0]["agent_id"], agent_rows, len(runs), key="agent_id")
                   for agent_rows in zip(*(run["agents"] for run in runs))],
        "runs": runs,
        **({"caps_cost": caps_cost(runs, without)} if without else {}),
        **({"caller_ids": sim_caller_ids.report(scenario, runs, without)} if scenario.caller_ids else {}),
    }


def law_summary(scenario, runs, kpis):
    """The report's first section: the abandon rate as the law counts it, against the
    limit (the scenario's abandon_limit, whether or not the run enforced it), for the floor ("*")
    and each form_type: {"limit", "enforced", "form_types": [{"form_type", "rate" (mean and 95%
    interval), "runs_over_limit" (share of runs whose rate was over the limit), "days_over_limit"
    (mean and interval of each run's share of days over it), "limit", "period" (its campaign's,
    or the floor's)}]}."""
    dialer = scenario.to_json()["dialer"]
    rows = []
    for name in ["*"] + sorted(key[len("abandon_rate["):-1] for key in kpis if key.startswith("abandon_rate[")):
        suffix = "" if name == "*" else f"[{name}]"
        own = scenario.campaigns.get(name, {})
        limit, period = own.get("abandon_limit", dialer["abandon_limit"]), own.get("abandon_period", dialer["abandon_period"])
        rates = [run["kpis"][f"abandon_rate{suffix}"] for run in runs]
        rows.append({"form_type": name, "rate": kpis[f"abandon_rate{suffix}"], "limit": limit, "period": period,
                     "runs_over_limit": _share(sum(1 for rate in rates if rate is not None and rate > limit), len(runs)),
                     "days_over_limit": kpis[f"days_over_limit{suffix}"]})
    return {"limit": dialer["abandon_limit"], "enforced": dialer["enforce_abandon_limit"], "form_types": rows}


COST_FIGURES = ("calls", "leads_contacted", "contact_rate")


def caps_cost(runs, without):
    """What the caps and retries cost: per figure of COST_FIGURES, its mean and interval
    with them ("with") and without ("without"), and "prevented_calls", the calls without less the
    calls with, per seed."""
    cost = {name: {"with": interval([run["contact"][name] for run in runs], 1 if _is_share(name) else None),
                   "without": interval([run["contact"][name] for run in without], 1 if _is_share(name) else None)}
            for name in COST_FIGURES}
    cost["prevented_calls"] = interval([other["contact"]["calls"] - run["contact"]["calls"]
                                        for run, other in zip(runs, without)])
    cost["held_by_caps"] = interval([run["contact"]["held_by_caps"] for run in runs])
    return cost


def _mean_row(label, rows, runs, key="hour"):
    """Per-hour or per-agent means over all runs; a run without that hour counts as zero."""
    numbers = [name for name, value in rows[0].items() if isinstance(value, (int, float)) and name != key]
    row = {key: label}
    for name in numbers:
        values = [r[name] for r in rows if r.get(name) is not None]
        row[name] = round(sum(values) / (runs if name not in ("retry_backlog", "penetration") else len(values)), 2) \
            if values else None
    return row


def summary(report):
    """The text table `dialerapi simulate` prints."""
    scenario, k = report["scenario"], report["replications"]
    days = f"{scenario['days']} day{'s' if scenario['days'] > 1 else ''}"
    lines = [f"\nsimulated {days}, {scenario['agents']} agents, {scenario['leads']} leads, {scenario['mode']}, "
             f"engine {scenario['engine']}, {k} run{'s' if k > 1 else ''} from seed {scenario['seed']}", ""]
    if "abandons" in report:
        lines += _law_lines(report["abandons"], scenario, k) + [""]
    if scenario.get("campaigns"):
        lines += _calls_per_day_lines(report) + [""]
    lines.append(f"{'figure':<46}{'mean':>12}{'95% interval' if k > 1 else '':>24}")
    for name, figure in report["kpis"].items():
        mean = "-" if figure["mean"] is None else f"{figure['mean']:g}"
        spread = f"{figure['ci95_low']:g} .. {figure['ci95_high']:g}" if figure["ci95_low"] is not None else ""
        lines.append(f"{name:<46}{mean:>12}{spread:>24}")
    if "caps_cost" in report:
        cost = report["caps_cost"]
        kinds = [name for name, on in (("contact caps", scenario.get("contact_caps")),
                                       ("retries per outcome", scenario.get("retries")),
                                       ("calling rules", scenario.get("calling_rules")),
                                       ("caller-ID pools", scenario.get("caller_ids"))) if on]
        held = " and ".join([", ".join(kinds[:-1]), kinds[-1]] if len(kinds) > 1 else kinds)
        lines += ["", f"{held}, the same seeds with and without them:",
                  f"{'figure':<34}{'with':>12}{'without':>12}"]
        lines += [f"{name:<34}{cost[name]['with']['mean']:>12g}{cost[name]['without']['mean']:>12g}"
                  for name in COST_FIGURES]
        lines.append(f"{'prevented_calls':<34}{cost['prevented_calls']['mean']:>12g}")
    if "caller_ids" in report:
        lines += [""] + sim_caller_ids.summary_lines(report["caller_ids"])
    first = report["runs"][0]
    lines += ["", f"first run (seed {first['seed']}):", f"{'final status':<26}{'leads':>12}"]
    lines += [f"{status:<26}{n:>12}" for status, n in first["final_status"].items()]
    lines += ["", f"{'tries (call_count)':<26}{'leads':>12}"]
    lines += [f"{tries:<26}{n:>12}" for tries, n in first["tries_per_lead"].items()]
    callbacks = first["callbacks"]
    lines += ["", "callbacks due in the run: {due}, on time {on_time}, late {late}, not dialed {not_dialed}; "
              "due after it: {due_after_the_run}".format(**callbacks)]
    if callbacks["personal"]["due"] or callbacks["personal"]["due_after_the_run"]:
        lines += ["personal callbacks: due {due}, on time {on_time}, taken by their owner {by_owner}, "
                  "after the fallback {after_fallback}, not dialed {not_dialed}".format(**callbacks["personal"])]
    return "\n".join(lines)


def _law_lines(law, scenario, k):
    """The summary's first table: the law's abandon rate per form_type against the limit (each
    campaign's own, in a column of its own when some campaign has one)."""
    enforced = "enforced" if law["enforced"] else "not enforced in the runs"
    own_rules = any((row["limit"], row["period"]) != (law["limit"], scenario["dialer"]["abandon_period"])
                    for row in law["form_types"])
    lines = [f"abandon rate as the service and the law count it (hung up waiting, plus answered customers an agent "
             f"took more than {scenario['dialer']['abandon_connect_seconds']} s after the answer); "
             f"limit {law['limit']:.2%}{', or each campaign its own' if own_rules else ''}, {enforced}:",
             f"{'form_type':<24}{'rate':>10}{'95% interval' if k > 1 else '':>22}{'runs over':>14}{'days over':>12}"
             + (f"{'limit':>16}" if own_rules else "")]
    for row in law["form_types"]:
        rate, days = row["rate"], row["days_over_limit"]
        mean = "-" if rate["mean"] is None else f"{rate['mean']:.2%}"
        spread = f"{rate['ci95_low']:.2%} .. {rate['ci95_high']:.2%}" if rate["ci95_low"] is not None else ""
        runs_over = f"{round(row['runs_over_limit'] * k)}/{k}" if row["runs_over_limit"] is not None else "-"
        days_over = "-" if days["mean"] is None else f"{days['mean']:.0%}"
        rule = f"{row['limit']:.2%} per {row['period']}" if own_rules else ""
        lines.append(f"{'all' if row['form_type'] == '*' else row['form_type']:<24}{mean:>10}{spread:>22}"
                     f"{runs_over:>14}{days_over:>12}{rule:>16}")
    return lines


def _calls_per_day_lines(report):
    """With campaigns: each day's calls per form_type, the mean of the runs, so a
    campaign's closed days and hours show."""
    calls = {}
    for run in report["runs"]:
        for row in run["abandon_days"]:
            if row["form_type"] != "*":
                calls.setdefault(row["form_type"], {}).setdefault(row["day"], 0)
                calls[row["form_type"]][row["day"]] += row["calls"]
    days = sorted({day for by_day in calls.values() for day in by_day})
    if not days:
        return []
    k = len(report["runs"])
    lines = ["calls per day per form_type (mean of the runs; campaigns' calendars and states apply):",
             f"{'form_type':<24}" + "".join(f"{f'{day[5:]} {date.fromisoformat(day):%a}':>12}" for day in days)]
    for form_type in sorted(set(report["scenario"]["form_types"]) | set(calls)):
        by_day = calls.get(form_type, {})
        lines.append(f"{form_type:<24}" + "".join(f"{by_day.get(day, 0) / k:>12g}" for day in days))
    return lines


def _draw_law(axes, report, law):
    """Each day's abandon rate (the law's count) per form_type, the mean of the runs, and the limit."""
    rates = {}
    for run in report["runs"]:
        for row in run["abandon_days"]:
            if row["answered"]:
                rates.setdefault(row["form_type"], {}).setdefault(row["day"], []).append(row["rate"])
    days = sorted({day for by_day in rates.values() for day in by_day})
    for name in sorted(rates):
        axes.plot(range(len(days)), [statistics.fmean(rates[name][day]) if day in rates[name] else None for day in days],
                  marker="o", label="all form_types" if name == "*" else name, linewidth=2.5 if name == "*" else 1.5)
    axes.axhline(law["limit"], color="red", linestyle="--", label=f"limit {law['limit']:.1%}")
    axes.set_xticks(range(len(days)), days, fontsize=8)
    axes.yaxis.set_major_formatter(lambda value, _: f"{value:.1%}")
    axes.set_ylim(bottom=0)
    axes.set_title("abandon rate per day as the law counts it (mean of the runs)")
    axes.grid(alpha=0.3)
    axes.legend(loc="upper right", fontsize=8)


def write_csv(report, directory):
    """abandons.csv (predictive: the law's abandon rate per form_type, "*" the floor, against the
    limit: the report's "abandons"), kpis.csv (name, mean, ci95_low, ci95_high), hours.csv and
    agents.csv (one row per run and hour, or run and agent) in `directory`. Returns the paths written."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tables = {
        **({"abandons.csv": [{"form_type": row["form_type"], "limit": report["abandons"]["limit"],
                              **{f"rate_{key}": row["rate"][key] for key in ("mean", "ci95_low", "ci95_high")},
                              "runs_over_limit": row["runs_over_limit"],
                              **{f"days_over_limit_{key}": row["days_over_limit"][key]
                                 for key in ("mean", "ci95_low", "ci95_high")}}
                             for row in report["abandons"]["form_types"]]} if "abandons" in report else {}),
        "kpis.csv": [{"name": name, **{k: v for k, v in figure.items() if k != "values"}}
                     for name, figure in report["kpis"].items()],
        "hours.csv": [{"seed": run["seed"], **row} for run in report["runs"] for row in run["hours"]],
        "agents.csv": [{"seed": run["seed"], **{k: v for k, v in row.items() if k != "skills"},
                        "skills": ";".join(row["skills"])} for run in report["runs"] for row in run["agents"]],
    }
    paths = []
    for name, rows in tables.items():
        path = directory / name
        with path.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]) if rows else ["empty"])
            writer.writeheader()
            writer.writerows(rows)
        paths.append(str(path))
    return paths


def draw_chart(report, path):
    """A PNG: predictive, first, the abandon rate of each day as the law counts it per form_type
    against the limit; calls and contacts per hour, agent states per hour (means over
    the runs), and the first run's dial_status over time (matplotlib, no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    hours = report["hours"]
    labels = [row["hour"][5:] for row in hours]
    law = report.get("abandons")
    figure, panels = plt.subplots(4 if law else 3, 1, figsize=(11, 14.5 if law else 11), dpi=100)
    if law:
        _draw_law(panels[0], report, law)
    calls, states, leads = panels[-3:]
    positions = range(len(hours))
    calls.plot(positions, [row["calls"] for row in hours], marker="o", label="calls (dials started)")
    calls.plot(positions, [row["contacts"] for row in hours], marker="o", label="contacts (reached an agent)")
    if any(row["abandoned"] for row in hours):
        calls.plot(positions, [row["abandoned"] for row in hours], marker="o", label="abandoned")
    calls.set_title("calls per hour (mean of the runs)")
    bottom = [0.0] * len(hours)
    for state in STATES:
        values = [row[f"{state}_minutes"] or 0 for row in hours]
        states.bar(positions, values, bottom=bottom, label=state)
        bottom = [b + v for b, v in zip(bottom, values)]
    states.set_title("agent-minutes per hour by state (mean of the runs)")
    for axes in (calls, states):
        axes.set_xticks(list(positions), labels, rotation=60, fontsize=7)
        axes.grid(alpha=0.3)
        axes.legend(loc="upper right", fontsize=8)
    series = report["runs"][0]["dial_status"]
    statuses = sorted({key for row in series for key in row if key != "at"})
    for status in statuses:
        leads.plot(range(len(series)), [row.get(status, 0) for row in series], label=status, linewidth=2)
    leads.set_xticks(range(len(series)), [row["at"][5:16] for row in series], rotation=60, fontsize=7)
    leads.set_title("leads by dial_status at each hour's end (first run)")
    leads.grid(alpha=0.3)
    leads.legend(loc="upper right", fontsize=8)
    figure.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
    return str(path)
