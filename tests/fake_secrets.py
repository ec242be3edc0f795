"""Realistic FAKE credentials of the common kinds, composed at run time (no string in the repository looks like a
real secret, so scanners of this repository stay quiet). Each is random, so none is anyone's."""

from __future__ import annotations

import base64
import json
import random
import string

ALNUM = string.ascii_letters + string.digits


def _r(alphabet: str, n: int, seed: random.Random) -> str:
    return "".join(seed.choice(alphabet) for _ in range(n))


def fake_secrets(seed: int = 7) -> dict[str, str]:
    """kind -> a text holding one fake secret of that kind, as it would appear in a session."""
    g = random.Random(seed)
    upper = string.ascii_uppercase + string.digits
    header = base64.urlsafe_b64encode(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()).decode().rstrip("=")
    claims = base64.urlsafe_b64encode(json.dumps({"sub": _r(ALNUM, 12, g), "iat": 1700000000}).encode()
                                      ).decode().rstrip("=")
    key_body = "\n".join(_r(ALNUM + "+/", 64, g) for _ in range(6))
    dash5 = "-" * 5
    return {
        "aws_access_key": "aws key id " + "AK" + "IA" + _r(upper, 16, g),
        "aws_secret": "aws_secret_access_key = " + _r(ALNUM + "/+", 40, g),
        "aws_secret_cli": "aws configure set aws_secret_access_key " + _r(ALNUM + "/+", 38, g) + "aZ",
        "aws_secret_prose": "my key " + "AK" + "IA" + _r(upper, 16, g) + " with secret " + _r(ALNUM + "/+", 38, g)
                            + "bQ",
        "github_classic": "export GITHUB_TOKEN=" + "gh" + "p_" + _r(ALNUM, 36, g),
        "github_fine_grained": "token " + "github" + "_pat_" + _r(ALNUM, 22, g) + "_" + _r(ALNUM, 59, g),
        "gitlab": "the gitlab token is " + "gl" + "pat-" + _r(ALNUM, 20, g),
        "slack_bot": "SLACK=" + "xo" + "xb-" + "-".join(_r(string.digits, 12, g) for _ in range(2)) + "-"
                     + _r(ALNUM, 24, g),
        "private_key": f"{dash5}BEGIN RSA PRIVATE KEY{dash5}\n{key_body}\n{dash5}END RSA PRIVATE KEY{dash5}",
        "openssh_key": f"{dash5}BEGIN OPENSSH PRIVATE KEY{dash5}\n{key_body}\n{dash5}END OPENSSH PRIVATE KEY{dash5}",
        "jwt": "Authorization header had " + ".".join([header, claims, _r(ALNUM + "_-", 43, g)]),
        "url_password": "clone https://deploy:" + _r(ALNUM, 18, g) + "@git.example.com/team/repo.git",
        "dsn_url": "DATABASE_URL=postgresql://app:" + _r(ALNUM, 16, g) + "@db.internal:5432/app",
        "dsn_keyvalue": "psql 'host=db.internal dbname=app user=app password=" + _r(ALNUM, 14, g) + "'",
        "openai_project": "OPENAI_API_KEY=" + "sk" + "-proj-" + _r(ALNUM + "_-", 64, g),
        "openai_legacy": "key " + "sk" + "-" + _r(ALNUM, 20, g) + "T3Blbk" + "FJ" + _r(ALNUM, 20, g),
        "anthropic": "ANTHROPIC_API_KEY=" + "sk" + "-ant-" + "api03-" + _r(ALNUM + "_-", 93, g) + "AA",
        "stripe": "stripe " + "sk" + "_live_" + _r(ALNUM, 24, g),
        "google": "maps key " + "AI" + "za" + _r(ALNUM + "_-", 35, g),
        "password_assignment": 'db_password = "' + _r(ALNUM, 12, g) + '"',
        "bearer": "curl -H 'Authorization: Bearer " + _r(ALNUM, 40, g) + "' https://api.example.com",
    }


def secret_values(texts: dict[str, str]) -> list[str]:
    """The secret part of each fake text (what must never be stored)."""
    out = []
    for kind, text in texts.items():
        if "PRIVATE KEY" in text:
            out.append(text.split("\n")[1])
        elif kind in ("url_password", "dsn_url"):
            out.append(text.split("://", 1)[1].split("@")[0].split(":")[1])
        elif kind == "dsn_keyvalue":
            out.append(text.split("password=")[1].rstrip("'"))
        elif kind == "password_assignment":
            out.append(text.split('"')[1])
        elif kind == "bearer":
            out.append(text.split("Bearer ")[1].split("'")[0])
        else:
            out.append(text.split("=", 1)[1] if "=" in text and kind != "jwt" else text.split()[-1])
    return out
