"""Areas of simple shapes."""

import math


def calc_area(shape: str, size: float) -> float:
    """The area of a square (size: its side) or a circle (size: its radius)."""
    if shape == "square":
        return size * size
    if shape == "circle":
        return math.pi * size * size
    raise ValueError(f"unknown shape {shape!r}")
