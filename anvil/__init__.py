"""anvil: a terminal coding assistant."""

__version__ = "0.1.0"

#: The model anvil uses when neither a flag, ANVIL_MODEL nor a config file names one (README, --help, the
#: welcome line and the settings all read it here).
DEFAULT_MODEL = "anthropic/claude-sonnet-4-5"
