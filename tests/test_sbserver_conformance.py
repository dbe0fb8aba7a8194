"""Conformance suite for ``tests/support/sbserver.py`` (``FakeSilverBullet``).

Each test pins one behaviour of SilverBullet's ``/.fs`` HTTP API as documented in
``docs/silverbullet.md`` (cited as "sb §N"), and is written against ``SBClient``, a small
httpx client talking real HTTP.

Tests taking the ``target`` (or ``authed_target``) fixture run against the fake and,
when ``OCMEM_TEST_SILVERBULLET_URL`` is set (plus ``OCMEM_TEST_SILVERBULLET_TOKEN`` if
that server has auth), against that real SilverBullet (Rust 2.10+) as well.  Real runs
create files only below a fresh ``ocmem-conformance-<random>/`` folder of the space and
DELETE them afterwards; only this suite does that, the ocmem client never sends DELETE.
Tests that need fault hooks, server configuration or disk access run on the fake only.
"""

from __future__ import annotations

import gzip
import json
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlsplit

import httpx
import pytest

from ocmem.trial.standin import Standin
from support.sbclient import SBClient, Target, real_target
from support.sbserver import (
    BUNDLED_TIMESTAMP_MS,
    NOT_FOUND_BODY,
    FakeSilverBullet,
    MsClock,
    http_date,
)

MS_2001 = 1_000_000_000_000
MS_2020 = 1_577_836_800_000
_TLS = ssl.create_default_context()  # built once: httpx would load the CA store per client


def _targets(
    request: pytest.FixtureRequest, token: str | None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Target]:
    """Yield the fake (with ``token``) or the real server; for the real one a ``token``
    only says that auth is required, the token used is ``OCMEM_TEST_SILVERBULLET_TOKEN``."""
    if request.param == "real":
        target = real_target(token_required=token is not None)
        try:
            yield target
        finally:
            target.cleanup()
            target.client.close()
        return
    if request.param == "essai":
        space = tmp_path_factory.mktemp("standin")
        with Standin(space, token=token) as standin:
            client = SBClient(standin.url, token)
            yield Target(client, None)  # as a real server: only what goes over HTTP
            client.close()
        return
    with FakeSilverBullet(token=token) as sb:
        client = SBClient(sb.url, token)
        yield Target(client, sb)
        client.close()


# "essai": the small stand-in ``ocmem essai`` ships (ocmem.trial.standin), held to the same rules.
TARGETS = ["fake", "essai", pytest.param("real", marks=pytest.mark.real_silverbullet)]


@pytest.fixture(params=TARGETS)
def target(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Target]:
    """An open server (the real one is used with its token, if any)."""
    yield from _targets(request, None, tmp_path_factory)


@pytest.fixture(params=TARGETS)
def authed_target(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Target]:
    """A server with Bearer auth on; the client holds the right token."""
    yield from _targets(request, "s3cret-token", tmp_path_factory)


@pytest.fixture
def sb() -> Iterator[FakeSilverBullet]:
    """An open fake server with a temporary space."""
    with FakeSilverBullet() as server:
        yield server


@pytest.fixture
def client(sb: FakeSilverBullet) -> Iterator[SBClient]:
    """A client of ``sb``."""
    sb_client = SBClient(sb.url, sb.token)
    yield sb_client
    sb_client.close()


# --------------------------------------------------------------------------- sb §4 listing


def test_listing_shape_and_headers(target: Target) -> None:
    """``GET /.fs`` and ``/.fs/``: JSON array of FileMeta, ms ints, X-Space-Path (sb §4)."""
    path = target.path("notes/one.md")
    assert target.client.put(path, "# One\n").status_code == 200
    for url_path in ("/.fs", "/.fs/"):
        response = target.client.request("GET", url_path)
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        assert response.headers["cache-control"] == "no-cache"
        assert response.headers["x-space-path"]
        entry = {e["name"]: e for e in response.json()}[path]
        assert set(entry) == {"name", "created", "lastModified", "contentType", "size", "perm"}
        assert isinstance(entry["lastModified"], int) and entry["lastModified"] > MS_2020
        assert isinstance(entry["created"], int) and entry["created"] > MS_2020
        assert entry["contentType"] == "text/markdown"
        assert entry["size"] == len(b"# One\n")
        assert entry["perm"] == "rw"


def test_listing_skips_dot_paths_and_extensionless_files(target: Target) -> None:
    """Dot-files, dot-dirs at any depth and extension-less files are not listed (sb §4)."""
    visible = ["visible.md", "deep/er/page.md", "trailingdot."]
    hidden = [".hidden.md", ".dotdir/inside.md", "deep/.dotdir/inside.md", "noext", "deep/noext"]
    for name in visible + hidden:
        assert target.client.put(target.path(name), "x").status_code == 200
    listed = {n for n in target.client.names() if n.startswith(target.scratch + "/")}
    assert listed == {target.path(name) for name in visible}
    assert target.client.get(target.path(".hidden.md")).text == "x"


