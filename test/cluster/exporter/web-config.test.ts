import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { hashSync } from 'bcryptjs';
import { runCli } from '../../helpers/cli.js';
import { curl, freePort, type RunningExporter, startExporter } from '../../helpers/exporter.js';
import { until } from '../../helpers/poll.js';
import { needsTool, requirements } from '../../helpers/requirements.js';
import { copyFixture, tempDir } from '../../helpers/tmp.js';

const skip = requirements(needsTool('openssl', 'curl', 'prometheus'));

const running: RunningExporter[] = [];
const children: ChildProcess[] = [];
after(async () => {
  for (const e of running) await e.stop();
  for (const c of children) {
    if (c.exitCode !== null || c.signalCode !== null) continue;
    await new Promise<void>((resolve) => {
      c.once('exit', () => resolve());
      c.kill('SIGTERM');
    });
  }
});

/** A self-signed certificate for 127.0.0.1 and its key, in `dir`. */
function selfSigned(dir: string, name: string): { cert: string; key: string } {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  const r = spawnSync(
    'openssl',
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1'].concat([
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-days',
      '1',
      '-keyout',
      key,
      '-out',
      cert,
    ]),
    { encoding: 'utf8' },
  );
  assert.equal(r.status, 0, r.stderr);
  return { cert, key };
}

