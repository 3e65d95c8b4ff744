"""The package's folders are its layers (docs/architecture.md "How it is built"): imports point down
(cli, simulate, openapi, sides, web, upkeep, rules, plumbing), no side imports another side, and
inside the rules each sub-domain imports only those below it (docs/architecture.md "The rules").
The contracts live in setup.cfg ([importlinter]) and are checked here with import-linter, beside
what a layers contract cannot see: a circle inside one sub-package, and an import placed inside a
function. The OpenAPI document is held byte for byte to tests/data/openapi.json, so a move of code
cannot change it."""

import ast
import re

import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import grimp
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
    assert "3 kept, 0 broken" in result.stdout


@pytest.mark.parametrize("module, line, contract", [
    ("rules/dialing/claims.py", "from dialerapi.sides.engine import schemas", "layers"),
    ("plumbing/clock.py", "from dialerapi.rules.leads import dialstate", "layers"),
    ("rules/config/dialer.py", "from dialerapi.rules.campaigns import operations", "rules"),
    ("rules/core/vocabulary.py", "from dialerapi.rules.config import dialer", "rules"),
    ("rules/events/lead_events.py", "from dialerapi.rules.views import why", "rules"),
    ("rules/compliance/abandons.py", "from dialerapi.rules.campaigns import operations", "rules"),
    ("rules/leads/callbacks.py", "from dialerapi.rules.agents import roster", "rules"),
    ("rules/views/floor.py", "from dialerapi.rules.dialing import claims", "rules"),
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


RULES = ROOT / "dialerapi" / "rules"
# The engine library's former paths, kept as deprecated re-exports (docs/engine/library.md).
DEPRECATED = {"dialerapi.rules.claims", "dialerapi.rules.dialstate"}


def test_the_rules_are_sub_packages_without_a_circle():
    assert sorted(path.name for path in RULES.glob("*.py")) == ["__init__.py", "claims.py", "dialstate.py"]
    graph = grimp.build_graph("dialerapi")
    rules = {module for module in graph.modules if module.startswith("dialerapi.rules.")} - DEPRECATED
    circles = [(module, other) for module in sorted(rules)
               for other in sorted(graph.find_modules_directly_imported_by(module) & rules)
               if graph.chain_exists(importer=other, imported=module)]
    assert circles == []
    assert {importer for module in DEPRECATED for importer in graph.find_modules_that_directly_import(module)} == set()


def test_no_module_of_the_rules_imports_inside_a_function():
    inside = [f"{path.relative_to(ROOT)}:{node.lineno}" for path in sorted(RULES.rglob("*.py"))
              for function in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
              if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
              for node in ast.walk(function) if isinstance(node, (ast.Import, ast.ImportFrom))]
    assert inside == []


def test_the_engine_librarys_former_paths_still_answer_with_a_warning():
    """docs/engine/library.md: a Python engine written against rules.claims and rules.dialstate."""
    from dialerapi.rules.agents import roster
    from dialerapi.rules.dialing import claims as claim_rules
    from dialerapi.rules.leads import dialstate as dial_state

    for name in DEPRECATED:
        sys.modules.pop(name, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from dialerapi.rules import claims, dialstate
    assert {type(warning.message) for warning in caught} == {DeprecationWarning} and len(caught) == 2
    assert claims.claim_next is claim_rules.claim_next and claims.bridge is roster.bridge
    assert dialstate.settle is dial_state.settle
    for name in ("load_config", "OUTCOMES", "UnknownLead", "is_live", "hangup_changes", "in_work_window",
                 "unavailable_reason", "PENDING", "DialerConfig"):
        assert hasattr(dialstate, name), name


def test_the_served_openapi_document_is_unchanged_byte_for_byte(client):
    """A change to the API updates tests/data/openapi.json in the same commit, on purpose."""
    assert client.get("/openapi.json").data == (ROOT / "tests" / "data" / "openapi.json").read_bytes()


# Issue #67 item 9: small modules a reader takes in whole (the guide's "small modules").
MODULE_MAX_LINES = 450


def test_every_module_stays_under_450_lines():
    long = {str(path.relative_to(ROOT)): count for path in sorted((ROOT / "dialerapi").rglob("*.py"))
            if (count := len(path.read_text(encoding="utf-8").splitlines())) >= MODULE_MAX_LINES}
    assert long == {}, f"modules of {MODULE_MAX_LINES} lines or more: split them"


# "issue #65", also where a line break falls between the word and the number.
ISSUE_NUMBER = re.compile(r"\b[Ii]ssues?(?:\s|--|#(?=\s))+#\d+")


def test_the_code_and_the_docs_titles_cite_no_issue_number():
    """A reader has no tracker: code says why in its own words and cites the spec or a docs page;
    history is CHANGELOG.md's."""
    code = [f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, found.start()) + 1}"
            for path in sorted((ROOT / "dialerapi").rglob("*")) if path.suffix in (".py", ".sql", ".js", ".html", ".css")
            for text in [path.read_text(encoding="utf-8")] for found in ISSUE_NUMBER.finditer(text)]
    titles = [str(path.relative_to(ROOT)) for path in sorted((ROOT / "docs").rglob("*.md"))
              if ISSUE_NUMBER.search(path.read_text(encoding="utf-8").split("\n", 1)[0])]
    assert code == [] and titles == []
