import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A RAPL zone of a fixture tree and the joules it gains per step of a rapl app. */
export interface ZoneStep {
  zone: string;
  joules: number;
}

/**
 * JavaScript for an app (a .mjs run under the monitor) that advances the energy_uj counters of
 * the fixture tree at `root` by the given joules, `steps` times, `ms` apart. Each write has the
 * file's own length at offset 0 (fixed-width digits), so a reader never sees a short file.
 * Returns the app's path (in `dir`).
 */
export function raplApp(dir: string, root: string, zones: readonly ZoneStep[], steps = 10, ms = 30): string {
  const files = zones.map(({ zone, joules }) => {
    const path = join(root, 'sys/class/powercap', zone, 'energy_uj');
    const start = readFileSync(path, 'utf8').trim();
    return { path, start, uj: Math.round(joules * 1e6) };
  });
  const app = join(dir, 'rapl-app.mjs');
  writeFileSync(
    app,
    `import { openSync, writeSync } from 'node:fs';
const files = ${JSON.stringify(files)}.map((f) => ({ ...f, fd: openSync(f.path, 'r+') }));
for (let k = 1; k <= ${steps}; k++) {
  await new Promise((r) => setTimeout(r, ${ms}));
  for (const f of files) {
    const text = String(BigInt(f.start) + BigInt(k * f.uj)).padStart(f.start.length, '0');
    writeSync(f.fd, text, 0);
  }
}
`,
  );
  return app;
}
