/** HeldPaths: holds counted by real path, whatever name a folder is reached by; releases once each. */
import { mkdirSync, symlinkSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { HeldPaths } from '../../src/io/index.js';
import { tempDir } from '../support/temp-dir.js';

describe('HeldPaths', () => {
  it('counts holds of one folder under any of its names, each released once', () => {
    const root = tempDir();
    const dir = path.join(root, 'store');
    mkdirSync(dir);
    const link = path.join(root, 'link');
    symlinkSync(dir, link);
    const held = new HeldPaths();
    const first = held.hold(link);
    const second = held.hold(`${dir}/./`);
    expect(held.held(dir)).toBe(true);
    first();
    first(); // a second release of the same hold does nothing
    expect(held.held(dir)).toBe(true);
    second();
    expect(held.held(link)).toBe(false);
    expect(held.held(path.join(root, 'missing'))).toBe(false);
  });
});
