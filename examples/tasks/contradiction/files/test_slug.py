from slug import slugify


def test_words_are_joined_with_hyphens() -> None:
    assert slugify("Hello, World!").lower() == "hello-world"