def test_listing_honours_gitignore_and_space_ignore(tmp_path: Path) -> None:
    """The root ``.gitignore`` and ``SB_SPACE_IGNORE`` hide matching paths (sb §4)."""
    (tmp_path / ".gitignore").write_text(
        "# comment\n*.tmp.md\nbuild/\n/Anchored.md\n**/secret/**\ndrafts/*\n!drafts/keep.md\n"
    )
    with FakeSilverBullet(tmp_path, space_ignore="Archive\n") as server:
        for name in [
            "a.tmp.md",
            "sub/b.tmp.md",
            "build/out.md",
            "sub/build/out.md",
            "Anchored.md",
            "sub/Anchored.md",
            "x/secret/y/z.md",
            "drafts/gone.md",
            "drafts/keep.md",
            "Archive/old.md",
            "sub/Archive",
            "kept.md",
        ]:
            server.write(name, "x")
        names = {m.name for m in server.listing()}
        assert names == {"sub/Anchored.md", "drafts/keep.md", "kept.md"}
        client = SBClient(server.url, None)
        assert set(client.names()) == names
        assert client.get("build/out.md").status_code == 200  # hidden, not forbidden
        client.close()


def test_listing_ignores_x_sync_mode(target: Target) -> None:
    """Rust ignores ``X-Sync-Mode``: the listing works without it (sb §2)."""
    response = target.client.listing(sync_mode=False)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"


def test_go_flavor_listing_needs_x_sync_mode() -> None:
    """Go 2.1-2.9 redirects a listing without ``X-Sync-Mode`` to ``/`` with 307 (sb §2)."""
    with FakeSilverBullet(flavor="go") as server:
        client = SBClient(server.url, None)
        bare = client.listing(sync_mode=False)
        assert bare.status_code == 307
        assert bare.headers["location"] == "/"
        assert client.listing().status_code == 200
        client.close()


# --------------------------------------------------------------------------- sb §5 GET


def test_get_returns_body_and_meta_headers(target: Target) -> None:
    """A full GET carries the body and the X-* metadata headers (sb §5)."""
    path = target.path("page.md")
    assert target.client.put(path, "hello\n").status_code == 200
    entry = target.client.names()[path]
    response = target.client.get(path)
    assert response.status_code == 200
    assert response.content == b"hello\n"
    headers = response.headers
    assert headers["content-type"] == "text/markdown"
    assert headers["x-content-type"] == "text/markdown"
    assert headers["x-content-length"] == "6"
    assert headers["x-permission"] == "rw"
    assert int(headers["x-last-modified"]) == entry["lastModified"]
    assert int(headers["x-created"]) == entry["created"]
    assert headers["last-modified"] == http_date(int(headers["x-last-modified"]))
    assert headers["cache-control"] == "no-cache"
    assert "Accept" in headers.get_list("vary")


def test_head_is_get_without_body(target: Target) -> None:
    """HEAD is routed to the GET handler; the body is stripped (sb §5)."""
    path = target.path("head.md")
    target.client.put(path, "twelve bytes")
    response = target.client.request("HEAD", SBClient.fs_url(path))
    assert response.status_code == 200
    assert response.content == b""
    assert response.headers["x-content-length"] == "12"


def test_accept_octet_stream_forces_content_type(target: Target) -> None:
    """``Accept: application/octet-stream`` forces that Content-Type (sb §5)."""
    path = target.path("octet.md")
    target.client.put(path, "x")
    response = target.client.get(path, {"Accept": "application/octet-stream"})
    assert response.headers["content-type"] == "application/octet-stream"
    assert response.headers["x-content-type"] == "text/markdown"


@pytest.mark.parametrize("value", ["true", "false"])
def test_x_get_meta_probe(target: Target, value: str) -> None:
    """``X-Get-Meta`` with any value: headers only, ``no-store``, no Last-Modified (sb §5)."""
    path = target.path("probe.md")
    target.client.put(path, "abc")
    response = target.client.get(path, {"X-Get-Meta": value})
    assert response.status_code == 200
    assert response.content == b""
    assert response.headers["x-content-length"] == "3"
    assert response.headers["x-permission"] == "rw"
    assert response.headers["cache-control"] == "no-store"
    assert int(response.headers["x-last-modified"]) > MS_2020
    assert "last-modified" not in response.headers


