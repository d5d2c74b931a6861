// Runs every benchmark that needs no accelerator, one after another, each printing its JSON.
// (bench/gpu-check.ts needs an NVIDIA GPU and is run by hand; bench/geopm-side-by-side.ts
// compares with GEOPM when GEOPM_REF names a reference build, and runs joulegate's side only
// without it: docs/geopm-side-by-side.md.)
import { spawnSync } from 'node:child_process';

const BENCHES = [
  'sampler',
  'energy',
  'batch',
  'dbus',
  'flood',
  'storm-users',
  'monitor',
  'monitor-memory',
  'monitor-formats',
  'exporter',
  'export-fuzz',
  'one-shot',
  'geopm-side-by-side',
];
let failed = 0;
for (const name of BENCHES) {
  process.stdout.write(`## bench/${name}.ts\n`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', `bench/${name}.ts`], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exitCode = failed === 0 ? 0 : 1;
