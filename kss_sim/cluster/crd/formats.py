"""The string ``format``s kube-apiserver checks in custom objects: kube-openapi's strfmt registry
(``StripUnsupportedFormatsPostProcess`` keeps only those; ``int32``, ``int64``, ``float``, ``double``, ``password``
are descriptions only), each a predicate on the string, looked up as strfmt does (dashes and underscores ignored).
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
import unicodedata
from collections.abc import Callable
from datetime import date, datetime

from kss_sim.cluster.crd.email import is_email

_UUID = re.compile(r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}")
# strfmt's versioned UUIDs take their dashes as optional as the plain one does.
_UUID_VERSION = {
    "uuid3": re.compile(r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}"),
    "uuid4": re.compile(r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}"),
    "uuid5": re.compile(r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}"),
}
# strfmt's hostname pattern over each character's class (Python's re has no \p{L}/\p{S}): "L" a letter, "D" an
# ASCII digit, "S" a symbol (ASCII's +$^`|~<=> too), "-", "."; anything else "?". One label with at most one dash
# after its first character, or dotted labels ending in a top-level domain of 2 to 63 letters (no trailing dot).
_HOSTNAME_CLASSES = re.compile(r"[LDS](?:-?[LDS]{0,62})?|(?:[LDS](?:[LDS-]{0,61}[LDS])?\.)+L{2,63}")
# Go's time.ParseDuration: an optional sign, then numbers (a fraction allowed) each with its unit; "0" alone.
_GO_DURATION = re.compile(r"[-+]?(?:0|(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|\u00b5s|\u03bcs|ms|s|m|h))+)")
_GO_DURATION_PART = re.compile(r"([0-9]*)(?:\.([0-9]*))?(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")
_NANOSECONDS = {
    "ns": 1,
    "us": 10**3,
    "\u00b5s": 10**3,
    "\u03bcs": 10**3,
    "ms": 10**6,
    "s": 10**9,
    "m": 60 * 10**9,
    "h": 3600 * 10**9,
}
# strfmt's fallback: every "<digits> <letters>" anywhere in the string, the unit one of these (the last of each
# row also as a prefix: "minutes", "hours").
_WORDS_DURATION = re.compile(r"([0-9]+)[\t\n\f\r ]*([A-Za-z\u00b5]+)")
_DURATION_UNITS = (
    ("ns", "nano"),
    ("us", "\u00b5s", "micro"),
    ("ms", "milli"),
    ("s", "sec"),
    ("m", "min"),
    ("h", "hr", "hour"),
    ("d", "day"),
    ("w", "wk", "week"),
)
_INT64_MAX = 2**63 - 1
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$")
_MAC = re.compile(r"^(?:[0-9A-Fa-f]{2}(?:[:-][0-9A-Fa-f]{2}){5,19}|[0-9A-Fa-f]{4}(?:\.[0-9A-Fa-f]{4}){2,9})$")
_HEXCOLOR = re.compile(r"^#?(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
_BYTE = r"(0|[1-9]\d?|1\d\d|2[0-4]\d|25[0-5])"
_RGBCOLOR = re.compile(rf"^rgb\(\s*{_BYTE}\s*,\s*{_BYTE}\s*,\s*{_BYTE}\s*\)$")
_SSN = re.compile(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$")
_BSON_OBJECT_ID = re.compile(r"^[0-9a-fA-F]{24}$")


def _ip(text: str, version: int) -> bool:
    try:
        return ipaddress.ip_address(text).version == version
    except ValueError:
        return False


def _cidr(text: str) -> bool:
    address, slash, bits = text.partition("/")
    if not slash or not bits.isdigit():
        return False
    try:
        ipaddress.ip_network(f"{address}/{bits}", strict=False)
    except ValueError:
        return False
    return True


def _hostname_class(char: str) -> str:
    if char in "-.":
        return char
    if char.isascii():
        return (
            "L" if char.isalpha() else "D" if char.isdigit() else "S" if unicodedata.category(char)[0] == "S" else "?"
        )
    category = unicodedata.category(char)[0]
    return "L" if category == "L" else "S" if category == "S" else "?"


def _hostname(text: str) -> bool:
    """strfmt's ``IsHostname``: its pattern, at most 255 bytes, no label over 63 bytes."""
    if not _HOSTNAME_CLASSES.fullmatch("".join(_hostname_class(c) for c in text)):
        return False
    return len(text.encode()) <= 255 and all(len(label.encode()) <= 63 for label in text.split("."))


