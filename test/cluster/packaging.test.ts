import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { EXPORTER_DEFAULTS } from '../../src/cluster/exporter/settings.js';
import { exportedEntries } from '../../src/platform/signal-catalogue.js';
import { run } from '../helpers/cli.js';
import { until } from '../helpers/poll.js';
import { SCONTROL_WITHOUT_SLURM, standIn } from '../helpers/stand-ins.js';
import { tempDir } from '../helpers/tmp.js';

const PACKAGING = new URL('../../packaging/', import.meta.url).pathname;

test('the exporter unit passes systemd-analyze verify and runs joulegate exporter unprivileged', async () => {
  const text = readFileSync(join(PACKAGING, 'joulegate-exporter.service'), 'utf8');
  // The listen address comes from /etc/default through the command's own variable, not the unit;
  // systemd finds the command in /usr/local/bin or /usr/bin (test/app/deb-package.test.ts).
  assert.match(text, /^ExecStart=joulegate exporter$/m);
  assert.match(text, /^EnvironmentFile=-\/etc\/default\/joulegate-exporter$/m);
  assert.match(text, new RegExp(`^# .*\\b${EXPORTER_DEFAULTS.listenEnv}=HOST:PORT`, 'm'));
  assert.doesNotMatch(text, new RegExp(String(EXPORTER_DEFAULTS.port)), 'the unit repeats the default port');
  assert.match(text, /^User=joulegate-exporter$/m);
  assert.match(text, /^CapabilityBoundingSet=$/m);
  assert.match(text, /^SystemCallFilter=@system-service$/m);
  assert.match(text, /^UMask=0077$/m);
  assert.match(text, /^MemoryMax=\d+M$/m);
  // Ordering after network-online.target only means something when the unit also wants it.
  assert.match(text, /^Wants=network-online\.target$/m);
  // systemd makes /var/lib/<StateDirectory>: the command's default state directory, its own.
  const stateDir = /^StateDirectory=(\S+)$/m.exec(text)?.[1];
  assert.equal(`/var/lib/${stateDir}`, EXPORTER_DEFAULTS.stateDir);
  const dir = tempDir();
  // verify insists the ExecStart binary exists; everything else is checked as shipped.
  writeFileSync(
    join(dir, 'joulegate-exporter.service'),
    text.replace(/^ExecStart=.*$/m, 'ExecStart=/bin/true'),
  );
  const r = await run('systemd-analyze', ['verify', join(dir, 'joulegate-exporter.service')]);
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /Unknown|Invalid|ignoring|Failed/i, r.stderr);
});

