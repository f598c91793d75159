"""Submission times: one reader for every form a platform writes, read exactly or refused.

nbgrader reads ``timestamp.txt`` with its own parser, which takes a space-separated
``-0700`` as -700 seconds and drops zone names it does not know, so a late submission
could be graded as on time. :func:`submission_time` reads the text once, here; grading
hands nbgrader the time in the one form its parser reads right (:func:`for_nbgrader`).

Accepted (``instructors.md`` lists them with examples):

- ISO 8601 with ``T`` or a space, seconds and fractions optional, and a zone: ``Z``,
  ``UTC``, ``GMT``, ``+01:00``, ``+0100``, ``+01``, with or without a space before it, or
  an IANA zone name (``Europe/Berlin``); the basic form ``20261201T183000``;
- RFC 2822 (e-mail and HTTP dates): ``Tue, 01 Dec 2026 18:30:00 +0000``, ``GMT``, and the
  US zone names that RFC defines (EST, EDT, CST, CDT, MST, MDT, PST, PDT);
- a written date without a zone, read as UTC: ``Tuesday, 1 December 2026, 7:30 PM``.

Refused, with the reason: other zone names and abbreviations (CST is US Central and China
Standard Time), dates whose day and month could be swapped (``01/12/2026``), and anything
that is not a date and time.
"""

from __future__ import annotations

import re
import warnings
from datetime import datetime, timedelta, timezone
from email.utils import parsedate_to_datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import dateutil.parser

ISO = re.compile(
    r"^(?P<date>\d{4}-\d{2}-\d{2})[T ](?P<time>\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?)"
    r"\s*(?P<zone>Z|UTC|GMT|[+-]\d{2}(?::?\d{2})?|[A-Za-z]+(?:/[A-Za-z0-9_+-]+)+)?$",
    re.IGNORECASE)
RFC2822 = re.compile(r"^(?:[A-Za-z]{3},\s*)?\d{1,2}\s+[A-Za-z]{3}\s+\d{4}\s+\d{1,2}:\d{2}")
BASIC = re.compile(r"^\d{8}T\d{4,6}(?:Z)?$")  # ISO 8601's basic form, as zip_collect writes
NUMERIC_DATE = re.compile(r"\b(\d{1,2})[/.-](\d{1,2})[/.-](\d{2,4})\b")
ZERO = {"Z", "UTC", "GMT"}


class TimeNotRead(ValueError):
    """A submission time that cannot be read exactly; the message says why."""


def submission_time(text: str) -> datetime:
    """The instant ``text`` names, as an aware datetime in UTC.

    Raises:
        TimeNotRead: an empty text, a zone that cannot be read exactly, a day and month
            that could be swapped, or no date and time at all.
    """
    t = text.strip()
    if not t:
        raise TimeNotRead("it is empty")
    match = ISO.match(t)
    if match:
        return _iso(match)
    if RFC2822.match(t):
        try:
            return parsedate_to_datetime(t).astimezone(timezone.utc)
        except (TypeError, ValueError, IndexError) as exc:
            raise TimeNotRead(f"it looks like an e-mail date but is not one ({exc})") from None
    return _written(t)


def _iso(match: re.Match) -> datetime:
    when = datetime.fromisoformat(f"{match['date']}T{match['time'].replace(',', '.')}")
    zone = (match["zone"] or "UTC").upper() if "/" not in (match["zone"] or "") else match["zone"]
    if zone in ZERO:
        return when.replace(tzinfo=timezone.utc)
    if zone[0] in "+-":
        digits = zone[1:].replace(":", "")
        hours, minutes = int(digits[:2]), int(digits[2:] or 0)
        if hours > 23 or minutes > 59:
            raise TimeNotRead(f"{zone} is not a UTC offset")
        offset = timedelta(hours=hours, minutes=minutes) * (1 if zone[0] == "+" else -1)
        return when.replace(tzinfo=timezone(offset)).astimezone(timezone.utc)
    try:
        return when.replace(tzinfo=ZoneInfo(zone)).astimezone(timezone.utc)
    except (ZoneInfoNotFoundError, ValueError):
        raise TimeNotRead(f"{zone} is not a time zone name this machine knows") from None


def _written(t: str) -> datetime:
    """A date written out (or the basic ISO form), without a zone: read as UTC."""
    if not (re.search(r"\b\d{4}\b", t) or BASIC.match(t)):
        raise TimeNotRead("it has no year (write the date as 2026-12-01)")
    if not (re.search(r"\d:\d\d", t) or BASIC.match(t)):
        raise TimeNotRead("it has no time of day (write it as 18:30:00)")
    if re.search(r"\b(?:UTC|GMT)\s*[+-]", t, re.IGNORECASE):
        raise TimeNotRead("UTC+N is read with opposite signs by different tools; write the "
                          "offset alone, such as +01:00")
    for day_month in NUMERIC_DATE.finditer(t):
        a, b = int(day_month[1]), int(day_month[2])
        if a != b and a <= 12 and b <= 12:
            raise TimeNotRead(f"{day_month[0]} could be day/month or month/day; write the "
                              "date as 2026-12-01")
    with warnings.catch_warnings():
        warnings.simplefilter("error", dateutil.parser.UnknownTimezoneWarning)
        try:
            when = dateutil.parser.parse(t)
        except dateutil.parser.UnknownTimezoneWarning:
            raise TimeNotRead("its zone name cannot be read exactly (abbreviations such as "
                              "CST mean several zones); write a UTC offset such as "
                              "+01:00 or a zone such as Europe/Berlin") from None
        except (ValueError, OverflowError):
            raise TimeNotRead("it is not a date and time") from None
    if when.tzinfo is None:
        return when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc)


def for_nbgrader(when: datetime) -> str:
    """``when`` in the one form nbgrader's parser reads exactly: ``YYYY-MM-DD HH:MM:SS.ffffff
    UTC``."""
    return when.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f UTC")
