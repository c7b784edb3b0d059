"""The edit tools: edit_file and multi_edit (search and replace), apply_patch (the ``*** Begin Patch`` format),
the matching chain they share as pure functions, which of them a model is offered, and lint after edits.
"""
