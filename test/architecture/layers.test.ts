/**
 * Enforces the layering of docs/architecture.md ("Layers") from the import statements of src/:
 * - dependencies point one way: errors, util <- model <- codec, io <- log <- kv, compaction <- group
 *   <- shard <- store <- admin <- kafka <- cluster <- root <- cli, where root is the package root src/index.ts
 *   (it re-exports the public API of every layer below it, the Kafka server included);
 * - kv and compaction do not import each other; group imports only errors, util and model (it
 *   writes through a port, not the log);
 * - another folder is entered only through its index.ts;
 * - only src/io touches node:fs, and only src/cli prints or exits (the lab report page's script,
 *   which runs in a browser, may write to the page's console).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(import.meta.dirname, '../../src');
const RANK: Record<string, number> = {
  errors: 0,
  util: 0,
  model: 1,
  codec: 2,
  io: 2,
  log: 3,
  kv: 4,
  compaction: 4,
  group: 5,
  shard: 6,
  store: 7,
  admin: 8,
  kafka: 9,
  lab: 9,
  cluster: 10,
  root: 11,
  cli: 12,
};
const ROOT = path.join(SRC, 'index.ts');
const ALLOWED_FOR_GROUP = new Set(['errors', 'util', 'model', 'group']);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return /\.(ts|mts)$/.test(name) ? [full] : [];
  });
}

/** The layer of a file: its folder under src/, 'root' for src/index.ts, or 'store' for the other files at the top of src/. */
function layerOf(file: string): string {
  if (file === ROOT) return 'root';
  const relative = path.relative(SRC, file).split(path.sep);
  return relative.length === 1 ? 'store' : relative[0]!;
}

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found: string[] = [];
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+['"]([^'"]+)['"]/g))
    found.push(m[1]!);
  for (const m of text.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)/g)) found.push(m[1]!);
  return found;
}

const files = sourceFiles(SRC);

describe('architecture', () => {
  it('finds the source tree', () => {
    expect(files.length).toBeGreaterThan(20);
    for (const file of files) expect(Object.keys(RANK), file).toContain(layerOf(file));
  });

  it("keeps dependencies pointing one way, through each folder's index.ts", () => {
    const violations: string[] = [];
    for (const file of files) {
      const from = layerOf(file);
      for (const specifier of importsOf(file)) {
        if (!specifier.startsWith('.')) continue;
        const target = path.resolve(path.dirname(file), specifier).replace(/\.js$/, '.ts');
        const to = layerOf(target);
        const where = `${path.relative(SRC, file)} imports ${specifier}`;
        if (to === from) continue;
        if (RANK[to]! >= RANK[from]!) violations.push(`${where}: ${from} may not depend on ${to}`);
        if (from === 'group' && !ALLOWED_FOR_GROUP.has(to))
          violations.push(`${where}: group writes through a port, not ${to}`);
        if (to !== 'store' && path.basename(target) !== 'index.ts')
          violations.push(`${where}: enter ${to} through its index.ts`);
      }
    }
    expect(violations).toEqual([]);
  });

  it('lets only src/io touch node:fs and only src/cli print or exit', () => {
    const violations: string[] = [];
    for (const file of files) {
      const layer = layerOf(file);
      const text = readFileSync(file, 'utf8');
      if (layer !== 'io' && /from\s+['"](node:)?fs(\/promises)?['"]/.test(text))
        violations.push(`${path.relative(SRC, file)} imports node:fs`);
      // The lab report page's script runs in the browser; it reports a chart that fails on the page's console.
      const pageScript = path.relative(SRC, file) === path.join('lab', 'page-loader.ts');
      if (
        layer !== 'cli' &&
        !pageScript &&
        /\bconsole\.(log|error|warn|info)\(|process\.exit\(|process\.stdout\.write\(/.test(text)
      )
        violations.push(`${path.relative(SRC, file)} prints or exits`);
      if (/throw new Error\(/.test(text))
        violations.push(`${path.relative(SRC, file)} throws a bare Error`);
    }
    expect(violations).toEqual([]);
  });
});