def test_if_modified_since_is_an_exact_string_match(target: Target) -> None:
    """``If-Modified-Since`` equal to ``Last-Modified`` gives 304; anything else 200 (sb §5)."""
    path = target.path("ims.md")
    target.client.put(path, "cached")
    stamp = target.client.get(path).headers["last-modified"]
    not_modified = target.client.get(path, {"If-Modified-Since": stamp})
    assert not_modified.status_code == 304
    assert not_modified.content == b""
    assert not_modified.headers["last-modified"] == stamp
    later = stamp.replace(" GMT", " +0000")  # same instant, other spelling
    assert target.client.get(path, {"If-Modified-Since": later}).status_code == 200
    stale = "Tue, 01 Jan 1980 00:00:00 GMT"
    assert target.client.get(path, {"If-Modified-Since": stale}).content == b"cached"


def test_go_flavor_has_no_last_modified_nor_304() -> None:
    """Go 2.9 sends no ``Last-Modified`` and ignores ``If-Modified-Since`` (sb §5)."""
    with FakeSilverBullet(flavor="go") as server:
        server.write("a.md", "x", mtime_ms=MS_2020)
        client = SBClient(server.url, None)
        response = client.get("a.md", {"If-Modified-Since": http_date(MS_2020)})
        assert response.status_code == 200
        assert "last-modified" not in response.headers
        client.close()


def test_missing_file_is_404(target: Target) -> None:
    """A missing file is 404 ``404 page not found\\n``, probe included (sb §8)."""
    path = target.path("nope.md")
    response = target.client.get(path)
    assert response.status_code == 404
    assert response.content == NOT_FOUND_BODY
    assert target.client.meta(path).status_code == 404


def test_directory_is_404_but_probe_is_200(target: Target) -> None:
    """GET of a directory is 404, yet ``X-Get-Meta`` on it answers 200 (sb §8)."""
    target.client.put(target.path("dir/x.md"), "x")
    assert target.client.get(target.path("dir")).status_code == 404
    assert target.client.meta(target.path("dir")).status_code == 200


