"""``ocmem push``: journal.md and pending.md → this home's pages under ``Agents/Inbox/``, losing
and duplicating nothing, against a server with no conditional write and torn reads.

Each home writes its own pages (``Agents/Inbox/<home-id>/…``): no two ocmem homes ever write one
page, so the only other writer of a page is its human (a browser). For each page whose local file
changed since the last push, or that a pull's listing showed changed since the push last found it
holding everything (``PushedPage.moved``: a browser may have saved an older version over it):

1. **Read a page that can be trusted.** The client refuses a body shorter than its
   ``X-Content-Length``. A read that lost what we know the page holds (blocks we pushed and the
   human did not delete, our receipt line) may be a torn read — SilverBullet truncates before it
   writes — so it is confirmed by an identical read ``quiet_seconds`` later before anything is
   decided from it; a deletion is only ever read from such a confirmed read.
2. **Plan** (pure, :func:`plan_page`): merge the local blocks into the page (``merge.merge``:
   human text kept byte for byte, a block already there adopted only if identical, a block the
   human deleted never re-added) and set the receipt line (``Envoi ocmem n° N``).
3. If the page already holds everything: **settle** (record the state, explain what left the page).
4. **Write-ahead**: keep the remote version in the backups, record the blocks about to be sent and
   the receipt number in the state, so a crash or a lost answer is decided later by the receipt.
5. **Quiet, probe, PUT.** A page being edited is not written: unless the read shows the page
   exactly as our own last write left it (:func:`untouched_since_our_write`: the server's
   ``X-Last-Modified`` and size recorded after that write, and the same bytes — nobody has written
   it since, and that write was itself made on a quiet page), wait until it has been unchanged for
   ``quiet_seconds`` since the read (after ``patience_seconds`` the push is postponed, exit 75).
   Then probe its metadata, and PUT at once: nothing local happens between the probe and the PUT.
6. **Verify**: the next round's trusted read. If our body was cut by an overlapping write (the page
   is someone's whole body followed by the tail of ours), that tail is removed and the page merged
   again; blocks a concurrent write removed are sent again if our PUT did not land (receipt).

A PUT refused (403) or that never left is recorded as not sent, so its blocks are sent again later,
never taken for deletions. Residual risk (docs/sync.md): a write landing between our probe and our
PUT — one round trip after at least ``quiet_seconds`` of calm, or after a read showing nobody wrote
since our last write — is overwritten.

Blocks a human removed are told apart from blocks a browser conflict moved aside by looking for
``<page>.conflicted:<ms>.md`` siblings (reported, exit 3, never deleted).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from ocmem.errors import Busy, Refused
from ocmem.formats import gestures, journal, pending
from ocmem.home import identity
from ocmem.home.atomic import read_text
from ocmem.home.backups import Backups
from ocmem.home.digest import sha256
from ocmem.home.space import PushRule, SyncConfig
from ocmem.home.workspace import Workspace
from ocmem.outcome import Outcome, Status
from ocmem.silverbullet import merge, reads
from ocmem.silverbullet.client import (
    Read,
    SilverBullet,
    SilverBulletError,
    UnknownOutcome,
    is_conflict_copy,
)
from ocmem.silverbullet.receipt import claim_of, held_by_another, receipt_of, with_receipt
from ocmem.silverbullet.state import PushedPage, SyncState
from ocmem.text import inert


class PageKeepsChanging(Busy):
    """The page was being edited during the whole wait: nothing written, push later."""


def pattern_for(rule: PushRule) -> re.Pattern[str]:
    return merge.PENDING_BLOCK if rule.local.endswith("pending.md") else merge.JOURNAL_BLOCK


def conflict_copies_of(page: str, names: list[str]) -> list[str]:
    stem = page[: -len(".md")]
    return sorted(n for n in names if n.startswith(stem + ".conflicted:") and is_conflict_copy(n))


# --- the plan (pure) ------------------------------------------------------------------------


def untangle(page: str, ours: str) -> str | None:
    """The other writer's whole body when ``page`` is it followed by the tail of ``ours``: two
    PUTs that overlapped, the shorter first (SilverBullet writes in place). None otherwise."""
    if page == ours or len(page) != len(ours):
        return None
    common = 0
    while common < len(page) and page[-1 - common] == ours[-1 - common]:
        common += 1
    cut = len(page) - common
    if 0 < cut < len(page) and page[:cut].endswith("\n") and not ours[:cut].endswith("\n"):
        return page[:cut]
    return None


def untouched_since_our_write(page: PushedPage, read: Read | None) -> bool:
    """Whether ``read`` shows the page exactly as our last write left it: the metadata the server
    stamped (recorded from the read that verified that write: server time against server time,
    never our clock) and the very bytes. Then nobody has written the page since, and that write
    was made on a quiet page itself (after the wait, or after this same check): there is no
    writer to wait for. Any other write changes the bytes, or the stamp when it writes the same
    bytes (a browser saving our version is a writer at work)."""
    return (
        read is not None
        and bool(page.written_sha256)
        and read.meta.last_modified == page.written_last_modified
        and read.meta.size == page.written_size
        and sha256(read.body) == page.written_sha256
    )


def lost_known_content(text: str | None, page: PushedPage, pattern: re.Pattern[str]) -> bool:
    """Whether a read misses what the page should hold — our blocks the human did not delete, a
    receipt at least as recent as our last write — or is an existing but empty page: what a
    torn read looks like, so nothing is decided from it before an identical read confirms it."""
    if text == "":
        return True
    if max(page.receipt, page.in_flight_receipt) > (receipt_of(text) or 0):
        return True
    present = {block_id for block_id, _ in merge.blocks_of(text or "", pattern)}
    known = set(page.blocks) | set(page.in_flight)
    return any(b not in present and b not in page.deleted for b in known)


@dataclass(frozen=True)
class PagePlan:
    """What one trusted read of a page calls for."""

    base: dict[str, str]  # the merge base this plan used (an interrupted PUT decided)
    result: merge.MergeResult
    write: str | None  # the page to PUT, or None when it already holds everything


def fold_landed(page: PushedPage, text: str | None) -> None:
    """If the page shows the receipt of the PUT under way, its blocks were delivered by it."""
    if page.in_flight and (receipt_of(text) or 0) >= page.in_flight_receipt:
        page.blocks.update(page.in_flight)
        for block_id, digest in page.in_flight.items():
            page.sent_in[block_id] = page.in_flight_receipt
            page.ours.setdefault(block_id, [])
            if digest not in page.ours[block_id]:
                page.ours[block_id].append(digest)
        page.in_flight, page.in_flight_receipt = {}, 0


def merge_base(page: PushedPage, text: str | None, pattern: re.Pattern[str]) -> dict[str, str]:
    """The merge base: what we know we delivered — except blocks delivered by a write that the
    page's version never saw (its receipt is older). Such a block was removed, or brought back
    to an older version of ours, by a write made from an older read (a browser resolving a
    conflict, a client that read the page while it was being written): not by a human who saw
    it. It is sent again. A block that disappeared from a version that had it is the human's
    deletion, and is respected."""
    shown = receipt_of(text) or 0
    remote = {b: merge.digest(t) for b, t in merge.blocks_of(text or "", pattern)}
    base: dict[str, str] = {}
    for block_id, digest in page.blocks.items():
        if page.sent_in.get(block_id, 0) <= shown or block_id in page.deleted:
            base[block_id] = digest
        elif remote.get(block_id) in page.ours.get(block_id, []):
            base[block_id] = remote[block_id]  # an older version of ours: replaced
    return base


def plan_page(
    remote_text: str | None,
    read: Read | None,
    local: list[tuple[str, str]],
    page: PushedPage,
    pattern: re.Pattern[str],
    preamble: str,
    finish: Callable[[str], str] | None = None,
) -> PagePlan:
    base = merge_base(page, remote_text, pattern)
    result = merge.merge(remote_text, local, base, pattern, preamble)
    if finish is not None:  # what ocmem holds outside the blocks, besides the receipt
        result.text = finish(result.text)
    unchanged = read is not None and result.text == remote_text
    return PagePlan(base, result, None if unchanged else result.text)


def inert_blocks(
    rule: PushRule, segments: list[merge.Segment], known: dict[str, str]
) -> tuple[list[tuple[str, str]], list[str]]:
    """Each local block as ocmem renders it today, and the ids of those that cannot leave.

    Agent text leaves the machine only in a form SilverBullet can display but never run: a
    block that cannot be read back as an entry or a proposal, or that would still carry an
    active construct, stays here. A block that is exactly what the page holds (``known``: the
    push base, e.g. a proposal the human edited and ``pull`` took back) is kept as it is."""
    rerender = pending.rerender if pattern_for(rule) is merge.PENDING_BLOCK else journal.rerender
    safe: list[tuple[str, str]] = []
    held: list[str] = []
    for segment in segments:
        if segment.id is None:
            continue
        if known.get(segment.id) == merge.digest(segment.text):
            safe.append((segment.id, segment.text))
            continue
        text = rerender(segment.text)
        if text is None or inert.active_constructs(text):
            held.append(segment.id)
        else:
            safe.append((segment.id, text))
    return safe, held


# --- the executor ---------------------------------------------------------------------------


@dataclass
class _Sent:
    """What this run wrote to one page, for its summary."""

    appended: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    writes: int = 0
    conflicts: list[str] = field(default_factory=list)  # blocks whose agent copy was written
    restored: list[str] = field(default_factory=list)  # delivered before, erased, sent again
    regressed: bool = False  # a read showed an older receipt than our last write


class Pusher:
    def __init__(
        self,
        ws: Workspace,
        config: SyncConfig,
        client: SilverBullet,
        state: SyncState,
        decorators: Callable[[str, str | None], gestures.Decorate] | None = None,
    ):
        self.ws = ws
        # The review page's gestures for a pending page (its name, the home its ids carry).
        self.decorators = decorators
        self.paths = ws.paths
        self.config = config
        self.client = client
        self.state = state
        self.backups = Backups(ws.paths, ws.clock)
        self.home: identity.HomeId  # set by run: the pages are this home's
        # Per write: probe sent → PUT about to be sent (ms), and the local part of it (µs).
        self.windows_ms: list[float] = []
        self.gaps_us: list[float] = []
        # Per attempt to write: how long it waited for a quiet page (ms; 0: the page was as we
        # left it, or already quiet since the read).
        self.quiet_waits_ms: list[float] = []

    def run(self, *, dry_run: bool = False) -> Outcome:
        self.home = identity.require(self.paths)
        home_id = self.home.id
        report = Outcome()
        first = not self.state.pushed  # this home's first push to this space
        for rule in self.config.push:
            page = rule.page(home_id, shared=self.home.shared_pages)
            self._push_page(rule, page, home_id, report, dry_run)
        if first and report.lines:
            self._spec_pages_left(report)
        if self.backups.saved:
            report.lines.append(
                f"Versions distantes remplacées, gardées dans : {self.backups.folder}"
            )
        self.ws.log(
            "push",
            requests=self.client.requests_sent,
            needs_human=report.status is not Status.OK,
            windows_ms=[round(w, 2) for w in self.windows_ms],
            gaps_us=[round(g, 1) for g in self.gaps_us],
            quiet_waits_ms=[round(w, 1) for w in self.quiet_waits_ms],
        )
        return report

    def _spec_pages_left(self, report: Outcome) -> None:
        """The spec's pages (``Agents/Inbox/journal.md``…) when this home writes a folder of its
        own: never written by it, never passed over in silence either (said at the first push;
        ``doctor`` says it every time)."""
        for rule in self.config.push:
            spec = rule.page(self.home.id, shared=True)
            if spec == rule.page(self.home.id, shared=self.home.shared_pages):
                continue
            if self.client.meta(spec) is not None:
                report.lines.append(
                    f"ℹ {spec} existe (la page de la spécification) ; ce dossier écrit "
                    f"{rule.page(self.home.id)} et n'y touche pas : laisse-la à l'humain, ou fais "
                    "aller les envois de ce dossier là (règles `push` d'ocmem.yaml, docs/sync.md)"
                )

    def _adopted(self, name: str, text: str | None, report: Outcome) -> None:
        """A page at this home's path that ocmem never wrote (the spec's page, kept by hand
        before ocmem): its lines stay as they are, ocmem's blocks are added, and it is said."""
        if name in self.state.pushed or not (text or "").strip() or receipt_of(text) is not None:
            return
        report.lines.append(
            f"ℹ {name} existait déjà sans ocmem : tout ce qu'elle contient est gardé tel quel, "
            "les entrées d'ocmem s'y ajoutent"
        )

    def _check_claim(self, name: str, text: str | None) -> None:
        """A page another home writes (same id: two users, two homes, one cloud image's host
        name) is refused before anything is merged: its blocks are not the human's edits."""
        holder = claim_of(text)
        if holder is None or holder.key == self.home.key:
            return
        raise Refused(
            f"{held_by_another(name, holder, self.home)} : rien n'a été envoyé, les deux se "
            "mélangeraient",
            fix=f"donne à ce dossier un identifiant à lui : `ocmem init --id-dossier {self._own_id()}` "
            "(ou un autre nom), puis `ocmem push`",
        )

    def _own_id(self) -> str:
        suggested = identity.default_id(self.paths.home.resolve())
        return (
            suggested if suggested != self.home.id else f"{self.home.id[:19]}-{self.home.key[4:8]}"
        )

    def _postponed(self, name: str) -> PageKeepsChanging:
        return PageKeepsChanging(
            f"{name} change sans cesse (en cours d'édition ?) : rien n'a été écrit, rien n'est perdu",
            fix="l'envoi se refera au prochain `ocmem push` (ou par cron)",
        )

    # --- one page -------------------------------------------------------------------------

    def _push_page(
        self, rule: PushRule, name: str, home_id: str, report: Outcome, dry_run: bool
    ) -> None:
        local_text = read_text(self.paths.home / rule.local)
        page = self.state.pushed.get(name, PushedPage())
        pattern = pattern_for(rule)
        segments = merge.split(local_text, pattern)
        local, held = inert_blocks(rule, segments, page.blocks)
        decorate, finish, inputs = None, None, ""  # the review page's gestures (page's end)
        if self.decorators is not None and pattern is merge.PENDING_BLOCK:
            decorate = self.decorators(name, None if self.home.shared_pages else home_id)
            finish, inputs = partial(gestures.with_fence, held=decorate(local)), decorate.inputs()
        # What the page should hold: the file, and what its gestures are computed from.
        local_digest = sha256(f"{local_text}\0{inputs}".encode())
        if (
            page.local_sha256 == local_digest
            and not page.conflicts
            and not page.copies
            and not page.in_flight
            and not page.moved
            and not dry_run
        ):
            return
        for block_id in held:
            report.ask_human()
            report.lines.append(
                f"  ⚠ {block_id} n'est pas envoyé : bloc de {rule.local} hors du format d'ocmem "
                "(modifié à la main ?) ; corrige-le ou restaure la sauvegarde"
            )
        if not local and not page.blocks:
            return
        preamble = segments[0].text if segments[0].text.strip() else f"# {name}\n"
        sent = _Sent()
        delivered = set(page.blocks)
        deadline = self.ws.clock.monotonic() + self.config.patience_seconds
        ours: str | None = None  # the last body we PUT, to recognise an overlapping write
        put_body: bytes | None = None  # the last body this run sent, to know the page as ours
        attempt = 0
        while True:  # until it is written, or postponed once the patience is spent
            attempt += 1
            read, text, read_at = reads.trusted_read(
                self.ws.clock,
                self.client,
                name,
                lambda text: lost_known_content(text, page, pattern),
                self.config.quiet_seconds,
                deadline,
                lambda: self._postponed(name),
            )
            self._check_claim(name, text)
            if attempt == 1:
                self._adopted(name, text, report)
            actual = text
            sent.regressed |= (receipt_of(text) or 0) < page.receipt
            page.receipt = max(page.receipt, receipt_of(text) or 0)
            fold_landed(page, text)
            if ours is not None and text is not None:
                other = untangle(text, ours)
                if other is not None:
                    text = other  # drop the tail of our own body another write left behind
            ours = None
            plan = plan_page(text, read, local, page, pattern, preamble, finish)
            result = plan.result
            if dry_run:
                report.lines.append(
                    f"{name} (simulation) : {len(result.appended)} à ajouter, {len(result.updated)} à mettre à jour, "
                    f"{len(result.conflicts)} en conflit, {len(result.missing)} absent(s) de la page"
                )
                return
            if plan.write is None and text == actual:
                if read is not None and put_body is not None and read.body == put_body:
                    # The verifying read shows our write as it landed: its stamp is the server's.
                    page.written_last_modified = read.meta.last_modified
                    page.written_size = read.meta.size
                    page.written_sha256 = sha256(read.body)
                for block_id in result.adopted:  # already there as ours: as of this version
                    page.sent_in.setdefault(block_id, receipt_of(text) or 0)
                    page.ours.setdefault(block_id, [result.base[block_id]])
                self._settle(name, pattern, page, result, local_digest, sent, report, read)
                return
            body = with_receipt(
                plan.write if plan.write is not None else text or preamble,
                page.receipt + 1,
                home_id,
                self.ws.now(),
                pattern,
                key=self.home.key,
            )
            self._write_ahead(name, page, plan, result, read)
            wait = 0.0
            if not untouched_since_our_write(page, read):
                wait = self.config.quiet_seconds - (self.ws.clock.monotonic() - read_at)
            if wait > 0:
                self.ws.clock.sleep(wait)
            self.quiet_waits_ms.append(max(wait, 0.0) * 1000)
            if self.ws.clock.monotonic() > deadline:
                raise self._postponed(name)  # the receipt decides later: this PUT never left
            encoded = body.encode("utf-8")
            if not self._put_if_unchanged(name, read, encoded, page):
                continue  # the page moved since our read: decide again from a fresh read
            ours, put_body = body, encoded
            sent.appended += [i for i in result.appended if i not in sent.appended]
            sent.updated += [i for i in result.updated if i not in sent.updated]
            sent.conflicts += [i for i in result.conflicts if i not in sent.conflicts]
            sent.restored += [i for i in result.appended if i in delivered - set(sent.restored)]
            sent.writes += 1

    def _write_ahead(
        self,
        name: str,
        page: PushedPage,
        plan: PagePlan,
        result: merge.MergeResult,
        read: Read | None,
    ) -> None:
        """Before the PUT: the version it replaces in the backups, and what it carries in the
        state, so whatever happens to the PUT is decided at the next read (by its receipt)."""
        if read is not None:
            self.backups.save_bytes(f"remote/{name}", read.body)
        page.blocks = plan.base
        page.in_flight = {i: result.base[i] for i in result.appended + result.updated}
        page.in_flight_receipt = page.receipt + 1
        for block_id in result.conflicts:  # the agent's copy, delivered with this write
            page.in_flight[block_id] = result.base[block_id]
        self.state.pushed[name] = page
        self.state.save()

    def _abandon(self, name: str, page: PushedPage) -> None:
        """No PUT left with these blocks: they are still to send, not delivered."""
        page.in_flight, page.in_flight_receipt = {}, 0
        self.state.pushed[name] = page
        self.state.save()

    def _put_if_unchanged(
        self, name: str, read: Read | None, body: bytes, page: PushedPage
    ) -> bool:
        """Probe, and PUT at once if the page is still as read. False: it moved.

        The window in which another write would be overwritten unseen runs from the server's
        stat for the probe to its truncation for the PUT: at most the probe's round trip plus
        the local gap before the PUT is sent, both recorded (``windows_ms`` in the log)."""
        started = time.perf_counter()
        probe = self.client.meta(name)
        probed = time.perf_counter()
        if probe != (read.meta if read else None):
            self._abandon(name, page)  # never sent
            return False
        self.windows_ms.append((time.perf_counter() - started) * 1000)
        self.gaps_us.append((time.perf_counter() - probed) * 1e6)
        try:
            self.client.put(name, body)
        except UnknownOutcome:
            pass  # sent, answer lost: the receipt on the next read says whether it landed
        except (Refused, SilverBulletError):
            self._abandon(name, page)  # refused, or never left: nothing was delivered
            raise
        else:
            page.receipt = page.in_flight_receipt
            self.state.pushed[name] = page
            self.state.save()
        self.ws.log("push-write", page=name, receipt=page.in_flight_receipt)
        return True

    def _settle(
        self,
        name: str,
        pattern: re.Pattern[str],
        page: PushedPage,
        result: merge.MergeResult,
        local_digest: str,
        sent: _Sent,
        report: Outcome,
        shown: Read | None,
    ) -> None:
        """The page holds everything it should (``shown``: the read that says so): record it,
        and explain what left the page."""
        open_ids = [i for i in result.missing if i not in page.deleted]
        conflicts: dict[str, str] = {}
        deleted: list[str] = []
        copies: list[str] = []
        if open_ids or sent.regressed or page.copies:
            # A browser that resolves a conflict keeps its version and moves the server's to
            # <page>.conflicted:<ms>.md: look for such copies (one listing, only then).
            copies = conflict_copies_of(name, [f.name for f in self.client.list()])
            moved: dict[str, str] = {}
            for copy in copies:
                read = self.client.read(copy)
                if read is not None:
                    for block_id, _ in merge.blocks_of(
                        read.body.decode("utf-8", errors="replace"), pattern
                    ):
                        moved.setdefault(block_id, copy)
            for block_id in open_ids:
                if block_id in moved:
                    conflicts[block_id] = moved[block_id]
                else:
                    deleted.append(block_id)
        page.blocks = result.base
        page.in_flight, page.in_flight_receipt = {}, 0
        page.deleted = sorted(set(page.deleted) | set(deleted))
        page.conflicts = conflicts
        page.copies = copies
        page.local_sha256 = local_digest
        page.seen_last_modified, page.seen_size = (
            (shown.meta.last_modified, shown.meta.size) if shown else (0, 0)
        )
        page.moved = False
        self.state.pushed[name] = page
        self.state.save()

        done = []
        if sent.appended:
            done.append(f"{len(sent.appended)} ajouté(s)")
        if sent.updated:
            done.append(f"{len(sent.updated)} mis à jour")
        if sent.conflicts:
            done.append(f"{len(sent.conflicts)} en conflit")
        if result.adopted:
            done.append(f"{len(result.adopted)} déjà présent(s) à l'identique")
        summary = ", ".join(done) if done else "rien à envoyer, la page est à jour"
        writes = f" ({sent.writes} écriture(s))" if sent.writes > 1 else ""
        report.lines.append(f"{name} : {summary}{writes}")
        if deleted:
            report.lines.append(
                f"  {len(deleted)} bloc(s) supprimé(s) dans SilverBullet : respecté(s), jamais renvoyé(s) ({', '.join(deleted)})"
            )
        for block_id in result.gone_but_changed:
            report.lines.append(
                f"  {block_id} a changé localement mais a été supprimé dans SilverBullet : non renvoyé"
            )
        for block_id in sent.conflicts:
            report.lines.append(
                f"  ⚠ {block_id} modifié des deux côtés : version de l'humain gardée, celle de l'agent insérée juste après"
            )
        if result.duplicates:
            report.lines.append(
                f"  ⚠ bloc(s) en double dans la page : {', '.join(dict.fromkeys(result.duplicates))}"
            )
        if sent.restored:
            report.lines.append(
                "  ocmem a remis dans la page ce qu'une version plus ancienne avait effacé : "
                + ", ".join(sent.restored)
            )
        for copy in copies:
            report.ask_human()
            # in the journal's order (as the entries were found missing): sorted as text,
            # « ~10 » would come before « ~2 »
            ids = ", ".join(i for i, c in conflicts.items() if c == copy)
            gone = f" ; {ids} ne sont plus que dans la copie" if ids else ""
            report.lines.append(
                f"  ⚠ conflit d'édition : SilverBullet a mis une autre version de {name} dans {copy}{gone}. "
                "Recopie dans la page ce qui te manque, puis supprime la copie (ocmem ne la supprime jamais)"
            )
