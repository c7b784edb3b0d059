"""Stock levels: a mapping of item name to quantity on hand."""


def take(stock: dict[str, int], item: str, amount: int) -> int:
    """Take ``amount`` of ``item`` out of stock; the level left."""
    if amount <= 0:
        raise ValueError("amount must be positive")
    level = stock.get(item, 0)
    if amount > level:
        raise ValueError(f"only {level} {item} in stock")
    stock[item] = level - amount
    return stock[item]
