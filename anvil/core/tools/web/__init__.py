"""The web tools (web_fetch, web_search): HTTP, and pages turned into Markdown.
"""
