"""Avro-safe schema and field names: Debezium's ``schema.name.adjustment.mode`` and
``field.name.adjustment.mode``.

``none`` keeps names as they are (Debezium 3.x's default for both). ``avro`` replaces every
character Avro does not allow with ``_`` (a leading digit is kept after the ``_``);
``avro_unicode`` replaces it, and ``_`` itself, with ``_uXXXX`` (``_`` becomes the escape
character). Schema names may contain dots, field names may not. Characters are judged per
UTF-16 code unit, as Java's ``char`` is, so a character outside the BMP is replaced twice.

As in Debezium, two different names that were both replaced into the same result are an
error: the events of one would carry the schema of the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

AdjustmentMode = Literal["none", "avro", "avro_unicode"]
ADJUSTMENT_MODES: tuple[AdjustmentMode, ...] = ("none", "avro", "avro_unicode")


class NameConflictError(ValueError):
    """Two different names were adjusted into the same name."""


def _letter(char: str) -> bool:
    return "a" <= char <= "z" or "A" <= char <= "Z"


def _digit(char: str) -> bool:
    return "0" <= char <= "9"


def _unicode_escape(char: str) -> str:
    """Java's ``"_u" + Integer.toHexString(c)``, with ``00`` in front of one or two digits."""
    digits = format(ord(char), "x")
    return "_u" + ("00" + digits if len(digits) <= 2 else digits)


def _utf16_units(text: str) -> list[str]:
    """The string as Java sees it: one item per UTF-16 code unit (surrogates split)."""
    units: list[str] = []
    for char in text:
        point = ord(char)
        if point > 0xFFFF:
            point -= 0x10000
            units += [chr(0xD800 + (point >> 10)), chr(0xDC00 + (point & 0x3FF))]
        else:
            units.append(char)
    return units


@dataclass(frozen=True)
class _Rules:
    """Which characters are valid where, and how an invalid one is replaced."""

    unicode: bool
    dots: bool

    def valid_first(self, char: str) -> bool:
        return _letter(char) or (char == "_" and not self.unicode)

    def valid_next(self, char: str) -> bool:
        return self.valid_first(char) or _digit(char) or (char == "." and self.dots)

    def replace(self, char: str) -> str:
        return _unicode_escape(char) if self.unicode else "_"


def adjust_name(name: str, mode: AdjustmentMode, *, field: bool) -> str:
    """``name`` made valid for Avro under ``mode``; ``field`` selects the field-name rules."""
    if mode == "none" or not name:
        return name
    rules = _Rules(unicode=mode == "avro_unicode", dots=not field)
    units = _utf16_units(name)
    first = units[0]
    if rules.valid_first(first):
        out = [first]
    else:
        out = [rules.replace(first)]
        if _digit(first) and not rules.unicode:
            out.append(first)  # Debezium keeps a leading digit so `1a` and `2a` stay apart
    out += [unit if rules.valid_next(unit) else rules.replace(unit) for unit in units[1:]]
    return "".join(out)


@dataclass
class NameAdjuster:
    """Adjusts names under one mode and refuses two originals with one replacement."""

    mode: AdjustmentMode
    fields: bool
    _originals: dict[str, str] = field(default_factory=dict, repr=False)

    def __call__(self, name: str) -> str:
        adjusted = adjust_name(name, self.mode, field=self.fields)
        if adjusted == name:
            return name
        seen = self._originals.setdefault(adjusted, name)
        if seen != name:
            kind = "field" if self.fields else "schema"
            raise NameConflictError(
                f"the {kind} names {seen!r} and {name!r} are both adjusted to {adjusted!r} "
                f"under {kind}.name.adjustment.mode={self.mode}; rename one of them or choose "
                "another mode"
            )
        return adjusted
