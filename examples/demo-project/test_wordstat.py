from wordstat import count_words, top_words


def test_counts_words():
    assert count_words("the cat and the hat")["the"] == 2


def test_counts_are_case_insensitive():
    # Fails until count_words lower-cases its input: a task for the demo session.
    assert count_words("The the THE")["the"] == 3


def test_top_words():
    assert top_words(count_words("a a b"), 1) == [("a", 2)]
