"""The package's folders are its layers (issue #31; docs/architecture.md "How it is built"): imports point down
(cli, simulate, openapi, sides, web, upkeep, rules, plumbing) and no side imports another side.
The contracts live in setup.cfg ([importlinter]) and are checked here with import-linter; the
OpenAPI document is held byte for byte to tests/data/openapi.json, so a move of code cannot change it."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(tree, *contracts):
    """Run import-linter over the dialerapi package found in `tree` with the project's contracts
    (all, or those named: `layers`, `sides`)."""
    named = [arg for contract in contracts for arg in ("--contract", contract)]
    return subprocess.run([str(LINT_IMPORTS), "--config", str(ROOT / "setup.cfg"), "--no-cache", *named], cwd=tree,
                          env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True)


def test_the_package_keeps_its_layer_contracts():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 kept, 0 broken" in result.stdout


@pytest.mark.parametrize("module, line, contract", [
    ("rules/claims.py", "from dialerapi.sides.engine import schemas", "layers"),
    ("plumbing/clock.py", "from dialerapi.rules import dialstate", "layers"),
    ("web/auth.py", "from dialerapi.sides.agent import socket", "layers"),
    ("upkeep/jobs.py", "from dialerapi.web import auth", "layers"),
    ("sides/crm/routes.py", "from dialerapi.sides.agent import schemas as agent_schemas", "sides"),
    ("sides/engine/routes.py", "import dialerapi.sides.monitor.routes", "sides"),
])
def test_an_upward_or_sideways_import_breaks_its_contract(tmp_path, module, line, contract):
    shutil.copytree(ROOT / "dialerapi", tmp_path / "dialerapi", ignore=shutil.ignore_patterns("__pycache__"))
    assert lint_imports(tmp_path, contract).returncode == 0, "the copy keeps the contract before the change"
    target = tmp_path / "dialerapi" / module
    target.write_text(target.read_text() + f"\n{line}  # added by the test\n")
    result = lint_imports(tmp_path, contract)
    assert result.returncode == 1 and "0 kept, 1 broken" in result.stdout, result.stdout


def test_the_served_openapi_document_is_unchanged_byte_for_byte(client):
    """A change to the API updates tests/data/openapi.json in the same commit, on purpose."""
    assert client.get("/openapi.json").data == (ROOT / "tests" / "data" / "openapi.json").read_bytes()


# Issue #67 item 9: small modules a reader takes in whole (the guide's "small modules").
MODULE_MAX_LINES = 450


def test_every_module_stays_under_450_lines():
    long = {str(path.relative_to(ROOT)): count for path in sorted((ROOT / "dialerapi").rglob("*.py"))
            if (count := len(path.read_text(encoding="utf-8").splitlines())) >= MODULE_MAX_LINES}
    assert long == {}, f"modules of {MODULE_MAX_LINES} lines or more: split them"
