"""Schedules: exact wake times through daylight-saving changes, catch-up, overlap."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import subprocess
import sys
from typing import Any

import attrs
import pytest
from croniter import croniter
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.base import ScheduleError
from orchestrator.spec import (
    BackgroundSpec,
    CatchUp,
    Cron,
    Decision,
    Every,
    Overlap,
    Schedule,
    missed_wakes,
    next_wake,
    on_wake,
    parse_cron,
    parse_duration,
    parse_zone,
    run_deadline,
)
from tests.support.examples import examples
from tests.support.paths import PROJECT_ROOT

UTC = dt.UTC
BERLIN = "Europe/Berlin"
NEW_YORK = "America/New_York"


def utc(text: str) -> dt.datetime:
    """An instant written as ``"2026-03-29 01:00"`` (UTC)."""
    return dt.datetime.fromisoformat(text).replace(tzinfo=UTC)


def spec(schedule: Schedule | str, timezone: str = "UTC", **fields: Any) -> BackgroundSpec:
    if isinstance(schedule, str):
        schedule = parse_cron(schedule, timezone)
    return BackgroundSpec(
        name="audit",
        schedule=schedule,
        prompt="Audit the lock file",
        agent="lead",
        **fields,
    )


def every(text: str, **fields: Any) -> BackgroundSpec:
    return spec(Every(interval=parse_duration(text)), **fields)


def wakes(background: BackgroundSpec, after: dt.datetime, count: int) -> list[dt.datetime]:
    """The next ``count`` wakes after ``after``, each found from the one before."""
    found: list[dt.datetime] = []
    for _ in range(count):
        after = next_wake(background, after)
        found.append(after)
    return found


def wakes_until(
    background: BackgroundSpec, after: dt.datetime, end: dt.datetime
) -> list[dt.datetime]:
    """Every wake in ``(after, end]``, found forwards."""
    found: list[dt.datetime] = []
    while (after := next_wake(background, after)) <= end:
        found.append(after)
    return found


def local(instants: list[dt.datetime], timezone: str) -> list[str]:
    """The instants as local wall times with their offsets, for readable failures."""
    zone = parse_zone(timezone)
    return [i.astimezone(zone).strftime("%m-%d %H:%M%z") for i in instants]


def steps(start: str, minutes: int, count: int) -> list[dt.datetime]:
    return [utc(start) + dt.timedelta(minutes=minutes * k) for k in range(count)]


# --------------------------------------------------------------------------- daylight saving


class TestBerlin2026:
    """Europe/Berlin: clocks go forward 2026-03-29 01:00Z (02:00 CET -> 03:00 CEST) and back
    2026-10-25 01:00Z (03:00 CEST -> 02:00 CET)."""

    def test_three_oclock_through_spring_forward(self) -> None:
        """03:00 exists on every day; its UTC time moves an hour with the offset."""
        found = wakes(spec("0 3 * * *", BERLIN), utc("2026-03-27 12:00"), 4)
        assert found == [
            utc("2026-03-28 02:00"),
            utc("2026-03-29 01:00"),
            utc("2026-03-30 01:00"),
            utc("2026-03-31 01:00"),
        ]
        assert local(found, BERLIN) == [
            "03-28 03:00+0100",
            "03-29 03:00+0200",
            "03-30 03:00+0200",
            "03-31 03:00+0200",
        ]

    def test_three_oclock_through_fall_back(self) -> None:
        """03:00 is after the doubled hour (02:00-02:59): once a day, as usual."""
        found = wakes(spec("0 3 * * *", BERLIN), utc("2026-10-23 12:00"), 3)
        assert found == [utc("2026-10-24 01:00"), utc("2026-10-25 02:00"), utc("2026-10-26 02:00")]

    def test_skipped_time_wakes_when_the_gap_ends(self) -> None:
        """02:30 does not exist on 2026-03-29: that day's wake is at 03:00 CEST, not lost."""
        found = wakes(spec("30 2 * * *", BERLIN), utc("2026-03-27 12:00"), 4)
        assert local(found, BERLIN) == [
            "03-28 02:30+0100",
            "03-29 03:00+0200",
            "03-30 02:30+0200",
            "03-31 02:30+0200",
        ]
        assert found[1] == utc("2026-03-29 01:00")

    def test_doubled_time_wakes_once_at_its_first_occurrence(self) -> None:
        """02:30 happens twice on 2026-10-25: a fixed-time schedule wakes at the first."""
        found = wakes(spec("30 2 * * *", BERLIN), utc("2026-10-23 12:00"), 3)
        assert local(found, BERLIN) == ["10-24 02:30+0200", "10-25 02:30+0200", "10-26 02:30+0100"]
        assert found == [utc("2026-10-24 00:30"), utc("2026-10-25 00:30"), utc("2026-10-26 01:30")]

    def test_croniter_alone_would_wake_twice(self) -> None:
        """Why wall times are mapped here: croniter iterating aware datetimes runs the fixed
        02:30 job at both 02:30s of the fall-back day (if this changes, the rule still holds
        here, and this test says croniter changed)."""
        start = dt.datetime(2026, 10, 24, 12, tzinfo=parse_zone(BERLIN))
        matches = croniter("30 2 * * *", start)
        first, second = (matches.get_next(dt.datetime).astimezone(UTC) for _ in range(2))
        assert (first, second) == (utc("2026-10-25 00:30"), utc("2026-10-25 01:30"))

    def test_quarter_hours_keep_fifteen_real_minutes_in_spring(self) -> None:
        """*/15 follows elapsed time: 01:45 CET is followed by 03:00 CEST, 15 minutes later."""
        found = wakes(spec("*/15 * * * *", BERLIN), utc("2026-03-29 00:00"), 8)
        assert found == steps("2026-03-29 00:15", 15, 8)
        assert local(found, BERLIN)[2:4] == ["03-29 01:45+0100", "03-29 03:00+0200"]

    def test_quarter_hours_keep_fifteen_real_minutes_in_autumn(self) -> None:
        """*/15 wakes in both passes of the doubled hour: 02:45 CEST, then 02:00 CET."""
        found = wakes(spec("*/15 * * * *", BERLIN), utc("2026-10-24 23:50"), 10)
        assert found == steps("2026-10-25 00:00", 15, 10)
        assert local(found, BERLIN)[3:5] == ["10-25 02:45+0200", "10-25 02:00+0100"]

    def test_hourly_skips_the_missing_hour_and_repeats_the_doubled_one(self) -> None:
        """An hour field of * is elapsed time too: one wake per real hour, both days."""
        hourly = spec("30 * * * *", BERLIN)
        assert wakes(hourly, utc("2026-03-29 00:00"), 2) == steps("2026-03-29 00:30", 60, 2)
        assert wakes(hourly, utc("2026-10-25 00:00"), 2) == steps("2026-10-25 00:30", 60, 2)

    @pytest.mark.parametrize("day", ["2026-03-29", "2026-10-25"])
    def test_interval_ignores_the_change(self, day: str) -> None:
        """every = "15m" is a grid of UTC quarter hours, whatever the local clock does."""
        found = wakes(every("15m"), utc(f"{day} 00:00"), 12)
        assert found == steps(f"{day} 00:15", 15, 12)