def test_gzip_when_accepted(target: Target) -> None:
    """GETs are gzipped on request; ``X-Content-Length`` stays uncompressed (sb §2)."""
    path = target.path("big.md")
    body = ("- a line of text\n" * 200).encode()
    target.client.put(path, body)
    url = target.client.base_url + SBClient.fs_url(path)
    headers = {"Accept-Encoding": "gzip", **target.client.request_headers()}
    with target.client.http.stream("GET", url, headers=headers) as response:
        raw = b"".join(response.iter_raw())
    assert response.headers["content-encoding"] == "gzip"
    assert response.headers["x-content-length"] == str(len(body))
    assert gzip.decompress(raw) == body
    assert target.client.get(path, {"Accept-Encoding": "gzip"}).content == body  # httpx decodes
    plain = target.client.get(path, {"Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers
    assert "accept-encoding" in plain.headers.get_list("vary")
    target.client.put(target.path("small.md"), "tiny")
    tiny = target.client.get(target.path("small.md"), {"Accept-Encoding": "gzip"})
    assert "content-encoding" not in tiny.headers  # under 32 bytes: never compressed


def test_percent_encoded_paths_round_trip(target: Target) -> None:
    """Paths are percent-decoded, with no Unicode normalization (sb §9)."""
    path = target.path("Décisions/my file #1?.md")
    assert target.client.put(path, "accent").status_code == 200
    assert path in target.client.names()
    assert target.client.get(path).text == "accent"
    encoded_slash = "/.fs/" + quote(path, safe="")  # %2F means the same path
    assert target.client.request("GET", encoded_slash).text == "accent"


def test_invalid_utf8_path_is_400(target: Target) -> None:
    """A path that is not UTF-8 once decoded is rejected with 400 (sb §8)."""
    response = target.client.request("GET", f"/.fs/{target.scratch}/%FF.md")
    assert response.status_code == 400


# --------------------------------------------------------------------------- sb §6 PUT


def test_put_creates_parents_and_answers_ok_with_meta(target: Target) -> None:
    """PUT creates parent folders, answers 200 ``OK`` with the new meta (sb §6)."""
    path = target.path("a/b/c/new.md")
    response = target.client.put(path, "created")
    assert response.status_code == 200
    assert response.text == "OK"
    assert response.headers["x-content-length"] == "7"
    assert response.headers["x-permission"] == "rw"
    assert response.headers["cache-control"] == "no-store"
    overwrite = target.client.put(path, "again!!!")
    assert overwrite.status_code == 200
    assert overwrite.headers["x-content-length"] == "8"
    assert target.client.get(path).text == "again!!!"


def test_put_x_last_modified_sets_mtime(target: Target) -> None:
    """A positive request ``X-Last-Modified`` becomes the file's mtime (sb §6)."""
    path = target.path("stamped.md")
    stamp = 1_700_000_000_123
    response = target.client.put(path, "x", {"X-Last-Modified": str(stamp)})
    assert int(response.headers["x-last-modified"]) == stamp
    assert target.client.names()[path]["lastModified"] == stamp
    fetched = target.client.get(path)
    assert int(fetched.headers["x-last-modified"]) == stamp
    assert fetched.headers["last-modified"] == http_date(stamp)


def test_put_without_x_last_modified_uses_server_time(target: Target) -> None:
    """Without (or with a zero) ``X-Last-Modified`` the server stamps its own time (sb §6)."""
    path = target.path("now.md")
    target.client.put(path, "old", {"X-Last-Modified": str(MS_2001)})
    for headers in ({}, {"X-Last-Modified": "0"}):
        response = target.client.put(path, "new", headers)
        assert int(response.headers["x-last-modified"]) > MS_2020


def test_put_uses_the_controllable_clock(sb: FakeSilverBullet, client: SBClient) -> None:
    """The fake stamps PUTs with ``sb.clock``; listing and headers agree (sb §6)."""
    sb.clock.set(1_750_000_000_000)
    first = client.put("a.md", "one")
    second = client.put("b.md", "two")
    assert first.headers["x-last-modified"] == second.headers["x-last-modified"]
    assert int(first.headers["x-last-modified"]) == 1_750_000_000_000
    assert sb.clock.advance(5) == 1_750_000_000_005
    third = client.put("a.md", "three")
    assert int(third.headers["x-last-modified"]) == 1_750_000_000_005
    names = client.names()
    assert names["a.md"]["lastModified"] == 1_750_000_000_005
    assert names["b.md"]["lastModified"] == 1_750_000_000_000
    assert sb.meta("a.md").last_modified == 1_750_000_000_005


def test_created_is_kept_across_overwrites(sb: FakeSilverBullet, client: SBClient) -> None:
    """``X-Created`` is the birth time: kept on overwrite, renewed on re-creation (sb §4)."""
    sb.clock.set(MS_2020)
    assert client.put("c.md", "one").headers["x-created"] == str(MS_2020)
    sb.clock.set(MS_2020 + 1_000)
    overwrite = client.put("c.md", "two")
    assert (overwrite.headers["x-created"], overwrite.headers["x-last-modified"]) == (
        str(MS_2020),
        str(MS_2020 + 1_000),
    )
    assert sb.write("c.md", "human").created == MS_2020
    client.delete("c.md")
    sb.clock.set(MS_2020 + 2_000)
    assert client.put("c.md", "three").headers["x-created"] == str(MS_2020 + 2_000)


def test_same_ms_writes_are_indistinguishable_by_timestamp(
    sb: FakeSilverBullet, client: SBClient
) -> None:
    """Two writes in one ms with the same size leave identical metadata (sb §10)."""
    sb.clock.freeze()
    before = client.put("race.md", "AAAA")
    sb.write("race.md", "BBBB")  # the human, same millisecond
    after = client.meta("race.md")
    for header in ("x-last-modified", "x-content-length"):
        assert before.headers[header] == after.headers[header]
    assert client.get("race.md").text == "BBBB"


def test_put_onto_directory_or_under_file_is_500(target: Target) -> None:
    """Writing over a directory, or below a file, fails with 500 (sb §8)."""
    target.client.put(target.path("folder/x.md"), "x")
    onto_dir = target.client.put(target.path("folder"), "y")
    assert onto_dir.status_code == 500
    assert onto_dir.text.startswith("Could not write file:")
    below_file = target.client.put(target.path("folder/x.md/child.md"), "z")
    assert below_file.status_code == 500


def test_read_only_refuses_writes_with_403(tmp_path: Path) -> None:
    """``SB_READ_ONLY``: PUT/DELETE 403, ``/.config`` says so, perm stays rw (sb §8, §12)."""
    with FakeSilverBullet(tmp_path, read_only=True) as server:
        server.write("kept.md", "x")
        client = SBClient(server.url, None)
        put = client.put("kept.md", "y")
        assert put.status_code == 403
        assert put.text == "Read-only: Cannot write file kept.md: read-only mode"
        delete = client.delete("kept.md")
        assert delete.status_code == 403
        assert delete.text == "Read-only: Cannot delete file kept.md: read-only mode"
        assert client.request("GET", "/.config").json()["readOnly"] is True
        assert client.names()["kept.md"]["perm"] == "rw"
        assert client.get("kept.md").headers["x-permission"] == "rw"
        assert server.read("kept.md") == "x"
        client.close()


def test_go_flavor_write_refusal_is_500() -> None:
    """Go 2.1-2.9 answers a refused write with 500 ``Write failed`` (sb §8)."""
    with FakeSilverBullet(flavor="go", read_only=True) as server:
        client = SBClient(server.url, None)
        response = client.put("a.md", "x")
        assert response.status_code == 500
        assert response.text == "Write failed\n"
        client.close()


# --------------------------------------------------------------------------- sb §7 DELETE


def test_delete_removes_file_then_404(target: Target) -> None:
    """DELETE answers ``OK``, the file is gone, a second DELETE is 404 (sb §7)."""
    path = target.path("gone/soon.md")
    target.client.put(path, "x")
    deleted = target.client.delete(path)
    assert deleted.status_code == 200
    assert deleted.text == "OK"
    assert target.client.get(path).status_code == 404
    assert target.client.delete(path).status_code == 404
    if target.fake is not None:
        assert not (target.fake.space / target.scratch).exists()  # empty parents removed


def test_delete_of_directory_is_500(target: Target) -> None:
    """DELETE of a directory path fails with 500 (sb §8)."""
    target.client.put(target.path("d/x.md"), "x")
    assert target.client.delete(target.path("d")).status_code == 500


# --------------------------------------------------------------------------- sb §8-9 paths


def test_paths_outside_the_space(target: Target) -> None:
    """A ``..`` component or an absolute path: GET 404, PUT/DELETE 403 (sb §8, §9).

    The probes point back into the scratch folder, so a server that wrongly accepted
    them would still write inside it.
    """
    dotdot = f"/.fs/{target.scratch}/%2E%2E/{target.scratch}/escape.md"
    assert target.client.request("GET", dotdot).status_code == 404
    assert target.client.request("GET", dotdot, headers={"X-Get-Meta": "1"}).status_code == 404
    put = target.client.request("PUT", dotdot, content=b"x")
    assert (put.status_code, put.text) == (403, "Path not in space")
    delete = target.client.request("DELETE", dotdot)
    assert (delete.status_code, delete.text) == (403, "Path not in space")
    target.client.written.add(target.path("escape.md"))
    space_path = target.client.listing().headers["x-space-path"]
    absolute = "/.fs/" + quote(f"{space_path}/{target.scratch}/absolute.md", safe="/")
    target.client.written.add(target.path("absolute.md"))
    assert absolute.startswith("/.fs//")
    assert target.client.request("GET", absolute).status_code == 404
    assert target.client.request("PUT", absolute, content=b"x").status_code == 403


def test_other_methods_are_405(target: Target) -> None:
    """Methods other than GET/PUT/DELETE on ``/.fs/x`` are 405 (sb §2)."""
    response = target.client.request("POST", SBClient.fs_url(target.path("x.md")), content=b"")
    assert response.status_code == 405


# --------------------------------------------------------------------------- sb §2-3, §12


def test_ping_and_config(target: Target) -> None:
    """``/.ping`` answers ``OK`` with version and space path; ``/.config`` is JSON (sb §12)."""
    ping = target.client.request("GET", "/.ping", auth=False)
    assert ping.status_code == 200
    assert ping.text == "OK"
    assert ping.headers["x-server-version"]
    config = target.client.request("GET", "/.config")
    assert config.status_code == 200
    body = config.json()
    assert isinstance(body["readOnly"], bool)
    assert body["spaceFolderPath"] == ping.headers["x-space-path"]
    assert isinstance(body["indexPage"], str)


def test_spa_fallback_answers_html(target: Target) -> None:
    """Unmatched GETs, e.g. a wrong URL prefix, get the HTML shell with 200 (sb §2)."""
    for url_path in ("/some/page", "/wrong-prefix/.fs", "/wrong-prefix/.fs/x.md"):
        response = target.client.request("GET", url_path)
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/html")
        assert "<html" in response.text.lower()


def test_unauthenticated_requests_get_401(authed_target: Target) -> None:
    """Without the right Bearer: 401, ``Location: <prefix>/.auth``, ``Unauthorized`` (sb §3)."""
    client = authed_target.client
    prefix = urlsplit(client.base_url).path  # a real server may run under SB_URL_PREFIX
    path = SBClient.fs_url(authed_target.path("x.md"))
    for method, url_path in [
        ("GET", "/.fs"),
        ("GET", path),
        ("PUT", path),
        ("DELETE", path),
        ("POST", path),
        ("GET", "/.config"),
    ]:
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            response = client.request(method, url_path, headers=headers, auth=False)
            assert response.status_code == 401, (method, url_path, headers)
            assert response.headers["location"] == f"{prefix}/.auth"
            assert response.text == "Unauthorized"
            if method == "POST":  # axum still names the allowed methods
                assert response.headers["allow"] == "GET,HEAD,PUT,DELETE"
    assert client.request("GET", "/.ping", auth=False).status_code == 200
    assert client.listing().status_code == 200


def test_unauthenticated_page_navigation(tmp_path: Path) -> None:
    """Auth on: page GETs redirect to login, ``.md`` GETs are 401 (sb §3, bundle.rs)."""
    with FakeSilverBullet(tmp_path, token="t") as server:
        client = SBClient(server.url, None)
        page = client.request("GET", "/Some Page")
        assert page.status_code == 302
        # upstream re-encodes the raw path's own "%" (FROM_SET in bundle.rs)
        assert page.headers["location"] == "/.auth?from=/Some%2520Page"
        assert client.request("GET", "/Some.md").status_code == 401
        assert client.request("GET", "/").status_code == 200
        assert client.request("GET", "/.auth").headers["content-type"] == "text/html"
        client.close()
    with FakeSilverBullet(tmp_path) as open_server:
        open_client = SBClient(open_server.url, None)
        assert open_client.request("GET", "/.auth").status_code == 403
        open_client.close()


def test_url_prefix(tmp_path: Path) -> None:
    """With ``SB_URL_PREFIX`` the API lives at ``<prefix>/.fs`` (sb §2, dispatch.rs)."""
    with FakeSilverBullet(tmp_path, url_prefix="sb/", token="t") as server:
        assert server.url.endswith("/sb")
        server.write("a.md", "x")
        client = SBClient(server.url, "t")
        assert set(client.names()) == {"a.md"}
        unauth = client.listing(auth=False)
        assert (unauth.status_code, unauth.headers["location"]) == (401, "/sb/.auth")
        bare = SBClient(server.origin, "t")
        outside = bare.listing()
        assert outside.status_code == 404
        assert outside.headers["content-type"] == "text/html"
        slashless = bare.request("GET", "/sb")
        assert (slashless.status_code, slashless.headers["location"]) == (307, "/sb/")
        assert server.requests[-1].path == "/sb"
        assert server.requests_matching("GET", "/.fs")[0].fs_path is None
        client.close()
        bare.close()


# --------------------------------------------------------------------------- bundled files


def test_bundled_files_are_read_only_underlay(tmp_path: Path) -> None:
    """``base_fs`` files are listed ``ro``, readable, and refuse writes with 403 (sb §2, §4)."""
    bundled = {"Library/Std/Config.md": "# Std\n"}
    with FakeSilverBullet(tmp_path, bundled=bundled) as server:
        client = SBClient(server.url, None)
        entry = client.names()["Library/Std/Config.md"]
        assert (entry["perm"], entry["lastModified"]) == ("ro", BUNDLED_TIMESTAMP_MS)
        response = client.get("Library/Std/Config.md")
        assert (response.text, response.headers["x-permission"]) == ("# Std\n", "ro")
        put = client.put("Library/Std/Config.md", "mine")
        assert put.status_code == 403
        assert put.text == "Read-only: Cannot write file Library/Std/Config.md: read-only"
        assert client.delete("Library/Std/Config.md").status_code == 403
        server.write("Library/Std/Config.md", "shadow")  # a disk copy wins
        assert client.names()["Library/Std/Config.md"]["perm"] == "rw"
        assert client.put("Library/Std/Config.md", "mine").status_code == 200
        client.close()


# --------------------------------------------------------------------------- races (sb §10)


def test_torn_read_by_default_truncates_body(sb: FakeSilverBullet, client: SBClient) -> None:
    """A torn read: headers from the stat, body cut short (sb §5, §10)."""
    sb.write("t.md", "0123456789")
    sb.tear_next_read("t.md")
    torn = client.get("t.md")
    assert torn.headers["x-content-length"] == "10"
    assert torn.content == b"01234"
    assert client.get("t.md").content == b"0123456789"  # one-shot


def test_torn_read_with_newer_body(sb: FakeSilverBullet, client: SBClient) -> None:
    """A torn read can serve a newer body under the old headers (sb §5)."""
    old = sb.write("t.md", "old", mtime_ms=MS_2020)
    sb.tear_next_read("t.md", body="newer content", times=2)
    for _ in range(2):
        torn = client.get("t.md")
        assert torn.text == "newer content"
        assert int(torn.headers["x-last-modified"]) == old.last_modified
        assert torn.headers["x-content-length"] == "3"
    assert client.get("t.md").text == "old"


def test_non_atomic_write_is_visible_mid_way(sb: FakeSilverBullet, client: SBClient) -> None:
    """PUT truncates then writes in place, so a concurrent read sees half a file (sb §6, §10)."""
    sb.write("j.md", "previous content")
    hold = sb.hold_next_write("j.md", after_bytes=5)
    results: list[int] = []
    writer = threading.Thread(
        target=lambda: results.append(
            httpx.put(f"{sb.url}/.fs/j.md", content=b"NEW CONTENT", verify=_TLS).status_code
        )
    )
    writer.start()
    assert hold.wait_held()
    assert sb.read("j.md") == "NEW C"
    partial = client.get("j.md")
    assert (partial.text, partial.headers["x-content-length"]) == ("NEW C", "5")
    hold.release()
    writer.join(timeout=5)
    assert results == [200]
    assert client.get("j.md").text == "NEW CONTENT"


def test_hook_between_probe_and_put(sb: FakeSilverBullet, client: SBClient) -> None:
    """The lost-update window between a meta probe and the PUT (sb §6)."""
    sb.write("inbox.md", "base\n")
    seen: list[str] = []

    def human_edit(path: str) -> None:
        seen.append(path)
        sb.write(path, "base\nhuman line\n")

    sb.on_probe_before_put("inbox.md", human_edit)
    client.put("inbox.md", "no probe yet\n")  # not armed: no probe before this PUT
    assert seen == []
    assert client.meta("inbox.md").status_code == 200
    client.put("inbox.md", "base\nours\n")
    assert seen == ["inbox.md"]
    assert sb.read("inbox.md") == "base\nours\n"  # the human's line was overwritten
    client.meta("inbox.md")
    client.put("inbox.md", "again\n")
    assert seen == ["inbox.md"]  # one-shot
    sb.on_probe_before_put("inbox.md", human_edit, times=2, require_probe=False)
    client.put("inbox.md", "unprobed\n")
    client.put("inbox.md", "unprobed\n")
    client.put("inbox.md", "unprobed\n")
    assert seen == ["inbox.md"] * 3


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("Agents/Inbox/journal.md", "Agents/Inbox/journal.conflicted:{ms}.md"),
        ("Agents/Inbox/journal", "Agents/Inbox/journal.conflicted:{ms}"),
        ("v1.2/README", "v1.conflicted:{ms}.2/README"),  # upstream splits the whole path
    ],
)
def test_fork_conflict_naming(sb: FakeSilverBullet, path: str, expected: str) -> None:
    """The browser's conflict fork: server copy to ``.conflicted:<ms>``, browser wins (sb §11)."""
    server_meta = sb.write(path, "server version with our lines\n", mtime_ms=1_754_000_012_345)
    conflict = sb.fork_conflict(path, "browser version\n")
    assert conflict == expected.format(ms=server_meta.last_modified)
    assert sb.read(conflict) == "server version with our lines\n"
    assert sb.read(path) == "browser version\n"
    assert sb.fork_conflict(path, "browser version\n") is None  # identical: no fork


