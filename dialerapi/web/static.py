"""The static pages the service ships (the agents' /panel/; the supervisors' /board/,
docs/supervisors/board.md): their own files only, with a policy that lets them load nothing from elsewhere."""

from flask import send_from_directory

from dialerapi.web.errors import ApiError

# A page's own files and its own origin only: no inline script, no third party, not framed.
PAGE_POLICY = "default-src 'self'; connect-src 'self'; frame-ancestors 'self'; base-uri 'none'; form-action 'none'"


def page_file(directory, name, files):
    """The response for file `name` of a static page in `directory`; 404 `not_found` unless `name` is
    one of `files`. Never cached, so an upgrade reaches every browser at its next load."""
    if name not in files:
        raise ApiError(404, "not_found")
    response = send_from_directory(directory, name, max_age=0)
    response.headers["Content-Security-Policy"] = PAGE_POLICY
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response