class TestNewYork2026:
    """America/New_York: forward 2026-03-08 07:00Z (02:00 EST -> 03:00 EDT), back
    2026-11-01 06:00Z (02:00 EDT -> 01:00 EST)."""

    def test_three_oclock(self) -> None:
        found = wakes(spec("0 3 * * *", NEW_YORK), utc("2026-03-06 12:00"), 3)
        assert found == [utc("2026-03-07 08:00"), utc("2026-03-08 07:00"), utc("2026-03-09 07:00")]
        found = wakes(spec("0 3 * * *", NEW_YORK), utc("2026-10-30 12:00"), 3)
        assert found == [utc("2026-10-31 07:00"), utc("2026-11-01 08:00"), utc("2026-11-02 08:00")]

    def test_half_past_two(self) -> None:
        """02:30 is skipped in March (wakes at 03:00 EDT); in November it is not doubled
        (New York repeats 01:00-01:59), so it wakes once, in standard time."""
        march = wakes(spec("30 2 * * *", NEW_YORK), utc("2026-03-06 12:00"), 3)
        assert local(march, NEW_YORK) == [
            "03-07 02:30-0500",
            "03-08 03:00-0400",
            "03-09 02:30-0400",
        ]
        november = wakes(spec("30 2 * * *", NEW_YORK), utc("2026-10-30 12:00"), 3)
        assert november == [
            utc("2026-10-31 06:30"),
            utc("2026-11-01 07:30"),
            utc("2026-11-02 07:30"),
        ]

    def test_half_past_one_is_the_doubled_time(self) -> None:
        """01:30 happens twice on 2026-11-01: the first (EDT) only."""
        found = wakes(spec("30 1 * * *", NEW_YORK), utc("2026-10-31 12:00"), 2)
        assert local(found, NEW_YORK) == ["11-01 01:30-0400", "11-02 01:30-0500"]

    @pytest.mark.parametrize(("start", "count"), [("2026-03-08 06:00", 9), ("2026-11-01 05:00", 9)])
    def test_quarter_hours(self, start: str, count: int) -> None:
        found = wakes(spec("*/15 * * * *", NEW_YORK), utc(start), count)
        assert found == [utc(start) + dt.timedelta(minutes=15 * (k + 1)) for k in range(count)]


