"""URL slugs for article titles."""


def slugify(title: str) -> str:
    raise NotImplementedError
