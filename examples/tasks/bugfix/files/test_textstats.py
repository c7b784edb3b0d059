from textstats import average_word_length, word_count


def test_word_count() -> None:
    assert word_count("one two  three") == 3


def test_average_word_length() -> None:
    assert average_word_length("ab  abcd") == 3.0


def test_empty_text() -> None:
    assert average_word_length("") == 0.0
