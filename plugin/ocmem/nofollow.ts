/** ocmem's rule in the plugin too (sync/ocmem/home/atomic.py): no link is followed below the
 * home. A file of the home is read only once every folder on its way below the home was found
 * not to be a link, and is opened with O_NOFOLLOW; a link throws `LinkRefused`, naming it and
 * the fix. The home itself may be a link; a path outside it is read as given. */
import { constants, lstatSync, openSync, readFileSync, closeSync } from "node:fs"
import { isAbsolute, join, relative, sep } from "node:path"

export class LinkRefused extends Error {}

function refused(home: string, rel: string): LinkRefused {
  const path = join(home, rel)
  return new LinkRefused(
    `${rel} est un lien symbolique : ocmem ne suit aucun lien dans son dossier (${home}) ; ` +
      `retire le lien (rm ${path}), puis \`ocmem doctor\``,
  )
}

/** `path` opened for reading, never through a link below `home` (the caller closes it). */
export function openInside(home: string, path: string): number {
  const rel = relative(home, path)
  if (rel === "" || rel === ".." || rel.startsWith(".." + sep) || isAbsolute(rel)) return openSync(path, "r")
  const names = rel.split(sep)
  for (let depth = 1; depth < names.length; depth++) {
    const folder = names.slice(0, depth).join(sep)
    if (lstatSync(join(home, folder)).isSymbolicLink()) throw refused(home, folder)
  }
  try {
    return openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW)
  } catch (error) {
    if ((error as NodeJS.ErrnoException)?.code === "ELOOP") throw refused(home, rel)
    throw error
  }
}

/** The bytes of `path`, never read through a link below `home`. */
export function readInside(home: string, path: string): Buffer {
  const fd = openInside(home, path)
  try {
    return readFileSync(fd)
  } finally {
    closeSync(fd)
  }
}
