"""KeyedVector: the immutable sequence that long-lived protocol state keeps its long lists in.

Theory of operation
-------------------
Chat state is a fold of facts over frozen values. Two of its lists grow with the size of a
team:

- the response parts of a coordinator's turn (a tool call and a worker notification per
  worker);
- the session's catalog of chats (one entry per chat).

With tuples, every fact about one worker copies the whole list, so a fan-out to N workers costs
O(N²). A :class:`KeyedVector` keeps the same value semantics at O(log n) per change:

* the items live in a persistent hash map (``immutables.Map``, a C HAMT) from position to item:
  a 32-way trie whose versions share every node they did not change, so :meth:`append` and
  :meth:`set` copy a handful of nodes, not the list;
* a second such map takes each key of an item to the index of the first item with that key,
  so :meth:`find` is a lookup, not a scan;
* a small dict counts items per *tally key* (say, tool calls per status), so questions such as
  "does any part wait for the user?" are answered without looking at the parts.

Why a map by position and not a persistent vector (pyrsistent's ``pvector``, which this
module used first): the cyclic garbage collector. A pvector's trie nodes are not Python
objects, so its ``tp_traverse`` visits every item of every version. Each new version of a
10,000-item list costs the collector 10,000 visits in the young collection that finds it. The
fan-out keeps thousands of versions alive at once (one per batch in flight until it is
durable). At 10,000 workers with the journal on, young collections then took 6 to 10 s of
a 25 s run. The HAMT's nodes are objects of at most 32 entries each, so a new version shows
the collector only the few nodes it made. Gets and sets cost the same; appends and iteration
cost a little more (0.27 against 0.10 µs; 50 against 4 ns an item), and neither is frequent.

Subclasses say what an item's keys and tally key are (:meth:`keys_of`, :meth:`tally_of`). A
vector compares equal to any sequence with equal items, tuples included, so code and tests can
keep writing ``response_parts == ()``.

The module is pure: no IO, no trio.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, Generic, Self, TypeVar, overload

from immutables import Map

__all__ = ["KeyedVector"]

T = TypeVar("T")

_NO_TALLY: Final[Mapping[Hashable, int]] = {}
_EMPTY: Final[Map[Any, Any]] = Map()


class KeyedVector(Sequence[T], Generic[T]):
    """An immutable sequence with O(log n) append and replace, lookups by key and tallies."""

    __slots__ = ("_hash", "_index", "_items", "_tally")

    # Invariant: set(self._items.keys()) == set(range(len(self._items)))
    # Invariant: all(self[i] is the first item with key k for k, i in self._index.items())
    # Invariant: self._tally == Counter(t for t in map(self.tally_of, self) if t is not None)
    _items: Map[int, T]
    _index: Map[Hashable, int]
    _tally: Mapping[Any, int]
    _hash: int | None

    # ── what subclasses define ─────────────────────────────────────────────

    @staticmethod
    def keys_of(item: Any) -> tuple[Hashable, ...]:
        """The keys ``item`` can be found by (none by default)."""
        return ()

    @staticmethod
    def tally_of(item: Any) -> Hashable | None:
        """The tally ``item`` counts in, or None (not counted)."""
        return None

    # ── construction ───────────────────────────────────────────────────────

    def __init__(self, items: Iterable[T] = ()) -> None:
        values = items if isinstance(items, tuple | list) else tuple(items)
        index: dict[Hashable, int] = {}
        tally: dict[Hashable, int] = {}
        for position, item in enumerate(values):
            for key in self.keys_of(item):
                index.setdefault(key, position)
            counted = self.tally_of(item)
            if counted is not None:
                tally[counted] = tally.get(counted, 0) + 1
        # Every turn starts with empty parts: the shared empty map saves building one.
        built: Map[int, T] = Map(enumerate(values)) if values else _EMPTY
        self._set(built, Map(index) if index else _EMPTY, tally or _NO_TALLY)

    def _set(
        self, items: Map[int, T], index: Map[Hashable, int], tally: Mapping[Hashable, int]
    ) -> None:
        self._items = items
        self._index = index
        self._tally = tally
        self._hash = None

    def _derived(
        self, items: Map[int, T], index: Map[Hashable, int], tally: Mapping[Hashable, int]
    ) -> Self:
        derived = object.__new__(type(self))
        derived._set(items, index, tally)
        return derived

    @classmethod
    def of(cls, items: Iterable[T]) -> Self:
        """``items`` as this vector type; an instance of it is returned as it is, and every
        empty tuple is one empty vector (values are immutable: every turn starts with one)."""
        if type(items) is cls:
            return items
        if items == () and type(items) is tuple:
            empty = _EMPTY_VECTORS.get(cls)
            if empty is None:
                empty = _EMPTY_VECTORS[cls] = cls(())
            return empty  # type: ignore[return-value]
        return cls(items)

    # ── changes (each returns a new vector) ────────────────────────────────

    def append(self, item: T) -> Self:
        """A vector with ``item`` added at the end."""
        items = self._items
        position = len(items)
        index = self._index
        for key in self.keys_of(item):
            if key not in index:
                index = index.set(key, position)
        tally = self._tally
        counted = self.tally_of(item)
        if counted is not None:
            tally = _retallied(tally, None, counted)
        # As _derived, inlined: this runs for nearly every fact of a fan-out.
        derived = object.__new__(type(self))
        derived._items = items.set(position, item)
        derived._index = index
        derived._tally = tally
        derived._hash = None
        return derived

    def set(self, position: int, item: T) -> Self:
        """A vector with the item at ``position`` replaced by ``item``."""
        items = self._items
        if type(position) is not int or not 0 <= position < len(items):
            position = self._position(position)
        old = items[position]
        if old is item:
            return self
        tally = self._tally
        was, counted = self.tally_of(old), self.tally_of(item)
        if was != counted:  # the usual move of a part's status; else the tally stays
            tally = _retallied(tally, was, counted)
        items = items.set(position, item)
        # The usual case: a part replaced by its next state keeps its id, and its index.
        index = (
            self._index
            if self.keys_of(old) == self.keys_of(item)
            else _index_of(_values(items), self.keys_of)
        )
        derived = object.__new__(type(self))
        derived._items = items
        derived._index = index
        derived._tally = tally
        derived._hash = None
        return derived

    def remove(self, position: int) -> Self:
        """A vector without the item at ``position`` (O(n): removals are rare)."""
        position = self._position(position)
        kept = [item for at, item in enumerate(self) if at != position]
        items: Map[int, T] = Map(enumerate(kept))
        was = self.tally_of(self._items[position])
        tally = self._tally if was is None else _retallied(self._tally, was, None)
        return self._derived(items, _index_of(kept, self.keys_of), tally)

    # ── lookups ────────────────────────────────────────────────────────────

    def find(self, key: Hashable) -> int | None:
        """The index of the first item with ``key``, or None."""
        return self._index.get(key)

    @property
    def tally(self) -> Mapping[Any, int]:
        """How many items count in each tally key (keys with no item are absent)."""
        return self._tally

    def count_where(self, predicate: Callable[[Any], bool]) -> int:
        """How many items have a tally key satisfying ``predicate``."""
        return sum(n for key, n in self._tally.items() if predicate(key))

    # ── the sequence protocol ──────────────────────────────────────────────

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, position: int) -> T: ...

    @overload
    def __getitem__(self, position: slice) -> tuple[T, ...]: ...

    def __getitem__(self, position: int | slice) -> T | tuple[T, ...]:
        if type(position) is int:
            # The usual case, one lookup; a negative or missing position is a KeyError here
            # and is sorted out by _position below.
            try:
                return self._items[position]
            except KeyError:
                pass
        elif isinstance(position, slice):
            return tuple(map(self._items.__getitem__, range(*position.indices(len(self)))))
        return self._items[self._position(position)]

    def _position(self, position: int) -> int:
        """``position`` as a key of :attr:`_items`: negative ones count from the end, as in a
        tuple, and one out of range raises :class:`IndexError`."""
        if not isinstance(position, int):
            raise TypeError(f"{type(self).__name__} indices must be integers, not {position!r}")
        size = len(self._items)
        if position < 0:
            position += size
        if not 0 <= position < size:
            raise IndexError(f"{type(self).__name__} index out of range")
        return position

    def __iter__(self) -> Iterator[T]:
        return _values(self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, KeyedVector):
            return bool(self._items == other._items)
        if isinstance(other, tuple | list):
            return len(other) == len(self._items) and all(
                a is b or a == b for a, b in zip(self, other, strict=True)
            )
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            # Equal to a tuple of the same items, so it hashes like one.
            self._hash = hash(tuple(self))
        return self._hash

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self)!r})"


#: The empty vector of each subclass (see :meth:`KeyedVector.of`).
_EMPTY_VECTORS: dict[type, KeyedVector[Any]] = {}


def _retallied(
    tally: Mapping[Hashable, int], removed: Hashable | None, added: Hashable | None
) -> Mapping[Hashable, int]:
    """``tally`` less one item counted under ``removed`` and plus one under ``added`` (None:
    not counted), in a new mapping; a key whose count falls to 0 is dropped."""
    changed = dict(tally)
    for key, step in ((removed, -1), (added, +1)):
        if key is not None:
            total = changed.get(key, 0) + step
            if total:
                changed[key] = total
            else:
                del changed[key]
    return changed


def _values(items: Map[int, T]) -> Iterator[T]:
    """The items of a map by position, in order (the map's own order is its hashes')."""
    return map(items.__getitem__, range(len(items)))


def _index_of(
    items: Iterable[Any], keys_of: Callable[[Any], tuple[Hashable, ...]]
) -> Map[Hashable, int]:
    index: dict[Hashable, int] = {}
    for position, item in enumerate(items):
        for key in keys_of(item):
            index.setdefault(key, position)
    return Map(index)
