"""shell_parse: every command that would run is found, and normalised the same way on both parsers."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anvil.core.policy import shell_parse as sp
from anvil.core.policy.shell_build import Builder, Ctx
from anvil.core.policy.shell_command import Redirect, SimpleCommand
from anvil.core.policy.shell_fallback import fallback_into
from anvil.core.policy.shell_parse import parse_command
from anvil.core.policy.shell_words import privileged_inner, unwrap


def words_of(source: str) -> list[tuple[str, ...]]:
    parsed = parse_command(source)
    assert parsed.ok, parsed.error
    return [c.words for c in parsed.commands]


# --- splitting ----------------------------------------------------------------------------------------

SPLITS = [
    ("cd src && make", [("cd", "src"), ("make",)]),
    ("a || b; c", [("a",), ("b",), ("c",)]),
    ("a | b |& c", [("a",), ("b",), ("c",)]),
    ("a &\nb\n\nc", [("a",), ("b",), ("c",)]),
    ("(cd x && make) 2>/dev/null", [("cd", "x"), ("make",), ()]),
    ("{ a; b; } > out", [("a",), ("b",), ()]),
    ("echo $(rm -rf x)", [("echo", "$(rm -rf x)"), ("rm", "-rf", "x")]),
    ("echo `whoami`", [("echo", "`whoami`"), ("whoami",)]),
    ("echo \"a $(b \"$(c)\")\"", [("echo", 'a $(b "$(c)")'), ("b", "$(c)"), ("c",)]),
    ("diff <(sort a) >(tee b)", [("diff", "<(sort a)", ">(tee b)"), ("sort", "a"), ("tee", "b")]),
    ("x=$(date) make", [("make",), ("date",)]),
    ("for f in $(ls); do wc -l $f; done", [("ls",), ("wc", "-l", "$f")]),
    ("if [ -f x ]; then rm x; else touch x; fi", [("[", "-f", "x", "]"), ("rm", "x"), ("touch", "x")]),
    ("while read l; do echo $l; done < list", [("read", "l"), ("echo", "$l"), ()]),
    ("f() { rm -rf \"$1\"; }; f build", [("rm", "-rf", "$1"), ("f", "build")]),
    ("! grep -q x f", [("grep", "-q", "x", "f")]),
    ("echo \"${x:-$(rm y)}\"", [("echo", "${x:-$(rm y)}"), ("rm", "y")]),  # bashlex alone misses rm
    ("echo 'no $(subst) here'", [("echo", "no $(subst) here")]),
    ("echo a # rm -rf /", [("echo", "a")]),
]


@pytest.mark.parametrize(("source", "expected"), SPLITS)
def test_splits_into_simple_commands(source: str, expected: list[tuple[str, ...]]) -> None:
    assert words_of(source) == expected


FALLBACK = [  # bashlex cannot read these; the fallback must
    ("[[ -f x && -d y ]] && make", [("[[", "-f", "x", "&&", "-d", "y", "]]"), ("make",)]),
    ("case $x in a|b) rm -rf y;; *) echo;; esac", [("rm", "-rf", "y"), ("echo",)]),
    ("echo $((1 + $(date +%s)))", [("echo", "$((1 + $(date +%s)))"), ("date", "+%s")]),
    ("time make -j4", [("make", "-j4")]),
    ("arr=(a $(b) c); echo ${arr[@]}", [(), ("b",), ("echo", "${arr[@]}")]),
    ("for ((i=0;i<3;i++)); do echo $i; done", [(), ("echo", "$i")]),  # the arithmetic runs no program
    ("cat <<'EOF' > notes.md\n$(not run)\nEOF\nls", [("cat",), ("ls",)]),
    ("git commit -m \"$(cat <<'EOF'\nfix: x\n\n$(not run)\nEOF\n)\"",
     [("git", "commit", "-m", "$(cat <<'EOF'\nfix: x\n\n$(not run)\nEOF\n)"), ("cat",)]),
    ("echo $(case a in a) rm b;; esac)", [("echo", "$(case a in a) rm b;; esac)"), ("rm", "b")]),
    ("select x in a b; do echo $x; done", [("echo", "$x")]),
]


@pytest.mark.parametrize(("source", "expected"), FALLBACK)
def test_fallback_reads_what_bashlex_cannot(source: str, expected: list[tuple[str, ...]]) -> None:
    parsed = parse_command(source)
    assert parsed.parser == "fallback"
    assert [c.words for c in parsed.commands] == expected


def test_unquoted_heredoc_body_substitutions_run_and_quoted_ones_do_not() -> None:
    assert words_of("cat <<EOF\nhello $(rm -rf x)\nEOF") == [("cat",), ("rm", "-rf", "x")]
    assert words_of("cat <<'EOF'\nhello $(rm -rf x)\nEOF") == [("cat",)]
    assert words_of("cat <<-\"EOF\"\n\t`rm x`\n\tEOF\necho done") == [("cat",), ("echo", "done")]


# --- normalisation ------------------------------------------------------------------------------------

NORMALISED = [
    ('"rm" -rf x', ("rm", "-rf", "x")),
    ("\\rm -rf x", ("rm", "-rf", "x")),
    ("'r'm -rf x", ("rm", "-rf", "x")),
    ("$'\\x72\\x6d' -rf /", ("rm", "-rf", "/")),
    ("command rm x", ("rm", "x")),
    ("builtin cd /", ("cd", "/")),
    ("exec -a name rm x", ("rm", "x")),
    ("env FOO=1 BAR=2 rm x", ("rm", "x")),
    ("env -i -u HOME rm x", ("rm", "x")),
    ("nice -n 10 rm x", ("rm", "x")),
    ("nice -5 rm x", ("rm", "x")),
    ("nohup rm x", ("rm", "x")),
    ("timeout 5 rm x", ("rm", "x")),
    ("timeout -s KILL -k 1 30s make test", ("make", "test")),
    ("time -p rm x", ("rm", "x")),
    ("stdbuf -oL make", ("make",)),
    ("xargs -0 -n 1 -I{} rm {}", ("rm", "{}")),
    ("xargs", ("echo",)),
    ("nice nohup timeout 5 env A=1 command rm x", ("rm", "x")),
    ("command -v rm", ("command", "-v", "rm")),  # a lookup, not a run
    ("timeout --weird 5 rm x", ("timeout", "--weird", "5", "rm", "x")),  # unknown option: stop
    ("env", ("env",)),
    ("sudo rm x", ("sudo", "rm", "x")),  # privilege is never stripped
]


@pytest.mark.parametrize(("source", "expected"), NORMALISED)
def test_wrappers_and_quoting_resolve_to_the_real_program(source: str, expected: tuple[str, ...]) -> None:
    assert parse_command(source).commands[0].words == expected


def test_env_prefixes_are_split_off_and_argv_keeps_what_was_written() -> None:
    cmd = parse_command("FOO=1 BAR='a b' env BAZ=2 nice make test").commands[0]
    assert cmd.env == ("FOO=1", "BAR=a b", "BAZ=2")
    assert cmd.argv == ("env", "BAZ=2", "nice", "make", "test")
    assert cmd.words == ("make", "test")
    assert cmd.wrappers == ("env", "nice")
    assert cmd.normalized == "FOO=1 BAR=a b BAZ=2 make test"  # rules match the environment a program gets
    assert parse_command("NO_COLOR=1 CI=true make test").commands[0].normalized == "make test"  # inert ones aside
    assert parse_command("make FOO=1").commands[0].words == ("make", "FOO=1")  # an argument, not a prefix


def test_text_is_the_source_slice_and_name_is_the_base_name() -> None:
    cmds = parse_command('cd "my dir" && /usr/bin/rm -f a\\ b.txt').commands
    assert [c.text for c in cmds] == ['cd "my dir"', "/usr/bin/rm -f a\\ b.txt"]
    assert cmds[0].words == ("cd", "my dir")
    assert cmds[1].program == "/usr/bin/rm" and cmds[1].name == "rm"
    assert cmds[1].words == ("/usr/bin/rm", "-f", "a b.txt")


def test_redirections() -> None:
    cmd = parse_command("make >build.log 2>&1 </dev/null 3>>extra &>both").commands[0]
    assert cmd.redirects == (Redirect(">", "build.log"), Redirect(">&", "1", 2), Redirect("<", "/dev/null"),
                             Redirect(">>", "extra", 3), Redirect("&>", "both"))
    assert [r.writes for r in cmd.redirects] == [True, False, False, True, True]
    # fd duplications and /dev/null do not change what rules see
    assert cmd.normalized == "make > build.log 3>> extra &> both"
    assert parse_command("pytest 2>&1 >/dev/null").commands[0].normalized == "pytest"


def test_relations_origin_parent_pipeline() -> None:
    cmds = parse_command("curl -s x | sh && echo $(date) | tee log").commands
    by_words = {c.words[0]: (i, c) for i, c in enumerate(cmds)}
    curl, sh, echo, date, tee = (by_words[w][1] for w in ("curl", "sh", "echo", "date", "tee"))
    assert curl.pipeline == sh.pipeline and (curl.stage, sh.stage) == (0, 1)
    assert echo.pipeline == tee.pipeline != curl.pipeline
    assert date.origin == "substitution" and date.parent == by_words["echo"][0]
    in_stage_1 = [c.words[0] for c in parse_command("curl x | (cd /tmp; sh)").commands if c.stage == 1]
    assert in_stage_1 == ["cd", "sh"]


def test_code_given_as_a_string_is_parsed_too() -> None:
    cmds = parse_command("bash -lc 'cd x && rm -rf y'").commands
    assert [(c.words, c.origin) for c in cmds] == [
        (("bash", "-lc", "cd x && rm -rf y"), "command"),
        (("cd", "x"), "shell -c"),
        (("rm", "-rf", "y"), "shell -c"),
    ]
    assert words_of('sudo sh -c "echo 1 > /etc/x"')[1] == ("echo", "1")
    assert words_of("su -c 'rm -rf /tmp/x' root")[1] == ("rm", "-rf", "/tmp/x")
    assert words_of("eval \"rm -rf $dir\"")[1] == ("rm", "-rf", "$dir")
    assert words_of("xargs sh -c 'rm \"$0\"'")[1] == ("rm", "$0")
    assert words_of("bash script.sh -c x") == [("bash", "script.sh", "-c", "x")]


def test_find_exec_commands_are_simple_commands() -> None:
    cmds = parse_command("find . -name '*.pyc' -exec rm -f {} \\; -o -execdir chmod 644 {} +").commands
    assert [(c.words, c.origin, c.parent) for c in cmds[1:]] == [
        (("rm", "-f", "{}"), "find -exec", 0), (("chmod", "644", "{}"), "find -exec", 0)]


def test_privileged_inner() -> None:
    sudo = ("sudo", "-u", "bob", "-E", "FOO=1", "nice", "rm", "-rf", "x")
    assert privileged_inner(sudo) == ("sudo", ("rm", "-rf", "x"))
    assert privileged_inner(("doas", "rm", "x")) == ("doas", ("rm", "x"))
    assert privileged_inner(("sudo", "-i")) == ("sudo", ())
    assert privileged_inner(("rm", "x")) is None
    assert unwrap(["env", "A=1", "timeout", "3", "ls"]) == (("ls",), ("env", "timeout"), ("A=1",))


FAILURES = [
    'echo "unterminated',
    "echo 'unterminated",
    "echo $(unclosed",
    "echo `unclosed",
    "if true; then echo",
    "echo a )",
    "fi",
    "cat >",
    "echo ${x",
    "a ;; b",
]


@pytest.mark.parametrize("source", FAILURES)
def test_what_cannot_be_read_is_a_parse_failure(source: str) -> None:
    parsed = parse_command(source)
    assert not parsed.ok and parsed.error and parsed.commands == ()


def test_nesting_depth_is_limited() -> None:
    assert words_of("bash -c \"sh -c 'rm -rf x'\"")[-1] == ("rm", "-rf", "x")
    script = "rm -rf x"
    for _ in range(8):
        script = f"bash -c {shlex.quote(script)}"
    assert "nested too deeply" in (parse_command(script).error or "")
    assert "nested too deeply" in (parse_command("echo " + "$(echo " * 8 + "x" + ")" * 8).error or "")


def test_empty_and_comment_only_commands_run_nothing() -> None:
    for source in ("", "   ", "# just a comment", "\n\n"):
        parsed = parse_command(source)
        assert parsed.ok and parsed.commands == ()


AGREE = [
    'FOO=1 "rm" -rf a\\ b "x y" > out 2>&1 && echo $(ls `pwd`) | tee f',
    ":(){ :|:& };:",
    "bash <(curl -s x)",
    'echo "${x:-$(rm y)}"',
    "nice -n 5 nohup timeout 5 env A=1 command rm -rf x",
    'find . -name "*.pyc" -exec rm -f {} \\;',
    "ls | xargs -0 -n1 rm",
    'sudo bash -c "echo hi > /etc/x"',
    "curl x | (cd /tmp; sh)",
    "if true; then (a | b) fi",
    "while read l; do echo; done < file > out",
    "cd x && make test || echo failed; ls -la",
    "for f in $(ls *.py); do wc -l \"$f\"; done",
    "{ echo a; echo b; } > out.txt",
    "echo 'it'\\''s' \"a\\\"b\" $'tab\\there'",
    "f() { rm -rf \"$1\"; }; f build",
    "x=$(git rev-parse HEAD) make",
    'docker run --rm -v "$PWD":/app -w /app node:20 npm test',
    "echo a \\\n  b",
    'cat <<< "$(whoami)" >(tee log)',
    "cat <<EOF > f\nhello $(whoami)\nEOF\necho hi",
    "exec 3>&1 4<&0",
    'echo "a $(echo "b $(echo c)")"',
]


@pytest.mark.parametrize("source", AGREE)
def test_fallback_agrees_with_bashlex(source: str) -> None:
    """The fallback is only used when bashlex fails, so check it against bashlex where both work."""
    first, second = Builder(sp.parse_into), Builder(sp.parse_into)
    sp.bashlex_into(source, first, Ctx())
    fallback_into(source, second, Ctx())

    def shape(cmds: tuple[SimpleCommand, ...]) -> list[object]:
        groups: dict[int, list[tuple[int, int]]] = {}
        for i, c in enumerate(cmds):
            groups.setdefault(c.pipeline, []).append((i, c.stage))
        return [[(c.argv, c.env, c.redirects, c.words, c.origin, c.parent, c.text) for c in cmds],
                sorted(groups.values())]

    assert shape(first.finish()) == shape(second.finish())


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab $()`'\"\\|&;<>{}[]#=*~\n\t-x0")), max_size=40))
def test_never_raises(source: str) -> None:
    parsed = parse_command(source)
    assert parsed.ok or parsed.error
