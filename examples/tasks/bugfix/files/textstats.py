"""Small statistics about a text."""


def words(text: str) -> list[str]:
    return text.split(" ")


def word_count(text: str) -> int:
    return len([w for w in words(text) if w])


def average_word_length(text: str) -> float:
    found = words(text)
    if not found:
        return 0.0
    return sum(len(w) for w in found) / len(found)
