// The plugin's pure parts answering questions, for tests/test_plugin_drift.py: what Python and
// TypeScript must agree on (fold, shapes, watched paths, refused commands). Reads a JSON request
// from the file named first, writes the answers as JSON to the second.
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { SHAPES } from "../../plugin/ocmem/contract.ts"
import { OCMEM_WRITE } from "../../plugin/ocmem/guards.ts"
import { Monitor } from "../../plugin/ocmem/monitor.ts"
import { coldStart, conforms } from "../../plugin/ocmem/shapes.ts"
import { fold } from "../../plugin/ocmem/text.ts"

type Request = {
  fold: string[]
  conforms: [unknown, keyof typeof SHAPES][]
  watched: { home: string; rels: string[] }
  refused: string[]
}

const request: Request = JSON.parse(readFileSync(process.argv[2], "utf8"))
const monitor = new Monitor(request.watched.home, coldStart(request.watched.home))
writeFileSync(
  process.argv[3],
  JSON.stringify({
    fold: request.fold.map(fold),
    conforms: request.conforms.map(([value, shape]) => conforms(value, SHAPES[shape])),
    watched: request.watched.rels.map((rel) => monitor.watched(rel)),
    refused: request.refused.map((command) => OCMEM_WRITE.test(command)),
    home: join(request.watched.home),
  }),
)
