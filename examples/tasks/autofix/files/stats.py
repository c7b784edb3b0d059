"""Statistics helpers."""


def mean(numbers: list[float]) -> float:
    return sum(numbers) / len(numbers)
