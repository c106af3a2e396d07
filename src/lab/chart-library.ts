/**
 * The charting library the lab's HTML report inlines: Vega, Vega-Lite and vega-embed, read from
 * their packages' browser builds (each a UMD script that defines a global), so the report works
 * offline, from a file, with nothing fetched.
 *
 * They are optional peer dependencies, not dependencies: a service that embeds the store should not
 * install ~80 charting packages it never loads. Where they are not installed, the lab writes its
 * report without charts (the tables are plain HTML) and says how to get them.
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

/** The packages to install for the charts, with the major versions the report's specs are written for. */
export const CHART_PACKAGES = 'vega@6 vega-lite@6 vega-embed@7';

/**
 * Reads the three builds, in the order they must load; null when any of the packages is not
 * installed (`resolve` finds a package's main module, as `require.resolve` does).
 */
export async function loadChartLibraries(
  resolve: (name: string) => string = createRequire(import.meta.url).resolve,
): Promise<ChartLibrary[] | null> {
  const fs = new NodeFileSystem();
  const libraries: ChartLibrary[] = [];
  for (const [name, file] of BUILDS) {
    let main: string;
    try {
      main = resolve(name);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND') return null;
      throw error;
    }
    // Each package's main module lives in its build/ folder, next to the browser build.
    const buildDir = path.dirname(main);
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
