"""The model seam: the protocol the loop calls, typed errors, the litellm adapter (litellm imported
lazily, only here), and the scripted model used by tests and the demo.

May import: events. Nothing else in the core.
"""
