import sys

from geometry.report import describe
from geometry.shapes import calc_area

if __name__ == "__main__":
    shape, size = sys.argv[1], float(sys.argv[2])
    print(describe(shape, size))
    print(round(calc_area(shape, size), 3))