def test_fork_conflict_copy_is_listed(sb: FakeSilverBullet, client: SBClient) -> None:
    """A ``.conflicted:`` copy is an ordinary listed file with a fresh stamp (sb §11)."""
    sb.write("Agents/Inbox/journal.md", "ours\n", mtime_ms=MS_2020)
    sb.clock.set(MS_2020 + 60_000)
    conflict = sb.fork_conflict("Agents/Inbox/journal.md", "theirs\n")
    names = client.names()
    assert conflict == f"Agents/Inbox/journal.conflicted:{MS_2020}.md"
    assert names[conflict]["lastModified"] == MS_2020 + 60_000
    assert names["Agents/Inbox/journal.md"]["lastModified"] == MS_2020 + 60_000


# --------------------------------------------------------------------------- fault hooks


def test_fail_next_answers_5xx_for_matching_requests(
    sb: FakeSilverBullet, client: SBClient
) -> None:
    """``fail_next`` answers N matching requests with a 5xx and leaves the file alone."""
    sb.write("f.md", "kept")
    sb.fail_next(503, method="PUT", path="f.md", times=2)
    assert client.get("f.md").status_code == 200  # GET does not match
    assert client.put("other.md", "x").status_code == 200  # other path does not match
    assert [client.put("f.md", "lost").status_code for _ in range(3)] == [503, 503, 200]
    assert sb.read("f.md") == "lost"
    sb.fail_next(500, path="/.fs")
    assert client.listing().status_code == 500


