"""``ocmem init``: create or complete an ocmem home without ever losing what is there.

Every file is created only if missing; a file ocmem ships (the retrospective skill, the plugin)
that differs from the shipped version is left alone unless ``upgrade`` is asked, and then backed
up first. The AGENTS.md section lives between markers, so it is added once and updated in place.
Each action is reported with the command that undoes it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from ocmem.errors import OcmemError
from ocmem.formats import shortterm
from ocmem.formats.fill import Fill
from ocmem.guards.textsafety import find_injection, find_personal_data, find_secrets
from ocmem.home import identity
from ocmem.home.atomic import read_text
from ocmem.home.shipped import (
    BEGIN_MARKER,
    END_MARKER,
    SECTION,
    data_root,
    plugin_files,
    shipped_section,
)
from ocmem.home.workspace import Transaction, Workspace, memory_templates
from ocmem.outcome import Outcome, Status
from ocmem.setup import formermcp, memorysignals, oldmemory, opencodedir, opencodeversion, todo
from ocmem.setup.mcpchecks import init_notes
from ocmem.text import inert

if TYPE_CHECKING:
    from ocmem.services.drafts import ImportedFact
    from ocmem.services.factimport import FactImport

__all__ = ["BEGIN_MARKER", "END_MARKER", "Installer", "data_root", "shipped_section"]


# The Livrable's last line: the spec's tests, on this machine, without touching what init made.
TRY_IT = (
    "Vérification : `ocmem essai` lance les 13 tests de la spécification sur cette machine, "
    "dans un bac à sable (rien de ce qui est installé n'est touché)."
)


@dataclass
class _Report:
    done: list[str] = field(default_factory=list)
    undo: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    todo: list[str] = field(default_factory=list)  # « ce qu'il te reste à faire »
    needs_human: bool = False

    def outcome(self) -> Outcome:
        lines = ["ocmem init :"]
        lines += [f"  {line}" for line in self.done] or ["  rien à faire, tout est en place"]
        if self.notes:
            lines += ["", *self.notes]
        if self.undo:
            undo = list(dict.fromkeys(self.undo))
            lines += ["", "Pour annuler :", *[f"  {line}" for line in undo]]
        if self.todo:
            lines += ["", *self.todo]
        if self.done:
            lines += ["", TRY_IT]
        return Outcome(lines, Status.NEEDS_HUMAN if self.needs_human else Status.OK)


@dataclass
class _OldMemory:
    """Another memory system found at init, and what becomes of each part of it."""

    scan: oldmemory.Scan
    chosen: list[oldmemory.Prepared] = field(default_factory=list)  # to replace
    declined: list[oldmemory.Finding] = field(default_factory=list)  # the human said no
    waiting: list[oldmemory.Finding] = field(default_factory=list)  # no terminal, no flag

    def cuts(self) -> list[oldmemory.Prepared]:
        """The AGENTS.md sections to cut here (not those SilverBullet feeds)."""
        return [
            p
            for p in self.chosen
            if p.finding.section is not None and not p.finding.from_silverbullet
        ]


@dataclass
class _NoteImport:
    source: str
    imported: list[shortterm.Note] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


@dataclass
class _Imports:
    """What init's imports will write, planned before the first write."""

    kept: list[shortterm.Note]  # SHORT_TERM.md's notes that have not expired
    notes: list[_NoteImport] = field(default_factory=list)
    facts: FactImport | None = None
    instructions: int = 0  # the old system's own rules, not imported
    read: list[str] = field(default_factory=list)  # the old memory's files that were read

    def all_notes(self) -> list[shortterm.Note]:
        return [*self.kept, *(n for planned in self.notes for n in planned.imported)]


