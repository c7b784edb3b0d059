"""Which values are secrets, and how they are masked in text and in JSON lines."""

from __future__ import annotations

import json

from anvil.core.masking import SecretMasker, is_secret_name, secrets_from_environment


def test_names_like_secrets() -> None:
    for name in ("OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "CLIENT_SECRET", "DB_PASSWORD",
                 "PASSWORD", "MYSQL_PASSWORD_FILE", "anthropic_api_key"):
        assert is_secret_name(name), name
    for name in ("PATH", "HOME", "KEYBOARD", "TOKENIZERS_PARALLELISM", "SECRETS_DIR", "AWS_ACCESS_KEY_ID"):
        assert not is_secret_name(name), name


def test_short_values_are_not_secrets() -> None:
    found = secrets_from_environment({"A_TOKEN": "abc", "B_TOKEN": "long-enough-1", "PATH": "/usr/bin:/bin/x"})
    assert found == {"B_TOKEN": "long-enough-1"}


def test_masking_text_and_the_json_form_of_a_value() -> None:
    masker = SecretMasker({"OPENAI_API_KEY": 'sk-"quoted"\\value', "SHORT_KEY": "1234"})
    raw = 'key=sk-"quoted"\\value.'
    assert masker.mask(raw) == "key=[masked OPENAI_API_KEY]."
    line = json.dumps({"output": raw})
    assert json.loads(masker.mask(line)) == {"output": "key=[masked OPENAI_API_KEY]."}
    assert masker.mask("1234 stays") == "1234 stays" and masker.names == ["OPENAI_API_KEY"]


def test_a_secret_that_contains_another_is_masked_whole() -> None:
    masker = SecretMasker({"INNER_TOKEN": "abcdefgh", "OUTER_TOKEN": "xx-abcdefgh-yy"})
    assert masker.mask("xx-abcdefgh-yy and abcdefgh") == "[masked OUTER_TOKEN] and [masked INNER_TOKEN]"
    assert not SecretMasker() and SecretMasker().mask("anything") == "anything"


def test_a_secret_that_looks_like_json_syntax_never_changes_the_structure() -> None:
    masker = SecretMasker({"ODD_TOKEN": '", "b": "'})  # matches the text between two fields of the line
    line = json.dumps({"a": "x", "b": 'plain", "b": "end'})
    assert json.loads(masker.mask_json(line)) == {"a": "x", "b": "plain[masked ODD_TOKEN]end"}
    assert masker.mask_json('{"a": "nothing secret"}') == '{"a": "nothing secret"}'
