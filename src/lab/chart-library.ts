/**
 * The charting library the lab's HTML report inlines: Vega, Vega-Lite and vega-embed, read from
 * their packages' browser builds (each a UMD script that defines a global), so the report works
 * offline, from a file, with nothing fetched.
 */
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { OffsetStoreError } from '../errors/index.js';
import { NodeFileSystem } from '../io/index.js';

/** One library script to inline. */
export interface ChartLibrary {
  /** Package name. */
  name: string;
  /** Its version. */
  version: string;
  /** The minified browser build. */
  code: string;
}

const BUILDS: readonly [string, string][] = [
  ['vega', 'vega.min.js'],
  ['vega-lite', 'vega-lite.min.js'],
  ['vega-embed', 'vega-embed.min.js'],
];

/** Reads the three builds, in the order they must load. */
export async function loadChartLibraries(): Promise<ChartLibrary[]> {
  const require = createRequire(import.meta.url);
  const fs = new NodeFileSystem();
  const libraries: ChartLibrary[] = [];
  for (const [name, file] of BUILDS) {
    // Each package's main module lives in its build/ folder, next to the browser build.
    const buildDir = path.dirname(require.resolve(name));
    const code = await fs.readFile(path.join(buildDir, file));
    const manifest = await fs.readFile(path.join(buildDir, '..', 'package.json'));
    if (code === null || manifest === null)
      throw new OffsetStoreError(
        'INVALID_CONFIG',
        `the charting library ${name} has no ${file} in ${buildDir}: reinstall the package's dependencies`,
      );
    libraries.push({
      name,
      version: (JSON.parse(manifest.toString('utf8')) as { version: string }).version,
      code: code.toString('utf8'),
    });
  }
  return libraries;
}
