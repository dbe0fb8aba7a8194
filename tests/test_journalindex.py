"""Ranked journal search: terms and stems, the FTS5 cache and its refresh, failures, recent headers."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import CliResult, journal_fields
from ocmem.formats import journal
from ocmem.home import journalindex
from ocmem.home.atomic import atomic_write
from ocmem.home.journalindex import recent_headers, search
from ocmem.home.paths import Paths
from ocmem.text.searchterms import fold, query_terms, stem, terms, words
from support.faultenv import CAN_MOUNT, IS_ROOT, WHY_NOT, read_only

# --- terms -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "forms",
    [
        ["certificat", "certificats", "certificate", "certificates"],
        ["renouveler", "renouvelé", "renouvellement", "renouvelés", "renew", "renewed"],
        ["expiré", "expirée", "expiration", "expire", "expired", "expires"],
        ["redémarrer", "redémarré", "redémarrés", "restart", "restarted"],
        ["redémarrage", "redémarrages", "reboot"],
        ["sauvegarde", "sauvegardes", "sauvegarder", "backup", "backups"],
        ["configuration", "configurer", "configuré", "configured"],
        ["déploiement", "déployer", "deploy", "deployment", "deployed"],
        ["serveur", "serveurs", "server", "servers"],
        ["installation", "installer", "install", "installed"],
        ["journaux", "journal"],
        ["disque", "disques", "disk", "disks"],
        ["verrou", "lock", "locked", "locks"],
        ["rotation", "rotate", "rotated"],
        ["entries", "entry"],
    ],
)
def test_forms_of_a_word_share_one_stem(forms: list[str]) -> None:
    assert len({tuple(terms(f)) for f in forms}) == 1, {f: terms(f) for f in forms}


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("port", "portail"),
        ("nginx", "node"),
        ("certbot", "certificat"),
        ("docker", "dossier"),
        ("log", "login"),
        ("ipv4", "ipv6"),
        ("502", "503"),
        ("servait", "serveur"),  # Snowball, not a list of endings: no over-conflation
        ("servait", "server"),
        ("portail", "porte"),
    ],
)
def test_different_words_keep_different_stems(a: str, b: str) -> None:
    assert terms(a) != terms(b)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\\#docker \\[nginx\\] \\*important\\*", ["dock", "nginx", "import"]),
        ("a &lt; b &amp;&amp; &eacute;cole &#35;tag", ["b", "ecol", "tag"]),
        (
            "Comment renouveler un certificat expiré sur nginx ?",
            ["renouvel", "certificat", "expir", "nginx"],
        ),
        ("Œuvre CŒUR", ["oeuvr", "coeur"]),
        ("HTTP/2 sur le port 8080", ["http", "2", "port", "8080"]),
    ],
)
def test_terms_of_stored_text(text: str, expected: list[str]) -> None:
    assert terms(text) == expected


def test_a_query_of_stop_words_only_still_searches_them() -> None:
    assert query_terms("le la les") == ["le", "la", "les"]
    assert query_terms("nginx NGINX Nginx") == ["nginx"]


@pytest.mark.parametrize(
    "word",
    ["certificat", "conteneur", "sauvegarde", "erreur", "requête", "tâche", "volume", "image"],
)
def test_a_plural_s_never_changes_the_stem(word: str) -> None:
    assert stem(word + "s") == stem(word)


@given(st.text(max_size=60))
def test_surfaces_name_the_words_of_each_query_stem(text: str) -> None:
    from ocmem.text.searchterms import surfaces

    found = surfaces(text)
    stems = list(dict.fromkeys(terms(text)))
    if stems:  # the stems stored text gets, in order
        assert list(found) == stems
    else:  # only stop-words: each of them is searched
        assert {w for ws in found.values() for w in ws} == set(words(text))
    assert all(w == fold(w) for ws in found.values() for w in ws)


@given(st.from_regex(r"[a-z0-9]{1,20}", fullmatch=True))
def test_stems_are_short_non_empty_ascii(word: str) -> None:
    result = stem(word)
    assert result and result.isascii() and len(result) <= len(word)


# --- a journal on disk -------------------------------------------------------------------------


START = datetime(2026, 1, 5, 9, 0)


def entry(
    i: int,
    titre: str,
    lecon: str = "rien de spécial",
    tags: tuple[str, ...] = ("vps",),
    **fields: str,
) -> journal.Entry:
    values = {
        "titre": titre,
        "tags": list(tags),
        "demande": "une demande",
        "fait": "fait",
        "piege": "aucun",
        "lecon": lecon,
        "resultat": "réussi",
        **fields,
    }
    return journal.entry_from_fields(values, START + timedelta(hours=i), 10)


def write(path: Path, entries: list[journal.Entry], base: str = "") -> str:
    text = base
    for e in entries:
        text = journal.append(text, e)
    atomic_write(path, text)
    return text


@pytest.fixture
def memory_dir(tmp_path: Path) -> Path:
    (tmp_path / ".ocmem").mkdir()
    (tmp_path / "memory").mkdir()
    return tmp_path / "memory"


@pytest.fixture
def index(memory_dir: Path) -> Path:
    return Paths(memory_dir.parent).journal_index


ROUTINE = [
    entry(
        i, f"Redémarrage de nginx n°{i}", "vérifier la config nginx avant de redémarrer", ("nginx",)
    )
    for i in range(30)
]
EPISODE = entry(
    40,
    "Certificat expiré, renouvellement en échec",
    "exclure /.well-known/acme-challenge/ de la redirection HTTPS",
    ("certbot", "nginx"),
    piege="le timer certbot échouait en silence",
)


def titles(found: journalindex.Found) -> list[str]:
    return [h.text.split(" · ")[1] for h in found.hits]


def test_a_question_in_natural_words_finds_the_episode_first(memory_dir: Path, index: Path) -> None:
    path = memory_dir / "journal.md"
    write(path, [*ROUTINE[:15], EPISODE, *ROUTINE[15:]])
    found = search(index, [path], "comment renouveler un certificat expiré sur nginx")
    assert titles(found)[0] == "Certificat expiré, renouvellement en échec"
    assert len(found.hits) == 5 and found.total == 31


def test_hits_are_the_exact_text_of_the_file(memory_dir: Path, index: Path) -> None:
    path = memory_dir / "journal.md"
    text = write(path, [*ROUTINE[:3], EPISODE])
    (hit,) = search(index, [path], "certbot", limit=5).hits
    assert hit.text == journal.blocks(text)[-1].text
    assert hit.ref == EPISODE.ref and hit.file == path


def test_tags_filter_exactly_and_no_words_means_newest(memory_dir: Path, index: Path) -> None:
    path = memory_dir / "journal.md"
    write(path, [*ROUTINE[:10], EPISODE, entry(50, "Réseau", tags=("réseau", "nginx-proxy"))])
    assert titles(search(index, [path], "", ["#certbot"])) == [
        "Certificat expiré, renouvellement en échec"
    ]
    assert titles(search(index, [path], "", ["RESEAU"])) == ["Réseau"]
    assert search(index, [path], "", ["nginx-pro"]).hits == []  # a tag is never a prefix
    newest = search(index, [path], "", [], limit=3)
    assert titles(newest) == [
        "Réseau",
        "Certificat expiré, renouvellement en échec",
        "Redémarrage de nginx n°9",
    ]
    assert newest.total == 12


def test_partial_words_and_equal_scores_newest_first(memory_dir: Path, index: Path) -> None:
    path = memory_dir / "journal.md"
    write(path, ROUTINE[:8])
    assert titles(search(index, [path], "redém", limit=3)) == [
        f"Redémarrage de nginx n°{i}" for i in (7, 6, 5)
    ]
    assert search(index, [path], "zzz").hits == []


def test_escaped_text_is_found_by_its_words(memory_dir: Path, index: Path) -> None:
    path = memory_dir / "journal.md"
    write(
        path,
        [
            *ROUTINE[:3],
            entry(9, "Compose", "lancer \\#docker avec \\*sudo\\* &lt;jamais&gt; en root"),
        ],
    )
    assert titles(search(index, [path], "docker sudo jamais")) == ["Compose"]
    assert search(index, [path], "lt").hits == []


def test_archives_are_searched_and_references_count_the_archive_first(
    memory_dir: Path, index: Path
) -> None:
    """An entry of a minute the month's archive already holds (the clock went back) comes after
    it: the references stay unique across the files, as ``journal.journal_blocks`` reads them."""
    path, archive = memory_dir / "journal.md", memory_dir / "journal-2026-01.md"
    write(path, [EPISODE])
    write(archive, [entry(1, "Ancien certificat", "certificat renouvelé à la main"), EPISODE])
    found = search(index, [path, archive], "certificat")
    assert sorted(titles(found)) == [
        "Ancien certificat",
        "Certificat expiré, renouvellement en échec",
        "Certificat expiré, renouvellement en échec",
    ]
    texts = [path.read_text(), archive.read_text()]
    expected = {(str(b.key), b.text) for b in journal.journal_blocks(texts)}
    assert {(h.ref, h.text) for h in found.hits} == expected
    assert len({h.ref for h in found.hits}) == 3 == found.total


# --- the cache and its refresh -----------------------------------------------------------------


def indexed_ids(index: Path) -> list[int]:
    with sqlite3.connect(index) as db:
        return [row[0] for row in db.execute("SELECT id FROM entries ORDER BY id")]


def test_an_append_indexes_the_tail_only(memory_dir: Path, index: Path) -> None:
    path = memory_dir / "journal.md"
    text = write(path, ROUTINE[:5])
    search(index, [path], "nginx")
    before = indexed_ids(index)
    write(path, [EPISODE], text)
    assert titles(search(index, [path], "certbot")) == [
        "Certificat expiré, renouvellement en échec"
    ]
    after = indexed_ids(index)
    assert after[:4] == before[:4] and len(after) == 6  # the last entry re-read, the rest kept


def test_a_rewritten_journal_is_reindexed(memory_dir: Path, index: Path) -> None:
    """Archiving rewrites the journal: the moved entries are found in their archive, once."""
    path, archive = memory_dir / "journal.md", memory_dir / "journal-2026-01.md"
    text = write(path, [*ROUTINE[:4], EPISODE])
    search(index, [path], "nginx")
    kept, moved = journal.split_for_archive(text, START + timedelta(hours=2))
    atomic_write(archive, journal.merge_archive("", moved["journal-2026-01.md"], "2026-01"))
    atomic_write(path, kept)
    found = search(index, [path, archive], "nginx", limit=10)
    assert found.total == 5
    assert {h.file.name for h in found.hits} == {"journal.md", "journal-2026-01.md"}
    atomic_write(archive, "")
    archive.unlink()
    assert search(index, [path], "nginx", limit=10).total == 3


def test_same_size_rewrite_is_noticed(memory_dir: Path, index: Path) -> None:
    path = memory_dir / "journal.md"
    text = write(path, [entry(1, "Alpha"), entry(2, "Gamma")])
    search(index, [path], "alpha")
    atomic_write(path, text.replace("Alpha", "Bravo"))
    assert titles(search(index, [path], "bravo")) == ["Bravo"]
    assert search(index, [path], "alpha").hits == []


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.write_bytes(b"not a database at all" * 100),
        lambda p: p.write_bytes(p.read_bytes()[:2048] + b"\x00" * 5000),
        lambda p: sqlite3.connect(p).execute("UPDATE meta SET value = '0'").connection.commit(),
        lambda p: sqlite3.connect(p).execute("DROP TABLE entries").connection.commit(),
        lambda p: p.write_bytes(b""),
    ],
    ids=["garbage", "truncated", "old-version", "foreign-schema", "empty"],
)
def test_a_damaged_or_old_index_is_rebuilt_silently(
    memory_dir: Path, index: Path, damage: object
) -> None:
    path = memory_dir / "journal.md"
    write(path, [*ROUTINE[:3], EPISODE])
    search(index, [path], "nginx")
    damage(index)  # type: ignore[operator]
    assert titles(search(index, [path], "certbot")) == [
        "Certificat expiré, renouvellement en échec"
    ]
    assert len(indexed_ids(index)) == 4  # rebuilt in place, usable next time


def test_a_locked_index_falls_back_to_memory(
    memory_dir: Path, index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journalindex, "_BUSY_SECONDS", 0.05)
    path = memory_dir / "journal.md"
    text = write(path, ROUTINE[:3])
    search(index, [path], "nginx")
    write(path, [EPISODE], text)
    holder = sqlite3.connect(index, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        assert titles(search(index, [path], "certbot")) == [
            "Certificat expiré, renouvellement en échec"
        ]
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert len(indexed_ids(index)) == 3  # the file index was left alone


def test_an_unusable_state_folder_writes_nothing(tmp_path: Path) -> None:
    tmp_path = tmp_path / "home"
    (tmp_path / "memory").mkdir(parents=True)
    path = tmp_path / "memory" / "journal.md"
    write(path, [EPISODE])
    (tmp_path / ".ocmem").write_text("a file where the folder should be")
    found = search(Paths(tmp_path).journal_index, [path], "certbot")
    assert titles(found) == ["Certificat expiré, renouvellement en échec"]
    assert sorted(p.name for p in tmp_path.rglob("*")) == [".ocmem", "journal.md", "memory"]


def _sqlite_read_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every index file opened read-only by SQLite (what a read-only home gives a non-root
    user), whoever runs the test: root writes through ``chmod a-w``."""
    connect = sqlite3.connect

    def read_only_connect(database: object, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        if str(database) == ":memory:":
            opened: sqlite3.Connection = connect(":memory:", *args, **kwargs)
        else:
            opened = connect(f"file:{database}?mode=ro", *args, uri=True, **kwargs)
        return opened

    monkeypatch.setattr(sqlite3, "connect", read_only_connect)


@pytest.mark.parametrize("how", ["read-only home", "read-only index"])
def test_a_stale_index_that_cannot_be_written_is_rebuilt_in_memory(
    memory_dir: Path, index: Path, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/robustness.md: reads keep working on a read-only home, even once the journal has
    changed since the index was built (the refresh would have to write it)."""
    path = memory_dir / "journal.md"
    text = write(path, ROUTINE[:3])
    search(index, [path], "nginx")
    write(path, [EPISODE], text)  # the journal changed after the index was built
    before = index.read_bytes()
    with contextlib.ExitStack() as broken:
        if how == "read-only home":
            if IS_ROOT and not CAN_MOUNT:
                pytest.skip(WHY_NOT)
            broken.enter_context(read_only(memory_dir.parent))
        else:
            _sqlite_read_only(broken.enter_context(monkeypatch.context()))
        found = search(index, [path], "certbot nginx")
    assert titles(found)[0] == "Certificat expiré, renouvellement en échec"
    assert found.total == 4 and not found.saved
    assert index.read_bytes() == before  # left as it was: the next writable run refreshes it
    assert search(index, [path], "certbot").saved and len(indexed_ids(index)) == 4


def test_journal_search_on_a_read_only_home_says_one_calm_line(
    home: Path, run_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    for titre in ("Ports docker", "Certificat nginx"):
        assert run_cli("journal", "add", stdin=json.dumps(journal_fields(titre=titre))).code == 0
        assert run_cli("journal", "search", "docker").code == 0  # the index, as of this entry
    index = Paths(home).journal_index
    before = index.read_bytes()
    assert run_cli("journal", "add", stdin=json.dumps(journal_fields(titre="Proxy"))).code == 0
    _sqlite_read_only(monkeypatch)
    result = run_cli("journal", "search", "proxy")
    assert result.code == 0, result.err
    assert "· Proxy ·" in result.out and "1 entrée(s)" in result.out
    assert result.err.splitlines() == [
        f"ocmem : index de recherche non enregistré ({index.parent} en lecture seule ou disque "
        "plein) : reconstruit en mémoire pour cette recherche"
    ]
    assert index.read_bytes() == before


def test_the_index_stays_in_the_state_folder_and_private(memory_dir: Path, index: Path) -> None:
    path = memory_dir / "journal.md"
    write(path, ROUTINE[:3])
    before = sorted(p for p in memory_dir.parent.rglob("*") if ".ocmem" not in p.parts)
    search(index, [path], "nginx")
    assert sorted(p for p in memory_dir.parent.rglob("*") if ".ocmem" not in p.parts) == before
    assert index.stat().st_mode & 0o077 == 0


def test_concurrent_appends_and_searches(memory_dir: Path, index: Path) -> None:
    """One thread appends (atomic rewrites, as ocmem does) while two others search."""
    path = memory_dir / "journal.md"
    write(path, [])
    errors: list[BaseException] = []
    done = threading.Event()

    def appender() -> None:
        text = ""
        for i in range(40):
            text = write(path, [entry(i, f"Tâche {i}", "docker compose")], text)
        done.set()

    def searcher() -> None:
        try:
            while not done.is_set():
                for hit in search(index, [path], "docker").hits:
                    assert hit.text.startswith("## ")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=f) for f in (appender, searcher, searcher)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert search(index, [path], "docker").total == 40
    assert len(indexed_ids(index)) == 40


VOCABULARY = [
    "nginx",
    "docker",
    "certificat",
    "certificats",
    "renouveler",
    "sauvegarde",
    "disque",
    "plein",
    "port",
    "8080",
    "\\#tag",
    "échec",
    "Leçon",
    "git",
    "gamma",
]


@given(
    entries=st.lists(
        st.tuples(
            st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=5),
            st.sampled_from(["docker", "réseau", "vps"]),
        ),
        min_size=1,
        max_size=10,
    ),
    query=st.lists(st.sampled_from([*VOCABULARY, "certif", "zzz", "gam"]), min_size=1, max_size=3),
    tags=st.lists(st.sampled_from(["docker", "reseau"]), max_size=1),
)
def test_search_finds_what_the_plain_definition_finds(
    tmp_path_factory: pytest.TempPathFactory,
    entries: list[tuple[list[str], str]],
    query: list[str],
    tags: list[str],
) -> None:
    """Matches are the entries having one of the query's stems, or a word starting with it when
    it has 4 letters or more; the hits are the best of them, or none: « rien de pertinent »."""
    root = tmp_path_factory.mktemp("prop")
    (root / ".ocmem").mkdir()
    path = root / "journal.md"
    made = [entry(i, f"t{i}", " ".join(words), (tag,)) for i, (words, tag) in enumerate(entries)]
    text = write(path, made)
    stems = query_terms(" ".join(query))
    expected = set()
    for block in journal.blocks(text):
        if tags and tags[0] not in {t.replace("é", "e") for t in block.tags}:
            continue
        have = terms(
            block.text.split("- Résultat")[0]
            .replace("- Demande :", "")
            .replace("- Fait :", "")
            .replace("- Piège :", "")
            .replace("- Leçon :", "")
        )
        if any(h == s or (len(s) >= 4 and h.startswith(s)) for s in stems for h in have):
            expected.add(block.ref)
    found = search(Paths(root).journal_index, [path], " ".join(query), tags, limit=5)
    assert found.total == len(expected)
    refs = [h.ref for h in found.hits]
    if found.nothing_relevant:  # a name no entry mentions, and no entry carries half the query
        assert refs == [] and found.missing
        return
    # by the words alone: the best of the entries having a stem
    assert set(refs) <= expected and len(refs) == min(5, len(expected))


# --- recent headers ----------------------------------------------------------------------------


def test_recent_headers_newest_first_across_the_archives() -> None:
    journal_text = journal.append(journal.append("", entry(10, "Dix")), entry(11, "Onze"))
    archive = journal.append(journal.append("", entry(1, "Un")), entry(2, "Deux"))
    headers = [r.header for r in recent_headers([journal_text, archive], 3)]
    assert headers == [
        f"## {START + timedelta(hours=11):%Y-%m-%d %H:%M} · Onze · #vps",
        f"## {START + timedelta(hours=10):%Y-%m-%d %H:%M} · Dix · #vps",
        f"## {START + timedelta(hours=2):%Y-%m-%d %H:%M} · Deux · #vps",
    ]


def test_recent_headers_are_capped_and_read_archives_only_when_needed() -> None:
    text = ""
    for i in range(25):
        text = journal.append(text, entry(i, f"E{i}"))
    read: list[str] = []

    def texts() -> object:
        yield text
        read.append("archive")
        yield journal.append("", entry(-5, "Vieille"))

    headers = [r.header for r in recent_headers(texts(), 50)]  # type: ignore[arg-type]
    assert (
        len(headers) == 20
        and headers[0].endswith("· E24 · #vps")
        and headers[-1].endswith("· E5 · #vps")
    )
    assert read == []
    assert [r.header.split(" · ")[1] for r in recent_headers(texts(), 1)] == ["E24"]  # type: ignore[arg-type]


def test_recent_headers_skip_what_is_not_a_header() -> None:
    text = (
        journal.JOURNAL_HEADER
        + "\n## Pas une entrée\n\n"
        + entry(1, "Vraie").render()
        + "\n## 2026-13-45 99:99 · faux · #x\n"
    )
    assert [r.header.split(" · ")[1] for r in recent_headers([text], 5)] == ["Vraie"]
    assert recent_headers([""], 5) == [] and recent_headers([text], 0) == []


def test_recent_headers_say_which_entries_are_quarantined() -> None:
    held = entry(2, "Exposée")._replace(exposure="quarantaine : webfetch http://x/doc")
    asked = entry(3, "Demandée")._replace(exposure="exposée, demandée par l'utilisateur : curl x")
    text = journal.append(journal.append(journal.append("", entry(1, "Propre")), held), asked)
    assert [(r.header.split(" · ")[1], r.quarantined) for r in recent_headers([text], 5)] == [
        ("Demandée", False),
        ("Exposée", True),
        ("Propre", False),
    ]


# --- names the journal never mentions, weak matches, other phrasings --------------------------


def test_a_question_naming_what_the_journal_never_mentions_answers_nothing_relevant(
    memory_dir: Path, index: Path
) -> None:
    """« rien de pertinent » says which names no entry mentions; one common word shared is no
    answer either."""
    path = memory_dir / "journal.md"
    write(path, [*ROUTINE[:10], EPISODE])
    found = search(index, [path], "configurer un tunnel wireguard sur nginx avec kubernetes")
    assert found.hits == [] and found.nothing_relevant and found.total == 11
    assert found.missing == ("wireguard", "kubernetes")
    assert search(index, [path], "xqzt").missing == ("xqzt",)
    assert search(index, [path], "le worker Celery").missing == ("Celery",)
    assert titles(search(index, [path], "certificat expiré bizarrement"))[0] == EPISODE.title


def test_a_question_in_other_words_is_shown_weak_not_hidden(memory_dir: Path, index: Path) -> None:
    """Words of the language the journal never uses are the question's wording, not its topic:
    the best entries are shown, marked weak when they carry less than half of the question."""
    path = memory_dir / "journal.md"
    write(path, [*ROUTINE, EPISODE])
    found = search(index, [path], "le minuteur certbot échouait sans bruit")
    assert titles(found)[:1] == [EPISODE.title] and not found.nothing_relevant
    assert EPISODE.ref in found.weak  # « minuteur », « bruit »: half the weight, not in it
    strong = search(index, [path], "le timer certbot échouait en silence")
    assert titles(strong)[:1] == [EPISODE.title] and EPISODE.ref not in strong.weak
    loose = search(index, [path], "une rustine poussée sur la machine du bureau pour nginx")
    assert loose.hits and not loose.nothing_relevant
    assert loose.weak == {h.ref for h in loose.hits}


def test_an_unknown_name_with_most_of_the_question_carried_is_shown(
    memory_dir: Path, index: Path
) -> None:
    path = memory_dir / "journal.md"
    write(path, [*ROUTINE, EPISODE])
    found = search(index, [path], "certbot timer échouait en silence renouvellement letsencrypt")
    assert titles(found)[:1] == [EPISODE.title] and found.missing == ()


@pytest.mark.parametrize(
    ("token", "first", "shaped"),
    [
        ("OpenSearch", False, True),
        ("StoreKit", True, True),
        ("P2028", False, True),
        ("ts2353", False, True),
        ("Celery", False, True),
        ("Celery", True, False),  # the query's first word: a capital says nothing
        ("celery", False, False),
        ("VPN", False, False),  # an acronym: a name only when no dictionary knows it
        ("3h", False, False),
        ("2GB", False, False),
        ("", False, False),
    ],
)
def test_words_written_as_names(token: str, first: bool, shaped: bool) -> None:
    from ocmem.text.searchterms import name_shaped

    assert name_shaped(token, first) is shaped


def test_the_dictionary_knows_words_not_names() -> None:
    from ocmem.text.lexicon import dictionary_words

    known = set(dictionary_words())
    assert {"enferme", "dehors", "rustine", "mouture", "locked", "after", "celery"} <= known
    assert not {"htpasswd", "trivy", "wireguard", "s3fs", "mdadm", "kubernetes"} & known


def test_the_dictionary_is_read_by_the_first_search_that_meets_an_unknown_word(
    memory_dir: Path, index: Path
) -> None:
    """An index is created without it (most searches never need it); the first query with a
    word the journal never uses fills it, once."""
    from ocmem.text.lexicon import dictionary_words

    def stored() -> int:
        with contextlib.closing(sqlite3.connect(index)) as db:
            return int(db.execute("SELECT count(*) FROM dictionary").fetchone()[0])

    path = memory_dir / "journal.md"
    write(path, [*ROUTINE, EPISODE])
    assert titles(search(index, [path], "certificat certbot"))[:1] == [EPISODE.title]
    assert stored() == 0
    assert titles(search(index, [path], "certificat certbot bizarrement"))[:1] == [EPISODE.title]
    assert stored() == len(dictionary_words()) > 200_000
    search(index, [path], "certbot sous kubernetes")
    assert stored() == len(dictionary_words())


def test_other_phrasings_are_fused_into_one_ranking(memory_dir: Path, index: Path) -> None:
    """The question and its alternatives each rank; an entry only one of them finds is shown,
    and « rien de pertinent » needs every phrasing to say it."""
    path = memory_dir / "journal.md"
    other = entry(50, "Sauvegarde restic vers S3 en échec", "restic unlock après un arrêt brutal")
    write(path, [*ROUTINE, EPISODE, other])
    found = search(index, [path], "certificat expiré", alternatives=["restic unlock"], limit=5)
    assert {EPISODE.title, other.title} <= set(titles(found))
    assert titles(search(index, [path], "wireguard", alternatives=["restic"]))[:1] == [other.title]
    assert search(index, [path], "wireguard", alternatives=["kubernetes"]).nothing_relevant


def test_the_footer_counts_the_entries_shown(memory_dir: Path, index: Path) -> None:
    """Issue 34: « 1 entrée(s) » under two entries (the total counted only the entries holding
    the question's own words)."""
    from ocmem.services.journalsearch import _search_footer

    path = memory_dir / "journal.md"
    write(path, [*ROUTINE, EPISODE])
    found = search(index, [path], "certificat expiré", alternatives=["nginx redémarrage"])
    assert len(found.hits) == 5 and found.total >= 5
    assert _search_footer(found, True).startswith(f"5 sur {found.total} entrées")


# --- the rank --------------------------------------------------------------------------------


def test_snowball_stems_do_not_conflate_serving_and_server(memory_dir: Path, index: Path) -> None:
    path = memory_dir / "journal.md"
    write(
        path,
        [
            *ROUTINE[:5],
            entry(60, "Certificat", "nginx servait l'ancien certificat"),
            entry(61, "Serveur saturé", "le serveur manque de place"),
        ],
    )
    assert titles(search(index, [path], "serveur")) == ["Serveur saturé"]


def test_names_the_stemmer_would_cut_down_stay_whole(memory_dir: Path, index: Path) -> None:
    """Snowball stems « gitea » to « git » and « redis » to « red »: kept whole, a question
    about git does not find the gitea entries."""
    path = memory_dir / "journal.md"
    write(
        path,
        [
            *ROUTINE[:5],
            entry(60, "Mise à jour de gitea", "gitea 1.22, sauvegarde avant"),
            entry(61, "Historique git réécrit", "git filter-repo sur le dépôt"),
            entry(62, "Cache redis vidé", "redis-cli flushall"),
        ],
    )
    assert titles(search(index, [path], "git")) == ["Historique git réécrit"]
    assert titles(search(index, [path], "gitea")) == ["Mise à jour de gitea"]
    assert titles(search(index, [path], "redis")) == ["Cache redis vidé"]


def test_the_rank_prefers_an_entry_carrying_more_of_the_query() -> None:
    from ocmem.text.searchterms import coverage, final

    assert final(10.0, 0.9) > final(14.0, 0.5) > final(14.0, 0.4) > 0
    words, frequency = ["rare", "common"], {"rare": 1, "common": 50}
    assert (
        coverage(words, frequency, 100, {"rare"})
        > 0.5
        > coverage(words, frequency, 100, {"common"})
    )
    assert coverage(words, frequency, 100, {"rarest"}) == coverage(words, frequency, 100, {"rare"})


def test_a_three_letter_stem_matches_only_itself(memory_dir: Path, index: Path) -> None:
    """A stem of 3 letters is a word: « php » is not the beginning of « phpmyadmin », nor « gam »
    of « gamma »; « gamm » is."""
    path = memory_dir / "journal.md"
    write(
        path,
        [
            *ROUTINE,
            entry(41, "Accès à phpmyadmin", "phpmyadmin derrière une authentification"),
            entry(42, "Workers php saturés", "pm.max_children de php-fpm relevé"),
            entry(43, "Canal gamma du moniteur", "réglage gamma"),
        ],
    )
    assert titles(search(index, [path], "php")) == ["Workers php saturés"]
    assert titles(search(index, [path], "gam")) == []
    assert titles(search(index, [path], "gamm")) == ["Canal gamma du moniteur"]
    assert titles(search(index, [path], "phpmyadmin")) == ["Accès à phpmyadmin"]


def test_status_counts_entries_without_reading_the_journal_whole(
    memory_dir: Path, index: Path
) -> None:
    """Issue 34: `status` on a 100 000-entry journal took a second parsing it. The index knows
    the count when it describes the file as it is; else the journal's header lines are counted
    as bytes, and a « ## » line that is no header makes it look for damage."""
    path = memory_dir / "journal.md"
    write(path, [*ROUTINE[:3], EPISODE], base="# Journal\n\n## Notes à part\n")
    assert journalindex.recorded_count(index, path) is None  # no index yet
    assert journalindex.count_entries(path.read_bytes()) == (4, True)  # the « ## » line: suspect
    search(index, [path], "certbot")
    assert journalindex.recorded_count(index, path) == 4  # from the index
    with path.open("a", encoding="utf-8") as handle:
        handle.write("\n" + entry(50, "Ajoutée à la main").render())
    assert journalindex.recorded_count(index, path) is None  # stale index: read the file
    assert journalindex.count_entries(path.read_bytes())[0] == 5
    assert journalindex.count_entries(b"") == (0, False)
    assert journalindex.count_entries(("## 2026-01-05 09:00 · é · #a\n").encode()) == (1, False)
    assert journalindex.count_entries(b"## 2026-01-05 09:00 \xc2\xb7 x \xff") == (1, True)
