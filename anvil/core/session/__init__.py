"""What a session keeps on disk: the JSONL store, file checkpoints before every change, and undo/rewind.

May import: events.
"""
