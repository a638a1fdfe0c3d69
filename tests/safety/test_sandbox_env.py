"""Credentials are scrubbed from the environment commands get, unless the user lets them pass."""

from __future__ import annotations

import pytest

from loopwright.safety.sandbox import is_secret_variable, scrubbed_environment

SECRET_NAMES = [
    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "LOOPWRIGHT_API_KEY", "GOOGLE_API_KEY", "APIKEY",
    "GITHUB_TOKEN", "GH_TOKEN", "HF_TOKEN", "NPM_TOKEN", "SLACK_BOT_TOKEN", "CI_JOB_TOKEN",
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
    "AZURE_CLIENT_SECRET", "AZURE_CLIENT_ID", "GOOGLE_APPLICATION_CREDENTIALS",
    "MY_APP_SECRET", "SECRET_KEY_BASE", "DJANGO_SECRET", "PGPASSWORD", "MYSQL_ROOT_PASSWORD",
    "DB_PASS", "GPG_PASSPHRASE", "STRIPE_KEY", "SSH_AUTH_SOCK", "VAULT_TOKEN", "VAULT_ADDR",
    "DOCKER_AUTH_CONFIG", "TWINE_PASSWORD", "SENTRY_AUTH_TOKEN", "github_token",
    # issue 29: reached sandboxed commands before
    "MYSQL_PWD", "DB_PWD", "SENTRY_DSN", "SLACK_WEBHOOK_URL", "DATABASE_DSN",
]
PLAIN_NAMES = [
    "PATH", "HOME", "USER", "LANG", "LC_ALL", "TERM", "SHELL", "PWD", "TMPDIR", "EDITOR",
    "PYTHONPATH", "VIRTUAL_ENV", "NODE_ENV", "TOKENIZERS_PARALLELISM", "KEYBOARD_LAYOUT",
    "SSH_CONNECTION", "DISPLAY", "COLORTERM", "XDG_CONFIG_HOME", "LOOPWRIGHT_MODEL", "CI",
    "OLDPWD", "PWD_HISTORY", "DSNAME", "HOOKS_DIR", "MONKEY", "KEYMAP",
]


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_secret_looking_names_are_removed(name: str) -> None:
    assert is_secret_variable(name, "value")
    assert name not in scrubbed_environment({name: "value", "PATH": "/bin"})


@pytest.mark.parametrize("name", PLAIN_NAMES)
def test_ordinary_names_are_kept(name: str) -> None:
    assert scrubbed_environment({name: "value"})[name] == "value"


def test_urls_carrying_credentials_are_removed_whatever_the_name() -> None:
    # a user-only URL is a credential too: a Sentry DSN's key, `https://TOKEN@github.com/…`
    env = {"DATABASE_URL": "postgres://app:hunter2@db:5432/app",
           "REDIS_URL": "redis://:hunter2@cache:6379/0",
           "ERRORS": "https://0123456789abcdef@o42.ingest.sentry.io/7",
           "MIRROR": "https://user@example.com/",
           "HOMEPAGE": "https://example.com/a:b@c", "DOCS": "https://example.com/a?page=2"}
    assert sorted(scrubbed_environment(env)) == sorted(
        ["HOMEPAGE", "DOCS", "PAGER", "GIT_PAGER", "GIT_TERMINAL_PROMPT"])


@pytest.mark.parametrize("value", [
    "https://hooks.slack.com/services/T000/B000/XXXXXXXX",
    "https://discord.com/api/webhooks/123/abcdef",
    "https://acme.webhook.office.com/webhookb2/abc",
    "https://ci.example.com/trigger?token=abcdef123456",
    "https://storage.example.com/blob?sv=1&sig=abcdefghijkl",
    "ghp_" + "a" * 36, "Bearer github_pat_" + "b" * 30, "xoxb-1234567890-abcdef",
    "sk-proj-" + "c" * 30, "AKIAABCDEFGHIJKLMNOP", "-----BEGIN OPENSSH PRIVATE KEY-----\nx",
])
def test_credential_values_are_removed_whatever_the_name(value: str) -> None:
    assert "NOTIFY" not in scrubbed_environment({"NOTIFY": value})


@pytest.mark.parametrize("value", [
    "https://example.com/webhooks/docs", "https://example.com/search?q=token", "sk-short",
    "/home/me/.ssh", "git@github.com:org/repo.git", "en_US.UTF-8",
])
def test_ordinary_values_are_kept(value: str) -> None:
    assert scrubbed_environment({"NOTIFY": value})["NOTIFY"] == value


def test_passthrough_names_and_patterns_keep_chosen_variables() -> None:
    env = {"GITHUB_TOKEN": "a", "NPM_TOKEN": "b", "NPM_CONFIG_AUTH": "c", "OPENAI_API_KEY": "d"}
    kept = scrubbed_environment(env, ["GITHUB_TOKEN", "NPM_*"])
    assert {k: kept[k] for k in env if k in kept} == {"GITHUB_TOKEN": "a", "NPM_TOKEN": "b",
                                                      "NPM_CONFIG_AUTH": "c"}


def test_commands_never_wait_for_a_pager_or_a_password_prompt() -> None:
    env = scrubbed_environment({"PAGER": "less"})
    assert env["PAGER"] == "cat" and env["GIT_PAGER"] == "cat"
    assert env["GIT_TERMINAL_PROMPT"] == "0"