class Installer:
    """``confirm``: asks the human a yes/no question (the command line's prompt on a terminal);
    None when nobody can answer. ``replace_old``: replace another memory system without asking.
    ``env``: where the user's HOME is read (other memory systems live under it)."""

    def __init__(
        self,
        workspace: Workspace,
        *,
        upgrade: bool = False,
        home_id: str | None = None,
        replace_old: bool = False,
        confirm: Callable[[str], bool] | None = None,
        env: Mapping[str, str] | None = None,
    ):
        self.ws = workspace
        self.paths = workspace.paths
        self.limits = workspace.limits
        self.upgrade = upgrade
        self.home_id = home_id
        self.replace_old = replace_old
        self.confirm = confirm
        self.env = os.environ if env is None else env
        self.report = _Report()
        self.txn: Transaction  # the run's, while it runs: every write goes through it

    def run(self, import_file: Path | None = None) -> Outcome:
        import_lines = self._read_import(import_file) if import_file else None
        wanted = (
            identity.create(self.paths, self.home_id, self.ws.now())
            if self.home_id is not None
            else None
        )
        # Found, decided (the human may be asked: not under the lock) and read before anything
        # is written: a refusal changes nothing.
        old = self._old_memory()
        self._report_found(old)
        root = data_root()
        with self.ws.transaction("init") as self.txn:
            imports = self._plan_imports(old, import_file, import_lines)  # reads only
            for path, template in memory_templates(self.paths).items():
                self._create(path, template)
            self._identity(wanted)
            self._shipped(
                self.paths.skills_dir / "retrospective" / "SKILL.md",
                root / "skills" / "retrospective" / "SKILL.md",
            )
            if not self.ws.sync_mode:  # else pulled, ocmem's section composed in (todo says)
                self._agents_section(old.cuts())
            if (root / "plugin" / "ocmem.ts").is_file():
                for source, target in plugin_files(root, self.paths):
                    self._shipped(target, source)
                self._plugin_command()
                self._offline_start()
            self._set_aside(old)
            self._write_imports(imports)
            if self.upgrade:  # else init's notes name it, with this command (mcpchecks)
                self._former_mcp()
        self._report_old(old)
        opencode2 = opencodeversion.inspect(self.env, self.paths.home).opencode2()
        if opencode2 is not None:  # first: without it, nothing else here reaches the agent
            self.report.notes.insert(0, "\n".join(opencode2.lines()))
        self.report.notes += init_notes(self.ws.settings, self.env)
        if self.txn.backups.saved:
            self.report.notes.append(f"Sauvegardes : {self.txn.backups.folder}")
        self.report.todo = todo.render(todo.remaining(self.ws.settings, self.env))
        self.ws.log("init", actions=self.report.done)
        return self.report.outcome()

    def _identity(self, wanted: identity.HomeId | None) -> None:
        """This home's id (it names its pages in SilverBullet): kept once chosen, unless
        ``--id-dossier`` gives another one (a copy of this home needs one of its own)."""
        current = identity.read(self.paths)
        if current is not None and wanted is not None:
            # a new id for the same home: it keeps its age (ocmem.services.review)
            made = identity.created(self.paths)
            wanted = wanted._replace(created=made.isoformat(timespec="seconds") if made else "")
        chosen = wanted or current or identity.create(self.paths, None, self.ws.now())
        if current is not None and current._replace(created="") == chosen._replace(created=""):
            return
        self.txn.write(self.paths.home_id, identity.render(chosen), mode=0o600, backup=False)
        pages = identity.pages_folder(chosen)
        if current is None:
            self.report.done.append(
                f"identifiant de ce dossier : {chosen.id} (ses pages dans SilverBullet : "
                f"{pages}journal.md et {pages}pending.md)"
            )
            self.report.undo.append(f"rm {self.paths.home_id}")
            if chosen.shared_pages:
                self.report.notes.append(
                    f"Ce dossier écrit les pages de la spécification ({pages}journal.md, "
                    f"{pages}pending.md). Un second dossier ocmem sur le même espace sera refusé "
                    "au push et invité à prendre un identifiant, donc un dossier, à lui "
                    "(`ocmem init --id-dossier NOM` : Agents/Inbox/NOM/)."
                )
        else:
            self.report.done.append(f"identifiant de ce dossier : {current.id} → {chosen.id}")
            before = identity.pages_folder(current)
            if before != pages:
                self.report.notes.append(
                    f"Les prochains envois iront dans {pages} ; les pages de {before} restent "
                    "telles quelles dans SilverBullet."
                )

    def _create(self, path: Path, text: str) -> None:
        if not self.txn.create(path, text):
            return
        self.report.done.append(f"créé {self.paths.rel(path)}")
        self.report.undo.append(f"rm {path}")

    def _replace(self, path: Path, text: str, what: str) -> None:
        backup = self.txn.backups.save(path)
        self.txn.write(path, text)
        self.report.done.append(f"{what} {self.paths.rel(path)} (sauvegarde : {backup})")
        self.report.undo.append(f"cp {backup} {path}")

    def _shipped(self, target: Path, source: Path) -> None:
        shipped = read_text(source)
        if not target.exists():
            self._create(target, shipped)
        elif read_text(target) != shipped:
            if self.upgrade:
                self._replace(target, shipped, "mis à jour")
            else:
                self.report.notes.append(
                    f"{self.paths.rel(target)} diffère de la version livrée : laissé tel quel "
                    "(`ocmem init --mettre-a-jour` le remplace, après sauvegarde)"
                )

    def _plugin_command(self) -> None:
        """Tell the plugin how to run this ocmem (OpenCode's PATH may not have it)."""
        if self.paths.hardened_file.exists():
            return  # `ocmem harden` wrote how to start the gate through sudo: keep it
        target = self.paths.plugin_command
        # The console script next to this interpreter starts faster than `python -m` (no runpy).
        script = Path(sys.executable).with_name("ocmem")
        command = [str(script)] if script.is_file() else [sys.executable, "-m", "ocmem"]
        text = json.dumps({"command": command}) + "\n"
        if read_text(target) != text:
            created = not target.exists()
            self.txn.write(target, text, mode=0o600, backup=False)
            self.report.done.append(
                f"plugin relié à {' '.join(command)} ({self.paths.rel(target)})"
            )
            if created:
                self.report.undo.append(f"rm {target}")

    def _former_mcp(self) -> None:
        """``mcp.ocmem``, which an older ocmem installed in the home's opencode.json: ocmem mcp
        is gone, its tools are the plugin's (ocmem.setup.formermcp)."""
        removed = formermcp.remove(self.txn, self.paths)
        if removed:
            self.report.done.append(removed)
            config = self.paths.home / "opencode.json"
            self.report.undo.append(
                f"cp {self.txn.backups.folder / self.paths.rel(config)} {config}"
            )

    def _offline_start(self) -> None:
        """OpenCode starts without a registry: the seed that tells it the config dir's packages
        are installed (ocmem's plugin imports none), unless the user keeps their own."""
        home = self.paths.home
        if opencodedir.registry_needed(home) is None:
            return
        if not opencodedir.seedable(home):
            self.report.notes.append(
                "OpenCode cherchera le registre npm à son démarrage (ton package.json ou "
                f"node_modules/ sont à toi : laissés tels quels) ; {opencodedir.settle_command(home)}"
            )
            return
        for path, text in opencodedir.seed_files(home).items():
            self._create(path, text)
        self.report.undo.append(f"rm -r {home / 'node_modules'}")

    def _agents_section(self, cuts: list[oldmemory.Prepared]) -> None:
        """Add or update ocmem's section; cut the old memory sections being replaced, in the
        same write (every other byte of AGENTS.md stays as it was)."""
        section = shipped_section()
        target = self.paths.agents_md
        if not target.exists():
            self._create(target, section + "\n")
            return
        current = read_text(target)
        if any(p.text != current for p in cuts):
            raise OcmemError(
                f"{target} a changé pendant `ocmem init` : rien n'en a été retiré",
                fix="relance `ocmem init`",
            )
        spans = [
            (p.finding.section.start, p.finding.section.end) for p in cuts if p.finding.section
        ]
        text = memorysignals.cut(current, spans)
        what: str | None = None
        if BEGIN_MARKER in text or END_MARKER in text:
            found = SECTION.findall(text)
            if len(found) != 1:
                raise OcmemError(
                    f"{target} contient des marqueurs ocmem incomplets ou en double",
                    fix=f"garde une seule paire {BEGIN_MARKER} … {END_MARKER} dans {target}, puis relance",
                )
            if found[0] != section:
                text = SECTION.sub(lambda _: section, text)
                what = "section ocmem mise à jour dans"
        else:
            text = text.rstrip("\n") + "\n\n" + section + "\n"
            what = "section ocmem ajoutée à"
        if text == current:
            return
        if cuts:
            removed = ", ".join(
                f"« {p.finding.title} » (lignes {p.finding.section.first_line} à "
                f"{p.finding.section.last_line})"
                for p in cuts
                if p.finding.section
            )
            cut_what = f"ancienne section de mémoire {removed} retirée de"
            what = cut_what if what is None else f"{cut_what} AGENTS.md ; {what}"
        if what is not None:
            self._replace(target, text, what)

    def _read_import(self, source: Path) -> list[str]:
        if not source.is_file():
            raise OcmemError(
                f"fichier à importer introuvable : {source}",
                fix="vérifie le chemin de --importer-court-terme",
            )
        return read_text(source).splitlines()

    def _plan_imports(
        self, old: _OldMemory, import_file: Path | None, import_lines: list[str] | None
    ) -> _Imports:
        """What the imports will write (short-term notes, proposals), computed from the files
        as they are under the lock: a file that cannot be read stops the run here, before
        anything is written."""
        today = self.ws.today()
        kept, _ = shortterm.split_expired(shortterm.parse(read_text(self.paths.short_term)), today)
        imports = _Imports(kept)
        if import_lines is not None and import_file is not None:
            imports.notes.append(self._plan_notes(str(import_file), import_lines, imports))
        lines = [(where, line) for p in old.chosen for where, line in p.lines]
        notes = [line.text for _, line in lines if line.kind == memorysignals.NOTE]
        if notes:
            imports.notes.append(self._plan_notes("l'ancienne mémoire", notes, imports))
        facts = [
            _imported_fact(where, line) for where, line in lines if line.kind == memorysignals.FACT
        ]
        if facts:
            from ocmem.services.factimport import plan_import

            imports.facts = plan_import(self.ws, facts)
        imports.instructions = sum(line.kind == memorysignals.INSTRUCTION for _, line in lines)
        imports.read = [where for p in old.chosen for where in p.read]
        return imports

    def _plan_notes(self, source: str, raw_lines: list[str], imports: _Imports) -> _NoteImport:
        today = self.ws.today()
        planned = _NoteImport(source)
        for line_no, raw in enumerate(raw_lines, start=1):
            note = _note_from_line(raw, today, self.limits.note_default_days)
            if note is None:
                continue
            problems = (
                find_secrets(note.text) + find_personal_data(note.text) + find_injection(note.text)
            )
            reason = None
            if problems:
                reason = problems[0].kind  # the line itself is not echoed: it may hold a secret
            elif note.expired(today):
                reason = "déjà expirée"
            elif Fill(
                len(shortterm.render([*imports.all_notes(), *planned.imported, note])),
                self.limits.short_term_chars,
            ).over:
                reason = f"plafond de {self.limits.short_term_chars} caractères atteint"
            if reason:
                planned.skipped.append(f"ligne {line_no} : {reason}")
            else:
                planned.imported.append(note)
        return planned

    def _write_imports(self, imports: _Imports) -> None:
        added = [n for planned in imports.notes for n in planned.imported]
        if added:
            sources = " et de ".join(p.source for p in imports.notes if p.imported)
            self._replace(
                self.paths.short_term,
                shortterm.render(imports.all_notes()),
                f"{len(added)} note(s) importée(s) de {sources} dans",
            )
        for planned in imports.notes:
            self.report.notes.append(
                f"Import de {planned.source} : {len(planned.imported)} note(s) importée(s), "
                f"{len(planned.skipped)} écartée(s)"
            )
            self.report.notes += [f"  + {n.render()}" for n in planned.imported]
            self.report.notes += [f"  - {s}" for s in planned.skipped]
        facts = imports.facts
        if facts is not None:
            if facts.added:
                ids = [p.id for p in facts.added]
                span = ids[0] if len(ids) == 1 else f"{ids[0]} à {ids[-1]}"
                self._replace(
                    self.paths.pending,
                    facts.document.render(),
                    f"{len(ids)} fait(s) de l'ancienne mémoire proposé(s) ({span}, à valider : "
                    "`ocmem pending list`) dans",
                )
            self.report.notes.append(
                f"Faits de l'ancienne mémoire (lus dans {', '.join(imports.read)}) : "
                f"{len(facts.added)} proposé(s) à ta validation, {len(facts.skipped)} écarté(s)"
            )
            self.report.notes += [f"  - {line}" for line in facts.skipped]
        if imports.instructions:
            self.report.notes.append(
                f"{imports.instructions} consigne(s) de l'ancien système non importée(s) : ocmem "
                "a les siennes (section « Mémoire et apprentissage » de AGENTS.md)"
            )

    # --- another memory system -----------------------------------------------------------

    def _old_memory(self) -> _OldMemory:
        """Find another memory system, decide for each part (flag, question, or nobody to
        ask), and read what the chosen ones hold. Raises before any write."""
        scan = oldmemory.detect(self.paths, self.env, sync_mode=self.ws.sync_mode)
        old = _OldMemory(scan)
        chosen: list[oldmemory.Finding] = []
        for finding in scan.findings:
            if self.replace_old:
                chosen.append(finding)
            elif self.confirm is None:
                old.waiting.append(finding)
            elif self.confirm(self._question(finding)):
                chosen.append(finding)
            else:
                old.declined.append(finding)
        moving = [f for f in chosen if f.kind == "skill" and not f.from_silverbullet]
        for root in scan.roots:
            if moving and oldmemory.covers(root.path, self.paths.old_memory_dir):
                raise OcmemError(
                    f"OpenCode charge les skills de {root.path}, qui contient "
                    f"{self.paths.rel(self.paths.old_memory_dir)}/ : un skill mis de côté "
                    "y resterait actif ; rien n'a été modifié",
                    fix=f'retire {root.path} de "skills": {{"paths": […]}} dans '
                    f"{self.paths.home}/opencode.json, puis relance `ocmem init`",
                )
        old.chosen = [oldmemory.prepare(f, self.paths, self.env) for f in chosen]
        return old

    def _question(self, finding: oldmemory.Finding) -> str:
        if finding.from_silverbullet:
            how = "à retirer ensuite dans SilverBullet"
        elif finding.section is not None:
            how = "section retirée de AGENTS.md"
        else:
            how = f"dossier mis de côté dans {self.paths.rel(self.paths.old_memory_dir)}/"
        return (
            f"Autre système de mémoire : {finding.describe(self.paths, self.env)}\n"
            f"Le remplacer par ocmem ? (sauvegarde, {how}, ses faits deviennent des "
            "propositions à valider)"
        )

    def _set_aside(self, old: _OldMemory) -> None:
        """Back up each chosen skill byte for byte, then move it out of OpenCode's reach.
        (Sections are cut with the AGENTS.md write; SilverBullet's files, in SilverBullet.)"""
        taken: set[str] = set()
        for prepared in old.chosen:
            finding = prepared.finding
            if finding.section is not None or finding.from_silverbullet:
                continue
            for rel, data in prepared.files:
                source = finding.path / rel if finding.path.is_dir() else finding.path
                self.txn.backups.save_bytes(
                    oldmemory.backup_name(source, self.paths, self.env), data
                )
            aside = (
                self.paths.old_memory_dir
                / self.txn.backups.stamp
                / oldmemory.aside_name(finding, taken)
            )
            self.txn.move_out(finding.path, aside)
            self.ws.log("old-memory", moved=str(finding.path), to=self.paths.rel(aside))
            self.report.done.append(
                f"ancienne mémoire mise de côté : {oldmemory.shown(finding.path, self.paths, self.env)}"
                f" → {self.paths.rel(aside)} (OpenCode ne la charge plus ; sauvegarde : "
                f"{self.txn.backups.folder})"
            )
            self.report.undo.append(
                f"mv {shlex.quote(str(aside))} {shlex.quote(str(finding.path))}"
            )
            if prepared.left:
                self.report.notes.append(
                    f"Non lu(s) dans {oldmemory.shown(finding.path, self.paths, self.env)} "
                    "(gardé(s) dans la mise de côté et la sauvegarde) : " + ", ".join(prepared.left)
                )

    def _report_found(self, old: _OldMemory) -> None:
        """What was found, and why (its signals)."""
        self.report.notes += old.scan.notes
        if old.scan.findings:
            self.report.notes += [
                "Autre système de mémoire trouvé :",
                *[f"  - {f.describe(self.paths, self.env)}" for f in old.scan.findings],
            ]

    def _report_old(self, old: _OldMemory) -> None:
        """What became of the other memory system, and what is left to a person."""
        if not old.scan.findings:
            return
        silverbullet = [p.finding for p in old.chosen if p.finding.from_silverbullet]
        if silverbullet:
            self.report.needs_human = True
            self.report.notes += [
                "À retirer dans SilverBullet (le prochain pull le ramènerait sinon) :",
                *[f"  - {f.silverbullet_fix()}" for f in silverbullet],
            ]
        command = oldmemory.replace_command(self.paths, self.env)
        if old.waiting:
            self.report.needs_human = True
            self.report.notes += [
                "Rien n'y a été changé (personne pour confirmer) : tant qu'il reste, deux systèmes "
                "de mémoire donnent leurs consignes à l'agent.",
                f"Pour le remplacer (sauvegarde, mise de côté, faits proposés à ta validation) : {command}",
            ]
        if old.declined:
            self.report.notes.append(
                f"Laissé en place à ta demande : {len(old.declined)} élément(s) ; `ocmem doctor` "
                f"le signale, `{command}` le remplace."
            )
        replaced = [p.finding for p in old.chosen if not p.finding.from_silverbullet]
        if replaced:
            still = oldmemory.detect(self.paths, self.env, sync_mode=self.ws.sync_mode).findings
            left = [
                f for f in replaced if any((g.path, g.title) == (f.path, f.title) for g in still)
            ]
            if left:
                self.report.needs_human = True
                self.report.notes += [
                    "⚠ Encore chargé par OpenCode après remplacement :",
                    *[f"  - {f.describe(self.paths, self.env)}" for f in left],
                ]


def _imported_fact(where: str, line: memorysignals.OldLine) -> ImportedFact:
    from ocmem.services.drafts import ImportedFact

    return ImportedFact(where, line.line, line.text)


def _note_from_line(raw: str, today: date, days: int) -> shortterm.Note | None:
    line = raw.strip()
    if not line or line.startswith("#"):
        return None
    try:
        dated = shortterm.parse(line)
    except shortterm.ShortTermFormatError:
        dated = []
    if dated:
        return dated[0]
    text = re.sub(r"^(?:[-*+]|\d+[.)])\s+", "", line)
    return shortterm.make_note(inert.inline(text), today, days, days) if text else None
