import assert from 'node:assert/strict';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { HwmonBackend } from '../../../src/backends/hwmon/index.js';
import { nameWord, parseSensorFile, sensorSignalName } from '../../../src/backends/hwmon/sensors.js';
import { DomainType } from '../../../src/platform/domains.js';
import { Units } from '../../../src/platform/signal-info.js';
import { fixtureContext, platformWith } from '../../helpers/backend-fixtures.js';
import { CLI, run } from '../../helpers/cli.js';
import { needsTestUsers } from '../../helpers/requirements.js';
import { asUser, ensureUser } from '../../helpers/users.js';

const asTestUsers = needsTestUsers();

const { Board, Package } = DomainType;

test('sensor file names and signal names', () => {
  assert.equal(parseSensorFile('temp12_input')?.channel, 'temp12');
  assert.equal(parseSensorFile('power2_average')?.kind.quantity, 'POWER_AVERAGE');
  assert.equal(parseSensorFile('temp1_label'), undefined);
  assert.equal(parseSensorFile('fan1_input'), undefined);
  assert.equal(nameWord(' Package id 0 '), 'PACKAGE_ID_0');
  const temp = parseSensorFile('temp1_input')!.kind;
  assert.equal(sensorSignalName('coretemp', 'Package id 0', 'temp1', temp), 'CORETEMP_PACKAGE_ID_0_TEMP');
  assert.equal(sensorSignalName('ina238', undefined, 'temp1', temp), 'INA238_TEMP1_TEMP');
});

test('Intel: coretemp per package, a board chip in SI units', async () => {
  const { ctx } = fixtureContext('intel-2s');
  const pio = await platformWith(ctx, new HwmonBackend());
  assert.equal(await pio.readSignal('HWMON::CORETEMP_PACKAGE_ID_0_TEMP', Package, 0), 45);
  assert.equal(await pio.readSignal('HWMON::CORETEMP_PACKAGE_ID_1_TEMP', Package, 1), 47);
  assert.throws(
    () => pio.pushSignal('HWMON::CORETEMP_PACKAGE_ID_1_TEMP', Package, 0),
    /not available at package 0/,
  );
  assert.equal(await pio.readSignal('HWMON::CORETEMP_CORE_1_TEMP', Package, 1), -5);
  assert.equal(await pio.readSignal('HWMON::CORETEMP_CORE_1_TEMP', Package, 0), 43);
  assert.equal(await pio.readSignal('HWMON::INA238_VIN_VOLTAGE', Board, 0), 12.012);
  assert.equal(await pio.readSignal('HWMON::INA238_IIN_CURRENT', Board, 0), 20.5);
  assert.equal(await pio.readSignal('HWMON::INA238_PIN_POWER', Board, 0), 246.246);
  assert.equal(await pio.readSignal('HWMON::INA238_POWER2_POWER_AVERAGE', Board, 0), 240);
  assert.equal(await pio.readSignal('HWMON::INA238_ENERGY1_ENERGY', Board, 0), 987654.321);
  assert.equal(await pio.readSignal('HWMON::INA238_TEMP1_TEMP', Board, 0), 38.5);
  assert.equal(pio.signalInfo('HWMON::INA238_ENERGY1_ENERGY').units, Units.Joules);
  assert.equal(pio.signalInfo('HWMON::CORETEMP_CORE_0_TEMP').domain, Package);
});

test('AMD: k10temp chips map to packages in device order, not hwmon order', async () => {
  const { ctx } = fixtureContext('amd-epyc');
  const pio = await platformWith(ctx, new HwmonBackend());
  // hwmon1 sits on 0000:00:18.3 (socket 0), hwmon0 on 0000:00:19.3 (socket 1).
  assert.equal(await pio.readSignal('HWMON::K10TEMP_TCTL_TEMP', Package, 0), 55.25);
  assert.equal(await pio.readSignal('HWMON::K10TEMP_TCTL_TEMP', Package, 1), 52.125);
  assert.equal(await pio.readSignal('HWMON::K10TEMP_TCTL_TEMP', Board, 0), (55.25 + 52.125) / 2);
});

test('a garbled sensor file is NaN in a batch and an error in a single read', async () => {
  const { root, ctx } = fixtureContext('intel-2s');
  const pio = await platformWith(ctx, new HwmonBackend());
  const h = pio.pushSignal('HWMON::INA238_PIN_POWER', Board, 0);
  writeFileSync(join(root, 'sys/class/hwmon/hwmon2/power1_input'), 'N/A\n');
  await pio.readBatch();
  assert.ok(Number.isNaN(pio.sample(h)));
  await assert.rejects(
    pio.readSignal('HWMON::INA238_PIN_POWER', Board, 0),
    /power1_input: expected an integer, found "N\/A"/,
  );
});

test('an unreadable sensor names the file and the reason for an unprivileged user', {
  skip: asTestUsers,
}, async () => {
  const { root } = fixtureContext('intel-2s');
  chmodSync(root, 0o755);
  chmodSync(join(root, 'sys/class/hwmon/hwmon2/energy1_input'), 0o400);
  const user = ensureUser('joulegate-energy');
  const r = await run(
    'env',
    [
      `JOULEGATE_SYSROOT=${root}`,
      process.execPath,
      CLI,
      'read',
      'HWMON::INA238_ENERGY1_ENERGY',
      'board',
      '0',
    ],
    {
      prefix: asUser(user),
    },
  );
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /hwmon2\/energy1_input: permission denied/);
});