class TestWakeBasics:
    def test_a_wake_is_strictly_after(self) -> None:
        """A wake at exactly `after` is not the next one."""
        daily = spec("0 3 * * *")
        assert next_wake(daily, utc("2026-01-01 03:00")) == utc("2026-01-02 03:00")
        assert next_wake(daily, utc("2026-01-01 02:59:59.999999")) == utc("2026-01-01 03:00")

    def test_any_aware_datetime_goes_in_utc_comes_out(self) -> None:
        after = dt.datetime(2026, 1, 1, 4, 0, tzinfo=parse_zone(BERLIN))  # 03:00Z
        assert next_wake(spec("0 3 * * *"), after) == utc("2026-01-02 03:00")
        assert next_wake(spec("0 3 * * *"), after).tzinfo is UTC

    def test_naive_datetimes_are_refused(self) -> None:
        with pytest.raises(ValueError, match="after must be an aware datetime"):
            next_wake(spec("0 3 * * *"), dt.datetime(2026, 1, 1))

    def test_intervals_count_from_the_epoch(self) -> None:
        """A restart computes the same grid: 1h wakes on the hour, 90s on the epoch's grid."""
        assert next_wake(every("1h"), utc("2026-05-05 10:20")) == utc("2026-05-05 11:00")
        assert next_wake(every("90s"), utc("1970-01-01 00:00")) == utc("1970-01-01 00:01:30")

    @pytest.mark.daemon
    def test_result_does_not_depend_on_the_process_time_zone(self) -> None:
        """croniter is given naive wall times: the machine's TZ must not leak in."""
        code = (
            "import datetime as dt; from tests.spec.test_schedule import spec, wakes, utc; "
            "print([w.isoformat() for w in wakes(spec('30 2 * * *', 'Europe/Berlin'), "
            "utc('2026-10-23 12:00'), 3)])"
        )
        env = {**os.environ, "TZ": "America/New_York"}
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env=env,
            cwd=PROJECT_ROOT,
        )
        expected = wakes(spec("30 2 * * *", BERLIN), utc("2026-10-23 12:00"), 3)
        assert done.stdout.strip() == str([w.isoformat() for w in expected])

    def test_run_deadline(self) -> None:
        started = utc("2026-01-01 03:00")
        assert run_deadline(spec("0 3 * * *"), started) is None
        limited = spec("0 3 * * *", max_runtime=dt.timedelta(hours=2))
        assert run_deadline(limited, started) == utc("2026-01-01 05:00")


