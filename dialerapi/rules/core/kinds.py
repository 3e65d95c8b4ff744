"""The vocabularies of a claim and of a lead's consent, one enum each (docs/engine/api.md "claim";
docs/compliance/state-rules.md "Consent"). Their members are strings, so they compare, bind as SQL
parameters and serialise as the values the API names.
"""

from enum import StrEnum


class ClaimKind(StrEnum):
    """How a claim takes a lead: the `mode` of POST /engine/claim."""

    PROGRESSIVE = "progressive"
    PREDICTIVE = "predictive"
    REDIAL = "redial"
    INBOUND = "inbound"


class ConsentType(StrEnum):
    """The consent a CRM pushes with a lead: prior express written consent, express consent, or an
    established business relationship."""

    WRITTEN = "written"
    EXPRESS = "express"
    EBR = "ebr"


class ConsentFor(StrEnum):
    """Which claims a consent rule holds (a state's rule, or a campaign's consent_required):
    predictive ones, automated ones (progressive too), or all (an agent's manual redial too)."""

    PREDICTIVE = "predictive"
    AUTOMATED = "automated"
    ALL = "all"


# The consent given for calls: it meets a campaign's consent_required and Regulation F's
# consent_days; an established business relationship is no consent to automated calls.
CALL_CONSENT = (ConsentType.WRITTEN, ConsentType.EXPRESS)


class CallerIdMatch(StrEnum):
    """How a claim's caller ID was chosen (docs/operations/caller-ids.md): a number of the lead's
    area code (the longest prefix), of its state, any of the pool, the number the lead last saw
    (a campaign's caller_id_sticky), or the campaign's caller_id_default."""

    AREA_CODE = "area_code"
    STATE = "state"
    POOL = "pool"
    STICKY = "sticky"
    DEFAULT = "default"


# The tiers a campaign's caller_id_match chains, best first: a chain is these in this order, or some of them.
CALLER_ID_TIERS = (CallerIdMatch.AREA_CODE, CallerIdMatch.STATE, CallerIdMatch.POOL)


class CallerIdFallback(StrEnum):
    """What a claim does when no number of the chain is eligible: refuse (fail closed), or present
    the campaign's caller_id_default."""

    REFUSE = "refuse"
    DEFAULT = "default"
