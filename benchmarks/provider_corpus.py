"""An outside corpus for the secret guard: credentials in the shapes providers publish.

``secrets_corpus.py`` was written together with the guard's rules. This one is built from what
the guard's authors did not choose: the token formats in the public rule sets of gitleaks
(``cmd/generate/config/rules/*.go``), Yelp's detect-secrets plugins and trufflehog's detectors,
and the shapes in the providers' own documentation (GitHub's token prefixes, Slack's ``xox?-``,
Telegram's ``<bot id>:AA...``, Heroku's UUID API keys and ``HRKU-AA`` tokens, DigitalOcean's
``dop_v1_``, Azure's ``AccountKey=`` and ``xxx8Q~`` client secrets, PuTTY's ``.ppk`` file,
``scheme://user:password@host`` for each common database and queue ...). The contexts are the
ones the rule sets' own true-positive tests use: ``.env`` lines, YAML, JSON, shell exports,
code, prose, HTTP headers and connection URLs.

Every value is drawn at run time from a seeded generator in the right shape, so the corpus is
the same on every run and the repository stores no real-looking credential. The look-alikes are
the rule sets' false-positive material: UUIDs and hashes that are ids, placeholders, the
providers' documented example keys, prose about passwords, URLs without a password.

``corpus()`` returns ``(text, contains_secret, kind)``.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable

from secrets_corpus import _chars, _pem, labelled  # found beside this script

__all__ = ["SECRET_KINDS", "corpus"]

SEED = 20261203
UPPER_DIGITS = string.ascii_uppercase + string.digits
ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
HEX = "0123456789abcdef"
PUNCT = "!#%&*+-=?@^_~"
# Ordinary words people build passwords from (none of them a stand-in such as "password").
WORDS = (
    "falcon", "orchard", "copper", "maple", "harbor", "violet", "summit", "cobalt", "meadow",
    "pepper", "willow", "granite", "tango", "zephyr", "lantern", "saffron", "quartz", "walrus",
    "pickle", "bramble", "nimbus", "rocket", "juniper", "marble", "otter", "cactus",
)  # fmt: skip


def _uuid(rng: random.Random) -> str:
    return "-".join(_chars(rng, HEX, n) for n in (8, 4, 4, 4, 12))


def _word_password(rng: random.Random) -> str:
    """A password a person chose: words, digits, maybe a symbol (Orchard-Falcon42, maple2024!)."""
    words = [rng.choice(WORDS) for _ in range(rng.randint(1, 2))]
    if rng.random() < 0.5:
        words = [w.capitalize() for w in words]
    joined = rng.choice(("", "-", "_", ".")).join(words)
    tail = str(rng.randint(1, 9999)) + rng.choice(("", "", "!", "#", "$", "?"))
    return joined + tail if rng.random() < 0.8 else tail + joined


def _random_password(rng: random.Random) -> str:
    """A password from a password manager: 12-24 mixed characters, at least one digit."""
    n = rng.randint(12, 24)
    return _chars(rng, ALNUM + PUNCT, n - 1) + rng.choice(string.digits)


def _password(rng: random.Random) -> str:
    return _word_password(rng) if rng.random() < 0.5 else _random_password(rng)


def _url_password(rng: random.Random) -> str:
    """A password as it can stand in a URL: no '@', ':', '/', '#', '?' (they must be escaped)."""
    pw = _password(rng)
    for char in "@:/#?%":
        pw = pw.replace(char, "")
    return pw if len(pw) >= 6 else pw + str(rng.randint(100, 999))


def _placed(rng: random.Random, name: str, value: str) -> str:
    """`value` assigned to `name` in one of the places config lives."""
    lower = name.lower()
    return rng.choice(
        (
            f"```sh\nexport {name}={value}\n```",
            f"`.env` for the worker:\n\n```\nLOG_LEVEL=info\n{name}={value}\nPORT=8080\n```",
            f'```yaml\nenv:\n  - name: {name}\n    value: "{value}"\n```',
            f'```json\n{{"{lower}": "{value}", "region": "eu-west-1"}}\n```',
            f'```python\n{lower} = "{value}"\n```',
            f"```yaml\n{lower}: {value}\ntimeout: 30\n```",
        )
    )


def _anywhere(rng: random.Random, name: str, value: str) -> str:
    """A token with a fixed shape: in config, in prose or in a command."""
    if rng.random() < 0.6:
        return _placed(rng, name, value)
    return rng.choice(
        (
            f"The deploy job used `{value}` until we rotated it.",
            f"curl -H 'Authorization: Bearer {value}' https://api.internal/v1/ping",
            f"Pasted from the dashboard: {value} (scope: read/write).",
            f"```sh\n{name}={value} ./deploy.sh --env staging\n```",
        )
    )


# --- secrets: each maker returns a snippet holding one credential of its kind ---------------


def _github(rng: random.Random) -> str:
    if rng.random() < 0.3:
        token = f"github_pat_{_chars(rng, ALNUM, 22)}_{_chars(rng, ALNUM, 59)}"
    else:
        token = f"gh{rng.choice('pousr')}_{_chars(rng, ALNUM, 36)}"
    return _anywhere(rng, "GITHUB_TOKEN", token)


def _gitlab(rng: random.Random) -> str:
    prefix, n = rng.choice(
        (("glpat-", 20), ("glptt-", 40), ("glrt-", 20), ("gldt-", 20), ("glsoat-", 20),
         ("glcbt-", 20), ("glimt-", 25), ("GR1348941", 20))
    )  # fmt: skip
    return _anywhere(rng, "GITLAB_TOKEN", prefix + _chars(rng, B64URL, n))


def _slack(rng: random.Random) -> str:
    digits = string.digits
    kind = rng.randrange(4)
    if kind == 0:
        token = f"xoxb-{_chars(rng, digits, 12)}-{_chars(rng, digits, 13)}-{_chars(rng, ALNUM, 24)}"
    elif kind == 1:
        token = f"xoxp-{_chars(rng, digits, 12)}-{_chars(rng, digits, 12)}-{_chars(rng, digits, 13)}-{_chars(rng, HEX, 32)}"  # noqa: E501
    elif kind == 2:
        token = f"xapp-1-A{_chars(rng, UPPER_DIGITS, 10)}-{_chars(rng, digits, 13)}-{_chars(rng, HEX, 64)}"  # noqa: E501
    else:
        path = f"T{_chars(rng, UPPER_DIGITS, 8)}/B{_chars(rng, UPPER_DIGITS, 10)}/{_chars(rng, ALNUM, 24)}"  # noqa: E501
        return f"Alerts post to https://hooks.slack.com/services/{path} (channel #ops)."
    return _anywhere(rng, "SLACK_BOT_TOKEN", token)


def _stripe(rng: random.Random) -> str:
    prefix = rng.choice(("sk_live_", "rk_live_", "whsec_"))
    n = 32 if prefix == "whsec_" else rng.choice((24, 99))
    return _anywhere(rng, "STRIPE_SECRET_KEY", prefix + _chars(rng, ALNUM, n))


def _twilio(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return _anywhere(rng, "TWILIO_API_KEY", "SK" + _chars(rng, HEX, 32))
    sid = "AC" + _chars(rng, HEX, 32)
    token = _chars(rng, HEX, 32)
    return rng.choice(
        (
            f"```sh\nexport TWILIO_ACCOUNT_SID={sid}\nexport TWILIO_AUTH_TOKEN={token}\n```",
            f"```python\nclient = Client('{sid}', '{token}')\n```",
            f"curl -X POST https://api.twilio.com/2010-04-01/Accounts/{sid}/Messages.json "
            f"-u {sid}:{token}",
        )
    )


def _sendgrid(rng: random.Random) -> str:
    token = f"SG.{_chars(rng, B64URL, 22)}.{_chars(rng, B64URL, 43)}"
    return _anywhere(rng, "SENDGRID_API_KEY", token)


def _mailgun(rng: random.Random) -> str:
    if rng.random() < 0.5:
        key = "key-" + _chars(rng, HEX, 32)
    else:
        key = f"{_chars(rng, HEX, 32)}-{_chars(rng, HEX, 8)}-{_chars(rng, HEX, 8)}"
    return _placed(rng, "MAILGUN_API_KEY", key)


def _openai(rng: random.Random) -> str:
    kind = rng.randrange(3)
    if kind == 0:
        key = f"sk-{_chars(rng, ALNUM, 20)}T3BlbkFJ{_chars(rng, ALNUM, 20)}"
    elif kind == 1:
        key = f"sk-proj-{_chars(rng, B64URL, 74)}T3BlbkFJ{_chars(rng, B64URL, 74)}"
    else:
        key = f"sk-svcacct-{_chars(rng, B64URL, 58)}T3BlbkFJ{_chars(rng, B64URL, 58)}"
    return _anywhere(rng, "OPENAI_API_KEY", key)


def _anthropic(rng: random.Random) -> str:
    kind = rng.choice(("api03", "admin01"))
    return _anywhere(rng, "ANTHROPIC_API_KEY", f"sk-ant-{kind}-{_chars(rng, B64URL, 93)}AA")


def _huggingface(rng: random.Random) -> str:
    prefix = rng.choice(("hf_", "hf_", "api_org_"))
    return _anywhere(rng, "HF_TOKEN", prefix + _chars(rng, string.ascii_letters, 34))


def _npm(rng: random.Random) -> str:
    token = "npm_" + _chars(rng, ALNUM, 36)
    if rng.random() < 0.4:
        return f"`~/.npmrc`:\n\n```\n//registry.npmjs.org/:_authToken={token}\n```"
    return _anywhere(rng, "NPM_TOKEN", token)


def _pypi(rng: random.Random) -> str:
    token = "pypi-AgEIcHlwaS5vcmc" + _chars(rng, B64URL, rng.randint(60, 160))
    if rng.random() < 0.4:
        return f"`~/.pypirc`:\n\n```ini\n[pypi]\nusername = __token__\npassword = {token}\n```"
    return _anywhere(rng, "TWINE_PASSWORD", token)


def _aws(rng: random.Random) -> str:
    key_id = rng.choice(("AKIA", "ASIA")) + _chars(rng, UPPER_DIGITS, 16)  # AROA... are ids
    secret = _chars(rng, B64, 40)
    return rng.choice(
        (
            f"```ini\naws_access_key_id = {key_id}\naws_secret_access_key = {secret}\n```",
            f"```sh\nexport AWS_ACCESS_KEY_ID={key_id}\nexport AWS_SECRET_ACCESS_KEY={secret}\n```",
            f'```json\n{{"AccessKeyId": "{key_id}", "SecretAccessKey": "{secret}"}}\n```',
            f"The uploader's key pair: {key_id} / {secret}",
        )
    )


def _gcp(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return _anywhere(rng, "GOOGLE_API_KEY", "AIza" + _chars(rng, B64URL, 35))
    doc = {
        "type": "service_account",
        "project_id": f"ingest-{_chars(rng, string.digits, 6)}",
        "private_key_id": _chars(rng, HEX, 40),
        "private_key": _pem(rng, "PRIVATE KEY", 10) + "\n",
        "client_email": "loader@ingest.iam.gserviceaccount.com",
    }
    return f"```json\n{json.dumps(doc, indent=2)}\n```"


def _azure(rng: random.Random) -> str:
    kind = rng.randrange(3)
    if kind == 0:
        key = _chars(rng, B64, 86) + "=="
        return (
            "Storage connection string:\n\n"
            f"DefaultEndpointsProtocol=https;AccountName=ingest{rng.randint(1, 99)};"
            f"AccountKey={key};EndpointSuffix=core.windows.net"
        )
    if kind == 1:
        head = _chars(rng, ALNUM + "_~.", 3) + str(rng.randint(0, 9))
        secret = f"{head}Q~{_chars(rng, B64URL + '~.', 34)}"
        return _placed(rng, "AZURE_CLIENT_SECRET", secret)
    sig = base64.b64encode(rng.randbytes(32)).decode().replace("+", "%2B").replace("=", "%3D")
    return (
        f"https://ingest.blob.core.windows.net/raw?sv=2022-11-02&ss=b&srt=co&sp=rl"
        f"&se=2027-01-01T00:00:00Z&spr=https&sig={sig}"
    )


def _heroku(rng: random.Random) -> str:
    if rng.random() < 0.6:
        return _placed(rng, "HEROKU_API_KEY", _uuid(rng))
    return _anywhere(rng, "HEROKU_API_KEY", "HRKU-AA" + _chars(rng, B64URL, 58))


def _digitalocean(rng: random.Random) -> str:
    prefix = rng.choice(("dop_v1_", "doo_v1_", "dor_v1_"))
    return _anywhere(rng, "DIGITALOCEAN_TOKEN", prefix + _chars(rng, HEX, 64))


def _shopify(rng: random.Random) -> str:
    prefix = rng.choice(("shpat_", "shpca_", "shppa_", "shpss_"))
    return _anywhere(rng, "SHOPIFY_ACCESS_TOKEN", prefix + _chars(rng, HEX, 32))


def _discord(rng: random.Random) -> str:
    if rng.random() < 0.3:
        hook = f"{_chars(rng, string.digits, 18)}/{_chars(rng, B64URL, 68)}"
        return f"Build results go to https://discord.com/api/webhooks/{hook}"
    first = rng.choice("MNO") + _chars(rng, B64URL, rng.randint(23, 25))
    token = f"{first}.{_chars(rng, B64URL, 6)}.{_chars(rng, B64URL, rng.randint(27, 38))}"
    return _anywhere(rng, "DISCORD_BOT_TOKEN", token)


def _telegram(rng: random.Random) -> str:
    token = f"{rng.randint(10**7, 10**10)}:AA{_chars(rng, B64URL, 33)}"
    return rng.choice(
        (
            _anywhere(rng, "TELEGRAM_BOT_TOKEN", token),
            f"The alert bot's token is {token}.",
            f"curl https://api.telegram.org/bot{token}/getMe",
        )
    )


def _datadog(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return _placed(rng, "DD_API_KEY", _chars(rng, HEX, 32))
    return _placed(rng, "DD_APP_KEY", _chars(rng, HEX, 40))


def _jwt(rng: random.Random) -> str:
    def part(doc: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")

    head = part({"alg": rng.choice(("HS256", "RS256")), "typ": "JWT"})
    issued = rng.randint(1_600_000_000, 1_800_000_000)
    body = part({"sub": str(rng.randint(1, 10**9)), "iat": issued})
    token = f"{head}.{body}.{_chars(rng, B64URL, rng.choice((43, 86, 342)))}"
    return _anywhere(rng, "ID_TOKEN", token)


def _ppk(rng: random.Random) -> str:
    public = "\n".join(_chars(rng, B64, 64) for _ in range(6))
    private = "\n".join(_chars(rng, B64, 64) for _ in range(14))
    return (
        f"PuTTY-User-Key-File-{rng.choice((2, 3))}: ssh-rsa\nEncryption: none\n"
        f"Comment: rsa-key-2026\nPublic-Lines: 6\n{public}\nPrivate-Lines: 14\n{private}\n"
        f"Private-MAC: {_chars(rng, HEX, 40)}"
    )


def _private_key(rng: random.Random) -> str:
    kind = rng.randrange(4)
    if kind == 3:
        return f"The jump host's key, in `bastion.ppk`:\n\n```\n{_ppk(rng)}\n```"
    label = ("RSA PRIVATE KEY", "OPENSSH PRIVATE KEY", "EC PRIVATE KEY")[kind]
    if rng.random() < 0.3:
        label = rng.choice(("PRIVATE KEY", "ENCRYPTED PRIVATE KEY", "DSA PRIVATE KEY"))
    return f"Deploy key for the mirror:\n\n```\n{_pem(rng, label, rng.randint(4, 25))}\n```"


SCHEMES = (
    "mysql", "postgres", "postgresql", "redis", "rediss", "mongodb", "mongodb+srv", "amqp",
    "amqps", "mssql", "sqlserver", "mariadb", "ftp", "sftp", "smtp", "ldap", "https",
    "postgresql+psycopg", "mysql+pymysql", "clickhouse", "nats", "kafka", "couchdb", "neo4j",
)  # fmt: skip


def _connection_url(rng: random.Random) -> str:
    scheme = rng.choice(SCHEMES)
    user = rng.choice(("root", "app", "admin", "svc_ingest", "deploy", "", "readonly"))
    if scheme.startswith("redis") and rng.random() < 0.6:
        user = ""  # Redis AUTH without a user name: redis://:password@host
    host = rng.choice(("db.internal", "10.0.3.12", "cache", "prod-db-1.acme.net", "localhost"))
    url = f"{scheme}://{user}:{_url_password(rng)}@{host}:{rng.randint(1000, 65000)}/app"
    return rng.choice(
        (
            f"DATABASE_URL={url}",
            f'```yaml\nbroker_url: "{url}"\n```',
            f"Connect with `{url}` from the bastion.",
            f'```python\nengine = create_engine("{url}")\n```',
        )
    )


def _odbc(rng: random.Random) -> str:
    pw = _password(rng).replace(";", "")
    return rng.choice(
        (
            f"Server=tcp:sql.internal,1433;Database=app;User Id=sa;Password={pw};Encrypt=True;",
            f'"ConnectionStrings": {{"Default": "Host=db;Username=app;Password={pw};Port=5432"}}',
            f"jdbc:sqlserver://sql.internal:1433;databaseName=app;user=sa;password={pw}",
        )
    )


SECRET_NAMES = (
    "API_KEY", "SECRET_KEY", "AUTH_TOKEN", "ACCESS_TOKEN", "CLIENT_SECRET", "DB_PASSWORD",
    "JWT_SECRET", "SESSION_SECRET", "ENCRYPTION_KEY", "SIGNING_KEY", "PRIVATE_TOKEN",
    "SENTRY_AUTH_TOKEN", "ALGOLIA_ADMIN_KEY", "MAPBOX_TOKEN", "REDIS_PASSWORD",
    "WEBHOOK_SECRET", "CREDENTIALS", "POSTGRES_PASSWORD", "MYSQL_ROOT_PASSWORD", "APP_KEY",
)  # fmt: skip


def _env_assignment(rng: random.Random) -> str:
    """A value whose shape says nothing, under a name that says it is a secret."""
    name = rng.choice(SECRET_NAMES)
    kind = rng.randrange(5)
    if kind == 0:
        value = _uuid(rng)  # many services issue UUID keys
    elif kind == 1:
        value = _chars(rng, HEX, rng.choice((32, 40, 64)))
    elif kind == 2:
        value = base64.b64encode(rng.randbytes(rng.choice((24, 32, 48)))).decode()
    elif kind == 3:
        value = _chars(rng, ALNUM, rng.randint(20, 48))
    else:
        value = _password(rng) if "PASSWORD" in name else _random_password(rng)
    return _placed(rng, name, value)


PROSE_PASSWORDS = (
    "the staging admin password is {pw}",
    "Password for the shared test account: {pw}",
    "The wifi password in the lab is {pw} (rotated monthly).",
    "Log in as root, password `{pw}`, then run the migration.",
    "The DB password was changed to {pw} after the incident.",
    "ssh deploy@bastion (password: {pw})",
    "Grafana admin / {pw} — change it after the demo.",
    "Jenkins: user ci, passwd {pw}",
    "The vault unseal passphrase is {pw}.",
    'Remember: the router\'s admin password is "{pw}".',
)


def _prose_password(rng: random.Random) -> str:
    return rng.choice(PROSE_PASSWORDS).format(pw=_password(rng))


def _auth_header(rng: random.Random) -> str:
    if rng.random() < 0.5:
        pair = f"{rng.choice(('admin', 'ci', 'svc-export'))}:{_url_password(rng)}"
        value = base64.b64encode(pair.encode()).decode()
        return rng.choice(
            (
                f"curl -H 'Authorization: Basic {value}' https://jenkins.internal/api/json",
                f"```http\nGET /v1/export HTTP/1.1\nHost: api.internal\nAuthorization: Basic {value}\n```",  # noqa: E501
                f'headers = {{"Authorization": "Basic {value}"}}',
            )
        )
    token = _chars(rng, B64URL, rng.randint(24, 64))
    return rng.choice(
        (
            f"curl -H 'Authorization: Bearer {token}' https://api.internal/v2/jobs",
            f"```http\nPOST /v2/jobs HTTP/1.1\nAuthorization: Bearer {token}\n```",
            f'headers = {{"Authorization": f"Bearer {token}"}}',
        )
    )


SECRETS: dict[str, Callable[[random.Random], str]] = {
    "github": _github,
    "gitlab": _gitlab,
    "slack": _slack,
    "stripe": _stripe,
    "twilio": _twilio,
    "sendgrid": _sendgrid,
    "mailgun": _mailgun,
    "openai": _openai,
    "anthropic": _anthropic,
    "huggingface": _huggingface,
    "npm": _npm,
    "pypi": _pypi,
    "aws": _aws,
    "gcp": _gcp,
    "azure": _azure,
    "heroku": _heroku,
    "digitalocean": _digitalocean,
    "shopify": _shopify,
    "discord": _discord,
    "telegram": _telegram,
    "datadog": _datadog,
    "jwt": _jwt,
    "private-key": _private_key,
    "connection-url": _connection_url,
    "connection-string-odbc": _odbc,
    "env-assignment": _env_assignment,
    "prose-password": _prose_password,
    "auth-header": _auth_header,
}
SECRET_KINDS = tuple(SECRETS)


# --- harmless look-alikes ------------------------------------------------------------------


def _ids(rng: random.Random) -> str:
    u = _uuid(rng)
    return rng.choice(
        (
            f"AZURE_TENANT_ID={u}",
            f"AZURE_CLIENT_ID={u}",
            f"subscription_id: {u}",
            f'{{"request_id": "{u}", "status": 502}}',
            f"The failing run was {u}; its trace is attached.",
            f"trace_id={u} span=checkout",
            f"HEROKU_APP_ID={u}",
            f"api_key_id: {u}",
            f"idempotency-key: {u}",
            f"The token_id {u} belongs to the revoked key.",
        )
    )


def _hashes(rng: random.Random) -> str:
    sha1, sha256, md5 = _chars(rng, HEX, 40), _chars(rng, HEX, 64), _chars(rng, HEX, 32)
    return rng.choice(
        (
            f"Fixed in {sha1}; cherry-picked to release-1.4.",
            f"image: ghcr.io/acme/api@sha256:{sha256}",
            f"sha256sum: {sha256}  gitmem-0.1.0.tar.gz",
            f"checksum: md5:{md5}",
            f'"etag": "{md5}"',
            f'commit = "{sha1}"',
            f"The release tarball's SHA-256 is {sha256}.",
            f"key fingerprint SHA256:{_chars(rng, B64, 43)}",
            f"content_hash: {sha256}",
        )
    )


def _placeholders(rng: random.Random) -> str:
    name = rng.choice(SECRET_NAMES)
    value = rng.choice(
        (
            "<your-token>", "<YOUR_API_KEY>", "xxxxxxxxxxxxxxxxxxxx", "changeme", "${API_KEY}",
            "{{ .Values.apiKey }}", "your_api_key_here", "REPLACE_ME", "********", "TODO",
            "${{ secrets.DEPLOY_TOKEN }}", "%(password)s", "$DB_PASSWORD", "<redacted>",
            "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "sk-...", "insert-key-here",
            "[REDACTED:secret-assignment]", "dummy-secret-for-tests", "os.environ['API_KEY']",
        )
    )  # fmt: skip
    return _placed(rng, name, value)


def _vendor_examples(rng: random.Random) -> str:
    return rng.choice(
        (
            "AWS docs: aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "Stripe's docs use sk_test_4eC39HqLyjWDarjtT1zdp7dc in every snippet.",
            f"STRIPE_KEY=sk_test_{_chars(rng, ALNUM, 24)}",
            f"pk_live_{_chars(rng, ALNUM, 24)} is the publishable key; it ships in the page.",
            "mongodb://myDBReader:D1fficultP%40ssw0rd@mongodb0.example.com:27017/?authSource=admin",
            "postgres://user:password@localhost:5432/mydb",
            "mysql://username:password@hostname/database",
            "redis://:password@localhost:6379/0",
            "amqp://guest:guest@localhost:5672/",
            "TWILIO_ACCOUNT_SID=ACXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
            "export SLACK_BOT_TOKEN=xoxb-your-token",
            "curl -u 'api:YOUR_API_KEY' https://api.mailgun.net/v3/example.com/messages",
            "Authorization: Bearer <token>",
            "Authorization: Basic <base64 of user:pass>",
            "OPENAI_API_KEY=sk-...your-key...",
            "HF_TOKEN=hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "-----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY-----",
        )
    )


def _password_prose(rng: random.Random) -> str:
    return rng.choice(
        (
            "Reset your password from the settings page; the link expires after an hour.",
            "The password must be at least 12 characters and is checked against HIBP.",
            "The staging admin password is in 1Password under 'staging / admin'.",
            "The password is stored in the vault at secret/data/staging/db.",
            "Password: see the team vault (ask #infra for access).",
            "The DB password is the same as staging's; do not change it without telling ops.",
            "The password was rotated on 2026-11-02 after the offboarding.",
            "Tokens expire after 24 hours; the refresh token lasts 30 days.",
            "Rotate the API key every 90 days (policy SEC-12).",
            "The password is whatever LDAP says; there is no local account.",
            "If the password is wrong three times the account locks for 15 minutes.",
            "password: required, min 8 chars, must not equal the user name",
            "Use a long passphrase; the password manager generates one.",
            "The secret key is read from the environment at start-up, never from the repo.",
            "admin password is not set until first login",
        )
    )


def _public_material(rng: random.Random) -> str:
    blob = _chars(rng, B64, 372)
    return rng.choice(
        (
            f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ{blob[:300]} deploy@ci",
            f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{_chars(rng, B64, 43)} me@laptop",
            "-----BEGIN PUBLIC KEY-----\n"
            + "\n".join(blob[i : i + 64] for i in range(0, 256, 64))
            + "\n-----END PUBLIC KEY-----",
            "-----BEGIN CERTIFICATE-----\n"
            + "\n".join(blob[i : i + 64] for i in range(0, 320, 64))
            + "\n-----END CERTIFICATE-----",
            f"age recipient: age1{_chars(rng, LOWER_ALNUM, 58)}",
            f"pk_live_{_chars(rng, ALNUM, 24)} (Stripe publishable key, public by design)",
        )
    )


def _urls(rng: random.Random) -> str:
    return rng.choice(
        (
            "postgres://app@db.internal:5432/app",
            "redis://cache:6379/0",
            "mongodb://localhost:27017/?replicaSet=rs0",
            "git@github.com:acme/api.git",
            "https://oauth2@gitlab.com/acme/api.git",
            f"https://api.internal/v1/jobs?page_token={_chars(rng, B64URL, 24)}",
            f"https://example.com/reset?user={rng.randint(1, 9999)}",
            "amqp://rabbitmq.internal:5672/%2F",
            "ftp://mirror.example.org/pub/",
            "mysql://root@localhost/app",
        )
    )


def _code_by_name(rng: random.Random) -> str:
    return rng.choice(
        (
            'api_key = os.environ["API_KEY"]',
            "password = getpass.getpass()",
            "token = request.headers.get('Authorization', '').removeprefix('Bearer ')",
            "const secret = process.env.JWT_SECRET;",
            "DB_PASSWORD: ${{ secrets.DB_PASSWORD }}",
            "password_hash = bcrypt.hashpw(password, bcrypt.gensalt())",
            "if token_expires_at < now: refresh_token()",
            "client_secret=settings.OAUTH_CLIENT_SECRET",
            "max_tokens: 4096",
            "tokenizer = AutoTokenizer.from_pretrained(model_name)",
            "password_min_length = 12",
            "secret_name: prod/db/credentials",
            "token_url = 'https://oauth2.googleapis.com/token'",
            "apiKey: apiKeyFromVault",
        )
    )


def _random_ids(rng: random.Random) -> str:
    return rng.choice(
        (
            f"build_id: {_chars(rng, ALNUM, 24)}",
            f"The run id is {_chars(rng, LOWER_ALNUM, 20)}.",
            f"cursor={_chars(rng, B64URL, 32)}",
            f"instance i-{_chars(rng, HEX, 17)} in subnet-{_chars(rng, HEX, 17)}",
            f"container {_chars(rng, HEX, 12)} exited with 137",
            f"youtube.com/watch?v={_chars(rng, B64URL, 11)}",
            f"nonce-{_chars(rng, B64, 22)}== in the CSP header",
            f"Twilio account {'AC' + _chars(rng, HEX, 32)} (the SID is not a secret)",
            f"GOOGLE_CLIENT_ID={rng.randint(10**11, 10**12)}-{_chars(rng, LOWER_ALNUM, 32)}.apps.googleusercontent.com",  # noqa: E501
            f"DD_SITE=datadoghq.eu, DD_SERVICE=ingest, DD_ENV=prod, DD_VERSION=1.{rng.randint(0, 40)}.0",  # noqa: E501
        )
    )


def _encoded_data(rng: random.Random) -> str:
    data = base64.b64encode(rng.randbytes(rng.randint(30, 90))).decode()
    return rng.choice(
        (
            f"![chart](data:image/png;base64,{data})",
            f'"integrity": "sha512-{data}"',
            f"echo {data} | base64 -d > fixture.bin",
            f"The fixture's payload is {data[:40]}",
        )
    )


LOOKALIKES: dict[str, Callable[[random.Random], str]] = {
    "ids-uuid": _ids,
    "hashes": _hashes,
    "placeholders": _placeholders,
    "vendor-examples": _vendor_examples,
    "password-prose": _password_prose,
    "public-material": _public_material,
    "urls-without-password": _urls,
    "code-by-name": _code_by_name,
    "random-ids": _random_ids,
    "encoded-data": _encoded_data,
}
PER_SECRET_KIND = 20
PER_LOOKALIKE_KIND = 40


def corpus(seed: int = SEED) -> list[tuple[str, bool, str]]:
    """The labelled corpus: ``(text, contains_secret, kind)``, the same for the same seed."""
    return labelled(seed, SECRETS, PER_SECRET_KIND, LOOKALIKES, PER_LOOKALIKE_KIND)
