/**
 * The protocol codec is a leaf of the kafka layer: it imports only errors, util and model (and its
 * own files), so the server above it, not the codec, is what touches the store.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';

const PROTOCOL = path.resolve(import.meta.dirname, '../../../src/kafka/protocol');
const SRC = path.resolve(import.meta.dirname, '../../../src');
const ALLOWED = ['errors', 'util', 'model'].map((folder) => path.join(SRC, folder, 'index.ts'));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? sourceFiles(full) : name.endsWith('.ts') ? [full] : [];
  });
}

describe('src/kafka/protocol', () => {
  it('imports nothing but errors, util and model', () => {
    const files = sourceFiles(PROTOCOL);
    expect(files.length).toBeGreaterThan(5);
    const violations: string[] = [];
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      for (const match of text.matchAll(
        /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+['"]([^'"]+)['"]/g,
      )) {
        const specifier = match[1]!;
        if (!specifier.startsWith('.')) {
          violations.push(`${path.relative(SRC, file)} imports ${specifier}`);
          continue;
        }
        const target = path.resolve(path.dirname(file), specifier).replace(/\.js$/, '.ts');
        if (!target.startsWith(PROTOCOL + path.sep) && !ALLOWED.includes(target))
          violations.push(`${path.relative(SRC, file)} imports ${specifier}`);
      }
    }
    expect(violations).toEqual([]);
  });
});