def _go_duration(text: str) -> bool:
    """Go's ``time.ParseDuration``: its grammar, and no more than int64 nanoseconds."""
    if not _GO_DURATION.fullmatch(text):
        return False
    negative = text.startswith("-")
    total = 0
    for whole, fraction, unit in _GO_DURATION_PART.findall(text.lstrip("+-")):
        scale = _NANOSECONDS[unit]
        if int(whole or "0") > _INT64_MAX // scale:
            return False  # Go refuses a part that overflows before adding its fraction
        total += int(whole or "0") * scale + (int(fraction) * scale // 10 ** len(fraction) if fraction else 0)
        if total > _INT64_MAX + (1 if negative else 0):
            return False
    return True


def _words_duration(text: str) -> bool:
    """strfmt's fallback parse: some "<number> <unit>" in the text with a unit it knows; a number past int64 fails
    the whole parse (Go's Atoi)."""
    known = False
    for number, unit in _WORDS_DURATION.findall(text):
        if int(number) > _INT64_MAX:
            return False
        unit = unit.lower()
        known = known or any(unit in row or unit.startswith(row[-1]) for row in _DURATION_UNITS)
    return known


def _isbn10(text: str) -> bool:
    digits = re.sub(r"[\t\n\f\r -]+", "", text)
    if not re.fullmatch(r"[0-9]{9}X|[0-9]{10}", digits):
        return False
    values = [10 if c == "X" else int(c) for c in digits]
    return sum((i + 1) * v for i, v in enumerate(values)) % 11 == 0


def _isbn13(text: str) -> bool:
    digits = re.sub(r"[\t\n\f\r -]+", "", text)
    if not re.fullmatch(r"[0-9]{13}", digits):
        return False
    checksum = sum((3 if i % 2 else 1) * int(c) for i, c in enumerate(digits[:12]))
    return int(digits[12]) == (10 - checksum % 10) % 10


_CARD = re.compile(
    r"4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}"
    r"|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35[0-9]{3})[0-9]{11}"
)


def _credit_card(text: str) -> bool:
    """govalidator's ``IsCreditCard``: the digits (anything else dropped) of a known issuer's number, Luhn's sum."""
    digits = re.sub(r"[^0-9]+", "", text)
    if not _CARD.fullmatch(digits):
        return False
    total = 0
    for i, char in enumerate(reversed(digits)):
        value = int(char) * (2 if i % 2 else 1)
        total += value - 9 if value >= 10 else value
    return total % 10 == 0


def _date(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return len(text) == 10


def _date_time(text: str) -> bool:
    if not _RFC3339.match(text):
        return False
    try:
        datetime.fromisoformat(text.replace("z", "Z").replace("Z", "+00:00").replace("t", "T"))
    except ValueError:
        return False
    return True


def _byte(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


# kube-apiserver's validated formats (strfmt's names, dashes and underscores ignored as its registry does).
FORMATS: dict[str, Callable[[str], bool]] = {
    "bsonobjectid": lambda s: bool(_BSON_OBJECT_ID.match(s)),
    "uri": lambda s: True,  # Go's url.Parse refuses almost nothing
    "email": is_email,
    "hostname": _hostname,
    "ipv4": lambda s: _ip(s, 4),
    "ipv6": lambda s: _ip(s, 6),
    "cidr": _cidr,
    "mac": lambda s: bool(_MAC.match(s)),
    "uuid": lambda s: bool(_UUID.fullmatch(s)),
    "uuid3": lambda s: bool(_UUID_VERSION["uuid3"].fullmatch(s)),
    "uuid4": lambda s: bool(_UUID_VERSION["uuid4"].fullmatch(s)),
    "uuid5": lambda s: bool(_UUID_VERSION["uuid5"].fullmatch(s)),
    "isbn": lambda s: _isbn10(s) or _isbn13(s),
    "isbn10": _isbn10,
    "isbn13": _isbn13,
    "creditcard": _credit_card,
    "ssn": lambda s: bool(_SSN.match(s)),
    "hexcolor": lambda s: bool(_HEXCOLOR.match(s)),
    "rgbcolor": lambda s: bool(_RGBCOLOR.match(s)),
    "byte": _byte,
    "password": lambda s: True,
    "date": _date,
    "duration": lambda s: _go_duration(s) or _words_duration(s),
    "datetime": _date_time,
}


def format_check(name: str) -> Callable[[str], bool] | None:
    """The check of a ``format`` kube-apiserver validates; None for one it does not (int32, a made-up name)."""
    return FORMATS.get(name.replace("-", "").replace("_", "").lower())