# --------------------------------------------------------------------------- catch-up


class TestCatchUp:
    """The daemon was down three days: which missed wakes run when it comes back."""

    LAST = utc("2026-03-27 02:00")  # Friday 03:00 CET, the last wake that ran
    NOW = utc("2026-03-30 12:00")  # three and a half days later; spring-forward in between
    MISSED = [utc("2026-03-28 02:00"), utc("2026-03-29 01:00"), utc("2026-03-30 01:00")]

    def daily(self, catch_up: CatchUp, **fields: Any) -> BackgroundSpec:
        return spec("0 3 * * *", BERLIN, catch_up=catch_up, **fields)

    def test_none(self) -> None:
        assert missed_wakes(self.daily(CatchUp.NONE), self.LAST, self.NOW) == []

    def test_latest(self) -> None:
        assert missed_wakes(self.daily(CatchUp.LATEST), self.LAST, self.NOW) == self.MISSED[-1:]

    def test_all(self) -> None:
        assert missed_wakes(self.daily(CatchUp.ALL), self.LAST, self.NOW) == self.MISSED

    def test_all_keeps_the_most_recent_up_to_the_limit(self) -> None:
        limited = self.daily(CatchUp.ALL, catch_up_limit=2)
        assert missed_wakes(limited, self.LAST, self.NOW) == self.MISSED[1:]

    def test_bounds_are_last_exclusive_now_inclusive(self) -> None:
        """The wake that already ran is not missed; one due exactly now is."""
        found = missed_wakes(self.daily(CatchUp.ALL), self.MISSED[0], self.MISSED[2])
        assert found == self.MISSED[1:]

    def test_nothing_missed(self) -> None:
        daily = self.daily(CatchUp.ALL)
        assert missed_wakes(daily, self.LAST, self.LAST + dt.timedelta(hours=1)) == []
        assert missed_wakes(daily, self.NOW, self.LAST) == []

    def test_interval_after_three_days(self) -> None:
        """every = "15m": 288 wakes were missed; "all" runs the last ten."""
        last, now = utc("2026-03-27 00:00"), utc("2026-03-30 00:00")
        assert missed_wakes(every("15m", catch_up=CatchUp.NONE), last, now) == []
        assert missed_wakes(every("15m"), last, now) == [now]
        assert missed_wakes(every("15m", catch_up=CatchUp.ALL), last, now) == steps(
            "2026-03-29 21:45", 15, 10
        )
        everything = every("15m", catch_up=CatchUp.ALL, catch_up_limit=1000)
        assert len(missed_wakes(everything, last, now)) == 288

    @pytest.mark.parametrize("start", ["2026-03-27 00:00", "2026-10-23 00:00"])
    def test_quarter_hour_cron_matches_the_interval_through_a_change(self, start: str) -> None:
        """Three days of */15 in Berlin across a DST change are the 288 UTC quarter hours."""
        last, now = utc(start), utc(start) + dt.timedelta(days=3)
        cron = spec("*/15 * * * *", BERLIN, catch_up=CatchUp.ALL, catch_up_limit=1000)
        grid = every("15m", catch_up=CatchUp.ALL, catch_up_limit=1000)
        found = missed_wakes(cron, last, now)
        assert len(found) == 288
        assert found == missed_wakes(grid, last, now)

    def test_doubled_time_is_missed_once(self) -> None:
        """A fixed-time schedule missed 02:30 on the fall-back day once, not twice."""
        half_past_two = spec("30 2 * * *", BERLIN, catch_up=CatchUp.ALL)
        found = missed_wakes(half_past_two, utc("2026-10-24 12:00"), utc("2026-10-26 12:00"))
        assert found == [utc("2026-10-25 00:30"), utc("2026-10-26 01:30")]


