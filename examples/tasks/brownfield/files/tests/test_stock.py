import pytest

from inventory.stock import take


def test_take_lowers_the_level() -> None:
    stock = {"apples": 5}
    assert take(stock, "apples", 2) == 3
    assert stock == {"apples": 3}


def test_take_more_than_there_is() -> None:
    with pytest.raises(ValueError):
        take({"apples": 1}, "apples", 2)
