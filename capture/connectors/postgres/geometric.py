"""PostgreSQL's built-in geometric types as Debezium 3.x writes them.

``box``, ``lseg``, ``path`` and ``polygon`` become ``io.debezium.data.geometry.Geometry``
(version 2): little-endian WKB — a closed five-point polygon for a box, a two-point line string
for a segment, a line string for a path, a closed ring for a polygon — and an ``extensions``
map naming the source type (and, for a path, whether it is closed), so a sink can rebuild the
native value. ``circle`` becomes ``…geometry.Circle`` ``{center: Point, radius}`` and ``line``
becomes ``…geometry.Line`` ``{a, b, c}`` (``Ax + By + C = 0``). Each converter takes the
type's text form (``(1,1),(0,0)``, ``<(0,0),2>``, ``{1,-1,0}``) and returns the JSON-ready struct.
"""

from __future__ import annotations

import re
import struct
from typing import Any, Final

from cdcflow.capture import encoders

_NUMBER: Final = r"[-+]?(?:[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?|Infinity|NaN)"
_PAIR: Final = re.compile(rf"\(\s*({_NUMBER})\s*,\s*({_NUMBER})\s*\)")
_CIRCLE: Final = re.compile(rf"<\s*\(\s*({_NUMBER})\s*,\s*({_NUMBER})\s*\)\s*,\s*({_NUMBER})\s*>")
_LINE: Final = re.compile(rf"\{{\s*({_NUMBER})\s*,\s*({_NUMBER})\s*,\s*({_NUMBER})\s*\}}")
_LINE_STRING_TYPE: Final = 2
_POLYGON_TYPE: Final = 3

Point = tuple[float, float]


def _points(text: str) -> list[Point]:
    pairs = [(float(x), float(y)) for x, y in _PAIR.findall(text)]
    if not pairs:
        raise ValueError(f"not a geometric value: {text!r}")
    return pairs


def _coordinates(points: list[Point]) -> bytes:
    return struct.pack("<I", len(points)) + b"".join(struct.pack("<dd", x, y) for x, y in points)


def line_string_wkb(points: list[Point]) -> bytes:
    """A WKB ``LineString``, little-endian."""
    return struct.pack("<BI", 1, _LINE_STRING_TYPE) + _coordinates(points)


def polygon_wkb(ring: list[Point]) -> bytes:
    """A WKB ``Polygon`` of one (already closed) ring, little-endian."""
    return struct.pack("<BII", 1, _POLYGON_TYPE, 1) + _coordinates(ring)


def _geometry(wkb: bytes, extensions: dict[str, str]) -> dict[str, Any]:
    return encoders.geometry(wkb, None, extensions=extensions)


def box(text: str | None) -> dict[str, Any] | None:
    """``(x1,y1),(x2,y2)`` -> the closed ring (x1,y1) (x1,y2) (x2,y2) (x2,y1) (x1,y1)."""
    if text is None:
        return None
    (x1, y1), (x2, y2) = _points(text)[:2]
    ring = [(x1, y1), (x1, y2), (x2, y2), (x2, y1), (x1, y1)]
    return _geometry(polygon_wkb(ring), {"type": "box"})


def lseg(text: str | None) -> dict[str, Any] | None:
    """``[(x1,y1),(x2,y2)]`` -> a two-point line string."""
    if text is None:
        return None
    return _geometry(line_string_wkb(_points(text)[:2]), {"type": "lseg"})


def path(text: str | None) -> dict[str, Any] | None:
    """``((…))`` (closed) or ``[(…)]`` (open) -> a line string; the flag goes in extensions."""
    if text is None:
        return None
    closed = not text.lstrip().startswith("[")
    extensions = {"type": "path", "closed": "true" if closed else "false"}
    return _geometry(line_string_wkb(_points(text)), extensions)


def polygon(text: str | None) -> dict[str, Any] | None:
    """``((x,y),…)`` -> a polygon whose ring is closed by repeating the first vertex."""
    if text is None:
        return None
    ring = _points(text)
    if ring[0] != ring[-1]:
        ring.append(ring[0])
    return _geometry(polygon_wkb(ring), {"type": "polygon"})


def circle(text: str | None) -> dict[str, Any] | None:
    """``<(x,y),r>`` -> ``{center: Point, radius}``."""
    if text is None:
        return None
    found = _CIRCLE.fullmatch(text.strip())
    if found is None:
        raise ValueError(f"not a circle: {text!r}")
    x, y, radius = (float(group) for group in found.groups())
    return {"center": encoders.point(x, y), "radius": radius}


def line(text: str | None) -> dict[str, Any] | None:
    """``{A,B,C}`` -> ``{a, b, c}``."""
    if text is None:
        return None
    found = _LINE.fullmatch(text.strip())
    if found is None:
        raise ValueError(f"not a line: {text!r}")
    a, b, c = (float(group) for group in found.groups())
    return {"a": a, "b": b, "c": c}