test('the sample scrape configuration passes promtool check config', async () => {
  const text = readFileSync(join(PACKAGING, 'prometheus-joulegate.yml'), 'utf8');
  const targets = [...text.matchAll(/^\s+- (\S+:\d+)$/gm)].map((m) => m[1]!);
  assert.ok(targets.length > 0, 'no targets');
  for (const t of targets)
    assert.ok(t.endsWith(`:${EXPORTER_DEFAULTS.port}`), `${t}: not the exporter's port`);
  const dir = tempDir();
  const config = join(dir, 'prometheus.yml');
  writeFileSync(config, text);
  const r = await run('promtool', ['check', 'config', config]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
});

test('the shipped recording rules and alerts pass promtool check rules and their unit tests', async () => {
  const dir = join(PACKAGING, 'prometheus');
  const check = await run('promtool', ['check', 'rules', join(dir, 'joulegate-rules.yml')]);
  assert.equal(check.code, 0, check.stdout + check.stderr);
  assert.doesNotMatch(check.stdout + check.stderr, /WARNING/);
  // promtool resolves rule_files from the test file's own directory.
  const tests = await run('promtool', ['test', 'rules', join(dir, 'joulegate-rules.test.yml')]);
  assert.equal(tests.code, 0, tests.stdout + tests.stderr);
  assert.match(tests.stdout + tests.stderr, /SUCCESS/);
});

test('the Grafana dashboard: every query parses and names only metrics the exporter or the rules make', async () => {
  const dashboard = JSON.parse(readFileSync(join(PACKAGING, 'grafana/joulegate-energy.json'), 'utf8')) as {
    templating: { list: { name: string }[] };
    panels: { title: string; targets: { expr: string }[] }[];
  };
  const variables = new Set(dashboard.templating.list.map((v) => v.name));
  const exprs = dashboard.panels.flatMap((p) => p.targets.map((t) => ({ panel: p.title, expr: t.expr })));
  assert.ok(exprs.length >= 7, `${exprs.length} queries`);
  // Grafana's own variables become what they stand for; the dashboard's must be defined.
  const concrete = exprs.map(({ panel, expr }) => {
    for (const m of expr.matchAll(/\$(\w+)/g)) {
      if (!m[1]!.startsWith('__'))
        assert.ok(variables.has(m[1]!), `${panel}: $${m[1]} is not a dashboard variable`);
    }
    return expr
      .replace(/\$__(range|rate_interval)/g, '5m')
      .replace(/\$node/g, '.*')
      .replace(/\$job/g, 'joulegate');
  });
  const rules = join(PACKAGING, 'prometheus/joulegate-rules.yml');
  const recorded = [...readFileSync(rules, 'utf8').matchAll(/^\s+- record: (\S+)$/gm)].map((m) => m[1]!);
  const exposition = readFileSync(
    new URL('../../src/cluster/exporter/exposition.ts', import.meta.url),
    'utf8',
  );
  const known = new Set([
    ...exportedEntries().map((e) => e.metric.name),
    ...[...exposition.matchAll(/name: '(joulegate_\w+)'/g)].map((m) => m[1]!),
    ...recorded,
    'up',
  ]);
  for (const [i, expr] of concrete.entries()) {
    for (const m of expr.matchAll(/\b([a-z_]+:[a-z_]+:[a-z0-9_]+|joulegate_[a-z_]+|up)\b(?=\{|\[|\)|\s|$)/g))
      assert.ok(
        known.has(m[1]!),
        `${exprs[i]!.panel}: ${m[1]} is made by neither the exporter nor the rules`,
      );
  }
  // promtool parses each query as the expression of a recording rule.
  const dir = tempDir();
  const file = join(dir, 'dashboard-queries.yml');
  const body = concrete
    .map((expr, i) => `      - record: dashboard:query_${i}\n        expr: ${JSON.stringify(expr)}`)
    .join('\n');
  writeFileSync(file, `groups:\n  - name: dashboard\n    rules:\n${body}\n`);
  const r = await run('promtool', ['check', 'rules', file]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
});

test('the Slurm epilog is valid sh, exits 0 at once whatever fails, and logs one line per problem', async () => {
  const script = join(PACKAGING, 'slurm-epilog-job-energy.sh');
  assert.equal((await run('sh', ['-n', script])).code, 0);
  const dir = tempDir();
  const log = join(dir, 'epilog.log');
  const base = {
    JOULEGATE_JOB_ENERGY_CONFIG: join(dir, 'absent.conf'),
    JOULEGATE_JOB_ENERGY_LOG: log,
    JOULEGATE_SCRAPE_WAIT: '0',
    SLURM_JOB_NODELIST: undefined,
    PATH: `${standIn('scontrol', SCONTROL_WITHOUT_SLURM)}:/usr/bin:/bin`,
  };
  const lines = () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []);
  const cases: { env: Record<string, string | undefined>; line: RegExp }[] = [
    // Not run by Slurm.
    {
      env: { SLURM_JOB_ID: undefined, JOULEGATE_PROMETHEUS: 'http://127.0.0.1:9' },
      line: /job \?: SLURM_JOB_ID is not set/,
    },
    // Unconfigured.
    { env: { SLURM_JOB_ID: '1' }, line: /job 1: JOULEGATE_PROMETHEUS is not set in .*absent\.conf/ },
    // No Slurm record of the job (scontrol fails, as on a node without Slurm): the writer says so.
    // With a report directory, so the writer starts for any user (one that is not root could not
    // write as the job's user and would stop before it).
    {
      env: { SLURM_JOB_ID: '2', JOULEGATE_PROMETHEUS: 'http://127.0.0.1:9', JOULEGATE_JOB_REPORT_DIR: dir },
      line: /job 2: scontrol show job failed: .*configuration source/,
    },
  ];
  for (const c of cases) {
    const before = lines().length;
    const r = await run('sh', [script], { env: { ...base, ...c.env } });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    await until('the log line', () => lines().length > before);
    assert.equal(lines().length, before + 1, lines().join('\n'));
    assert.match(lines().at(-1)!, c.line);
  }
  // An unwritable report directory: the report is made, the file cannot be, one line says so.
  const scontrol = standIn(
    'scontrol',
    `echo "JobId=3 UserId=root(0) StartTime=2026-01-01T00:00:00 EndTime=2026-01-01T00:00:05 NodeList=n1 WorkDir=${dir}"`,
  );
  const joulegate = standIn('joulegate', 'echo "Job 3 energy: a report"');
  const r = await run('sh', [script], {
    env: {
      ...base,
      SLURM_JOB_ID: '3',
      JOULEGATE_PROMETHEUS: 'http://127.0.0.1:9',
      JOULEGATE_JOB_REPORT_DIR: join(dir, 'no/such/dir'),
      PATH: `${scontrol}:${joulegate}:/usr/bin:/bin`,
    },
  });
  assert.equal(r.code, 0, r.stderr);
  await until('the log line', () => lines().some((l) => l.includes('job 3:')));
  assert.match(lines().at(-1)!, /job 3: cannot write .*no\/such\/dir\/slurm-3\.energy\.txt/);
  // Its header names the file the script writes.
  const header = readFileSync(script, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('#'))
    .join('\n');
  assert.match(header, /slurm-<jobid>\.energy\.txt/);
  assert.doesNotMatch(header, /[^-]<jobid>\.energy\.txt/);
});

test("docs/exporter.md's synopsis shows the command's defaults", () => {
  const docs = readFileSync(new URL('../../docs/exporter.md', import.meta.url), 'utf8');
  const synopsis = /```sh\njoulegate exporter ([^`]*)```/.exec(docs)?.[1] ?? '';
  const d = EXPORTER_DEFAULTS;
  for (const shown of [
    `--listen ${d.listen}`,
    `--consumer-expiry ${d.consumerExpiryS}`,
    `--max-consumers ${d.maxConsumers}`,
    `--state-dir ${d.stateDir}|none`,
  ])
    assert.ok(synopsis.includes(`[${shown}]`), `synopsis lacks [${shown}]: ${synopsis}`);
});
