import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (bench/lib/../..). */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * The shared data folder next to the repository (../shared), which a user's clone does not have; the
 * environment variable TOOLSEARCH_SHARED_DIR points elsewhere (a worktree that is not next to it).
 */
export const sharedDir = process.env.TOOLSEARCH_SHARED_DIR ?? path.resolve(repoRoot, '..', 'shared');

/** The path of a shared file or folder, or undefined (after saying so) when it is absent. */
export function sharedPath(...parts: string[]): string | undefined {
  const p = path.join(sharedDir, ...parts);
  if (existsSync(p)) return p;
  console.log(`skipped: ${p} is absent (bench data lives in ../shared next to the repository).`);
  return undefined;
}
