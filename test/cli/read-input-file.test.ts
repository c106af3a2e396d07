/**
 * Files named on the command line are read whatever they are: a FIFO (`<(...)`, `/dev/stdin`
 * from a pipe) as well as a regular file; the store's own files are opened only if regular.
 */
import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readNamedFile } from '../../src/io/index.js';
import { tempDir } from '../support/temp-dir.js';

describe('readNamedFile', () => {
  it.runIf(process.platform === 'linux')(
    'reads a FIFO, and null for a file that does not exist',
    async () => {
      const fifo = path.join(tempDir(), 'plan.json');
      execFileSync('mkfifo', [fifo]);
      const [read] = await Promise.all([readNamedFile(fifo, 1024), writeFile(fifo, '{"a":1}')]);
      expect(read?.toString()).toBe('{"a":1}');
      expect(await readNamedFile(path.join(tempDir(), 'none.json'), 1024)).toBeNull();
    },
  );
});