# --------------------------------------------------------------------------- overlap


class TestOnWake:
    @pytest.mark.parametrize("overlap", list(Overlap))
    def test_nothing_running_starts(self, overlap: Overlap) -> None:
        assert on_wake(spec("0 3 * * *", overlap=overlap), running=False) is Decision.START

    @pytest.mark.parametrize(
        ("overlap", "decision"),
        [
            (Overlap.SKIP, Decision.SKIP),
            (Overlap.QUEUE, Decision.QUEUE),
            (Overlap.REPLACE, Decision.REPLACE),
        ],
    )
    def test_while_running_the_policy_decides(self, overlap: Overlap, decision: Decision) -> None:
        assert on_wake(spec("0 3 * * *", overlap=overlap), running=True) is decision

    def test_queue_holds_one_wake(self) -> None:
        """A second wake while one already waits is skipped: no backlog builds up."""
        queue = spec("0 3 * * *", overlap=Overlap.QUEUE)
        assert on_wake(queue, running=True, queued=True) is Decision.SKIP

    def test_defaults(self) -> None:
        background = spec("0 3 * * *")
        assert (background.overlap, background.catch_up, background.catch_up_limit) == (
            Overlap.SKIP,
            CatchUp.LATEST,
            10,
        )
        assert background.max_runtime is None


# --------------------------------------------------------------------------- parsing


class TestParsing:
    @pytest.mark.parametrize(
        ("text", "seconds"),
        [("90s", 90), ("15m", 900), ("2h", 7200), ("1d", 86400), ("1h30m", 5400), ("366d", None)],
    )
    def test_durations(self, text: str, seconds: int | None) -> None:
        expected = dt.timedelta(days=366) if seconds is None else dt.timedelta(seconds=seconds)
        assert parse_duration(text) == expected

    @pytest.mark.parametrize(
        ("text", "fragment"),
        [
            ("", "expected a whole number and a unit"),
            ("15", "expected a whole number and a unit"),
            ("15 m", "expected a whole number and a unit"),
            ("15M", "expected a whole number and a unit"),
            ("1.5h", "expected a whole number and a unit"),
            ("-5m", "expected a whole number and a unit"),
            ("30m1h", "expected a whole number and a unit"),
            ("٣m", "expected a whole number and a unit"),  # an Arabic-Indic digit
            ("0m", "longer than zero"),
            ("0h0m", "longer than zero"),
            ("367d", "at most 366d"),
            ("99999999999999999999d", "at most 366d"),
        ],
    )
    def test_bad_durations(self, text: str, fragment: str) -> None:
        with pytest.raises(ScheduleError, match="invalid duration") as info:
            parse_duration(text)
        assert fragment in info.value.message

    def test_aliases_are_spelled_out(self) -> None:
        assert parse_cron("@daily", BERLIN) == Cron(expression="0 0 * * *", timezone=BERLIN)
        assert parse_cron("@hourly").follows_elapsed_time
        assert not parse_cron("@daily").follows_elapsed_time
        assert parse_cron("  0   3 * *  mon-fri ").expression == "0 3 * * mon-fri"

    @pytest.mark.parametrize(
        ("expression", "fragment"),
        [
            ("61 3 * * *", "out of range"),
            ("0 3 * *", "4 fields"),
            ("0 0 3 * * *", "6 fields"),
            ("", "0 fields"),
            ("@reboot", "1 fields"),
            ("H 3 * * *", "hashed (H) or random (R)"),
            ("R 3 * * *", "hashed (H) or random (R)"),
            ("0 0 31 2 *", "never matches"),
            ("0 3 * * funday", "funday"),
        ],
    )
    def test_bad_cron(self, expression: str, fragment: str) -> None:
        with pytest.raises(ScheduleError, match="invalid cron expression") as info:
            parse_cron(expression)
        assert fragment in info.value.message

    def test_month_and_day_names_are_not_hash_values(self) -> None:
        """'thu' and 'mar' contain h and r; only a bare H or R is refused."""
        assert parse_cron("0 3 * mar thu").expression == "0 3 * mar thu"

    @pytest.mark.parametrize(
        ("name", "fragment"),
        [
            ("Europe/Berln", "(did you mean 'Europe/Berlin'?)"),
            ("Mars/Olympus", "expected an IANA time zone name"),
            ("europe/berlin", "(did you mean 'Europe/Berlin'?)"),
            ("Europe", "unknown time zone 'Europe'"),
            ("", "unknown time zone ''"),
            ("../../etc/passwd", "unknown time zone"),
        ],
    )
    def test_bad_zones(self, name: str, fragment: str) -> None:
        with pytest.raises(ScheduleError) as info:
            parse_zone(name)
        assert fragment in info.value.message

    def test_zone_errors_reach_parse_cron(self) -> None:
        with pytest.raises(ScheduleError, match="unknown time zone"):
            parse_cron("0 3 * * *", "Europe/Berln")

    @given(st.text(max_size=30))
    def test_any_text_parses_or_is_a_schedule_error(self, text: str) -> None:
        """Whatever croniter raises for odd input comes out as ScheduleError."""
        with contextlib.suppress(ScheduleError):
            parse_cron(text)


