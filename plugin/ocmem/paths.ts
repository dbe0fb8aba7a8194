/** Paths as the plugin compares them: inside a folder or not, symlinks resolved. */
import { realpathSync } from "node:fs"
import { basename, dirname, join, resolve, sep } from "node:path"

export function within(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep)
}

/** `path` with the symlinks of its deepest existing ancestor resolved, so a link cannot smuggle
 * a write in. Synchronous on purpose: a few stat calls cost less than an async round trip. */
export function canonical(path: string): string {
  let head = path
  const tail: string[] = []
  for (;;) {
    try {
      return join(realpathSync(head), ...tail.reverse())
    } catch {
      const parent = dirname(head)
      if (parent === head) return path
      tail.push(basename(head))
      head = parent
    }
  }
}

/** A path a shell command names (`~/x`, `$HOME/x`, `../x`), made absolute. */
export function expand(token: string, cwd: string, userHome: string): string {
  if (token.startsWith("~/") || token === "~") return join(userHome, token.slice(1))
  return resolve(cwd, token.replace(/^\$\{HOME\}|^\$HOME/, userHome))
}
