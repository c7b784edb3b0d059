"""The tools the model works with, one package per family (edit, files, search, shell, web) and the small
ones beside them (todos, interaction), on ``base`` (the Tool class with its traits, the registry, the context).

May import: events, sandbox, session (checkpoints, through the tool context), process_groups, masking,
private_files. Never the loop, the policy, the model or the settings layer: the loop calls tools, not back.
"""

from __future__ import annotations

from anvil.core.tools.base import ToolRegistry


def default_tools() -> ToolRegistry:
    """Every built-in tool, in the order the model sees them."""
    from anvil.core.tools.edit.edit_tools import edit_tools
    from anvil.core.tools.files.file_tools import file_tools
    from anvil.core.tools.interaction import INTERACTION_TOOLS
    from anvil.core.tools.search.search_tools import SEARCH_TOOLS
    from anvil.core.tools.shell.shell_tools import SHELL_TOOLS
    from anvil.core.tools.shell.test_runner import TEST_TOOLS
    from anvil.core.tools.todos import TODO_TOOLS

    return ToolRegistry([*file_tools(), *edit_tools(), *SEARCH_TOOLS, *SHELL_TOOLS, *TEST_TOOLS, *TODO_TOOLS,
                         *INTERACTION_TOOLS])
