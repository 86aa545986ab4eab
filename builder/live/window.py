"""A snapshot's release window: the UTC days after `--after`, up to and including `--before`.

A candidate's target is its newest release whose sdist was uploaded in the window; its baseline the
newest one uploaded on or before the `--after` day (so `[start, end)` below: `start` is the first instant
after the `--after` day, `end` the first instant after the `--before` day).
"""
from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone

from ..errors import WindowError


def parse_day(text: str, option: str) -> date:
    try:
        return date.fromisoformat(text)
    except (TypeError, ValueError):
        raise WindowError(f"{option} {text!r}: expected a date YYYY-MM-DD") from None


def _instant(day: date) -> datetime:
    return datetime.combine(day, time(), tzinfo=timezone.utc)


@dataclass(frozen=True)
class Window:
    after: date  # releases uploaded on or before this day are old (the baseline)
    before: date  # the last day of the window (inclusive)

    @classmethod
    def of(cls, after: str, before: str | None = None, today: date | None = None) -> "Window":
        """Checked: no date after `today` (UTC), and `after` earlier than `before` (default: today)."""
        today = today or datetime.now(timezone.utc).date()
        first = parse_day(after, "--after")
        last = parse_day(before, "--before") if before else today
        for option, day in (("--after", first), ("--before", last)):
            if day > today:
                raise WindowError(f"{option} {day.isoformat()} is in the future (today is {today.isoformat()}, UTC): "
                                  "no release can have been uploaded then")
        if first >= last:
            raise WindowError(f"empty window: --after {first.isoformat()} must be earlier than --before "
                              f"{last.isoformat()} (the window is the days after --after up to --before)")
        return cls(first, last)

    @property
    def start(self) -> datetime:
        return _instant(self.after + timedelta(days=1))

    @property
    def end(self) -> datetime:
        return _instant(self.before + timedelta(days=1))

    def contains(self, moment: datetime) -> bool:
        return self.start <= moment < self.end

    @property
    def config_name(self) -> str:
        """`live-YYYY-MM` for a window of exactly one calendar month, else `live-FIRST-to-LAST` (days)."""
        first = self.after + timedelta(days=1)
        if first.day == 1 and self.before == first.replace(day=calendar.monthrange(first.year, first.month)[1]):
            return f"live-{first:%Y-%m}"
        return f"live-{first.isoformat()}-to-{self.before.isoformat()}"

    def describe(self) -> str:
        return (f"sdists uploaded from {self.start:%Y-%m-%d} through {self.before.isoformat()} (UTC), i.e. after "
                f"{self.after.isoformat()}")

    def to_dict(self) -> dict:
        return {"after": self.after.isoformat(), "before": self.before.isoformat(), "start": iso(self.start),
                "end": iso(self.end), "config_name": self.config_name}


def iso(moment: datetime) -> str:
    """An aware datetime as ISO 8601 UTC with a `Z` (the form samples record)."""
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
