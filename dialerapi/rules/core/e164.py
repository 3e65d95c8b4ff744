"""A number written in E.164 (`+19195550100`), as an operator writes the floor's own numbers: its
caller IDs and a campaign's caller_id_default (docs/operations/caller-ids.md). A lead's number is
read more leniently (rules.compliance.phones: national forms, digits only)."""

import phonenumbers


def parse(text):
    """phonenumbers' PhoneNumber of `text`, a valid number in E.164 (a `+`, the country code, the
    national number; spaces and punctuation allowed). Raises ValueError saying what it must be."""
    text = str(text).strip()
    try:
        parsed = phonenumbers.parse(text, None) if text.startswith("+") else None
    except phonenumbers.NumberParseException:
        parsed = None
    if parsed is None or not phonenumbers.is_valid_number(parsed):
        raise ValueError("must be a valid phone number in E.164, e.g. +19195550100")
    return parsed


def digits(parsed):
    """The E.164 digits of a PhoneNumber as an int, the form numbers are stored and compared in."""
    return int(f"{parsed.country_code}{parsed.national_number}")


def text(number):
    """`+` and the E.164 digits `number` (an int): the form numbers are answered in."""
    return f"+{number}"
