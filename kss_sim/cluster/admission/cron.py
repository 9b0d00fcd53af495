"""Cron schedules as the CronJob API reads them: robfig/cron v3's standard parser (five fields, or a descriptor
such as ``@hourly`` / ``@every 1h30m``), with its error messages, and the next activation after a time.

kube-apiserver validates ``spec.schedule`` with ``cron.ParseStandard``; the CronJob controller uses the same
schedule to find the next run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

_MONTHS = {m: i + 1 for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct",
                                            "nov", "dec"))}  # fmt: skip
_DAYS = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
_STAR = 1 << 63  # robfig's starBit: the field was '*' (matters for day-of-month / day-of-week)


class CronError(ValueError):
    """A schedule robfig/cron's standard parser refuses; the message is the parser's."""


@dataclass(frozen=True, slots=True)
class _Bounds:
    low: int
    high: int
    names: dict[str, int] | None = None


_MINUTE, _HOUR = _Bounds(0, 59), _Bounds(0, 23)
_DOM, _MONTH, _DOW = _Bounds(1, 31), _Bounds(1, 12, _MONTHS), _Bounds(0, 6, _DAYS)


def _atoi(text: str) -> int:
    """Go's strconv.Atoi with its error text."""
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise CronError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax')
    value = int(text)
    if not -(2**63) <= value < 2**63:
        raise CronError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": value out of range')
    return value


def _must_parse_int(text: str) -> int:
    value = _atoi(text)
    if value < 0:
        raise CronError(f"negative number ({value}) not allowed: {text}")
    return value


def _int_or_name(text: str, names: dict[str, int] | None) -> int:
    if names is not None and text.lower() in names:
        return names[text.lower()]
    return _must_parse_int(text)


def _range_bits(expr: str, bounds: _Bounds) -> int:
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    single = len(low_and_high) == 1
    extra = 0
    if low_and_high[0] in ("*", "?"):
        start, end, extra = bounds.low, bounds.high, _STAR
    else:
        start = _int_or_name(low_and_high[0], bounds.names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _int_or_name(low_and_high[1], bounds.names)
        else:
            raise CronError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _must_parse_int(range_and_step[1])
        if single:
            end = bounds.high  # "N/step" means "N-max/step"
        if step > 1:
            extra = 0
    else:
        raise CronError(f"too many slashes: {expr}")
    if start < bounds.low:
        raise CronError(f"beginning of range ({start}) below minimum ({bounds.low}): {expr}")
    if end > bounds.high:
        raise CronError(f"end of range ({end}) above maximum ({bounds.high}): {expr}")
    if start > end:
        raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise CronError(f"step of range should be a positive number: {expr}")
    bits = 0
    for value in range(start, end + 1, step):
        bits |= 1 << value
    return bits | extra


def _field_bits(field: str, bounds: _Bounds) -> int:
    bits = 0
    for expr in (part for part in field.split(",") if part):
        bits |= _range_bits(expr, bounds)
    return bits


_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")


def _go_duration(text: str) -> timedelta:
    """Go's time.ParseDuration (``1h30m``, ``90s``); CronError with Go's text otherwise."""
    body = text.lstrip("+-")
    if body == "0":
        return timedelta(0)
    pos, seconds = 0, 0.0
    while pos < len(body):
        match = _DURATION_PART.match(body, pos)
        if match is None or match.group(1) in ("", "."):
            raise CronError(f'time: invalid duration "{text}"')
        seconds += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        pos = match.end()
    if not body:
        raise CronError(f'time: invalid duration "{text}"')
    return timedelta(seconds=-seconds if text.startswith("-") else seconds)


@dataclass(frozen=True, slots=True)
class CronSchedule:
    """A parsed schedule: bit sets of the minutes, hours, days of month, months and weekdays it fires on (or a
    fixed ``every`` interval for ``@every``)."""

    minute: int = 0
    hour: int = 0
    dom: int = 0
    month: int = 0
    dow: int = 0
    every: timedelta | None = None

    def _day_matches(self, t: datetime) -> bool:
        dom_match = bool(self.dom & (1 << t.day))
        dow_match = bool(self.dow & (1 << ((t.weekday() + 1) % 7)))
        if self.dom & _STAR or self.dow & _STAR:
            return dom_match and dow_match
        return dom_match or dow_match

    def next_after(self, t: datetime) -> datetime:
        """The first activation strictly after ``t`` (whole minutes; ``@every`` adds its interval, at least 1s)."""
        if self.every is not None:
            step = max(timedelta(seconds=int(self.every.total_seconds())), timedelta(seconds=1))
            return t.replace(microsecond=0) + step
        candidate = t.replace(second=0, microsecond=0) + timedelta(minutes=1)
        limit = candidate + timedelta(days=366 * 5)
        while candidate < limit:
            if not self.month & (1 << candidate.month):
                candidate = (candidate.replace(day=1, hour=0, minute=0) + timedelta(days=32)).replace(day=1)
                continue
            if not self._day_matches(candidate):
                candidate = candidate.replace(hour=0, minute=0) + timedelta(days=1)
                continue
            if not self.hour & (1 << candidate.hour):
                candidate = candidate.replace(minute=0) + timedelta(hours=1)
                continue
            if not self.minute & (1 << candidate.minute):
                candidate += timedelta(minutes=1)
                continue
            return candidate
        raise CronError("schedule never fires")


_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def parse_standard(spec: str) -> CronSchedule:
    """``cron.ParseStandard``: five fields (minute hour day-of-month month day-of-week) or a descriptor; an optional
    ``TZ=``/``CRON_TZ=`` prefix is accepted here (the CronJob validation refuses it separately)."""
    if not spec:
        raise CronError("empty spec string")
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space = spec.find(" ")
        if space < 0:
            raise CronError(f"provided bad location {spec[spec.index('=') + 1 :]}: unknown time zone")
        spec = spec[space:].strip()
    if spec.startswith("@"):
        if spec.startswith("@every "):
            try:
                return CronSchedule(every=_go_duration(spec[len("@every ") :]))
            except CronError as exc:
                raise CronError(f"failed to parse duration {spec}: {exc}") from None
        if spec not in _DESCRIPTORS:
            raise CronError(f"unrecognized descriptor: {spec}")
        spec = _DESCRIPTORS[spec]
    fields = spec.split()
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    return CronSchedule(
        minute=_field_bits(fields[0], _MINUTE),
        hour=_field_bits(fields[1], _HOUR),
        dom=_field_bits(fields[2], _DOM),
        month=_field_bits(fields[3], _MONTH),
        dow=_field_bits(fields[4], _DOW),
    )
