"""``ocmem push``: journal.md and pending.md → ``Agents/Inbox/``, losing and duplicating nothing.

SilverBullet has no conditional write, so each page goes through a read–plan–probe–write loop:

1. read the page whole (torn reads are retried);
2. plan (pure, :func:`plan_page`): merge the local blocks into it (``merge.merge``: humans' text
   is kept byte for byte, a block already there is adopted, a block the human deleted is not
   re-added) and decide whether anything must be written;
3. if nothing changes, settle: record the state and explain what left the page; otherwise
4. probe the metadata and start again if the page moved since the read;
5. keep the remote version about to be overwritten in the backups, PUT, and loop: the next read
   is the verification (it adopts what landed, or merges again if someone wrote meanwhile).

Residual risk (docs/sync.md): a write by someone else that lands between the probe and the PUT,
about one round trip, is overwritten; the server offers no way to detect it.

Blocks a human removed are told apart from blocks a browser conflict moved aside by looking for
``<page>.conflicted:<ms>.md`` siblings (one listing, only when pushed blocks went missing or
conflicts are still open). Those are reported (exit 3) and never deleted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ocmem import inert, journal, pending
from ocmem.errors import Refused
from ocmem.fsio import Backups, log_event, read_text, sha256
from ocmem.outcome import Outcome, Status
from ocmem.sync import merge
from ocmem.sync.client import Read, SilverBullet, UnknownOutcome, is_conflict_copy
from ocmem.sync.config import PushRule, SyncConfig
from ocmem.sync.state import PushedPage, SyncState
from ocmem.workspace import Workspace

MAX_ROUNDS = 6


class PageKeepsChanging(Refused):
    pass


def pattern_for(rule: PushRule) -> re.Pattern[str]:
    return merge.PENDING_BLOCK if rule.local.endswith("pending.md") else merge.JOURNAL_BLOCK


def conflict_copies_of(page: str, names: list[str]) -> list[str]:
    stem = page[: -len(".md")]
    return sorted(n for n in names if n.startswith(stem + ".conflicted:") and is_conflict_copy(n))


# --- the plan (pure) ------------------------------------------------------------------------


@dataclass(frozen=True)
class PagePlan:
    """What one read of a page calls for."""

    base: dict[str, str]  # the merge base this plan used (an interrupted PUT decided)
    result: merge.MergeResult
    write: str | None  # the page to PUT, or None when it already holds everything


def merge_base(page: PushedPage, read: Read | None) -> dict[str, str]:
    """The merge base, counting an interrupted PUT as delivered once the page has moved.

    After a crash between our PUT and the state save, a block we sent and that is now
    absent is ambiguous: never delivered, or delivered then deleted by the human. If the
    page is exactly as we read it before that PUT (same lastModified and size), nothing
    landed and the block is sent again; otherwise it landed and its absence is a human's
    choice (or a conflict copy's), which the merge respects.
    """
    if not page.in_flight:
        return page.blocks
    unchanged = page.in_flight_from == (
        [read.meta.last_modified, read.meta.size] if read else [0, 0]
    )
    return page.blocks if unchanged else {**page.blocks, **page.in_flight}


def plan_page(
    remote_text: str | None,
    read: Read | None,
    local: list[tuple[str, str]],
    page: PushedPage,
    pattern: re.Pattern[str],
    preamble: str,
) -> PagePlan:
    base = merge_base(page, read)
    result = merge.merge(remote_text, local, base, pattern, preamble)
    unchanged = read is not None and result.text == remote_text
    return PagePlan(base, result, None if unchanged else result.text)


def inert_blocks(
    rule: PushRule, segments: list[merge.Segment]
) -> tuple[list[tuple[str, str]], list[str]]:
    """Each local block as ocmem renders it today, and the ids of those that cannot leave.

    Agent text leaves the machine only in a form SilverBullet can display but never run: a
    block that cannot be read back as an entry or a proposal, or that would still carry an
    active construct, stays here."""
    rerender = pending.rerender if pattern_for(rule) is merge.PENDING_BLOCK else journal.rerender
    safe: list[tuple[str, str]] = []
    held: list[str] = []
    for segment in segments:
        if segment.id is None:
            continue
        text = rerender(segment.text)
        if text is None or inert.active_constructs(text):
            held.append(segment.id)
        else:
            safe.append((segment.id, text))
    return safe, held


# --- the executor ---------------------------------------------------------------------------


class Pusher:
    def __init__(self, ws: Workspace, config: SyncConfig, client: SilverBullet, state: SyncState):
        self.paths = ws.paths
        self.config = config
        self.client = client
        self.state = state
        self.backups = Backups(ws.paths)

    def run(self, *, dry_run: bool = False) -> Outcome:
        report = Outcome()
        for rule in self.config.push:
            self._push_page(rule, report, dry_run)
        if self.backups.saved:
            report.lines.append(
                f"Versions distantes remplacées, gardées dans : {self.backups.folder}"
            )
        log_event(
            self.paths,
            "push",
            requests=self.client.requests_sent,
            needs_human=report.status is not Status.OK,
        )
        return report

    def _push_page(self, rule: PushRule, report: Outcome, dry_run: bool) -> None:
        local_text = read_text(self.paths.home / rule.local)
        local_digest = sha256(local_text.encode("utf-8"))
        page = self.state.pushed.get(rule.remote, PushedPage())
        if page.local_sha256 == local_digest and not page.conflicts and not dry_run:
            return
        pattern = pattern_for(rule)
        segments = merge.split(local_text, pattern)
        local, held = inert_blocks(rule, segments)
        for block_id in held:
            report.ask_human()
            report.lines.append(
                f"  ⚠ {block_id} n'est pas envoyé : bloc de {rule.local} hors du format d'ocmem "
                "(modifié à la main ?) ; corrige-le ou restaure la sauvegarde"
            )
        if not local and not page.blocks:
            return
        preamble = segments[0].text if segments[0].text.strip() else f"# {rule.remote}\n"

        for _round in range(MAX_ROUNDS):
            read = self.client.read(rule.remote)
            try:
                remote_text = read.body.decode("utf-8") if read else None
            except UnicodeDecodeError as exc:
                raise Refused(
                    f"{rule.remote} n'est pas du texte UTF-8",
                    fix="corrige la page dans SilverBullet",
                ) from exc
            plan = plan_page(remote_text, read, local, page, pattern, preamble)
            result = plan.result
            if dry_run:
                report.lines.append(
                    f"{rule.remote} (simulation) : {len(result.appended)} à ajouter, {len(result.updated)} à mettre à jour, "
                    f"{len(result.conflicts)} en conflit, {len(result.missing)} absent(s) de la page"
                )
                return
            if plan.write is None:
                self._settle(rule, page, result, local_digest, report)
                return
            probe = self.client.meta(rule.remote)
            if probe != (read.meta if read else None):
                continue  # the page moved since our read: merge again from a fresh read
            if read is not None:
                self.backups.save_bytes(f"remote/{rule.remote}", read.body)
            page.blocks = plan.base  # what an earlier interrupted PUT did is now decided
            page.in_flight = {i: result.base[i] for i in result.appended + result.updated}
            page.in_flight_from = [read.meta.last_modified, read.meta.size] if read else [0, 0]
            self.state.pushed[rule.remote] = page
            self.state.save()
            try:
                self.client.put(rule.remote, plan.write.encode("utf-8"))
            except UnknownOutcome:
                continue  # the next read shows whether it landed; the merge adopts it if so
            log_event(
                self.paths,
                "push-write",
                page=rule.remote,
                appended=result.appended,
                updated=result.updated,
                conflicts=result.conflicts,
            )
        raise PageKeepsChanging(
            f"{rule.remote} a changé à chaque tentative ({MAX_ROUNDS}) : rien n'est perdu, l'envoi est reporté",
            fix="relance `ocmem push` un peu plus tard",
        )

    def _settle(
        self,
        rule: PushRule,
        page: PushedPage,
        result: merge.MergeResult,
        local_digest: str,
        report: Outcome,
    ) -> None:
        """The page holds everything it should: record it, and explain what left the page."""
        open_ids = [i for i in result.missing if i not in page.deleted]
        conflicts: dict[str, str] = {}
        deleted: list[str] = []
        if open_ids:
            names = [f.name for f in self.client.list()]
            moved: dict[str, str] = {}
            for copy in conflict_copies_of(rule.remote, names):
                read = self.client.read(copy)
                if read is not None:
                    for block_id, _ in merge.blocks_of(
                        read.body.decode("utf-8", errors="replace"), pattern_for(rule)
                    ):
                        moved.setdefault(block_id, copy)
            for block_id in open_ids:
                if block_id in moved:
                    conflicts[block_id] = moved[block_id]
                else:
                    deleted.append(block_id)
        page.blocks = result.base
        page.in_flight, page.in_flight_from = {}, None
        page.deleted = sorted(set(page.deleted) | set(deleted))
        page.conflicts = conflicts
        page.local_sha256 = local_digest
        self.state.pushed[rule.remote] = page
        self.state.save()

        done = []
        if result.appended:
            done.append(f"{len(result.appended)} ajouté(s)")
        if result.updated:
            done.append(f"{len(result.updated)} mis à jour")
        if result.adopted:
            done.append(f"{len(result.adopted)} déjà présent(s)")
        report.lines.append(f"{rule.remote} : " + (", ".join(done) or "à jour"))
        if deleted:
            report.lines.append(
                f"  {len(deleted)} bloc(s) supprimé(s) dans SilverBullet : respecté(s), jamais renvoyé(s) ({', '.join(deleted)})"
            )
        for block_id in result.gone_but_changed:
            report.lines.append(
                f"  {block_id} a changé localement mais a été supprimé dans SilverBullet : non renvoyé"
            )
        for block_id in result.conflicts:
            report.lines.append(
                f"  ⚠ {block_id} modifié des deux côtés : version de l'humain gardée, celle de l'agent insérée juste après"
            )
        if result.duplicates:
            report.lines.append(
                f"  ⚠ bloc(s) en double dans la page : {', '.join(sorted(set(result.duplicates)))}"
            )
        if conflicts:
            report.ask_human()
            for copy in sorted(set(conflicts.values())):
                ids = ", ".join(sorted(i for i, c in conflicts.items() if c == copy))
                report.lines.append(
                    f"  ⚠ conflit d'édition : {ids} ont quitté {rule.remote} et sont dans {copy} ; "
                    "recopie-les dans la page puis supprime la copie (ocmem ne la supprime jamais)"
                )
