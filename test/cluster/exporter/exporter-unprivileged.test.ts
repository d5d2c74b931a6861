import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { runCli } from '../../helpers/cli.js';
import {
  RaplCounterFile,
  type RunningExporter,
  scrape,
  seriesValue,
  startExporter,
} from '../../helpers/exporter.js';
import { needsDaemon, whenMet } from '../../helpers/requirements.js';
import { daemonWithRootOnlyRapl } from '../../helpers/root-only-rapl.js';
import { asUser } from '../../helpers/users.js';

const skip = needsDaemon();

// An unprivileged exporter against a real joulegated on a private bus: the node's RAPL files are
// root-only, the user is granted CPU_ENERGY only. Package energy comes through the daemon;
// DRAM and psys are not exported (not granted), never as 0.
const { h, user } = await whenMet(skip, () => daemonWithRootOnlyRapl('jg-exporter'));
let exporter: RunningExporter | undefined;
after(async () => {
  await exporter?.stop();
});

test('unprivileged, through joulegated: the granted package energy is exported and counts exactly', {
  skip,
}, async () => {
  const grant = await runCli(['access', '-w', '-u'], { env: h.env(), input: 'CPU_ENERGY\n' });
  assert.equal(grant.code, 0, grant.stderr);
  const pkg1 = new RaplCounterFile(h.sysroot, 'intel-rapl:1');
  pkg1.set(5_000_000n);
  const env = Object.entries({ ...h.env(), PATH: '/usr/bin:/bin' }).map(([k, v]) => `${k}=${v}`);
  exporter = await startExporter(h.sysroot, 'n1', {
    prefix: [...asUser(user), 'env', ...env],
    args: ['--consumers', 'none'],
  });
  const value = async () => {
    const body = (await scrape(exporter!.url)).body;
    assert.equal(seriesValue(body, 'joulegate_dram_energy_joules_total', 'node="n1",package="0"'), undefined);
    assert.equal(seriesValue(body, 'joulegate_board_energy_joules_total', 'node="n1"'), undefined);
    return seriesValue(body, 'joulegate_package_energy_joules_total', 'node="n1",package="1"');
  };
  assert.equal(await value(), 0);
  pkg1.set(12_500_000n);
  assert.equal(await value(), 7.5);
  pkg1.set(13_000_000n);
  assert.equal(await value(), 8);
  pkg1.close();
});