describe('joulegate exporter --web.config.file', { skip }, () => {
  const dir = skip ? '' : tempDir('jg-webconfig-');
  const hash = hashSync('s3cret', 4);
  let tls: { cert: string; key: string };
  let exporter: RunningExporter;

  before(async () => {
    if (skip) return;
    tls = selfSigned(dir, 'server');
    const web = join(dir, 'web.yml');
    // Relative paths are to the file's own directory, as exporter-toolkit has them.
    writeFileSync(
      web,
      `tls_server_config:\n  cert_file: server.crt\n  key_file: ${tls.key}\n  min_version: TLS12\n` +
        `basic_auth_users:\n  alice: '${hash}'\n`,
    );
    exporter = await startExporter(copyFixture('energy/amd-epyc'), 'n1', {
      args: ['--consumers', 'none', '--web.config.file', web],
    });
    running.push(exporter);
  });

  it('says https in its start-up line', () => {
    assert.match(exporter.url, /^https:\/\/127\.0\.0\.1:\d+\/metrics$/);
    assert.match(exporter.stderr(), /web config .*web\.yml: TLS \(min TLSv1\.2.*basic auth for 1 user/);
  });

  it('serves metrics over TLS to the right credentials only', async () => {
    const ok = await curl(exporter.url, { cacert: tls.cert, user: 'alice:s3cret' });
    assert.equal(ok.status, 200, ok.stderr);
    assert.match(ok.body, /^joulegate_package_energy_joules_total\{/m);
    const again = await curl(exporter.url, { cacert: tls.cert, user: 'alice:s3cret' }); // remembered
    assert.equal(again.status, 200);

    for (const [what, options] of [
      ['wrong password', { user: 'alice:wrong' }],
      ['unknown user', { user: 'bob:s3cret' }],
      ['no credentials', {}],
      ['malformed header', { args: ['--header', 'Authorization: Basic %%%not-base64'] }],
      ['other scheme', { args: ['--header', 'Authorization: Bearer abc'] }],
    ] as const) {
      const r = await curl(exporter.url, { cacert: tls.cert, ...options });
      assert.equal(r.status, 401, `${what}: ${r.status} ${r.stderr}`);
      assert.match(r.headers, /^www-authenticate: Basic realm="joulegate"\r?$/im, what);
      assert.doesNotMatch(r.body, /joulegate_/, what);
    }
    // Every path is behind the password, not only /metrics.
    const root = await curl(exporter.url.replace('/metrics', '/'), { cacert: tls.cert });
    assert.equal(root.status, 401);
  });

  it('refuses plain HTTP and clients that do not trust the certificate', async () => {
    const plain = await curl(exporter.url.replace('https:', 'http:'), { user: 'alice:s3cret' });
    assert.notEqual(plain.exit, 0, `plain HTTP answered: ${plain.status} ${plain.body}`);
    assert.doesNotMatch(plain.body, /joulegate_/);
    const untrusted = await curl(exporter.url, { user: 'alice:s3cret' });
    assert.notEqual(untrusted.exit, 0);
    const tls11 = await curl(exporter.url, {
      cacert: tls.cert,
      user: 'alice:s3cret',
      args: ['--tls-max', '1.1'],
    });
    assert.notEqual(tls11.status, 200, 'TLS 1.1 below min_version TLS12');
  });

  it('is scraped by a real Prometheus over TLS with basic auth; a wrong password is up 0 with a 401', async (t) => {
    const port = await freePort();
    const target = `127.0.0.1:${exporter.port}`;
    const job = (name: string, password: string) =>
      [
        `  - job_name: ${name}`,
        '    scheme: https',
        `    tls_config: { ca_file: '${tls.cert}' }`,
        `    basic_auth: { username: alice, password: '${password}' }`,
        `    static_configs: [{ targets: ['${target}'] }]`,
      ].join('\n');
    const config = join(dir, 'prometheus.yml');
    writeFileSync(
      config,
      `global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n${job('jg-good', 's3cret')}\n${job('jg-bad', 'wrong')}\n`,
    );
    let log = '';
    const prometheus = spawn(
      'prometheus',
      [
        `--config.file=${config}`,
        `--storage.tsdb.path=${join(dir, 'tsdb')}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    children.push(prometheus);
    prometheus.stderr!.on('data', (d) => {
      log += d;
    });
    const api = async (path: string): Promise<unknown> => {
      try {
        const res = await fetch(`http://127.0.0.1:${port}${path}`);
        return res.ok ? ((await res.json()) as { data: unknown }).data : undefined;
      } catch {
        return undefined; // not listening yet
      }
    };
    const query = async (q: string) =>
      (await api(`/api/v1/query?query=${encodeURIComponent(q)}`)) as
        | { result: { metric: Record<string, string>; value: [number, string] }[] }
        | undefined;
    const upGood = await until(`up{job="jg-good"} == 1 (${log})`, async () => {
      if (prometheus.exitCode !== null) assert.fail(`prometheus exited: ${log}`);
      const r = await query('up{job="jg-good"}');
      return r?.result[0]?.value[1] === '1' ? r : undefined;
    });
    assert.equal(upGood.result.length, 1);
    const energy = await until('a joulegate metric scraped', async () => {
      const r = await query('joulegate_package_energy_joules_total{job="jg-good"}');
      return r && r.result.length > 0 ? r : undefined;
    });
    assert.equal(energy.result[0]!.metric.node, 'n1');
    const bad = await until('the jg-bad target scraped once', async () => {
      const t = (await api('/api/v1/targets')) as
        | { activeTargets: { labels: { job: string }; health: string; lastError: string }[] }
        | undefined;
      const target = t?.activeTargets.find((x) => x.labels.job === 'jg-bad');
      return target && target.health !== 'unknown' ? target : undefined;
    });
    assert.equal(bad.health, 'down');
    assert.match(bad.lastError, /401/);
    t.diagnostic(`jg-good: up 1, ${energy.result.length} package energy series; jg-bad: ${bad.lastError}`);
    const upBad = await query('up{job="jg-bad"}');
    assert.equal(upBad?.result[0]?.value[1], '0');
    assert.equal((await query('joulegate_package_energy_joules_total{job="jg-bad"}'))?.result.length, 0);
  });

  describe('refuses a bad file at start, in one line naming it', () => {
    const cases: [string, () => string, RegExp][] = [
      [
        'an unknown key',
        () => `tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  ciphers: [x]\n`,
        /unknown key "ciphers" in tls_server_config/,
      ],
      [
        'a missing cert file',
        () => `tls_server_config:\n  cert_file: absent.crt\n  key_file: server.key\n`,
        /tls_server_config\.cert_file absent\.crt: .*no such file/i,
      ],
      [
        'a password not bcrypt-hashed',
        () => `basic_auth_users:\n  alice: s3cret\n`,
        /basic_auth_users\.alice: expected a bcrypt hash/,
      ],
      ['YAML that does not parse', () => `basic_auth_users:\n  alice: '${hash}\n`, /not valid YAML/],
      [
        'a key of another certificate',
        () => {
          const other = selfSigned(dir, 'other');
          return `tls_server_config:\n  cert_file: server.crt\n  key_file: ${other.key}\n`;
        },
        /cannot be used together: .*mismatch/i,
      ],
      ['a file that is not there', () => '', /cannot read it: .*no such file/i],
    ];
    for (const [what, text, problem] of cases) {
      it(what, async () => {
        const file = join(dir, `bad-${what.replace(/\W+/g, '-')}.yml`);
        const content = text();
        if (content !== '') writeFileSync(file, content);
        const r = await runCli(
          ['exporter', '--listen', '127.0.0.1:0', '--state-dir', 'none', '--web.config.file', file],
          {
            env: { JOULEGATE_SYSROOT: tempDir('jg-webconfig-root-') },
            timeoutMs: 20_000,
          },
        );
        assert.notEqual(r.code, 0, r.stderr);
        const lines = r.stderr.trimEnd().split('\n');
        assert.equal(lines.length, 1, `not one line:\n${r.stderr}`);
        assert.ok(lines[0]!.startsWith(`Error: --web.config.file ${file}: `), lines[0]);
        assert.match(lines[0]!, problem);
        assert.doesNotMatch(r.stderr, /\n\s+at /);
      });
    }
  });
});
