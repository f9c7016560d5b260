"""The secret guard against material its rules were not written with: the provider corpus
(benchmarks/provider_corpus.py, token formats from gitleaks' rules, detect-secrets' plugins and
the providers' docs), the cases issue 18 found slipping through, context (a UUID under a
secret's name), and what a refusal tells the person.

Secrets are built at run time in each provider's shape, so this file holds no literal
credential that another scanner could mistake for a real one.
"""

from __future__ import annotations

import importlib.util
import json
import random
import string
import sys
from pathlib import Path
from types import ModuleType

import pytest
from conftest import git

from gitmem.store.guard import describe, redact, scan

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"


def chars(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def uuid(rng: random.Random) -> str:
    return "-".join(chars(rng, HEX, n) for n in (8, 4, 4, 4, 12))


def _provider_corpus() -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))  # it imports secrets_corpus from beside itself
    try:
        spec = importlib.util.spec_from_file_location(
            "provider_corpus", BENCHMARKS / "provider_corpus.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


@pytest.fixture(scope="module")
def corpus() -> list[tuple[str, bool, str]]:
    items: list[tuple[str, bool, str]] = _provider_corpus().corpus()
    return items


def test_every_kind_of_the_provider_corpus_meets_the_targets(corpus) -> None:  # type: ignore[no-untyped-def]
    by_kind: dict[tuple[str, bool], list[bool]] = {}
    for text, secret, kind in corpus:
        by_kind.setdefault((kind, secret), []).append(bool(scan(text)))
    assert len({k for k, secret in by_kind if secret}) >= 25
    missed = {k: v.count(False) for (k, secret), v in by_kind.items() if secret and not all(v)}
    caught = [sum(v) / len(v) for (_k, secret), v in by_kind.items() if secret]
    refused = {k: sum(v) for (k, secret), v in by_kind.items() if not secret and any(v)}
    assert min(caught) >= 0.98, missed
    assert all(n / 40 <= 0.01 for n in refused.values()), refused


def test_the_provider_corpus_is_deterministic(corpus) -> None:  # type: ignore[no-untyped-def]
    assert corpus == _provider_corpus().corpus()


@pytest.mark.parametrize(
    ("make", "kind"),
    [  # what issue 18 found going straight into a commit
        (
            lambda r: f"bot token {r.randint(10**8, 10**9)}:AA{chars(r, ALNUM + '_-', 33)}",
            "telegram-bot-token",
        ),
        (lambda r: f"HEROKU_API_KEY={uuid(r)}", "secret-assignment"),
        (
            lambda r: f"DATABASE_URL=mysql://root:orchard{r.randint(10, 99)}@db.internal/app",
            "connection-string",
        ),
        (
            lambda r: f"cache at redis://:maple{r.randint(1000, 9999)}@cache:6379",
            "connection-string",
        ),
        (lambda r: f"the staging admin password is Falcon{r.randint(10, 99)}!", "prose-password"),
        (lambda r: f"HRKU-AA{chars(r, ALNUM + '_-', 58)}", "heroku-api-key"),
        (lambda r: f"DO token dop_v1_{chars(r, HEX, 64)}", "digitalocean-token"),
        (lambda r: f"shpat_{chars(r, HEX, 32)}", "shopify-token"),
        (lambda r: f"the wifi password is B={chars(r, ALNUM, 12)}#7 (lab)", "prose-password"),
        (
            lambda r: f"Password for the shared test account: pepper{r.randint(1000, 9999)}",
            "prose-password",
        ),
        (lambda r: f'headers = {{"Authorization": "Basic {chars(r, ALNUM, 28)}=="}}', "basic-auth"),
        (lambda r: f'- name: DB_PASSWORD\n  value: "{chars(r, ALNUM, 20)}"', "password-assignment"),
    ],
)
def test_what_slipped_through_is_caught_and_redacted(make, kind: str) -> None:  # type: ignore[no-untyped-def]
    text = make(random.Random(18))
    found = scan(text)
    assert [f.kind for f in found] == [kind]
    clean, _ = redact(text)
    assert scan(clean) == [] and f"[REDACTED:{kind}]" in clean


@pytest.mark.parametrize(
    "name",
    ["HEROKU_API_KEY", "api_key", "SENTRY_AUTH_TOKEN", "client_secret", "MYSQL_ROOT_PASSWORD"],
)
def test_a_uuid_under_a_secrets_name_is_a_secret(name: str) -> None:
    value = uuid(random.Random(name))
    for text in (f"{name}={value}", f'"{name.lower()}": "{value}"', f"{name.lower()}: {value}"):
        assert [f.kind for f in scan(text)] in (["secret-assignment"], ["password-assignment"])


@pytest.mark.parametrize(
    "name", ["request_id", "AZURE_TENANT_ID", "AZURE_CLIENT_ID", "token_id", "api_key_id", "trace"]
)
def test_a_uuid_under_another_name_is_not(name: str) -> None:
    value = uuid(random.Random(name))
    assert scan(f"{name}={value}") == [] and scan(f"{name}: {value}") == []


@pytest.mark.parametrize(
    "text",
    [
        "The staging admin password is in 1Password under 'staging / admin'.",
        "The password was rotated on 2026-11-02 after the offboarding.",
        "The password must be at least 12 characters.",
        "password_reset_ttl: 3600s",
        "password: str = Field(min_length=8)",
        "Password: see the team vault (ask #infra for access).",
        "admin / v2 of the dashboard",
        "the passwords in v1.2.3 were hashed with bcrypt",
        # MongoDB's documentation example: a host reserved for documentation (RFC 2606)
        "mongodb://myDBReader:D1fficultP%40ssw0rd@mongodb0.example.com:27017/?authSource=admin",
    ],
)
def test_prose_about_passwords_is_not_a_password(text: str) -> None:
    assert scan(text) == []


def test_a_putty_key_is_one_finding_previewed_by_its_first_line() -> None:
    rng = random.Random(5)
    lines = "\n".join(chars(rng, ALNUM + "+/", 64) for _ in range(4))
    text = (
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: ci\nPublic-Lines: 2\n"
        f"{lines[:129]}\nPrivate-Lines: 2\n{lines[130:]}\nPrivate-MAC: {chars(rng, HEX, 64)}\n"
    )
    (finding,) = scan(text)
    assert finding.kind == "private-key"
    assert finding.preview == "PuTTY-User-Key-File-3: ssh-ed25519"
    assert "looks like a private key block" in describe(finding)


def test_a_refusal_names_the_kind_the_field_and_the_way_out(gm, store_path: Path) -> None:  # type: ignore[no-untyped-def]
    value = uuid(random.Random(3))
    before = (git(store_path, "rev-parse", "HEAD"), git(store_path, "status", "--porcelain"))
    r = gm("record", "fact", f"Deploys use HEROKU_API_KEY={value} in CI.", "--title", "Deploys")
    assert r.code == 1
    assert "a hard-coded secret" in r.err and "line 5 (abstract)" in r.err
    assert "--redact / --allow-secret" in r.err and ".md: line" in r.err
    assert value not in r.err + r.out
    assert (
        git(store_path, "rev-parse", "HEAD"),
        git(store_path, "status", "--porcelain"),
    ) == before
    r = gm(
        "record",
        "fact",
        f"Deploys use HEROKU_API_KEY={value} in CI.",
        "--title",
        "D",
        "--redact",
        "--json",
    )
    assert r.code == 0, r.err
    path = store_path / json.loads(r.out)["paths"][0]
    assert value not in path.read_text() and "[REDACTED:secret-assignment]" in path.read_text()
