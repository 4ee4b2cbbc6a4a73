"""When a TTL state's entry is expired: Flink's rule, the times and durations users give, columnar.

A TTL state keeps each value's last-access time (epoch milliseconds, the column
``<state>_ttl_ts``), not its time to live: a savepoint does not record the duration
(``StateTtlConfig`` lives in the job's code, ``table.exec.state.ttl`` in its configuration), so
the user names it (:func:`parse_ttls`). An entry is expired at *now* when its last access plus
the TTL, clamped at the largest long as Flink clamps it, is at most *now* (Flink's
``TtlUtils.expired``).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from .errors import UsageError

LONG_MAX = np.iinfo(np.int64).max
_UNITS_MS = {"ms": 1, "s": 1000, "sec": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION = re.compile(r"^\s*(\d+)\s*(ms|sec|s|min|m|h|d)?\s*$", re.IGNORECASE)
_ISO_DURATION = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:\.(\d{1,3}))?S)?)?$", re.IGNORECASE)


def parse_time(text: str, option: str = "--now") -> int:
    """Epoch milliseconds of *text*: an integer (epoch milliseconds) or an ISO 8601 time (UTC
    when it names no offset)."""
    text = text.strip()
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    try:
        moment = dt.datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        raise UsageError(f"{option} {text!r}: give epoch milliseconds or an ISO 8601 time "
                         "(2026-11-27T10:00:00Z)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    delta = moment - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    return delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds // 1000


def parse_duration(text: str, option: str = "--ttl") -> int:
    """Milliseconds of *text*: a number with a unit (``500ms``, ``30s``, ``15min``, ``12h``,
    ``7d``; no unit: milliseconds, as Flink reads durations) or an ISO 8601 duration (``P7D``,
    ``PT12H30M``)."""
    plain = _DURATION.match(text)
    if plain:
        return int(plain.group(1)) * _UNITS_MS[(plain.group(2) or "ms").lower()]
    iso = _ISO_DURATION.match(text.strip())
    if iso and text.strip().upper() not in ("P", "PT"):
        days, hours, minutes, seconds = (int(g or 0) for g in iso.groups()[:4])
        millis = int((iso.group(5) or "0").ljust(3, "0"))
        return ((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000 + millis
    raise UsageError(f"{option} {text!r}: give a duration such as 7d, 12h, 30min, 45s, 500ms or P7D")


@dataclass(frozen=True)
class Ttls:
    """The time to live of each TTL state: one for every state, and per state name."""

    every: int | None = None
    per_state: dict[str, int] = field(default_factory=dict)

    def of(self, state: str) -> int | None:
        """The TTL of *state* in milliseconds, None when the user gave none for it."""
        return self.per_state.get(state, self.every)


def parse_ttls(specs: list[str] | tuple[str, ...], option: str = "--ttl") -> Ttls:
    """``DURATION`` (every TTL state) or ``STATE=DURATION``, each option once per state."""
    every, per_state = None, {}
    for spec in specs:
        name, sep, duration = spec.rpartition("=")
        millis = parse_duration(duration, option)
        if millis <= 0:
            raise UsageError(f"{option} {spec!r}: a time to live is longer than 0")
        if not sep:
            if every is not None:
                raise UsageError(f"{option} is given twice for every state; name a state: STATE=DURATION")
            every = millis
        elif not name.strip():
            raise UsageError(f"{option} {spec!r}: name the state before '=' (STATE=DURATION)")
        elif name.strip() in per_state:
            raise UsageError(f"{option} is given twice for state {name.strip()!r}")
        else:
            per_state[name.strip()] = millis
    return Ttls(every, per_state)


def expiration(last_access, ttl: int) -> np.ndarray:
    """Each entry's expiration time (epoch ms) from its last access, Flink's overflow clamp
    included: a positive last access never expires later than the largest long."""
    ts = _int64(last_access)
    room = LONG_MAX - np.maximum(ts, 0)  # how far a positive time may move before it overflows
    return ts + np.where(ts > 0, np.minimum(room, ttl), ttl)


def expired(last_access, ttl: int, now: int) -> np.ndarray:
    """Whether each entry is expired at *now* (a null last access, no entry, is not)."""
    mask = expiration(last_access, ttl) <= now
    if isinstance(last_access, (pa.Array, pa.ChunkedArray)) and last_access.null_count:
        mask &= ~np.asarray(last_access.is_null())
    return mask


def _int64(values) -> np.ndarray:
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return np.asarray(values.cast(pa.int64()).fill_null(0), dtype=np.int64)
    return np.asarray(values, dtype=np.int64)
