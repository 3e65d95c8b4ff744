"""A rolling upgrade (issue #38, item 4): the floor served by the previous release on both hosts
(a git worktree of the commit before issue #38's first change), the migration applied while it
serves, then each host moved to this release one at a time, under the load of the restart test
(tests/faults/floor_hosts.Load) and with its panels.

The promises: no request fails (no 5xx, none unanswered) at any step, with both releases serving
at once in the middle; every panel is back within 10 s of its close and its first state back is
fresh; jobs run once per tick across both releases (dialerapi_job_runs); every pushed lead is
stored once and no lead was on two calls at once.

The previous release cannot drain (it predates issue #38): SIGTERM leaves its sockets open, still
served, until gunicorn's graceful_timeout (20 s), then drops them without a close frame (1006).
Its panels reconnect after that as after any drop; this release's hosts close with 1012 at once
(test_host_restart.py). From this release on, every upgrade is a 1012 one.
"""

import subprocess
import threading
import time

import pytest

from conftest import ROOT, Sql, start_nginx
from floor_hosts import Host, Load, Panels, file_missed_activity, floor, late_or_stale, leads_once, moved
from test_migration_dnc import apply_until
from dialerapi.plumbing import migrate
from dialerapi.upkeep import jobs

# Serial (setup.cfg `serial`): it holds hosts that restart under a load of its own to zero failed
# requests; beside the other fault tests' load on 2 cores, a host starved of CPU reset a connection
# (a 502 on a claim, 2026-11-27), so it runs alone after the parallel run.
pytestmark = [pytest.mark.faults, pytest.mark.serial]

# main before issue #38's first change: the release a floor upgrades from.
PREVIOUS_RELEASE = "251a1dc"
PREVIOUS_SCHEMA = "0015"
# Each move sends every panel to one host (the second, all of them): test_host_restart.LEAVING says
# why the tests move about 600 at once.
PANELS = 600
FIRST_AGENT = 20000
BACK_WITHIN_SECONDS = 10
TICKED_JOBS = {"blocking": jobs.BLOCKING_SECONDS, "phone_facts": jobs.PHONE_FACTS_SECONDS}


@pytest.fixture
def previous_release(tmp_path):
    path = tmp_path / "previous-release"
    subprocess.run(["git", "worktree", "add", "--detach", str(path), PREVIOUS_RELEASE], cwd=ROOT, check=True,
                   capture_output=True)
    yield path
    subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=ROOT, capture_output=True)


class JobRuns:
    """Samples dialerapi_job_runs every 0.2 s: each (job, last_started_at) seen, in order."""

    def __init__(self, url):
        self.sql = Sql(url)
        self.starts = {name: [] for name in TICKED_JOBS}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self):
        while not self._stop.wait(0.2):
            for row in self.sql("SELECT name, last_started_at FROM dialerapi_job_runs"):
                starts = self.starts.get(row["name"])
                if starts is not None and (not starts or starts[-1] != row["last_started_at"]):
                    starts.append(row["last_started_at"])

    def stop(self):
        self._stop.set()
        self._thread.join(5)


def stop_and_move(host, panels, sql, within):
    """SIGTERM `host`; once it has exited and its panels are back elsewhere, (the `moved` result,
    seconds the host took to stop)."""
    since = time.monotonic()
    stopped = {}
    stopping = threading.Thread(target=lambda: stopped.update(seconds=host.stop()))
    stopping.start()
    time.sleep(0.5)
    file_missed_activity(sql, FIRST_AGENT)
    stopping.join(120)
    assert panels.wait_open(PANELS, within + 20), f"{panels.open_count()} of {PANELS} panels back"
    return moved(panels, since), stopped["seconds"]


def test_a_rolling_upgrade_from_the_previous_release_fails_no_request(fresh_database, previous_release, tmp_path):
    url = fresh_database
    apply_until(url, PREVIOUS_SCHEMA)
    migrate.seed(url)
    sql = Sql(url)
    floor(sql, PANELS, FIRST_AGENT)
    t0 = time.monotonic()
    jobs_on = {"JOBS_ENABLED": "true"}
    a = Host("a", url, tmp_path, t0, release=previous_release, http_settings=jobs_on)
    b = Host("b", url, tmp_path, t0, release=previous_release, http_settings=jobs_on)
    nginx = start_nginx([a.http, b.http], tmp_path, sockets=[a.sockets, b.sockets])
    base = f"http://127.0.0.1:{nginx.port}"
    panels = Panels(base.replace("http://", "ws://"), range(FIRST_AGENT, FIRST_AGENT + PANELS))
    load = runs = None
    try:
        assert panels.wait_open(PANELS, 120), f"{panels.open_count()} of {PANELS} panels opened"
        load = Load(base, "UPGRADE")
        runs = JobRuns(url)
        time.sleep(3)
        # The migrations since the previous release (0016; 0017, issue #48's new tables; 0018, issue
        # #49's; 0019, issue #50's; 0020 and 0021, issue #64's; 0022, issue #65's; 0023 and 0024,
        # issue #67's; 0025 and 0026, issue #68's; 0027, the caller IDs'), applied while it serves on both
        # hosts.
        assert [m.split(".")[0] for m in migrate.pending(url)] == [
            "0016", "0017", "0018", "0019", "0020", "0021", "0022", "0023", "0024", "0025", "0026", "0027"]
        migrate.upgrade(url)
        time.sleep(2)

        moves = []
        for host, other in ((a, b), (b, a)):
            result, seconds = stop_and_move(host, panels, sql, BACK_WITHIN_SECONDS)
            moves.append((host.name, result, seconds))
            host.start()  # this release, on the same ports: nginx's upstreams find it again
            time.sleep(3)  # both releases (then both hosts of this one) serve the load together
        load.stop()
        runs.stop()

        failures = load.failures()
        counts = load.counts()
        assert not failures, f"{len(failures)} failed requests: {failures[:10]}; all answers {counts}"
        assert all(set(by_status) <= {"200", "201"} for by_status in counts.values()), counts
        for name, result, seconds in moves:
            assert result, f"no panel was on host {name}"
            late, stale = late_or_stale(result, BACK_WITHIN_SECONDS)
            assert not late, f"host {name}: {len(late)} panels not back within {BACK_WITHIN_SECONDS} s"
            assert not stale, f"host {name}: {len(stale)} panels got a state without the change made during the move"
            back = sorted(r[1] for r in result.values())
            print(f"\nhost {name} (previous release) stopped in {seconds:.1f} s: {len(result)} panels moved,"
                  f" closes {sorted({r[0] for r in result.values()})}, back in p50 {back[len(back) // 2]:.1f} s,"
                  f" max {back[-1]:.1f} s")
        assert {code for _, result, _ in moves for code, _, _ in result.values()} <= {1006, 1012}
        print(f"answers {counts}; job starts {runs.starts}")

        for name, interval in TICKED_JOBS.items():
            starts = runs.starts[name]
            assert len(starts) >= 3, (name, starts)
            gaps = [(later - earlier).total_seconds() for earlier, later in zip(starts, starts[1:])]
            assert min(gaps) >= jobs.TICK_SHARE * interval - 1, f"{name} ran twice in a tick: {starts}"
        leads_once(load, sql, "UPGRADE")
        assert migrate.pending(url) == []
    finally:
        for closer in (load and load.stop, runs and runs.stop, panels.close, nginx.stop, a.kill, b.kill):
            if closer:
                closer()
