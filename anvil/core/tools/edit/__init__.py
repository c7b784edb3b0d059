"""The edit tools (edit_file, multi_edit): the matching chain as pure functions, and lint after edits.
"""
