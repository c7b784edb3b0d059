"""Count the words in a text file and print the most common ones."""

import argparse
import re
from collections import Counter


def count_words(text):
    words = re.findall(r"[a-z']+", text)
    return Counter(words)


def top_words(counter, n):
    return counter.most_common(n)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("file")
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    with open(args.file, encoding="utf-8") as f:
        counts = count_words(f.read())
    for word, count in top_words(counts, args.top):
        print(f"{count:6d}  {word}")


if __name__ == "__main__":
    main()