@pytest.mark.parametrize("after_apply", [False, True])
def test_reset_next_drops_the_connection(
    sb: FakeSilverBullet, client: SBClient, after_apply: bool
) -> None:
    """``reset_next`` resets the connection before or after applying the PUT."""
    sb.write("r.md", "before")
    sb.reset_next(method="PUT", path="r.md", after_apply=after_apply)
    with pytest.raises(httpx.TransportError):
        client.put("r.md", "after")
    assert sb.read("r.md") == ("after" if after_apply else "before")
    assert sb.requests_matching("PUT")[-1].status is None
    assert client.put("r.md", "again").status_code == 200


def test_latency(sb: FakeSilverBullet, client: SBClient) -> None:
    """``latency_ms`` delays every request; ``delay_next`` only the matching ones."""
    sb.latency_ms = 100
    started = time.monotonic()
    client.request("GET", "/.ping")
    assert time.monotonic() - started >= 0.1
    sb.latency_ms = 0
    sb.delay_next(150, method="GET", path="/.fs")
    started = time.monotonic()
    client.listing()
    assert time.monotonic() - started >= 0.15
    started = time.monotonic()
    client.listing()
    assert time.monotonic() - started < 0.15


def test_clear_faults(sb: FakeSilverBullet, client: SBClient) -> None:
    """``clear_faults`` drops pending rules, hooks and holds."""
    sb.fail_next(500)
    sb.reset_next()
    sb.tear_next_read("a.md")
    hold = sb.hold_next_write("a.md", after_bytes=1)
    sb.on_probe_before_put("a.md", lambda p: sb.write(p, "human"))
    sb.clear_faults()
    assert client.put("a.md", "complete").status_code == 200
    assert client.meta("a.md").status_code == 200
    assert client.put("a.md", "complete").status_code == 200
    assert client.get("a.md").text == "complete"
    assert not hold.wait_held(timeout=0)


