"""Secrets recognised by their shape: keys and tokens with a provider's prefix, private keys,
credentials in a URL or a header, and keys named as such (an AWS secret key, a hexadecimal
encryption key).

These are the shapes ocmem checks itself, cheaply, on every text. Providers with a documented
prefix that detect-secrets (``ocmem.guards.detectsecrets``) does not know are here (Google,
Hugging Face, npm without its ``.npmrc`` line, DigitalOcean, Vault, age, Tailscale…); the ones it
knows are left to it, except the commonest (AWS, GitHub, GitLab, Slack, Stripe, JWT, private
keys, a password in a URL) and Mailchimp's, kept here so that they are refused even on a line
that does not wake it up.

Patterns are kept as strings and compiled on first use: most texts hold no stem (``_STEMS``)
of any shape and no key name (``_KEY_WORDS``), and then nothing is compiled.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# (kind, pattern). A pattern has no group of its own and no global flag: they are joined into
# one alternation, each in a named group.
_SHAPES: tuple[tuple[str, str], ...] = (
    ("clé privée", r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File-\d"),
    ("clé AWS", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
    (
        # The 40-character secret after its name, whatever separates them: ``=``, ``:``, a
        # quote or only a space (``aws_secret_access_key wJalr…``).
        "clé secrète AWS",
        r"(?i:aws[\w.-]{0,20}?secret[\w.-]{0,20}?)[\s\"'=:]{1,5}"
        r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
    ),
    ("jeton GitHub", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{20,})"),
    ("jeton GitLab", r"\bgl(?:pat|dt|ft|soat|rt|cbt|ptt)-[A-Za-z0-9_-]{20,}"),
    ("clé d'API (sk-…)", r"\bsk-(?:ant-|proj-|svcacct-)?[A-Za-z0-9_-]{20,}"),
    ("jeton Slack", r"\bxox[abposre]-[A-Za-z0-9-]{10,}"),
    ("clé Google", r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"),
    ("clé Stripe", r"\b[sr]k_(?:live|test)_[0-9A-Za-z]{16,}"),
    ("JWT", r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
    ("en-tête Bearer", r"\bBearer\s+[A-Za-z0-9._~+/=-]{16,}"),
    ("identifiants dans une URL", r"\b[a-z][a-z0-9+.-]*://[^\s/:@]+:[^\s/@]+@"),
    ("jeton npm", r"\bnpm_[A-Za-z0-9]{36}(?![A-Za-z0-9])|:_authToken=[ \t]*[A-Za-z0-9_-]{20,}"),
    ("jeton Hugging Face", r"\b(?:hf_|api_org_)[A-Za-z0-9]{30,}(?![A-Za-z0-9])"),
    ("jeton DigitalOcean", r"\bdo[opr]_v1_[a-f0-9]{64}\b"),
    ("jeton Vault", r"\bhv[sbr]\.[A-Za-z0-9_-]{24,}"),
    ("clé secrète age", r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b"),
    ("clé Tailscale", r"\btskey-[a-z]+-[A-Za-z0-9-]{16,}"),
    ("jeton Grafana", r"\b(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,2})"),
    ("clé Postman", r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b"),
    ("jeton Shopify", r"\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}\b"),
    ("jeton Databricks", r"\bdapi[a-f0-9]{32}(?:-\d)?\b"),
    ("jeton Doppler", r"\bdp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}"),
    ("clé Linear", r"\blin_(?:api|oauth)_[A-Za-z0-9]{40}\b"),
    # detect-secrets knows it, but as lower-case hexadecimal it does not wake it up.
    ("clé Mailchimp", r"\b[0-9a-f]{32}-us\d{1,2}\b"),
)
# Every shape holds one of these (``aws`` in any case): a text without any skips the alternation,
# and nothing is compiled.
_STEMS = (
    "PRIVATE KEY", "PuTTY", "AKIA", "ASIA", "ABIA", "ACCA", "ghp_", "gho_", "ghu_", "ghs_", "ghr_",
    "github_pat_", "glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "glcbt-", "glptt-", "sk-", "xox",
    "AIza", "k_live_", "k_test_", "eyJ", "Bearer", "://", "npm_", "_authToken", "hf_", "api_org_",
    "_v1_", "hvs.", "hvb.", "hvr.", "AGE-SECRET-KEY", "tskey-", "glsa_", "glc_", "PMAK-", "shp",
    "dapi", "dp.", "lin_", "-us",
)  # fmt: skip

# A key named as one (« clé de chiffrement : 3f9a… », ``ENCRYPTION_KEY=…``, "secret key is …")
# when its value is hexadecimal of a key's length: 128, 192, 256, 384 or 512 bits. A digest
# (« empreinte sha256 de la clé », "fingerprint", md5…), a public key or a cache key is not one.
_KEY_NAME = (
    r"(?<![A-Za-z0-9])(?i:cl[ée]f?s?|keys?|secrets?|secrète)"
    r"(?:[ \t_-]+(?!(?i:publiques?|public|id|de[ \t]+(?:cache|tri|partition)))[\w'’]+){0,4}"
    r"[ \t]*(?:[:=]|:=|=>|->|→|est|is|vaut)?[ \t]*[\"'`«]?[ \t]*$"
)
_DIGEST = (
    r"(?i)(?<![A-Za-z])(?:sha-?\d*|md5|hash|hach[ée]e?|hachage|fingerprint|empreinte|digest"
    r"|checksum|somme|commit)(?![A-Za-z])"
)
# Every key name holds one of these (in lower case).
_KEY_WORDS = ("cle", "clé", "key", "secr")
_HEX_RUN = r"(?<![0-9A-Za-z])[0-9a-fA-F]{32,128}(?![0-9A-Za-z])"
_KEY_BITS = frozenset({32, 48, 64, 96, 128})
HEX_KEY = "clé secrète en hexadécimal"


def find_shapes(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, kind) of every shaped secret in ``text``."""
    lowered = text.lower()
    if "aws" in lowered or any(stem in text for stem in _STEMS):
        alternation = "|".join(f"(?P<s{i}>{pattern})" for i, (_k, pattern) in enumerate(_SHAPES))
        for match in re.finditer(alternation, text):
            kind = _SHAPES[int(str(match.lastgroup)[1:])][0]
            yield match.start(), match.end(), kind
    for run in re.finditer(_HEX_RUN, text) if any(w in lowered for w in _KEY_WORDS) else ():
        value = run.group(0)
        if len(value) in _KEY_BITS and (value.islower() or value.isupper() or value.isdigit()):
            before = text[text.rfind("\n", 0, run.start()) + 1 : run.start()]
            if re.search(_KEY_NAME, before) and not re.search(_DIGEST, before):
                yield run.start(), run.end(), HEX_KEY
