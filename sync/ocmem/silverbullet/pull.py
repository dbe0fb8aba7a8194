"""``ocmem pull``: SilverBullet → local, incremental, validated, backed up, never destructive.

One listing request; a file is fetched only when its (lastModified, size) differs from the last
validated read, or when the local copy no longer matches what was installed (hand edit,
deletion). Reads must be whole and stable. Every local file is backed up byte for byte before it
is replaced or removed; pulled files are installed read-only; removals are guarded by an
empty-listing abort and a maximum share. A file whose content differs from what the previous pull
installed is shown as a change (``ocmem.silverbullet.changes``: whoever wrote it, it is now
memory), and a pull that changed something is committed to the local history with that change,
then the context-size report runs.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from ocmem.errors import Busy, OcmemError
from ocmem.formats import decisionspage, pending
from ocmem.formats.fill import Fill
from ocmem.home import identity, shipped
from ocmem.home.atomic import read_bytes, read_text, refuse_link
from ocmem.home.digest import file_sha256, sha256
from ocmem.home.space import LOCAL_ONLY, SyncConfig
from ocmem.home.workspace import Transaction, Workspace
from ocmem.outcome import Outcome, Status
from ocmem.silverbullet import carryover, changes, decisions, merge, reads
from ocmem.silverbullet.bounds import Bounds, streamed_too_large, streamed_too_much
from ocmem.silverbullet.client import (
    Budget,
    BudgetSpent,
    PastDeadline,
    Read,
    SilverBullet,
    TooLarge,
)
from ocmem.silverbullet.history import History
from ocmem.silverbullet.pullplan import Fetch, check_removals, plan_pull, within_bounds
from ocmem.silverbullet.state import PulledFile, SyncState
from ocmem.text import inert

PULLED_MODE = 0o444


class Puller:
    def __init__(
        self,
        ws: Workspace,
        config: SyncConfig,
        client: SilverBullet,
        state: SyncState,
        txn: Transaction,
    ):
        self.ws = ws
        self.txn = txn
        self.paths = ws.paths
        self.config = config
        self.client = client
        self.state = state
        self.backups = txn.backups
        self.changed = False  # whether any local file was written or removed
        self.accept_active = False
        self.changes: list[changes.Change] = []  # contents that differ from the previous pull's

    def _local(self, rel: str) -> Path:
        path = self.paths.home / rel
        refuse_link(path)  # no link below the home, as for every command (ocmem.home.atomic)
        resolved_parent = path.parent.resolve()
        if self.paths.home.resolve() not in (resolved_parent, *resolved_parent.parents):
            raise OcmemError(
                f"chemin local hors du dossier ocmem : {rel}",
                fix="renomme la page dans SilverBullet (sans « .. »), puis relance",
            )
        if rel in LOCAL_ONLY:
            raise OcmemError(f"le pull n'écrit jamais {rel}")
        return path

    def _local_sha(self, rel: str) -> str | None:
        return file_sha256(self.paths.home / rel)

    def run(
        self,
        *,
        dry_run: bool = False,
        force_delete: bool = False,
        full: bool = False,
        accept_active: bool = False,
        replace_local: bool = False,
    ) -> Outcome:
        report = Outcome()
        self.client.set_deadline(self.config.pull_deadline_seconds)
        listing = self.client.list()
        # ocmem's own pages, for free: one written since the push last saw it whole (a browser
        # may have saved an older version over our blocks) is read by the next push.
        listed = {f.name: (f.meta.last_modified, f.meta.size) for f in listing}
        if not dry_run and self.state.note_listing(listed):
            self.state.save()
        plan = plan_pull(listing, self.state.pulled, self._local_sha, self.config, full=full)
        bounds = Bounds.of(self.config)
        over = within_bounds(plan, self.state.pulled, bounds, self._skills_folder())
        if over:
            report.ask_human()
            report.lines += over
        check_removals(plan, len(self.state.pulled), self.config.max_delete_ratio, force_delete)
        for name in plan.conflict_copies:
            report.lines.append(
                f"⚠ copie de conflit ignorée : {name} (à fusionner dans SilverBullet)"
            )
        for name, problem in plan.rejected:
            report.lines.append(f"⚠ fichier distant ignoré : {name} ({problem})")
        if dry_run:
            report.lines += [f"à tirer : {f.remote} → {f.local} ({f.reason})" for f in plan.fetch]
            report.lines += [
                f"à supprimer : {self.state.pulled[n].local} (disparu de SilverBullet)"
                for n in plan.remove
            ]
            report.lines.append(
                f"Pull (simulation) : {len(plan.fetch)} à tirer, {len(plan.remove)} à supprimer, {plan.unchanged} inchangé(s)"
            )
            return report
        self.accept_active = accept_active
        first = not self.state.pulled  # the first pull from this space: a summary, not diffs
        written: list[str] = []
        unstable: list[str] = []
        found, whole = self._read_all(plan.fetch, report)
        removals = plan.remove if whole else []  # a server gone wrong removes nothing
        space = {f.local: read.body for f in plan.fetch if (read := found.get(f.remote))}
        try:  # first: a proposal the human decided there no longer keeps a file here
            decided = self._decisions(*self._space_texts(space, removals)) if whole else []
        except PastDeadline as exc:
            report.status = Status.FAILED
            decided = [f"⚠ {exc.message} (décisions de l'humain lues au prochain pull)"]
        held = self._carry_over(plan.fetch, found, removals, report, replace_local)
        for fetch in plan.fetch:
            if fetch.remote not in found or fetch.remote in held:
                continue  # over a bound, past the deadline, or holding what the space lacks
            read = found[fetch.remote]
            if read is None:
                unstable.append(fetch.remote)
            elif self._install(fetch, read, report):
                written.append(fetch.local)
        kept = [name for name in removals if name not in held]
        removed = [gone for name in kept if (gone := self._remove(name, report)) is not None]
        written += self._restore_own_skills(report)
        for name in unstable:
            report.lines.append(f"⚠ {name} a changé pendant la lecture : repris au prochain pull")
        self.changed = bool(written or removed)
        if self.changed:
            self._note_gone()
        shown = (
            changes.summary(
                [(c.local, c.new) for c in self.changes if c.new is not None], self.config.url
            )
            if first
            else changes.render(self.changes)
        )
        report.lines += shown + decided
        report.lines += self._content_warnings()
        if self.changed:
            commit = History(self.paths).commit(
                present=[rel for rel in written if (self.paths.home / rel).exists()],
                removed=removed,
                message=f"pull {self.config.url} : {len(written)} mis à jour, {len(removed)} supprimé(s)",
                details=shown,
            )
            if commit:
                report.lines.append(f"Historique : version {commit} (`ocmem history`)")
        if self.backups.saved:
            report.lines.append(f"Sauvegardes : {self.backups.folder}")
        report.lines.append(
            f"Pull : {len(written)} fichier(s) mis à jour, {len(removed)} supprimé(s), "
            f"{plan.unchanged} inchangé(s) ({bounds.said()}, "
            f"{self.config.pull_deadline_seconds:g} s au plus)"
        )
        self.ws.log(
            "pull",
            updated=written,
            removed=removed,
            unchanged=plan.unchanged,
            changed_content=sorted(c.local for c in self.changes),
            unstable=unstable,
            held=sorted(held),
            requests=self.client.requests_sent,
        )
        return report

    def _space_texts(self, space: dict[str, bytes], removals: list[str]) -> tuple[str, list[str]]:
        """MEMORY.md and the skills as the space holds them after this pull: what was read,
        else the local copy (the pull installed it) — a local file held for what it alone holds
        is not the space's (a proposal found in it was not promoted there)."""
        memory = space.get("memory/MEMORY.md")
        texts = {self.paths.rel(s.path): read_text(s.path) for s in self.ws.skills()}
        texts |= {
            rel: body.decode("utf-8", errors="replace")
            for rel, body in space.items()
            if rel.startswith("skills/") and rel.endswith("/SKILL.md")
        }
        for name in removals:
            texts.pop(self.state.pulled[name].local, None)
        memory_text = self.ws.memory_text() if memory is None else memory.decode("utf-8", "replace")
        return memory_text, list(texts.values())

    def _carry_over(
        self,
        fetches: list[Fetch],
        found: dict[str, Read | None],
        removals: list[str],
        report: Outcome,
        replace_local: bool,
    ) -> set[str]:
        """The remote names whose local file stays, holding what the space lacks
        (``ocmem.silverbullet.carryover``); the proposals that carry it over, reopened."""
        wanted: list[tuple[str, str, bytes | None]] = [
            (f.remote, f.local, read.body) for f in fetches if (read := found.get(f.remote))
        ]
        wanted += [(name, self.state.pulled[name].local, None) for name in removals]
        candidates = []
        for remote, local, body in wanted:
            path = self.paths.home / local
            if path.is_file() and not path.is_symlink():
                here = read_bytes(path) or b""
                installed = self._installed(remote, here)
                mirrored = remote in self.state.pulled
                candidates.append(
                    carryover.Candidate(remote, local, here, body, installed, mirrored)
                )
        document = self.ws.pending_document()
        decision = carryover.decide(
            candidates,
            document,
            self.state.carried,
            self.ws.today(),
            replace_local=replace_local,
            pending_page=self._pending_page(),
        )
        if decision.document.render() != document.render():
            self.txn.write(self.paths.pending, decision.document.render())
        if decision.carried != self.state.carried:
            self.state.carried = decision.carried
            self.state.save()
        if decision.needs_human:
            report.ask_human()
        report.lines += decision.lines
        return decision.held

    def _note_gone(self) -> None:
        """Which promoted proposals validated memory no longer holds, and since which pull."""
        home = identity.read(self.paths)
        names = {skill.name for skill in self.ws.skills()}
        memory, today = self.ws.memory_text(), self.ws.today().isoformat()
        gone = {
            p.id: self.state.gone.get(p.id, today)
            for p in self.ws.pending_document().proposals
            if pending.left_memory(p, memory, names, home.id if home else None)
        }
        if gone != self.state.gone:
            self.state.gone = gone
            self.state.save()

    def _installed(self, remote: str, here: bytes) -> bytes | None:
        """What the last pull installed for ``remote`` (None: nothing, or no longer known)."""
        previous = self.state.pulled.get(remote)
        if previous is None:
            return None
        if sha256(here) == previous.sha256:
            return here
        blob = History(self.paths).blob("HEAD", previous.local)
        return blob if blob is not None and sha256(blob) == previous.sha256 else None

    def _pending_page(self) -> str | None:
        """This home's pending page in the space (None: no home id, or no such push rule)."""
        home = identity.read(self.paths)
        rule = next((r for r in self.config.push if r.local == "memory/pending.md"), None)
        return (
            None if home is None or rule is None else rule.page(home.id, shared=home.shared_pages)
        )

    def _skills_folder(self) -> str:
        return next((r.remote for r in self.config.pull if r.local.startswith("skills/")), "")

    def _read_all(
        self, fetches: list[Fetch], report: Outcome
    ) -> tuple[dict[str, Read | None], bool]:
        """Each file's stable read, in parallel, each held to the bounds while it streams (its
        own size; the bytes of the whole pull, shared), and whether every read ended as it
        should: not past the deadline, not past the pull's total (then nothing is kept)."""
        budget = Budget(self.config.pull_max_total_bytes)
        found: dict[str, Read | None] = {}
        late: PastDeadline | None = None
        spent = False
        with ThreadPoolExecutor(max_workers=self.config.concurrency) as pool:
            futures = {pool.submit(self._stable_read, f, budget): f for f in fetches}
            for future in as_completed(futures):
                fetch = futures[future]
                try:
                    found[fetch.remote] = future.result()
                except BudgetSpent:
                    spent = True
                except TooLarge as exc:
                    report.ask_human()
                    report.lines.append(streamed_too_large(fetch.remote, exc.bound))
                except PastDeadline as exc:
                    late = exc
        if spent:
            report.ask_human()
            report.lines.append(streamed_too_much(budget.total))
            found = {}
        if late is not None:
            report.status = Status.FAILED
            report.lines += [f"⚠ {late.message}", f"Correction : {late.fix}"]
        return found, not spent and late is None

    def _stable_read(self, fetch: Fetch, budget: Budget) -> Read | None:
        """A whole read whose metadata matches the listing, or two consecutive agreeing reads."""
        expected = fetch.meta
        for _ in range(3):
            read = self.client.read(
                fetch.remote, max_bytes=self.config.pull_max_file_bytes, budget=budget
            )
            if read is None:
                return None
            if read.meta == expected:
                return read
            expected = read.meta
        return None

    def _install(self, fetch: Fetch, read: Read, report: Outcome) -> bool:
        path = self._local(fetch.local)
        if self._holds_active_content(fetch, read, report):
            return False
        body = self._with_the_loop(fetch, read.body, report)
        digest = sha256(body)
        before, against_local = self._installed_before(fetch.remote, path)
        if before != body:
            self.changes.append(changes.Change(fetch.local, before, body, against_local))
        changed = file_sha256(path) != digest
        if changed:
            # Durable: the human's version, recorded in the sync state as it lands.
            self.txn.write(path, body, mode=PULLED_MODE, durable=True)
            note = (
                " (copie locale modifiée à la main : remplacée, sauvegarde faite)"
                if fetch.reason == "copie locale modifiée"
                else ""
            )
            report.lines.append(f"tiré : {fetch.remote} → {fetch.local}{note}")
        elif path.stat().st_mode & 0o222:
            self.txn.set_mode(path, PULLED_MODE, durable=True)
        self.state.pulled[fetch.remote] = PulledFile(
            fetch.local, read.meta.last_modified, read.meta.size, digest
        )
        self.state.save()
        return changed

    def _installed_before(self, remote: str, path: Path) -> tuple[bytes | None, bool]:
        """What the previous pull installed for ``remote`` (the local copy if it still is, else
        the history's last version), and whether it is only the local copy it replaces."""
        previous = self.state.pulled.get(remote)
        local = read_bytes(path) if path.is_file() else None
        if previous is None or (local is not None and sha256(local) == previous.sha256):
            return local, previous is None and local is not None
        pulled = History(self.paths).blob("HEAD", previous.local)
        if pulled is not None and sha256(pulled) == previous.sha256:
            return pulled, False
        return local, local is not None

    def _with_the_loop(self, fetch: Fetch, body: bytes, report: Outcome) -> bytes:
        """The human's AGENTS.md as the home must hold it: with ocmem's section, without which
        the agent would stop journaling and proposing (added locally, and said, when the page
        in SilverBullet lacks it)."""
        if fetch.local != "AGENTS.md":
            return body
        text = body.decode("utf-8", errors="replace")
        if shipped.has_section(text):
            return body
        report.lines.append(
            f"⚠ {fetch.remote} n'a pas la section « Mémoire et apprentissage » d'ocmem : ajoutée à "
            "la copie locale, sans quoi l'agent n'apprendrait plus. Ajoute-la dans SilverBullet "
            "(`ocmem init --voir-section` l'affiche)."
        )
        return shipped.with_section(text).encode("utf-8")

    def _restore_own_skills(self, report: Outcome) -> list[str]:
        """ocmem's own skills, put back as shipped when the home lost them (never copied into
        SilverBullet, removed by hand or by an older ocmem): the loop needs them."""
        restored = []
        for name in shipped.OWN_SKILLS:
            rel = f"skills/{name}/SKILL.md"
            if (self.paths.home / rel).exists():
                continue
            as_shipped = read_bytes(shipped.own_skill_file(name))
            if as_shipped is None:
                raise OcmemError(f"le skill {name} livré par ocmem manque", fix="réinstalle ocmem")
            self.txn.write(self._local(rel), as_shipped, mode=PULLED_MODE)
            report.lines.append(
                f"⚠ le skill {name} manquait : remis tel que livré par ocmem (sans lui, pas de "
                f"rétrospective) ; pour le modifier, copie-le dans Agents/Skills/{name}"
            )
            restored.append(rel)
        return restored

    def _holds_active_content(self, fetch: Fetch, read: Read, report: Outcome) -> bool:
        """A pulled page that SilverBullet would run (a script, an expression, HTML with
        handlers…) is a sign it was written by something else than the human — e.g. agent text
        that ran in their browser. It is not installed until the human confirms."""
        if self.accept_active or not fetch.local.endswith(".md"):
            return False
        found = inert.active_constructs(read.body.decode("utf-8", errors="replace"))
        if not found:
            return False
        report.ask_human()
        shown = " ; ".join(a.describe() for a in found[:5])
        more = f" (et {len(found) - 5} autre(s))" if len(found) > 5 else ""
        report.lines.append(
            f"⚠ {fetch.remote} non installé : contenu actif dans SilverBullet — {shown}{more}. "
            "Vérifie la page dans SilverBullet (une injection a pu l'écrire) ; si c'est bien toi, "
            "`ocmem pull --accepter-actif`"
        )
        return True

    def _remove(self, name: str, report: Outcome) -> str | None:
        entry = self.state.pulled[name]
        path = self._local(entry.local)
        own = shipped.own_skill_of(entry.local)
        if own is not None:
            # ocmem's own skill runs the loop: gone from SilverBullet, it stays (as pulled last).
            del self.state.pulled[name]
            self.state.save()
            report.lines.append(
                f"⚠ {name} a disparu de SilverBullet : le skill {own} d'ocmem est gardé (sans lui, "
                f"pas de rétrospective) ; pour le modifier, recopie-le dans {name}"
            )
            return None
        before, against_local = self._installed_before(name, path)
        self.changes.append(changes.Change(entry.local, before, None, against_local))
        self.txn.remove(path, up_to=self.paths.home, durable=True)
        del self.state.pulled[name]
        self.state.save()
        return entry.local

    def _decisions(self, memory_text: str, skill_texts: list[str]) -> list[str]:
        """The human's decisions on this home's proposals, from its decisions page and its
        pending page (both read only), and from MEMORY.md and the skills as the space holds
        them."""
        home = identity.read(self.paths)
        name = self._pending_page()
        if home is None or name is None:
            return []
        pushed = self.state.pushed.get(name)
        if pushed is None or not pushed.blocks:
            return []

        def suspicious(text: str | None) -> bool:
            present = {i for i, _ in merge.blocks_of(text or "", merge.PENDING_BLOCK)}
            gone = set(pushed.blocks) - present - set(pushed.deleted) - set(pushed.conflicts)
            return text == "" or bool(gone)

        deadline = self.ws.clock.monotonic() + self.config.patience_seconds
        try:
            _, text, _ = reads.trusted_read(
                self.ws.clock,
                self.client,
                name,
                suspicious,
                self.config.quiet_seconds,
                deadline,
                lambda: Busy(f"{name} change sans cesse"),
            )
        except Busy:
            return [f"⚠ {name} change sans cesse : décisions de l'humain lues au prochain pull"]
        # The human's page beside it, never written by ocmem. A read torn by a save can only
        # miss decisions (a line counts once it ends in a newline): they are read next pull.
        beside = decisionspage.page_beside(name)
        decided = decisionspage.parse(reads.text_of(beside, self.client.read(beside)) or "")
        document = self.ws.pending_document()
        done = decisions.reconcile(
            document,
            text,
            pushed,
            memory_text,
            skill_texts,
            home.id,
            self.ws.today(),
            decided,
        )
        if done.document.render() != document.render():
            self.txn.write(self.paths.pending, done.document.render())
        if done.bases:
            pushed.blocks.update(done.bases)
            self.state.save()
        return [f"Décision de l'humain : {line}" for line in done.lines]

    def _content_warnings(self) -> list[str]:
        """Human content is installed as is; what breaks a rule is flagged loudly."""
        warnings = []
        limits = self.ws.limits
        memory_path = self.paths.memory_md
        if memory_path.is_file():
            fill = Fill(len(read_text(memory_path, errors="replace")), limits.memory_chars)
            if fill.over:
                warnings.append(
                    f"⚠ MEMORY.md dépasse son plafond : {fill} — à consolider dans SilverBullet"
                )
        installed = self.ws.skills()
        for skill in installed:
            for problem in skill.problems:
                warnings.append(f"⚠ skill {skill.name} installé mais non conforme : {problem}")
        if len(installed) > limits.skills_max:
            warnings.append(
                f"⚠ {len(installed)} skills (maximum {limits.skills_max}) : fusionne ou retire-en dans SilverBullet"
            )
        return warnings
