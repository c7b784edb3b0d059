"""What an environment assignment (``FOO=1 cmd``, ``export FOO=1``, ``env FOO=1 cmd``) does to the program it reaches.

Two tables, both deliberately small and one-sided:

* :data:`INERT`: variables that only change how a program formats or reports, never what it loads or runs
  (and a pager or editor set to a plain program, ``GIT_PAGER=cat``). Rules ignore them, so
  ``NODE_ENV=test npm test`` is covered by ``npm test *``. Every other prefix is part of
  what a rule matches: ``GIT_DIR=x git status`` is not ``git status``. An allow-list, because an unknown
  variable may be read by any program in any way.
* :func:`code_variable`: variables known to make a program load or run code from somewhere else (a library, a
  module path, a config file, a pager or editor command, a startup file). Setting one always asks, and only an
  allow rule that spells the assignment out exactly covers it: ``GIT_DIR=* git *`` does not.
"""

from __future__ import annotations

import re

_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?\+?=(.*)", re.DOTALL)

INERT = frozenset({
    "CI", "NODE_ENV", "RAILS_ENV", "FORCE_COLOR", "NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "TERM", "COLUMNS",
    "LINES", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "LC_COLLATE", "LC_NUMERIC", "LC_TIME", "TZ",
    "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED", "PYTHONIOENCODING", "PYTHONUTF8",
    "PYTHONFAULTHANDLER", "RUST_BACKTRACE", "RUST_LOG", "NODE_NO_WARNINGS",
})

# name: what setting it lets a program do, in words a person reads
_CODE = {
    **dict.fromkeys(("LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT"), "loads other libraries into the program"),
    "BASH_ENV": "makes bash run a startup file first",
    "ENV": "makes sh run a startup file first",
    "PROMPT_COMMAND": "sets a command for bash to run before each prompt",
    "SHELLOPTS": "changes the options of every bash started from here",
    "BASHOPTS": "changes the options of every bash started from here",
    "IFS": "changes how bash splits words (what later commands run)",
    "PATH": "changes which program a command name runs",
    "CDPATH": "changes where cd goes",
    "HOME": "changes what ~ means",
    "PWD": "changes what $PWD means",
    "PYTHONPATH": "makes Python import modules from another place",
    "PYTHONHOME": "makes Python load its library from another place",
    "PYTHONSTARTUP": "makes Python run a startup file",
    "PYTHONUSERBASE": "makes Python import modules from another place",
    "PYTHONWARNINGS": "can make Python import modules named in it",
    "PYTHONBREAKPOINT": "makes Python import and run what it names",
    "PERL5OPT": "passes options (which can load code) to every perl",
    "PERL5LIB": "makes perl load modules from another place",
    "PERLLIB": "makes perl load modules from another place",
    "PERL5DB": "makes perl run debugger code",
    "RUBYOPT": "passes options (which can load code) to every ruby",
    "RUBYLIB": "makes ruby load code from another place",
    "NODE_OPTIONS": "passes options (which can load code) to every node",
    "NODE_PATH": "makes node load modules from another place",
    "JAVA_TOOL_OPTIONS": "passes options (which can load agents) to every JVM",
    "_JAVA_OPTIONS": "passes options (which can load agents) to every JVM",
    "JDK_JAVA_OPTIONS": "passes options (which can load agents) to every JVM",
    "CLASSPATH": "makes Java load classes from another place",
    "MAKEFLAGS": "passes options (which can run code) to every make",
    "MAKEFILES": "makes make read other makefiles",
    "GOFLAGS": "passes flags (which can run programs) to every go command",
    "RUSTC_WRAPPER": "makes cargo run another program as the compiler",
    "RUSTC": "makes cargo run another program as the compiler",
    "CC": "makes builds run another program as the compiler",
    "CXX": "makes builds run another program as the compiler",
    "KUBECONFIG": "points kubectl at another configuration (which can run programs)",
    "XDG_CONFIG_HOME": "points programs at other configuration (git's can run programs)",
    "LESSOPEN": "makes less run a command on each file",
    "LESSCLOSE": "makes less run a command on each file",
    "SHELL": "changes the shell programs start commands with",
    "BROWSER": "sets a command programs run to open links",
    "SSH_ASKPASS": "sets a command programs run to ask for passwords",
    "SUDO_ASKPASS": "sets a command programs run to ask for passwords",
}
_COMMAND_VARS = {"PAGER", "MANPAGER", "EDITOR", "VISUAL", "GIT_PAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR"}
#: a pager or editor that is itself a plain program changes nothing worth asking about
_PLAIN_COMMANDS = frozenset({"", "cat", "less", "more", "true", "less -R", "less -FRX", "vi", "vim", "nano"})
# GIT_* variables that only describe the commit or the terminal; every other GIT_* can point git at other
# configuration, hooks or programs (GIT_DIR, GIT_CONFIG_*, GIT_EXEC_PATH, GIT_SSH_COMMAND, GIT_EXTERNAL_DIFF...)
_GIT_INERT = frozenset({"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME",
                        "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE", "GIT_TERMINAL_PROMPT", "GIT_OPTIONAL_LOCKS",
                        "GIT_FLUSH", "GIT_PROGRESS_DELAY"})
_PACKAGE_CODE = re.compile(r"(?i:npm_config_\w+)|(PIP|UV)_(\w*INDEX\w*|FIND_LINKS|CONFIG_FILE)|"
                           r"CARGO_\w*(RUNNER|WRAPPER|RUSTC|RUSTDOC|LINKER)\w*")


def split_assignment(word: str) -> tuple[str, str] | None:
    """(name, value) of ``NAME=value`` (also ``NAME+=``, ``NAME[i]=``), or None when it is not an assignment."""
    m = _ASSIGNMENT.fullmatch(word)
    return (m.group(1), m.group(3)) if m else None


def is_inert(assignment: str) -> bool:
    """Rules may ignore it: a formatting variable, or a pager or editor set to a plain program (``GIT_PAGER=cat``)."""
    parts = split_assignment(assignment)
    return parts is not None and (parts[0] in INERT or (parts[0] in _COMMAND_VARS and
                                                        parts[1].strip() in _PLAIN_COMMANDS))


def code_variable(assignment: str) -> str | None:
    """Why setting this variable can make a program run code it would not otherwise run, or None."""
    parts = split_assignment(assignment)
    if parts is None:
        return None
    name, value = parts
    if name in _COMMAND_VARS:
        return None if value.strip() in _PLAIN_COMMANDS else f"sets {name}, a command programs run"
    if name.startswith("GIT_") and name not in _GIT_INERT:
        return f"sets {name}, which can point git at other configuration, hooks or programs"
    if name.startswith(("LD_", "DYLD_")):
        return f"sets {name}, which {_CODE['LD_PRELOAD']}"
    if re.fullmatch(r"PS[0-4]", name):
        return f"sets {name}, which bash expands (running the commands in it) when it prompts or traces"
    if _PACKAGE_CODE.fullmatch(name):
        return f"sets {name}, package manager configuration that can run or install other code"
    what = _CODE.get(name)
    return f"sets {name}, which {what}" if what else None
