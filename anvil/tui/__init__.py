"""The Textual front end: the only package that imports textual.

It renders the engine's events (anvil.core.events) and answers approval requests; all agent logic
stays in anvil.core. ``anvil`` without ``-p`` runs :class:`anvil.tui.app.AnvilApp`.
"""
