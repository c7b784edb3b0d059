"""Context accounting and compaction: the meter behind the gauge, the compaction tiers, and the text of
stubs, transcripts and snapshots.

May import: events, model (types only).
"""
