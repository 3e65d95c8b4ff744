"""Reference data read by the API: the pause-reason catalog and the push priority rules."""

from dialerapi.plumbing.db import queries
from dialerapi.rules.config import campaign_config
from dialerapi.rules.config import dialer as dialer_config

NOTE_MAX_WORDS = 12
NOTE_MAX_CHARS = 80


def pause_reasons(conn):
    """The GET /api/pause-reasons body (lead-intake-api.md, "Pause reason"; picker and system codes).

    Returns {ok, note_max_words, note_max_chars, reasons: [{code, label[, note: true]}],
    system: [{code, label}]}; `note: true` marks the codes that need a note (`other`).
    """
    picker, system = [], []
    for row in queries.list_pause_reasons(conn):
        entry = {"code": row["code"], "label": row["label"]}
        if row["kind"] == "picker":
            if row["needs_note"]:
                entry["note"] = True
            picker.append(entry)
        else:
            system.append(entry)
    return {
        "ok": True,
        "note_max_words": NOTE_MAX_WORDS,
        "note_max_chars": NOTE_MAX_CHARS,
        "reasons": picker,
        "system": system,
    }


def push_context(conn):
    """(priorities, config) for a push, read in one statement.

    priorities: {priority_id: {is_active, is_callback, is_disposed}} for validating the leads
    (schemas.LeadSchema); config: the dialer_config.DialerConfig for the push reset. Raises LookupError
    when the dialer config row is missing.
    """
    rows = list(queries.get_push_context(conn))
    if not rows:
        raise dialer_config.missing_config()
    priorities = {
        row["id"]: {
            "is_active": bool(row["is_active"]),
            "is_callback": bool(row["is_callback"]),
            "is_disposed": bool(row["is_disposed"]),
        }
        for row in rows
        if row["id"] is not None
    }
    generation = rows[0].pop("campaigns_generation")
    return priorities, campaign_config.attach(conn, dialer_config.floor_config(rows[0]), generation)