def test_hook_errors_surface_on_close() -> None:
    """A failing probe hook is reported when the server closes, not swallowed."""
    server = FakeSilverBullet().start()
    server.write("a.md", "x")

    def broken(path: str) -> None:
        raise ValueError(path)

    server.on_probe_before_put("a.md", broken)
    client = SBClient(server.url, None)
    client.meta("a.md")
    assert client.put("a.md", "y").status_code == 200
    client.close()
    with pytest.raises(RuntimeError) as info:
        server.close()
    assert isinstance(info.value.__cause__, ValueError)


# --------------------------------------------------------------------------- request log


def test_requests_are_recorded(sb: FakeSilverBullet, client: SBClient) -> None:
    """Every request is logged with method, decoded path, headers, body size and status."""
    client.put("Agents/Inbox/my note.md", "12345")
    client.get("Agents/Inbox/missing.md")
    put, get = sb.requests
    assert (put.method, put.path, put.fs_path) == (
        "PUT",
        "/.fs/Agents/Inbox/my note.md",
        "Agents/Inbox/my note.md",
    )
    assert put.raw_path == "/.fs/Agents/Inbox/my%20note.md"
    assert (put.body_length, put.status) == (5, 200)
    assert put.headers["x-sync-mode"] == "true"
    assert get.status == 404
    assert sb.requests_matching("PUT", "/.fs/Agents/Inbox/") == [put]
    assert sb.requests_matching("DELETE") == []
    sb.clear_requests()
    assert sb.requests == []


