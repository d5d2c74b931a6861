import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';

const ROOT = new URL('../../', import.meta.url).pathname;
const CHECK = join(ROOT, 'scripts/check-layers.mjs');

const scratch = mkdtempSync(join(tmpdir(), 'jg-layers-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** A copy of src/ with files added or replaced (path under src/ → text), checked by the script. */
function checkTree(files: Record<string, string>): { status: number | null; stderr: string } {
  const root = mkdtempSync(join(scratch, 'tree-'));
  cpSync(join(ROOT, 'src'), join(root, 'src'), { recursive: true });
  for (const [file, text] of Object.entries(files)) writeFileSync(join(root, 'src', file), text);
  const r = spawnSync(process.execPath, [CHECK, '--root', root], { encoding: 'utf8' });
  return { status: r.status, stderr: r.stderr };
}

/** A copy of src/ with one file added or replaced, checked by the script. */
function checkWith(file: string, text: string): { status: number | null; stderr: string } {
  return checkTree({ [file]: text });
}

/** The script fails on the planted files, saying `why`. */
function refused(files: Record<string, string>, why: RegExp): string {
  const r = checkTree(files);
  assert.equal(r.status, 1, `accepted: ${Object.keys(files).join(', ')}`);
  assert.match(r.stderr, why);
  return r.stderr;
}

test('src/ as committed follows the layers and has no import cycle', () => {
  const out = execFileSync(process.execPath, [CHECK, '--root', ROOT], { encoding: 'utf8' });
  assert.match(out, /follows the layers/);
  assert.match(out, /no file imports itself round a cycle/);
});

test('an import cycle fails, printed file by file (export-from and type-only imports count)', () => {
  // Three files of one folder: no layer is crossed, only the cycle is wrong.
  const stderr = refused(
    {
      'report/planted-a.ts': "import { b } from './planted-b.js';\nexport const a = () => b;\n",
      'report/planted-b.ts': "export { c as b } from './planted-c.js';\n",
      'report/planted-c.ts':
        "import type { a } from './planted-a.js';\nexport const c = (): typeof a | undefined => undefined;\n",
    },
    /import cycle: report\/planted-a\.ts → report\/planted-b\.ts → report\/planted-c\.ts → report\/planted-a\.ts/,
  );
  assert.doesNotMatch(stderr, /against the layers/);
});

test('a cycle through a dynamic import counts too', () => {
  refused(
    { 'monitor/model/planted.ts': "export const me = () => import('./planted.js');\n" },
    /import cycle: monitor\/model\/planted\.ts → monitor\/model\/planted\.ts/,
  );
});

test('cluster and report may import monitor/model only, never monitor machinery', () => {
  refused(
    { 'cluster/planted.ts': "import { runMonitor } from '../monitor/monitor.js';\nexport { runMonitor };\n" },
    /cluster\/planted\.ts: imports monitor\/monitor\.js \(cluster may import monitor\/model only\)/,
  );
  refused(
    {
      'report/planted.ts':
        "import type { Sampler } from '../monitor/sampler.js';\nexport type S = Sampler;\n",
    },
    /report\/planted\.ts: imports monitor\/sampler\.js \(report may import monitor\/model only\)/,
  );
  const model = checkWith(
    'cluster/planted.ts',
    "import type { Report } from '../monitor/model/report-model.js';\nexport type R = Report;\n",
  );
  assert.equal(model.status, 0, model.stderr);
});

test('monitor/model imports nothing else of monitor', () => {
  refused(
    {
      'monitor/model/planted.ts': "import { selectSeries } from '../signals.js';\nexport { selectSeries };\n",
    },
    /monitor\/model\/planted\.ts: imports monitor\/signals\.js \(monitor\/model imports no other part of monitor\)/,
  );
});

test('attribution sits below monitor and above backends', () => {
  refused(
    { 'attribution/planted.ts': "import { NAN_READ } from '../monitor/sampler.js';\nexport { NAN_READ };\n" },
    /attribution\/planted\.ts: imports monitor\/sampler\.js \(attribution is below monitor\)/,
  );
  const down = checkWith(
    'attribution/planted.ts',
    "import { parseProcStat } from '../backends/procfs/parse.js';\nexport { parseProcStat };\n",
  );
  assert.equal(down.status, 0, down.stderr);
});

test('an upward import is refused, naming the file and the layers', () => {
  const r = checkWith(
    'platform/planted.ts',
    "import { main } from '../cli/program.js';\nexport const x = main;\n",
  );
  assert.equal(r.status, 1);
  assert.match(r.stderr, /platform\/planted\.ts: imports cli\/program\.js \(platform is below cli\)/);
});

test('a dynamic import and an export-from against the grain are refused too', () => {
  const dynamic = checkWith('ipc/planted.ts', "export const load = () => import('../backends/load.js');\n");
  assert.equal(dynamic.status, 1);
  assert.match(dynamic.stderr, /ipc\/planted\.ts: imports backends\/load\.js/);
  const reexport = checkWith(
    'backends/planted.ts',
    "export { GeopmService } from '../service/service.js';\n",
  );
  assert.equal(reexport.status, 1);
  assert.match(reexport.stderr, /backends\/planted\.ts: imports service\/service\.js/);
});

test('peers on the middle level may not import each other', () => {
  const r = checkWith(
    'monitor/planted.ts',
    "import { BatchServer } from '../batch/server.js';\nexport { BatchServer };\n",
  );
  assert.equal(r.status, 1);
  assert.match(r.stderr, /\(monitor and batch are peers\)/);
});

test('a downward import is accepted', () => {
  const r = checkWith(
    'cli/planted.ts',
    "import { DomainType } from '../platform/domains.js';\nexport { DomainType };\n",
  );
  assert.equal(r.status, 0, r.stderr);
});

test('a folder outside every layer is refused', () => {
  const r = checkWith('planted.ts', '');
  assert.equal(r.status, 0, 'a top-level file is the library entry level');
  const root = mkdtempSync(join(scratch, 'tree-'));
  cpSync(join(ROOT, 'src'), join(root, 'src'), { recursive: true });
  cpSync(join(root, 'src/report'), join(root, 'src/extras'), { recursive: true });
  const r2 = spawnSync(process.execPath, [CHECK, '--root', root], { encoding: 'utf8' });
  assert.equal(r2.status, 1);
  assert.match(r2.stderr, /folder "extras" is in no layer/);
});

test('docs/architecture.md names every folder of src/ and only those', () => {
  const doc = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
  const described = [...doc.matchAll(/^\*\*([a-z]+)\*\* —/gm)].map((m) => m[1]).sort();
  const folders = readdirSync(join(ROOT, 'src'), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  assert.deepEqual(described, folders);
  assert.match(doc, /`monitor\/model\/`/, 'the page describes the report model folder');
});
