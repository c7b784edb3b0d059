import math

from geometry.report import describe
from geometry.shapes import calc_area


def test_square() -> None:
    assert calc_area("square", 3) == 9


def test_circle() -> None:
    assert calc_area("circle", 1) == math.pi


def test_describe() -> None:
    assert describe("square", 2) == "square of size 2: area 4.00"