# --------------------------------------------------------------------------- helpers, clock


def test_disk_helpers_act_as_the_human(sb: FakeSilverBullet, client: SBClient) -> None:
    """``write``/``read``/``meta``/``set_mtime``/``delete`` work on disk, not over HTTP."""
    meta = sb.write("Agents/Memory/MEMORY.md", "mémoire\n", mtime_ms=MS_2020)
    assert (meta.last_modified, meta.size, meta.perm) == (MS_2020, len("mémoire\n".encode()), "rw")
    assert sb.read("Agents/Memory/MEMORY.md") == "mémoire\n"
    assert sb.exists("Agents/Memory/MEMORY.md")
    assert sb.set_mtime("Agents/Memory/MEMORY.md", MS_2020 + 1).last_modified == MS_2020 + 1
    assert client.names()["Agents/Memory/MEMORY.md"]["lastModified"] == MS_2020 + 1
    sb.delete("Agents/Memory/MEMORY.md")
    assert not sb.exists("Agents/Memory/MEMORY.md")
    assert sb.requests_matching(prefix="/.fs/") == []
    with pytest.raises(ValueError):
        sb.write("../outside.md", "x")


def test_ms_clock() -> None:
    """``MsClock`` follows real time until frozen, then moves only when told."""
    clock = MsClock()
    assert abs(clock.now() - time.time_ns() // 1_000_000) < 1_000
    frozen = clock.freeze()
    assert clock.frozen and clock.now() == frozen
    assert clock.advance(10) == frozen + 10 == clock.now()
    clock.unfreeze()
    assert not clock.frozen and clock.now() >= frozen + 10
    clock.set(42)
    assert clock.now() == 42


def test_config_reports_fake_settings(tmp_path: Path) -> None:
    """``/.config`` mirrors the fake's settings (sb §12); X-Space-Path can be faked."""
    with FakeSilverBullet(tmp_path, space_folder_path="/space", index_page="Home") as server:
        client = SBClient(server.url, None)
        config = json.loads(client.request("GET", "/.config").text)
        assert config["spaceFolderPath"] == "/space"
        assert config["indexPage"] == "Home"
        assert config["readOnly"] is False
        assert client.listing().headers["x-space-path"] == "/space"
        client.close()
