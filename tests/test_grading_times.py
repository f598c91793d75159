"""Submission times (shared/cases/006): every form a platform writes is read exactly, or
refused with the reason; nbgrader is handed the one form its parser reads right."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from autograder.grading.times import TimeNotRead, for_nbgrader, submission_time

LATE = datetime(2026, 12, 1, 17, 30, tzinfo=timezone.utc)  # half an hour after 17:00 UTC

# Every form the instructors page lists, each naming 2026-12-01 17:30:00 UTC.
FORMS = [
    "2026-12-01 17:30:00 UTC",
    "2026-12-01 17:30:00",                    # no zone: UTC
    "2026-12-01T17:30:00Z",
    "2026-12-01T17:30:00.000Z",
    "2026-12-01T17:30:00,000000+00:00",
    "2026-12-01 10:30:00 -0700",              # git log --date=iso (case 006)
    "2026-12-01 10:30:00-07:00",
    "2026-12-01T18:30:00+01:00",
    "2026-12-01T18:30:00+0100",
    "2026-12-01T18:30+01",
    "2026-12-01 23:00:00 +05:30",
    "2026-12-01 18:30:00 Europe/Berlin",
    "2026-12-01 12:30:00 America/New_York",
    "2026-12-01 17:30:00 GMT",
    "2026-12-01 17:30 utc",
    "Tue, 01 Dec 2026 17:30:00 +0000",        # RFC 2822: e-mail, HTTP
    "Tue, 01 Dec 2026 17:30:00 GMT",
    "Tue, 01 Dec 2026 12:30:00 EST",          # a zone RFC 2822 defines
    "01 Dec 2026 09:30:00 PST",
    "Tuesday, 1 December 2026, 5:30 PM",      # written out, no zone: UTC
    "1 December 2026 18:30 +0100",
    "20261201T173000",                        # zip_collect's basic form
    "20261201T173000Z",
]

REFUSED = {
    "": "empty",
    "yesterday": "no year",
    "2026-12-01": "no time of day",
    "18:30": "no year",
    "1 December 2026 18:30 CET": "zone name",
    "2026-12-01 18:30:00 CST": "zone name",
    "01/12/2026 17:30": "day/month",
    "2026-12-01 17:30:00 UTC+1": "opposite signs",
    "2026-12-01 17:30:00 +2500": "not a UTC offset",
    "2026-12-01 17:30:00 Mars/Olympus": "not a time zone",
    "not a date": "no year",
}


@pytest.mark.parametrize("text", FORMS)
def test_every_listed_form_names_the_right_instant(text):
    assert submission_time(text) == LATE


@pytest.mark.parametrize("text,reason", REFUSED.items())
def test_what_cannot_be_read_exactly_is_refused_with_the_reason(text, reason):
    with pytest.raises(TimeNotRead, match=reason):
        submission_time(text)


def test_nbgrader_reads_the_form_it_is_handed_exactly():
    """nbgrader's own parser misreads case 006's text (-0700 as seconds); the form grading
    hands it reads back to the same instant, for every listed form."""
    from nbgrader.utils import parse_utc

    assert parse_utc("2026-12-01 10:30:00 -0700") != LATE.replace(tzinfo=None)  # the fault
    for text in FORMS:
        handed = for_nbgrader(submission_time(text))
        assert parse_utc(handed) == LATE.replace(tzinfo=None), (text, handed)


def test_the_instructors_page_lists_the_tested_forms():
    from conftest import REPO

    page = (REPO / "instructors.md").read_text(encoding="utf-8")
    for text in ("2026-12-01 10:30:00 -0700", "2026-12-01T18:30:00+01:00",
                 "Tue, 01 Dec 2026 17:30:00 +0000", "Europe/Berlin", "20261201T173000"):
        assert text in page, text
