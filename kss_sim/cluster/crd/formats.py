"""The string ``format``s kube-apiserver checks in custom objects: kube-openapi's strfmt registry
(``StripUnsupportedFormatsPostProcess`` keeps only those; ``int32``, ``int64``, ``float``, ``double``, ``password``
are descriptions only), each a predicate on the string, looked up as strfmt does (dashes and underscores ignored).
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections.abc import Callable
from datetime import date, datetime

_UUID = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
_UUID_VERSION = {
    "uuid3": re.compile(r"(?i)^[0-9a-f]{8}-[0-9a-f]{4}-3[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$"),
    "uuid4": re.compile(r"(?i)^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"),
    "uuid5": re.compile(r"(?i)^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"),
}
_HOSTNAME_LABEL = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")
_EMAIL = re.compile(r"^(?:[^<>@\s]+@[^<>@\s]+|[^<>]*<[^<>@\s]+@[^<>@\s]+>)$")
_GO_DURATION = re.compile(r"^[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$")
_WORDS_DURATION = re.compile(
    r"^(\d+)\s*(ns|us|µs|ms|s|m|h|d|w|nanoseconds?|microseconds?|milliseconds?|seconds?|sec|minutes?|min"
    r"|hours?|hr|days?|weeks?|wk)$"
)
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


def _hostname(text: str) -> bool:
    return 0 < len(text) <= 255 and all(_HOSTNAME_LABEL.match(label) for label in text.rstrip(".").split("."))


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
    "email": lambda s: bool(_EMAIL.match(s)),
    "hostname": _hostname,
    "ipv4": lambda s: _ip(s, 4),
    "ipv6": lambda s: _ip(s, 6),
    "cidr": _cidr,
    "mac": lambda s: bool(_MAC.match(s)),
    "uuid": lambda s: bool(_UUID.match(s)),
    "uuid3": lambda s: bool(_UUID_VERSION["uuid3"].match(s)),
    "uuid4": lambda s: bool(_UUID_VERSION["uuid4"].match(s)),
    "uuid5": lambda s: bool(_UUID_VERSION["uuid5"].match(s)),
    "isbn": lambda s: True,
    "isbn10": lambda s: True,
    "isbn13": lambda s: True,
    "creditcard": lambda s: True,
    "ssn": lambda s: bool(_SSN.match(s)),
    "hexcolor": lambda s: bool(_HEXCOLOR.match(s)),
    "rgbcolor": lambda s: bool(_RGBCOLOR.match(s)),
    "byte": _byte,
    "password": lambda s: True,
    "date": _date,
    "duration": lambda s: bool(_GO_DURATION.match(s) or _WORDS_DURATION.match(s)),
    "datetime": _date_time,
}


def format_check(name: str) -> Callable[[str], bool] | None:
    """The check of a ``format`` kube-apiserver validates; None for one it does not (int32, a made-up name)."""
    return FORMATS.get(name.replace("-", "").replace("_", "").lower())
