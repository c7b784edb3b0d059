"""A line of text about a shape."""

from geometry.shapes import calc_area


def describe(shape: str, size: float) -> str:
    return f"{shape} of size {size}: area {calc_area(shape, size):.2f}"
