"""The dial state's vocabulary (lead-intake-api.md "States and transitions"; decisions.md D6): the
dial_status values, the hangup outcomes and what each leaves on a lead, the call types, the errors
the rules raise, and the one "is this lead live".
"""

PENDING = "Pending"
CALLBACK = "Callback"
CALLING = "Calling"
RECEIVED = "Received"
NOT_CONNECTED = "Not Connected"
DISPOSED = "Disposed"
REJECTED = "Rejected"
ABANDONED = "Abandoned"

REDIAL = "redial"
CALL_TYPES = ("outbound", REDIAL, "inbound")

# Hangup outcomes reported to settle: (next dial_status, last_dial_result).
OUTCOMES = {
    "answered": (RECEIVED, "ANSWER"),
    "no_answer": (NOT_CONNECTED, "NOANSWER"),
    "busy": (NOT_CONNECTED, "BUSY"),
    "congestion": (NOT_CONNECTED, "CONGESTION"),
    "rejected": (REJECTED, "REJECT"),
    "cancelled": (REJECTED, "CANCEL"),
    "abandoned": (ABANDONED, "ABANDON"),
    # An answering machine detected. Retried as a no-answer unless its own retry rule
    # says otherwise; never answered nor abandoned in the abandon rate (rules.compliance.abandons).
    "machine": (NOT_CONNECTED, "MACHINE"),
    "originate_failed": (None, "ORIGINATE_FAILED"),
}
# The outcomes that may have a retry rule of their own (dialerapi_outcome_retries).
RETRY_OUTCOMES = ("busy", "no_answer", "congestion", "machine", "abandoned")


class UnknownLead(LookupError):
    """No sales_master row has this oli_id (HTTP 404 `unknown_oli_id`)."""


class LeadInFlight(Exception):
    """The lead is live (Calling + isReserved) and the operation may not touch it (HTTP 409 `lead_in_flight`)."""


class NotLive(Exception):
    """The operation needs a live call and the lead is not live (HTTP 409 `lead_not_live`)."""


class StaleReservation(Exception):
    """The reservation a settle names is no longer the lead's: it was released (the lease, an
    operator) or ended by another settle (HTTP 409 `stale_reservation`)."""


class UnknownAgent(LookupError):
    """No agent has this employee id (HTTP 404 `unknown_agent`)."""


def is_live(row):
    """True when a master row is live on a call: dial_status Calling and isReserved 1.

    A live row is never modified by the API; CRM actions on it are held until settle.
    """
    return row["dial_status"] == CALLING and bool(row["isReserved"])


REOPENABLE = (RECEIVED, REJECTED, DISPOSED)


