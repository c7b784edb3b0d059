import unittest

from wordstat import count_words, top_words


class WordstatTest(unittest.TestCase):
    def test_counts_words(self):
        self.assertEqual(count_words("the cat and the hat")["the"], 2)

    def test_counts_are_case_insensitive(self):
        # Fails until count_words lower-cases its input: a task for the demo session.
        self.assertEqual(count_words("The the THE")["the"], 3)

    def test_top_words(self):
        self.assertEqual(top_words(count_words("a a b"), 1), [("a", 2)])


if __name__ == "__main__":
    unittest.main()
