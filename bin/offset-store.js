#!/usr/bin/env node
// The `offset-store` command. Runs the compiled CLI (dist/cli/main.js, from `npm run build`) when
// present; otherwise, in a source checkout, the TypeScript entry through tsx.
import { existsSync } from 'node:fs';

const compiled = new URL('../dist/cli/main.js', import.meta.url);
if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(new URL('../src/cli/main.ts', import.meta.url).href);
}