# --------------------------------------------------------------------------- properties

_EXPRESSIONS = [
    "0 3 * * *",
    "30 2 * * *",
    "30 1 * * *",
    "*/15 * * * *",
    "30 * * * *",
    "0 */2 * * *",
    "15,45 0-4 * * *",
    "0 3 * * mon",
    "0 0 1 * *",
    "*/7 2 * * *",
]
_ZONES = ["UTC", BERLIN, NEW_YORK, "Australia/Lord_Howe", "Antarctica/Troll", "Asia/Kolkata"]

cron_specs = st.builds(
    lambda expression, zone, limit: spec(
        expression, zone, catch_up=CatchUp.ALL, catch_up_limit=limit
    ),
    st.sampled_from(_EXPRESSIONS),
    st.sampled_from(_ZONES),
    st.integers(min_value=1, max_value=30),
)
interval_specs = st.builds(
    lambda seconds, limit: spec(
        Every(interval=dt.timedelta(seconds=seconds)), catch_up=CatchUp.ALL, catch_up_limit=limit
    ),
    st.integers(min_value=1, max_value=2 * 86400),
    st.integers(min_value=1, max_value=30),
)
specs = cron_specs | interval_specs
#: 2026 has every zone's changes in it (Lord Howe's are half an hour, Troll's two hours).
instants = st.datetimes(
    min_value=dt.datetime(2025, 12, 1), max_value=dt.datetime(2027, 1, 31), timezones=st.just(UTC)
)
#: Around the 2026 changes, where the searches are hardest.
near_changes = st.sampled_from(
    [
        utc("2026-03-08 07:00"),
        utc("2026-03-29 01:00"),
        utc("2026-04-05 15:00"),
        utc("2026-10-04 15:30"),
        utc("2026-10-25 01:00"),
        utc("2026-11-01 06:00"),
    ]
).flatmap(
    lambda change: st.integers(min_value=-6 * 3600, max_value=6 * 3600).map(
        lambda seconds: change + dt.timedelta(seconds=seconds)
    )
)
anywhere = instants | near_changes
windows = st.integers(min_value=0, max_value=36 * 3600).map(lambda s: dt.timedelta(seconds=s))


