"""The do-not-call list: numbers as E.164 digits (rules/phones.e164) in dialerapi_dnc.

Adding or removing a number also sets or clears sales_master.do_not_call on every lead with that
number, in the same transaction, whatever its oli_id: the claim's candidate query filters on it,
and the claim checks the list itself on the lead it locks (rules/compliance/claim_checks.py). Functions take
the connection first and run in the caller's transaction.
"""

from dialerapi.plumbing.db import queries
from dialerapi.rules.compliance import phones
from dialerapi.rules.config import dialer as dialer_config
from dialerapi.rules.events import lead_events

DND = "dnd"
CLI = "cli"
API = "api"
# Why a CRM lists a number over HTTP: the customer revoked consent, asked not to
# be called, or the number is on a registry.
CRM_REASONS = ("revoked", "request", "registry")
# The sources of a lead's mark changed after its number was listed or unlisted while the lead was
# live (mark_leads leaves a live row alone): set by the first claim to read it after the call
# (compliance.refusal), cleared at the call's end (a marked lead is no claim's candidate).
CLAIM = "claim"
CALL_END = "call_end"
# Numbers per statement when adding, removing or importing.
BATCH = 5000
SOURCE_LENGTH = 32
SIZE_COUNTER = "dnc_numbers"
# The longest line an import reads: a number with its punctuation and a comment fits many times over.
LINE_LIMIT = 200


class InvalidLine(ValueError):
    """A line of an import file that is no phone number; `line` is its 1-based number."""

    def __init__(self, line, text):
        super().__init__(f"line {line}: {text!r} is not a phone number")
        self.line = line


def parse_numbers(texts, region):
    """E.164 digits of each text (`region` reads national numbers). Raises phones.InvalidNumber."""
    return [phones.e164(text, region) for text in texts]


def add(conn, phone_numbers, source, now, oli_id=None):
    """List `phone_numbers` (E.164 digits) with `source` and `now` (wall-clock DB_TIMEZONE); a listed
    number keeps its first source. Marks their leads, each with a lead.do_not_call event.
    Returns how many were new."""
    added = 0
    for start in range(0, len(phone_numbers), BATCH):
        chunk = sorted(set(phone_numbers[start:start + BATCH]))
        added += queries.insert_numbers(conn, [(number, source[:SOURCE_LENGTH], oli_id, now) for number in chunk])
        marked = list(queries.leads_marked_by_phones(conn, phones=chunk, listed=True))
        queries.mark_leads(conn, phones=chunk, listed=True)
        lead_events.listed(conn, marked, now, source)
    _counted(conn, added)
    return added


def _counted(conn, delta):
    # The list's size for /health and /metrics, kept with the list: a COUNT(*) of ten million rows
    # takes seconds.
    if delta:
        queries.change_counter(conn, name=SIZE_COUNTER, delta=delta)


def remove(conn, phone_numbers, now, source=CLI):
    """Take `phone_numbers` off the list and clear their leads' mark, each lead with a
    lead.do_not_call_removed event of `source` (never a change without its event);
    `now` is wall-clock DB_TIMEZONE. Returns how many were listed."""
    removed = 0
    for start in range(0, len(phone_numbers), BATCH):
        chunk = sorted(set(phone_numbers[start:start + BATCH]))
        removed += queries.delete_numbers(conn, phones=chunk)
        unmarked = list(queries.leads_marked_by_phones(conn, phones=chunk, listed=False))
        queries.mark_leads(conn, phones=chunk, listed=False)
        lead_events.listed(conn, unmarked, now, source, on_list=False)
    _counted(conn, -removed)
    return removed


def crm_list(conn, phone_number, reason, now, oli_id=None):
    """POST /api/dnc: list `phone_number` (digits, read with the floor's
    phone_default_region) for `reason` (CRM_REASONS), from the next claim of every lead with that
    number, each with its lead.do_not_call event of source `reason`. Returns {phone_number (E.164
    text), added (False: it was listed already, with its first source kept)}."""
    number = _crm_number(conn, phone_number)
    return {"phone_number": phones.format_e164(number), "added": bool(add(conn, [number], reason, now, oli_id))}


def crm_remove(conn, phone_number, now):
    """DELETE /api/dnc/{phone_number}: take `phone_number` off the list (source `api` on the events).
    Returns {phone_number (E.164 text), removed (False: it was not listed)}."""
    number = _crm_number(conn, phone_number)
    return {"phone_number": phones.format_e164(number), "removed": bool(remove(conn, [number], now, API))}


def _crm_number(conn, phone_number):
    """The E.164 digits of a CRM's phone (digits, D4), read with the floor's phone_default_region; the
    digits themselves when phonenumbers reads no number in them (as a push stores such a phone)."""
    try:
        return phones.e164(phone_number, dialer_config.load_config(conn).phone_default_region)
    except phones.InvalidNumber:
        return int(phone_number)


def count(conn):
    """How many numbers are listed (kept as the list changes)."""
    return int(queries.counter(conn, name=SIZE_COUNTER))


def pages(conn, page_size=10000):
    """Every listed row, {phone, source, oli_id, added_at}, in number order, a page at a time."""
    after = 0
    while True:
        rows = list(queries.numbers_after(conn, after=after, max_rows=page_size))
        yield from rows
        if len(rows) < page_size:
            return
        after = rows[-1]["phone"]


def bounded_lines(file, limit=LINE_LIMIT):
    """The lines of text `file`, each read at most `limit` characters at a time; a longer line raises
    InvalidLine before more of it is read, so a file without line breaks costs no more memory."""
    number = 0
    while True:
        line = file.readline(limit + 1)
        if not line:
            return
        number += 1
        if len(line) > limit:
            raise InvalidLine(number, line[:40] + "...")
        yield line


def import_lines(conn, lines, region, source, now, progress=None, every=100000):
    """Import a registry's file, all or nothing: every line of `lines` is one number (blank lines and
    lines starting with '#' are passed over; a line's digits are the number, so `212,5550100` as
    the US registry writes it is 2125550100, read with `region`). The numbers are staged in a
    temporary table of this connection, a batch at a time, then listed and their leads marked in
    two statements (with a lead.do_not_call event for each lead marked): memory stays at one batch
    of numbers whatever the file's size. `progress(lines_read)` is
    called every `every` lines. Returns {"lines", "numbers", "added"}. Raises InvalidLine (nothing
    is listed; the caller's transaction rolls back the staging).
    """
    queries.drop_staging(conn)
    queries.create_staging(conn)
    batch, read, numbers_seen = [], 0, 0
    for read, line in enumerate(lines, 1):
        text = line.strip()
        if text and not text.startswith("#"):
            digits = "".join(ch for ch in text if ch.isdigit()) if not text.startswith("+") else text
            try:
                batch.append((phones.e164(digits, region),))
            except phones.InvalidNumber:
                raise InvalidLine(read, text) from None
            if len(batch) >= BATCH:
                numbers_seen += len(batch)
                queries.stage_numbers(conn, batch)
                batch = []
        if progress and read % every == 0:
            progress(read)
    if batch:
        numbers_seen += len(batch)
        queries.stage_numbers(conn, batch)
    added = queries.merge_staging(conn, source=source[:SOURCE_LENGTH], added_at=now)
    marked = list(queries.leads_listed_by_staging(conn))
    queries.mark_staged_leads(conn)
    lead_events.listed(conn, marked, now, source)
    _counted(conn, added)
    queries.drop_staging(conn)
    return {"lines": read, "numbers": numbers_seen, "added": added}
