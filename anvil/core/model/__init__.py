"""The model seam: the protocol the loop calls, typed errors, the litellm adapter (litellm imported
lazily, only here) with what differs per provider (reasoning parameters, what goes back with a reply, prompt
cache breakpoints), and the scripted model used by tests and the demo.

May import: events. Nothing else in the core.
"""