class TestProperties:
    @given(specs, anywhere)
    def test_next_wake_is_strictly_after(
        self, background: BackgroundSpec, after: dt.datetime
    ) -> None:
        wake = next_wake(background, after)
        assert wake > after
        assert wake.tzinfo is UTC

    @given(specs, anywhere, windows)
    def test_next_wake_is_monotone(
        self, background: BackgroundSpec, after: dt.datetime, gap: dt.timedelta
    ) -> None:
        assert next_wake(background, after) <= next_wake(background, after + gap)

    @given(specs, anywhere, st.integers(min_value=1, max_value=59_999_999))
    def test_next_wake_is_idempotent(
        self, background: BackgroundSpec, after: dt.datetime, micros: int
    ) -> None:
        """Asking again from just before a wake finds that same wake: none was jumped."""
        wake = next_wake(background, after)
        epsilon = min(dt.timedelta(microseconds=micros), wake - after)
        assert next_wake(background, wake - epsilon) == wake

    @given(cron_specs, anywhere)
    def test_cron_wakes_are_whole_minutes(
        self, background: BackgroundSpec, after: dt.datetime
    ) -> None:
        wake = next_wake(background, after)
        assert (wake.second, wake.microsecond) == (0, 0)

    @settings(max_examples=examples(150), deadline=None)
    @given(specs, anywhere, windows)
    def test_missed_wakes_are_the_latest_forward_wakes(
        self, background: BackgroundSpec, last: dt.datetime, gap: dt.timedelta
    ) -> None:
        """Searched backwards, missed wakes are sorted, in (last, now], at most the limit,
        and exactly the tail of the wakes found forwards."""
        if isinstance(background.schedule, Every):  # keep the forward search short
            gap = min(gap, background.schedule.interval * 300)
        now = last + gap
        found = missed_wakes(background, last, now)
        assert found == sorted(set(found))
        assert all(last < wake <= now for wake in found)
        assert len(found) <= background.catch_up_limit
        assert found == wakes_until(background, last, now)[-background.catch_up_limit :]

    @given(specs, anywhere, windows)
    def test_latest_and_none(
        self, background: BackgroundSpec, last: dt.datetime, gap: dt.timedelta
    ) -> None:
        now = last + gap
        everything = missed_wakes(background, last, now)
        latest = attrs.evolve(background, catch_up=CatchUp.LATEST)
        none = attrs.evolve(background, catch_up=CatchUp.NONE)
        assert missed_wakes(latest, last, now) == everything[-1:]
        assert missed_wakes(none, last, now) == []


def minute_by_minute(
    background: BackgroundSpec, after: dt.datetime, end: dt.datetime
) -> list[dt.datetime]:
    """The cron wakes in ``(after, end]`` by the module's rule, read off every UTC minute.

    A minute wakes when its local wall time matches, unless the schedule keeps to the wall
    clock and this is the second pass of a doubled time; a fixed-time schedule also wakes
    at a minute the clocks jumped to, when a wall time they jumped over matches.
    """
    cron = background.schedule
    assert isinstance(cron, Cron)
    zone, elapsed = cron.zone, cron.follows_elapsed_time
    minute = dt.timedelta(minutes=1)
    instant = after.replace(second=0, microsecond=0) + minute
    previous = (instant - minute).astimezone(zone).replace(tzinfo=None, fold=0)
    found: list[dt.datetime] = []
    while instant <= end:
        local_time = instant.astimezone(zone)
        wall = local_time.replace(tzinfo=None, fold=0)
        wake = croniter.match(cron.expression, wall) and (elapsed or local_time.fold == 0)
        skipped = previous + minute
        while not elapsed and not wake and skipped < wall:
            wake = croniter.match(cron.expression, skipped)
            skipped += minute
        if wake:
            found.append(instant)
        previous, instant = wall, instant + minute
    return found


class TestOracle:
    @settings(max_examples=examples(60), deadline=None)
    @given(cron_specs, near_changes, st.integers(min_value=0, max_value=3 * 60))
    def test_wakes_agree_with_a_minute_by_minute_reading(
        self, background: BackgroundSpec, after: dt.datetime, minutes: int
    ) -> None:
        """Around the 2026 changes, the searches find exactly the minutes the rule names."""
        end = after + dt.timedelta(minutes=minutes)
        assert wakes_until(background, after, end) == minute_by_minute(background, after, end)
