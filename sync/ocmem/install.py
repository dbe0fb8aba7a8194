"""``ocmem init``: create or complete an ocmem home without ever losing what is there.

Every file is created only if missing; a file ocmem ships (the retrospective skill, the plugin)
that differs from the shipped version is left alone unless ``upgrade`` is asked, and then backed
up first. The AGENTS.md section lives between markers, so it is added once and updated in place.
Each action is reported with the command that undoes it.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from ocmem import home, inert, shortterm
from ocmem.errors import OcmemError
from ocmem.fill import Fill
from ocmem.fsio import Backups, atomic_write, log_event, read_text
from ocmem.outcome import Outcome
from ocmem.textsafety import find_injection, find_personal_data, find_secrets
from ocmem.workspace import Workspace, memory_templates

BEGIN_MARKER = "<!-- ocmem:begin -->"
END_MARKER = "<!-- ocmem:end -->"
_SECTION = re.compile(re.escape(BEGIN_MARKER) + r".*?" + re.escape(END_MARKER), re.DOTALL)


def data_root() -> Path:
    """Where the shipped files are: inside the wheel, or the repo top level in a checkout."""
    packaged = Path(__file__).parent / "_data"
    if (packaged / "AGENTS.md").is_file():
        return packaged
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "skills" / "retrospective" / "SKILL.md").is_file():
        return checkout
    raise OcmemError(
        "fichiers livrés avec ocmem introuvables", fix="réinstalle ocmem (pip install …)"
    )


def shipped_section() -> str:
    match = _SECTION.search(read_text(data_root() / "AGENTS.md"))
    if not match:
        raise OcmemError("section ocmem absente de l'AGENTS.md livré", fix="réinstalle ocmem")
    return match.group(0)


@dataclass
class _Report:
    done: list[str] = field(default_factory=list)
    undo: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def outcome(self) -> Outcome:
        lines = ["ocmem init :"]
        lines += [f"  {line}" for line in self.done] or ["  rien à faire, tout est en place"]
        if self.notes:
            lines += ["", *self.notes]
        if self.undo:
            lines += ["", "Pour annuler :", *[f"  {line}" for line in self.undo]]
        return Outcome(lines)


class Installer:
    def __init__(self, workspace: Workspace, *, upgrade: bool = False, home_id: str | None = None):
        self.ws = workspace
        self.paths = workspace.paths
        self.limits = workspace.limits
        self.upgrade = upgrade
        self.home_id = home_id
        self.report = _Report()
        self.backups = Backups(self.paths)

    def run(self, import_file: Path | None = None) -> Outcome:
        import_lines = self._read_import(import_file) if import_file else None
        identity = home.create(self.paths, self.home_id) if self.home_id else None
        root = data_root()
        self.paths.home.mkdir(parents=True, exist_ok=True)
        with self.ws.transaction("init"):
            for path, template in memory_templates(self.paths).items():
                self._create(path, template)
            self._identity(identity)
            self._shipped(
                self.paths.skills_dir / "retrospective" / "SKILL.md",
                root / "skills" / "retrospective" / "SKILL.md",
            )
            if self.ws.sync_mode:
                self.report.notes.append(
                    "AGENTS.md est tiré de SilverBullet : ajoute la section « Mémoire et apprentissage » "
                    "à la page Agents/AGENTS.md (`ocmem init --show-section` l'affiche), puis `ocmem pull`"
                )
            else:
                self._agents_section()
            if (root / "plugin" / "ocmem.ts").is_file():
                self._shipped(self.paths.plugin_file, root / "plugin" / "ocmem.ts")
                self._plugin_command()
            if import_lines is not None and import_file is not None:
                self._import_short_term(import_file, import_lines)
        if self.backups.saved:
            self.report.notes.append(f"Sauvegardes : {self.backups.folder}")
        log_event(self.paths, "init", actions=self.report.done)
        return self.report.outcome()

    def _identity(self, wanted: home.HomeId | None) -> None:
        """This home's id (it names its pages in SilverBullet): kept once chosen, unless
        ``--home-id`` gives another one (a copy of this home needs one of its own)."""
        current = home.read(self.paths)
        chosen = wanted or (current if current else home.create(self.paths, None))
        if current == chosen:
            return
        atomic_write(self.paths.home_id, home.render(chosen), mode=0o600)
        if current is None:
            self.report.done.append(f"identifiant de ce dossier : {chosen.id}")
            self.report.undo.append(f"rm {self.paths.home_id}")
        else:
            self.report.done.append(f"identifiant de ce dossier : {current.id} → {chosen.id}")
            if current.id != chosen.id:
                self.report.notes.append(
                    f"Les prochains envois iront dans Agents/Inbox/{chosen.id}/ ; "
                    f"les pages de Agents/Inbox/{current.id}/ restent telles quelles dans SilverBullet."
                )

    def _create(self, path: Path, text: str) -> None:
        if path.exists():
            return
        atomic_write(path, text)
        self.report.done.append(f"créé {self.paths.rel(path)}")
        self.report.undo.append(f"rm {path}")

    def _replace(self, path: Path, text: str, what: str) -> None:
        backup = self.backups.save(path)
        atomic_write(path, text)
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
                    "(`ocmem init --upgrade` le remplace, après sauvegarde)"
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
            atomic_write(target, text, mode=0o600)
            self.report.done.append(
                f"plugin relié à {' '.join(command)} ({self.paths.rel(target)})"
            )
            if created:
                self.report.undo.append(f"rm {target}")

    def _agents_section(self) -> None:
        section = shipped_section()
        target = self.paths.agents_md
        current = read_text(target)
        if not target.exists():
            self._create(target, section + "\n")
            return
        if BEGIN_MARKER in current or END_MARKER in current:
            found = _SECTION.findall(current)
            if len(found) != 1:
                raise OcmemError(
                    f"{target} contient des marqueurs ocmem incomplets ou en double",
                    fix=f"garde une seule paire {BEGIN_MARKER} … {END_MARKER} dans {target}, puis relance",
                )
            if found[0] == section:
                return
            self._replace(
                target, _SECTION.sub(lambda _: section, current), "section ocmem mise à jour dans"
            )
            return
        self._replace(
            target, current.rstrip("\n") + "\n\n" + section + "\n", "section ocmem ajoutée à"
        )

    def _read_import(self, source: Path) -> list[str]:
        if not source.is_file():
            raise OcmemError(
                f"fichier à importer introuvable : {source}",
                fix="vérifie le chemin de --import-short-term",
            )
        return read_text(source).splitlines()

    def _import_short_term(self, source: Path, raw_lines: list[str]) -> None:
        today = self.ws.today()
        kept, _ = shortterm.split_expired(shortterm.parse(read_text(self.paths.short_term)), today)
        imported: list[shortterm.Note] = []
        skipped: list[str] = []
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
                len(shortterm.render([*kept, *imported, note])), self.limits.short_term_chars
            ).over:
                reason = f"plafond de {self.limits.short_term_chars} caractères atteint"
            if reason:
                skipped.append(f"ligne {line_no} : {reason}")
            else:
                imported.append(note)
        if imported:
            self._replace(
                self.paths.short_term,
                shortterm.render([*kept, *imported]),
                f"{len(imported)} note(s) importée(s) de {source} dans",
            )
        self.report.notes.append(
            f"Import de {source} : {len(imported)} note(s) importée(s), {len(skipped)} écartée(s)"
        )
        self.report.notes += [f"  + {n.render()}" for n in imported]
        self.report.notes += [f"  - {s}" for s in skipped]


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
