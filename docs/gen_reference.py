"""Generate the docs site's references from the code at build time (mkdocs-gen-files):

- reference/openapi.json: the service's own OpenAPI document (dialerapi.openapi.document.build, the
  one GET /openapi.json serves), rendered by reference/api.md with Swagger UI;
- reference/settings.md: the settings table, from dialerapi.plumbing.config.SETTINGS (what
  create_app reads) and the ENVIRONMENT literal of deploy/gunicorn.conf.py (what gunicorn reads).

The command-line reference (reference/cli.md) is rendered by mkdocs-click from the click commands.
"""

import ast
import json
from pathlib import Path

import mkdocs_gen_files

from dialerapi.openapi.document import build
from dialerapi.plumbing.config import SETTINGS

ROOT = Path(__file__).resolve().parent.parent


def gunicorn_environment():
    """The ENVIRONMENT dict of deploy/gunicorn.conf.py, read without running the file (it binds sockets
    and patches gevent when run)."""
    tree = ast.parse((ROOT / "deploy" / "gunicorn.conf.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["ENVIRONMENT"]:
            return ast.literal_eval(node.value)
    raise LookupError("deploy/gunicorn.conf.py has no ENVIRONMENT")


def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def settings_page():
    lines = [
        "# Settings",
        "",
        "Generated from the code that reads them (`dialerapi/plumbing/config.py` `SETTINGS` and",
        "`deploy/gunicorn.conf.py` `ENVIRONMENT`) when the site is built. Every setting is an environment",
        "variable, or a line of a `.env` file in the working directory (the environment wins); a missing or",
        "bad value stops start-up with one line naming it (decisions.md D10). How to set them:",
        "[Configuration](../operations/configuration.md).",
        "",
        "## The service (create_app)",
        "",
        "| Variable | Default | Meaning |",
        "|---|---|---|",
    ]
    for name, setting in SETTINGS.items():
        if setting.shown_default:
            default = setting.shown_default
        elif setting.default is None:
            default = "required"
        elif setting.default == "":
            default = "empty"
        else:
            default = f"`{setting.default}`"
        lines.append(f"| `{name}` | {cell(default)} | {cell(setting.doc)} |")
    lines += ["", "## gunicorn (deploy/gunicorn.conf.py)", "", "| Variable | Default | Meaning |", "|---|---|---|"]
    for name, (default, meaning) in gunicorn_environment().items():
        lines.append(f"| `{name}` | {cell(default)} | {cell(meaning)} |")
    return "\n".join(lines) + "\n"


def main():
    with mkdocs_gen_files.open("reference/openapi.json", "w") as out:
        json.dump(build(), out, indent=1, ensure_ascii=False)
    with mkdocs_gen_files.open("reference/settings.md", "w") as out:
        out.write(settings_page())


# mkdocs-gen-files runs this file with runpy.run_path; tests/test_docs.py imports it.
if __name__ == "<run_path>":
    main()
