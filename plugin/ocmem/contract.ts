// Generated from sync/ocmem/bridge/contract.py by `scripts/generate.py`: do not edit.
/* eslint-disable */
export type Exposure = {
  kind: string
  source: string
}
export type Window = {
  session: string
  start: number
  end: number
  open: boolean
}
export type Settings = {
  version: string
  home: string
  threshold: number
  sync: boolean
  pull_timeout_seconds: number
  protected_files: string[]
  protected_dirs: string[]
  secret_files: string[]
  trusted_tools: string[]
  untrusted_tools: string[]
  retiens: string
  corrections: string
  skill_usage_file: string
  maintenance_marker: string
  state_dir: string
  plugin_command_file: string
  writes_journal: string
  quarantine_dir: string
  hardened: boolean
  redact: string[]
  fetch_commands: string
  path_tokens: string
  file_tokens: string
  untrusted_dirs: string[]
  system_paths: string[]
  trust_project: boolean
  exposure_windows: Window[]
  windows_file: string
  silverbullet_mcp: string[]
  silverbullet_mcp_pattern: string
  silverbullet_inbox: string
  environment_warnings: string[]
}
export type PromptContext = {
  system: string[]
  warnings: string[]
  journal_written: boolean
  quarantined: string[]
}
export type ToolEnvelope = {
  session: string
  user_messages: string[]
  exposures: Exposure[]
  args: Record<string, unknown>
}
export type ProposalSummary = {
  id: string
  kind: string
  title: string
  exposure: string
  replaces: string
}
export type SpaceAnswer = {
  text: string
  exposures: Exposure[]
}
export type McpWriteVerdict = {
  refusal: string
}
export const SHAPES = {
  "Exposure": {
    "kind": "string",
    "source": "string"
  },
  "Window": {
    "session": "string",
    "start": "number",
    "end": "number",
    "open": "boolean"
  },
  "Settings": {
    "version": "string",
    "home": "string",
    "threshold": "number",
    "sync": "boolean",
    "pull_timeout_seconds": "number",
    "protected_files": "string[]",
    "protected_dirs": "string[]",
    "secret_files": "string[]",
    "trusted_tools": "string[]",
    "untrusted_tools": "string[]",
    "retiens": "string",
    "corrections": "string",
    "skill_usage_file": "string",
    "maintenance_marker": "string",
    "state_dir": "string",
    "plugin_command_file": "string",
    "writes_journal": "string",
    "quarantine_dir": "string",
    "hardened": "boolean",
    "redact": "string[]",
    "fetch_commands": "string",
    "path_tokens": "string",
    "file_tokens": "string",
    "untrusted_dirs": "string[]",
    "system_paths": "string[]",
    "trust_project": "boolean",
    "exposure_windows": "Window[]",
    "windows_file": "string",
    "silverbullet_mcp": "string[]",
    "silverbullet_mcp_pattern": "string",
    "silverbullet_inbox": "string",
    "environment_warnings": "string[]"
  },
  "PromptContext": {
    "system": "string[]",
    "warnings": "string[]",
    "journal_written": "boolean",
    "quarantined": "string[]"
  },
  "ToolEnvelope": {
    "session": "string",
    "user_messages": "string[]",
    "exposures": "Exposure[]",
    "args": "Record<string, unknown>"
  },
  "ProposalSummary": {
    "id": "string",
    "kind": "string",
    "title": "string",
    "exposure": "string",
    "replaces": "string"
  },
  "SpaceAnswer": {
    "text": "string",
    "exposures": "Exposure[]"
  },
  "McpWriteVerdict": {
    "refusal": "string"
  }
} as const
export const PATH_FIELDS = ["protected_files", "protected_dirs", "secret_files", "skill_usage_file", "state_dir", "plugin_command_file", "writes_journal", "quarantine_dir", "windows_file"] as const
/** Until `ocmem plugin-config` answers: paths relative to the home. */
export const COLD_START: Settings = {
  "version": "0.1.0",
  "home": ".",
  "threshold": 5,
  "sync": false,
  "pull_timeout_seconds": 20.0,
  "protected_files": [
    "AGENTS.md",
    "ocmem.yaml"
  ],
  "protected_dirs": [
    "memory",
    "skills",
    ".ocmem",
    "plugin"
  ],
  "secret_files": [
    ".ocmem/silverbullet.token"
  ],
  "trusted_tools": [
    "bash",
    "edit",
    "glob",
    "grep",
    "list",
    "read",
    "patch",
    "multiedit",
    "apply_patch",
    "skill",
    "task",
    "todoread",
    "todowrite",
    "write",
    "invalid"
  ],
  "untrusted_tools": [
    "webfetch",
    "websearch"
  ],
  "retiens": "\\bretiens\\b|\\bretenir\\b|\\bsouviens[- ]toi\\b|\\bmemorise\\b|\\bn'oublie pas\\b|\\bremember (?:this|that)\\b|\\bkeep in mind\\b",
  "corrections": "(?:(?:^|[\\n.!?;])[ \\t\"«]*(?:(?:ah|oh|mais|euh|bah|ben|hm+|hum|ok|okay|well|uh|um|hey|eh)[ \\t,]+)*(?:(?:non|nope)\\b(?!-)(?![ \\t,.!:;]*(?:merci|thanks|thank[ \\t]+you|problem|probleme|worries|souci|soucis|need|besoin|pas[ \\t]+de[ \\t]+souci|pas[ \\t]+de[ \\t]+probleme|pas[ \\t]+besoin|plus|seulement|idea|idee|such|matter|longer)\\b)[ \\t,.!:;]*[a-z0-9'’]|(?:no|nan|nah)(?:[ \\t]*[,.!:;]|[ \\t]+(?:no|not|don(?:['’] ?| )?t|stop)\\b)(?![ \\t,.!:;]*(?:merci|thanks|thank[ \\t]+you|problem|probleme|worries|souci|soucis|need|besoin|pas[ \\t]+de[ \\t]+souci|pas[ \\t]+de[ \\t]+probleme|pas[ \\t]+besoin|plus|seulement|idea|idee|such|matter|longer)\\b)[ \\t,.!:;]*[a-z0-9'’]|(?:arrete|arretes|arretez|stop|stoppe)(?:[ \\t]*[,!.]|[ \\t]+(?:de|d(?:['’] ?| )?|ca|it|that|doing|changing|touching|editing|deleting|modifying|removing|rewriting|guessing|making|adding)|[ \\t\\r\\n]*(?![\\s\\S]))|(?:erreur|faux|incorrect|wrong)[ \\t]*[,!]|actually,?[ \\t]+(?:no\\b|it(?:['’] ?| )?s|it[ \\t]+is|it[ \\t]+was|it[ \\t]+should|that(?:['’] ?| )?s|that[ \\t]+is)|en[ \\t]+fait,?[ \\t]+non\\b))|(?:(?:^|[\\n.!?;:,\"«»()])[ \\t]*(?:(?!(?:si|s(?:['’] ?| )?il(?![ \\t]+(?:te|vous)[ \\t]+pla)|pourquoi|comment|quand|est-ce|est[ \\t]+ce|qu(?:['’] ?| )?est-ce|quel|quelle|rien|if|whether|unless|why|how|what|what(?:['’] ?| )?s|when|which|do|does|did|can|could|would|should|nothing|something|anything)\\b)[^ \\t\\n.!?;:,\"«»()]+[ \\t]+)*(?:(?:c(?:['’] ?| )?est|c(?:['’] ?| )?etait|ce[ \\t]+n(?:['’] ?| )?est|ce[ \\t]+n(?:['’] ?| )?etait|ca[ \\t]+n(?:['’] ?| )?est)[ \\t]+(?:faux|incorrect|errone|n(?:['’] ?| )?importe[ \\t]+quoi|pas[ \\t]+(?:ca|cela|bon(?![ \\t]+signe)|juste|correct|exact|le[ \\t]+bon|la[ \\t]+bonne|les[ \\t]+bons|les[ \\t]+bonnes)|pas[ \\t]+ce[ \\t]+que|pas[ \\t]+ce[ \\t]+qu(?:['’] ?| )?)|pas[ \\t]+comme[ \\t]+(?:ca|cela)|pas[ \\t]+(?:celui|celle|ceux|celles)(?:-|[ \\t]+)la|(?:est|sont|etait|etaient)[ \\t]+(?:faux|fausse|fausses|incorrecte?s?|errone(?:e|s|es)?)|(?:tu[ \\t]+(?:t(?:['’] ?| )?es|t(?:['’] ?| )?etais|te)[ \\t]+(?:trompe|trompes|plante|plantes|goure|goures|melange)|vous[ \\t]+vous[ \\t]+etes[ \\t]+trompes?|(?:tu[ \\t]+as|t(?:['’] ?| )?as|vous[ \\t]+avez)[ \\t]+(?:tort|tout[ \\t]+casse|casse|tout[ \\t]+efface|efface[ \\t]+mon|supprime[ \\t]+mon|mal[ \\t]+(?:compris|lu|fait)|oublie|fait[ \\t]+(?:une|n(?:['’] ?| )?importe))|(?:tu[ \\t]+n(?:['’] ?| )?as|t(?:['’] ?| )?as|vous[ \\t]+n(?:['’] ?| )?avez)[ \\t]+pas[ \\t]+(?:compris|lu|ecoute|suivi|respecte|fait[ \\t]+ce[ \\t]+que)|tu[ \\t]+m(?:['’] ?| )?as[ \\t]+mal[ \\t]+compris)|(?:je[ \\t]+(?:t(?:['’] ?| )?ai|t(?:['’] ?| )?avais|vous[ \\t]+ai|vous[ \\t]+avais)[ \\t]+(?:dit|demande|precise|explique)|j(?:['’] ?| )?(?:ai|avais)[ \\t]+(?:dit|precise)|j(?:['’] ?| )?avais[ \\t]+demande|je[ \\t]+voulais[ \\t]+dire|je[ \\t]+(?:n(?:['’] ?| )?ai|ne[ \\t]+t(?:['’] ?| )?ai|t(?:['’] ?| )?ai)[ \\t]+jamais[ \\t]+(?:dit|demande)|j(?:['’] ?| )?ai[ \\t]+jamais[ \\t]+(?:dit|demande))|(?:mauvais|mauvaise|mauvaises)[ \\t]+(?:fichier|port|dossier|repertoire|chemin|branche|serveur|conteneur|commande|version|cle|base|table|service|utilisateur|projet|depot|image|reseau|domaine|variable|option|hote|endroit|methode|approche|outil|ligne|fonction|config|configuration|url|adresse|mot[ \\t]+de[ \\t]+passe)|(?:(?:ne[ \\t]+)?fais[ \\t]+pas[ \\t]+(?:ca|cela)|remets[ \\t]+(?:tout[ \\t]+|le[ \\t]+|la[ \\t]+|les[ \\t]+)?comme[ \\t]+(?:avant|c(?:['’] ?| )?etait)|reviens[ \\t]+en[ \\t]+arriere|annule[ \\t]+(?:ca|ta|tes|ce[ \\t]+que[ \\t]+tu)|(?:tu[ \\t]+aurais|t(?:['’] ?| )?aurais|vous[ \\t]+auriez)[ \\t]+(?:pas[ \\t]+)?du|tu[ \\t]+n(?:['’] ?| )?aurais[ \\t]+pas[ \\t]+du|il[ \\t]+aurait[ \\t]+fallu|relis[ \\t]+(?:ma[ \\t]+demande|mon[ \\t]+message|ce[ \\t]+que|la[ \\t]+consigne))|(?:that|this|it|that[ \\t]+one|this[ \\t]+one)(?:(?:['’] ?| )?s|[ \\t]+is|[ \\t]+was)[ \\t]+(?:(?:completely[ \\t]+|totally[ \\t]+|all[ \\t]+|just[ \\t]+)?wrong|incorrect|not[ \\t]+(?:right|correct|true|it|what|how|the[ \\t]+right|the[ \\t]+correct|the[ \\t]+one))|(?:you(?:['’] ?| )?re[ \\t]+wrong|you[ \\t]+are[ \\t]+wrong|you(?:(?:['’] ?| )?ve|[ \\t]+have)?[ \\t]+got[ \\t]+(?:it|that|this)[ \\t]+wrong|(?:is|are|was|were)[ \\t]+(?:wrong|incorrect))|not[ \\t]+(?:like[ \\t]+(?:that|this)|that[ \\t]+way|this[ \\t]+way|that[ \\t]+one|what[ \\t]+i)|you[ \\t]+(?:broke|messed[ \\t]+up|screwed[ \\t]+up|misunderstood|misread|forgot|ignored|deleted[ \\t]+my|overwrote|didn(?:['’] ?| )?t[ \\t]+(?:listen|read|follow|do[ \\t]+what)|did[ \\t]+not[ \\t]+(?:listen|read|follow)|have[ \\t]+broken|(?:['’] ?| )?ve[ \\t]+broken|should[ \\t]+not[ \\t]+have|shouldn(?:['’] ?| )?t[ \\t]+have)|i[ \\t]+(?:said|told[ \\t]+you|already[ \\t]+(?:said|told[ \\t]+you)|asked[ \\t]+you[ \\t]+to|meant|didn(?:['’] ?| )?t[ \\t]+(?:ask|say|want)|never[ \\t]+(?:asked|said|told[ \\t]+you))|wrong[ \\t]+(?:file|port|folder|directory|path|branch|server|container|command|version|key|database|table|service|user|project|repo|repository|image|network|domain|variable|option|host|place|way|approach|tool|one|line|function|method|config|url|address|password)|(?:(?:don(?:['’] ?| )?t|do[ \\t]+not)[ \\t]+do[ \\t]+that|undo[ \\t]+(?:that|this|it|your)|revert[ \\t]+(?:that|this|it|your)|put[ \\t]+it[ \\t]+back|change[ \\t]+it[ \\t]+back))\\b(?![^\\n.!?;:,]*\\?))",
  "skill_usage_file": ".ocmem/skill-usage.jsonl",
  "maintenance_marker": "<!-- ocmem:maintenance -->",
  "state_dir": ".ocmem",
  "plugin_command_file": ".ocmem/plugin.json",
  "writes_journal": ".ocmem/writes.jsonl",
  "quarantine_dir": ".ocmem/quarantine",
  "hardened": false,
  "redact": [],
  "fetch_commands": "(?:^|[ \\t\\n\\r\\f\\v;&|()`'\\\"=/])(?:(?:curl|wget|wget2|aria2c|axel|lynx|links|elinks|w3m|httpie|xh|nc|ncat|netcat|socat|telnet|ssh|scp|sftp|ftp|tftp|rsync|svn|hg|gh|hub|dig|nslookup|whois|npx|bunx|uvx|pipx|composer|ollama)(?=$|[ \\t\\n\\r\\f\\v;&|()`'\\\"])|(?:git(?:[ \\t\\n\\r\\f\\v]+-[Cc][ \\t\\n\\r\\f\\v]+[^ \\t\\n\\r\\f\\v]+|[ \\t\\n\\r\\f\\v]+--?[A-Za-z0-9_-]+(?:=[^ \\t\\n\\r\\f\\v]+)?)*[ \\t\\n\\r\\f\\v]+(?:clone|fetch|pull|ls-remote|submodule|remote|archive|send-email|svn)|(?:npm|pnpm|yarn|bun)(?:[ \\t\\n\\r\\f\\v]+-[A-Za-z0-9_-]+(?:=[^ \\t\\n\\r\\f\\v]+)?)*[ \\t\\n\\r\\f\\v]+(?:install|i|add|ci|view|info|show|x|dlx|create|init|exec|update|upgrade|outdated|audit|search)|(?:pip[0-9.]*|python[0-9.]*[ \\t\\n\\r\\f\\v]+-m[ \\t\\n\\r\\f\\v]+pip)(?:[ \\t\\n\\r\\f\\v]+-[A-Za-z0-9_-]+(?:=[^ \\t\\n\\r\\f\\v]+)?)*[ \\t\\n\\r\\f\\v]+(?:install|download|index|search)|uv(?:[ \\t\\n\\r\\f\\v]+-[A-Za-z0-9_-]+(?:=[^ \\t\\n\\r\\f\\v]+)?)*[ \\t\\n\\r\\f\\v]+(?:pip|add|sync|run|tool|lock)|cargo(?:[ \\t\\n\\r\\f\\v]+-[A-Za-z0-9_-]+(?:=[^ \\t\\n\\r\\f\\v]+)?)*[ \\t\\n\\r\\f\\v]+(?:install|add|search|update|fetch|build|run)|go[ \\t\\n\\r\\f\\v]+(?:get|install|mod[ \\t\\n\\r\\f\\v]+download|run)|(?:apt|apt-get|dnf|yum|apk|pacman|zypper|brew|snap|flatpak|gem|conda|mamba)(?:[ \\t\\n\\r\\f\\v]+-[A-Za-z0-9_-]+(?:=[^ \\t\\n\\r\\f\\v]+)?)*[ \\t\\n\\r\\f\\v]+(?:install|download|source|changelog|info|fetch|search|update|add|-S[A-Za-z]*)|(?:docker|podman|buildah|nerdctl)(?:[ \\t\\n\\r\\f\\v]+-[A-Za-z0-9_-]+(?:=[^ \\t\\n\\r\\f\\v]+)?)*[ \\t\\n\\r\\f\\v]+(?:pull|run|build|search|compose|login)|openssl[ \\t\\n\\r\\f\\v]+s_client)(?=$|[ \\t\\n\\r\\f\\v;&|()`'\\\"])|(?:python[0-9.]*|pypy[0-9.]*|node|nodejs|deno|bun|perl|ruby|php|lua[0-9.]*|Rscript|osascript|pwsh|powershell|tclsh)(?:[ \\t\\n\\r\\f\\v]+-[A-Za-z0-9_-]+(?:=[^ \\t\\n\\r\\f\\v]+)?)*[ \\t\\n\\r\\f\\v]+(?:-[A-Za-z]*[ceE]|-r|-p|-|eval|--eval|--print|-command)(?=$|[ \\t\\n\\r\\f\\v;&|()`'\\\"])|(?:python[0-9.]*|pypy[0-9.]*|node|nodejs|deno|bun|perl|ruby|php|lua[0-9.]*|Rscript|osascript|pwsh|powershell|tclsh)(?:[ \\t\\n\\r\\f\\v]+-[A-Za-z0-9_-]+(?:=[^ \\t\\n\\r\\f\\v]+)?)*[ \\t\\n\\r\\f\\v]*<<)|(?:https?|ftps?|sftp|ssh|git|rsync|s3|gs|wss?)://|/dev/(?:tcp|udp)/",
  "path_tokens": "(?:^|[ \\t\\n\\r\\f\\v'\\\"=:<>|;&(])((?:~|\\$HOME|\\$\\{HOME\\})?/(?!/)[^ \\t\\n\\r\\f\\v'\\\"|;&<>()`$:]*|\\.\\.(?:/[^ \\t\\n\\r\\f\\v'\\\"|;&<>()`$:]*)?(?=$|[ \\t\\n\\r\\f\\v'\\\"|;&<>()]))",
  "file_tokens": "(?:^|[ \\t\\n\\r\\f\\v'\\\"=<>|;&(])([A-Za-z0-9_@+-][^ \\t\\n\\r\\f\\v'\\\"|;&<>()`$=:]*[./][^ \\t\\n\\r\\f\\v'\\\"|;&<>()`$=:]*)",
  "untrusted_dirs": [
    "node_modules",
    "vendor",
    "third_party",
    "third-party",
    "bower_components",
    "site-packages",
    "dist-packages",
    "__pypackages__",
    ".git",
    ".venv",
    "venv",
    ".tox",
    ".cargo",
    ".gradle",
    ".m2",
    "Pods",
    ".terraform"
  ],
  "system_paths": [
    "/dev/null",
    "/dev/zero",
    "/dev/random",
    "/dev/urandom",
    "/dev/stdin",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/tty",
    "/dev/fd/",
    "/bin/",
    "/sbin/",
    "/usr/bin/",
    "/usr/sbin/",
    "/usr/local/bin/"
  ],
  "trust_project": true,
  "exposure_windows": [],
  "windows_file": ".ocmem/windows.json",
  "silverbullet_mcp": [],
  "silverbullet_mcp_pattern": "(?:silver[-_ .]?bullet)|(?:(?:^|[^A-Za-z0-9])sb[-_]?mcp)|(?:mcp[-_]?sb(?:$|[^A-Za-z0-9]))|(?:(?:^|[^A-Za-z0-9])(?:SB|SILVERBULLET|SILVER_BULLET)_[A-Z0-9_]*(?:$|[^A-Za-z0-9_]))|(?:\\{env:(?:OCMEM_SILVERBULLET_URL|OCMEM_SILVERBULLET_TOKEN|OCMEM_SILVERBULLET_TOKEN_FILE)\\})|(?:\\{file:[^}]*(?:silverbullet\\.token|\\.ocmem/)[^}]*\\})",
  "silverbullet_inbox": "",
  "environment_warnings": []
}
/** The memory tools (sync/ocmem/formats/operations.py). */
export const TOOLS = {
  "memory_note": {
    "description": "Ajoute une note de travail à court terme (une ligne, 7 jours par défaut) dans memory/SHORT_TERM.md. Si c'est plein, ocmem montre les notes : supprime-en avec memory_forget avant de réessayer.",
    "args": {
      "text": {
        "type": "string",
        "description": "La note, une ligne"
      },
      "days": {
        "type": [
          "integer",
          "null"
        ],
        "minimum": 1,
        "description": "Durée de vie en jours (null : 7)"
      }
    }
  },
  "memory_forget": {
    "description": "Supprime la note de travail n°N (numéros donnés par memory_note quand c'est plein).",
    "args": {
      "number": {
        "type": "integer",
        "minimum": 1,
        "description": "Numéro de la note"
      }
    }
  },
  "memory_search": {
    "description": "Cherche dans le journal des épisodes passés, par les mots et par le sens : 5 entrées au plus, les plus pertinentes d'abord ; une correspondance faible est signalée comme telle. Dis-le de plusieurs façons en un seul appel : query avec les mots de la question, alternatives avec 4 autres formulations au plus (les mots techniques qu'une entrée emploierait — produit, version, code d'erreur —, le symptôme, la même question en anglais). « rien de pertinent » veut dire qu'aucune entrée ne porte ces mots ni ce sens. Avec recent: N (20 au plus), les titres seuls des N dernières entrées, pour survoler le travail récent.",
    "args": {
      "query": {
        "type": [
          "string",
          "null"
        ],
        "description": "La question, ou des mots-clés"
      },
      "alternatives": {
        "type": [
          "array",
          "null"
        ],
        "items": {
          "type": "string"
        },
        "minItems": 0,
        "maxItems": 4,
        "description": "Autres formulations de la même recherche (4 au plus) : mots techniques, symptôme, anglais ; fusionnées en une seule liste"
      },
      "tags": {
        "type": [
          "array",
          "null"
        ],
        "items": {
          "type": "string"
        },
        "description": "Tags exigés"
      },
      "last": {
        "type": [
          "integer",
          "null"
        ],
        "minimum": 1,
        "description": "Les N dernières entrées (5 au plus)"
      },
      "recent": {
        "type": [
          "integer",
          "null"
        ],
        "minimum": 1,
        "maximum": 20,
        "description": "Titres seuls des N dernières entrées (20 au plus)"
      }
    }
  },
  "memory_journal": {
    "description": "Consigne l'épisode de la tâche dans memory/journal.md (skill retrospective ; une entrée par session, 10 lignes au plus).",
    "args": {
      "titre": {
        "type": "string",
        "description": "Titre court (80 caractères au plus, sans « · »)"
      },
      "tags": {
        "type": "array",
        "items": {
          "type": "string"
        },
        "description": "Tags (en ligne de commande : séparés par des espaces ou des virgules)"
      },
      "demande": {
        "type": "string",
        "description": "Ce que l'utilisateur a demandé"
      },
      "fait": {
        "type": "string",
        "description": "Ce qui a été fait"
      },
      "piege": {
        "type": "string",
        "description": "Le piège rencontré (« aucun » s'il n'y en a pas)"
      },
      "lecon": {
        "type": "string",
        "description": "La leçon à retenir"
      },
      "resultat": {
        "type": "string",
        "enum": [
          "réussi",
          "partiel",
          "échec"
        ],
        "description": "Issue de la tâche"
      }
    }
  },
  "memory_propose": {
    "description": "Propose un fait ou un skill à l'utilisateur (memory/pending.md) : leçon vue dans 2 entrées du journal, ou « retiens ça » de l'utilisateur.",
    "args": {
      "type": {
        "type": "string",
        "enum": [
          "fait",
          "skill"
        ],
        "description": "Fait ou skill"
      },
      "titre": {
        "type": "string",
        "description": "Titre de la proposition (une ligne)"
      },
      "contenu": {
        "type": "string",
        "description": "Le fait (une ligne) ou le brouillon du skill"
      },
      "sources": {
        "type": "array",
        "items": {
          "type": "string"
        },
        "description": "Références « journal AAAA-MM-JJ HH:MM »"
      },
      "contradiction": {
        "type": "string",
        "description": "« aucune » ou ce que la proposition contredit"
      },
      "remplace": {
        "type": "string",
        "description": "« rien » ou le fait/skill remplacé ou modifié"
      },
      "retiens_ca": {
        "type": [
          "boolean",
          "null"
        ],
        "description": "L'utilisateur a dit « retiens ça » dans cette session"
      },
      "note_recurrente": {
        "type": [
          "boolean",
          "null"
        ],
        "description": "Fait tiré d'une note qu'ocmem a signalée comme récurrente (sources peut alors être vide)"
      },
      "independant": {
        "type": [
          "array",
          "null"
        ],
        "items": {
          "type": "string"
        },
        "description": "Éléments proches qu'elle ne touche pas, cités (quand ocmem demande de le dire)"
      },
      "name": {
        "type": [
          "string",
          "null"
        ],
        "description": "Nom du skill proposé"
      },
      "description": {
        "type": [
          "string",
          "null"
        ],
        "description": "Description du skill, 2 phrases au plus"
      }
    }
  },
  "memory_accept": {
    "description": "Promeut une proposition validée par l'utilisateur (« valide pending ») : OpenCode lui demande confirmation.",
    "args": {
      "id": {
        "type": "string",
        "description": "Identifiant, ex. P-0003"
      }
    }
  }
} as const
export type ToolName = keyof typeof TOOLS
/** The SilverBullet space's tools (sync/ocmem/formats/operations.py). */
export const SPACE_TOOLS = {
  "space_read": {
    "description": "Lit une page de l'espace SilverBullet de l'utilisateur. Lire une page hors de la mémoire validée expose la session.",
    "args": {
      "page": {
        "type": "string",
        "description": "Nom de la page tel que SilverBullet l'affiche, ex. Projets/Infra"
      }
    }
  },
  "space_list": {
    "description": "Liste les pages de SilverBullet, toutes ou celles d'un dossier. Expose la session (les noms sont écrits par d'autres).",
    "args": {
      "prefix": {
        "type": [
          "string",
          "null"
        ],
        "description": "Dossier, ex. Agents/Inbox (null : toutes les pages)"
      }
    }
  },
  "space_search": {
    "description": "Cherche des mots dans les pages de SilverBullet : les 10 pages qui en ont le plus, avec leurs lignes. Expose la session.",
    "args": {
      "query": {
        "type": "string",
        "description": "Mots à chercher"
      }
    }
  },
  "space_write": {
    "description": "Écrit une page sous Agents/Inbox/<id-du-dossier>/ (le seul dossier de SilverBullet ouvert à l'agent ; ni la mémoire validée, ni les skills, ni AGENTS.md, ni les pages qu'ocmem pousse : un fait ou une leçon passe par memory_note, memory_journal ou memory_propose). Le texte est rendu inerte (ni HTML ni Lua) ; une page existante n'est remplacée qu'avec replace: true.",
    "args": {
      "page": {
        "type": "string",
        "description": "Nom de la page, ex. Agents/Inbox/<id-du-dossier>/notes/idee"
      },
      "content": {
        "type": "string",
        "description": "Le texte de la page (Markdown)"
      },
      "replace": {
        "type": [
          "boolean",
          "null"
        ],
        "description": "Remplacer la page si elle existe (null : non)"
      }
    }
  }
} as const
export type SpaceToolName = keyof typeof SPACE_TOOLS
/** What the agent's shell may not run (ocmem.bridge.agentproc refuses them too). */
export const AGENT_REFUSED_COMMANDS = ["note", "journal add", "propose", "pending accept", "pending annuler", "pending undo", "retire", "init", "harden", "gate", "tool", "cron install", "cron remove", "doctor --reparer", "doctor --fix", "desinstaller", "uninstall"] as const
/** Letters NFKD keeps whole, spread out by fold (sync/ocmem/text/words.py). */
export const LIGATURES: Record<string, string> = {"œ": "oe", "æ": "ae", "ß": "ss", "ø": "o", "ł": "l", "đ": "d", "ı": "i"}
export const AGENT_ENV = "OCMEM_AGENT_SESSION"
export const RETROSPECTIVE_REMINDER = "charge le skill `retrospective` et applique-le, une seule fois pour cette session."
export const TOKEN_ENV = "OCMEM_SILVERBULLET_TOKEN"
export const SPACE_ENV = ["OCMEM_SILVERBULLET_URL", "OCMEM_SILVERBULLET_TOKEN_FILE", "OCMEM_SILVERBULLET_TOKEN"] as const
export const MASKED_ENV_VALUE = "***"
export const MAX_EXPOSURES = 50
export const TOKEN_FILE_NAME = "silverbullet.token" // wherever it is copied
