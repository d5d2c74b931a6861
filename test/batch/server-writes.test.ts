import assert from 'node:assert/strict';
import {
  chmodSync,
  closeSync,
  cpSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { putMsr } from '../backends/msr/helpers.js';
import { seededRandom } from '../helpers/random.js';
import { needsCompiler, needsDaemon, requirements, whenMet } from '../helpers/requirements.js';
import { FIXTURES } from '../helpers/tmp.js';
import { asUser, ensureUser } from '../helpers/users.js';
import { ServiceHarness, waitFor } from '../service/harness.js';
import { compileFake } from './c-fakes.js';
import { ClientDriver } from './driver.js';
import { LineProcess } from './line-process.js';

const skip = requirements(needsDaemon(), needsCompiler());

// "A success reply means the hardware changed", as a property over real batch servers: joulegated
// on a private bus starts each server (StartBatch from a test user's session), a client drives
// it, and after every `c` answer to a write each control's hardware file — cpufreq policy files,
// the MSR device files, powercap constraint files, the test plugin's files — must hold what the
// settings stand for. A write that cannot be applied (a value outside the hardware's range, two
// settings for one piece of hardware in one batch) must never be answered with `c`.
// Shapes are random (seeded): write-only and mixed batches, one or several controls, aliases
// (CPU_FREQUENCY_MAX_CONTROL goes to MSR PERF_CTL, CPU_POWER_LIMIT_CONTROL to powercap), requests
// at a domain above the control's own, duplicates, repeated and unchanged values, NaN ("leave
// unchanged"), through joulegate's BatchClient or a C client that writes the buffer itself
// (including one setting changed between two `c`).
// JG_BATCH_WRITE_SEED replays a run; JG_BATCH_WRITE_SERVERS changes how many servers it starts.

const SEED = Number(process.env.JG_BATCH_WRITE_SEED ?? 20261204);
const DEFAULT_SERVERS = 20;
const SERVERS = Number(process.env.JG_BATCH_WRITE_SERVERS ?? DEFAULT_SERVERS);

const CPU = 3;
const PACKAGE = 1;
const BOARD = 0;
const CPUS = 8; // intel-2s: 2 packages × 4 CPUs
const PERF_CTL = 0x199;

const C_CLIENT = whenMet(skip, () => compileFake('geopm_batch_client'));
const user = whenMet(skip, () => ensureUser('jg-batch-writes'));
const h = new ServiceHarness();

const sysPath = (rel: string) => join(h.sysroot, rel);
const policyFile = (policy: number, file: string) =>
  sysPath(`sys/devices/system/cpu/cpufreq/policy${policy}/${file}`);
const powerLimitFile = (pkg: number) =>
  sysPath(`sys/class/powercap/intel-rapl:${pkg}/constraint_0_power_limit_uw`);

/** PERF_CTL of `cpu` as the MSR device file holds it. */
function perfCtl(cpu: number): bigint {
  const fd = openSync(sysPath(`dev/cpu/${cpu}/msr`), 'r');
  try {
    const buf = Buffer.alloc(8);
    readSync(fd, buf, 0, 8, PERF_CTL);
    return buf.readBigUInt64LE(0);
  } finally {
    closeSync(fd);
  }
}

// Set up at top level: the helpers register their cleanup with after().
// Set-up needs root and dbus-daemon; without them the tests below list as skipped.
if (skip === false) {
  await h.setup();
  cpSync(join(FIXTURES, 'energy/intel-2s'), h.sysroot, { recursive: true });
  for (let policy = 0; policy < CPUS; policy += 2) {
    mkdirSync(policyFile(policy, ''), { recursive: true });
    const files = {
      affected_cpus: `${policy} ${policy + 1}`,
      scaling_cur_freq: 2000000,
      scaling_max_freq: 3000000 + policy * 10000,
      scaling_min_freq: 800000,
      cpuinfo_min_freq: 800000,
      cpuinfo_max_freq: 3500000,
    };
    for (const [file, value] of Object.entries(files)) writeFileSync(policyFile(policy, file), `${value}\n`);
  }
  for (let cpu = 0; cpu < CPUS; cpu++) {
    // Bits outside PERF_CTL's FREQ field (bit 32: turbo off) must survive every write.
    putMsr(h.sysroot, cpu, PERF_CTL, (1n << 32n) | (BigInt(20 + cpu) << 8n));
    putMsr(h.sysroot, cpu, 0x606, 0x000a0e03n); // RAPL_POWER_UNIT
    putMsr(h.sysroot, cpu, 0x610, 0x00428630_00158528n); // PKG_POWER_LIMIT
    putMsr(h.sysroot, cpu, 0x1000, 0n); // every register below reads (as 0 where unset)
  }
  // The test user reaches the batch files in the run dir by name only.
  chmodSync(dirname(h.runDir), 0o711);
  await h.startDaemon();
}
const SIGNALS = ['FILECTL::COUNTER', 'CPUFREQ::SCALING_CUR_FREQ'];
const CONTROLS = [
  'CPUFREQ::SCALING_MAX_FREQ',
  'CPU_FREQUENCY_MAX_CONTROL',
  'MSR::PERF_CTL:FREQ',
  'CPU_POWER_LIMIT_CONTROL',
  'FILECTL::LIMIT',
];
await whenMet(skip, () =>
  h.client([{ call: 'platformSetGroupAccess', args: ['', [...SIGNALS, ...CONTROLS], CONTROLS] }]),
);

type Request = { name: string; domain: number; idx: number };
/** What the hardware holds, per piece of hardware ("cpufreq policy0", "msr cpu3", …), as text. */
type Hardware = Map<string, string>;

/** A control request and what its settings do to the hardware. */
interface ControlCase {
  request: Request;
  /** The pieces of hardware its settings write. */
  keys: string[];
  /** The native controls the request sets, and the setting `v` gives each. */
  natives(v: number): [string, number][];
  /** The request's value that gives its native controls `setting`. */
  fromNative(setting: number): number;
  /** The hardware each native control of the request writes, and what it must hold after `v`. */
  targets(v: number, now: Hardware): [string, string][];
  /** Whether the hardware takes `v` (the backends refuse the rest; nothing may be acked). */
  valid(v: number): boolean;
  random(rnd: () => number): number;
  /** A value out of range. */
  invalid(rnd: () => number): number;
  /** A setting the hardware holds already. */
  current(now: Hardware): number;
}

const readers: Record<string, (n: number) => string> = {
  cpufreq: (policy) => readFileSync(policyFile(policy, 'scaling_max_freq'), 'utf8').trim(),
  msr: (cpu) => `0x${perfCtl(cpu).toString(16)}`,
  powercap: (pkg) => readFileSync(powerLimitFile(pkg), 'utf8').trim(),
  filectl: (pkg) => String(Number(h.control(`FILECTL-LIMIT-${pkg}`))),
};
function readHardware(key: string): string {
  const [kind, n] = key.split(' ') as [string, string];
  return readers[kind]!(Number(n));
}

const cpusOf = (domain: number, idx: number) =>
  domain === CPU ? [idx] : domain === PACKAGE ? [4 * idx, 4 * idx + 1, 4 * idx + 2, 4 * idx + 3] : [];
const packagesOf = (domain: number, idx: number) => (domain === BOARD ? [0, 1] : [idx]);

function cpufreqCase(domain: number, idx: number): ControlCase {
  const policies = [...new Set(cpusOf(domain, idx).map((cpu) => cpu - (cpu % 2)))];
  return {
    request: { name: 'CPUFREQ::SCALING_MAX_FREQ', domain, idx },
    keys: policies.map((p) => `cpufreq ${p}`),
    natives: (v) => cpusOf(domain, idx).map((cpu) => [`cpufreq cpu ${cpu}`, v]),
    fromNative: (setting) => setting,
    // sysfs holds kHz; the control is in Hz.
    targets: (v) => policies.map((p) => [`cpufreq ${p}`, String(Math.round(v / 1000))]),
    valid: (v) => v >= 0.8e9 && v <= 3.5e9,
    random: (rnd) => (rnd() < 0.5 ? 1000 * (800000 + Math.floor(rnd() * 2700001)) : 0.8e9 + rnd() * 2.7e9),
    invalid: (rnd) => (rnd() < 0.5 ? 3.6e9 + rnd() * 1e9 : rnd() * 0.7e9),
    current: (now) => Number(now.get(`cpufreq ${policies[0]}`)) * 1000,
  };
}

function perfCtlCase(name: string, domain: number, idx: number): ControlCase {
  const cpus = cpusOf(domain, idx);
  const ratio = (v: number) => Math.round(v / 1e8); // FREQ: bits 8..15, 100 MHz each
  return {
    request: { name, domain, idx },
    keys: cpus.map((cpu) => `msr ${cpu}`),
    natives: (v) => cpus.map((cpu) => [`msr ${cpu}`, v]),
    fromNative: (setting) => setting,
    targets: (v, now) =>
      cpus.map((cpu) => {
        const before = BigInt(now.get(`msr ${cpu}`)!);
        return [`msr ${cpu}`, `0x${((before & ~0xff00n) | (BigInt(ratio(v)) << 8n)).toString(16)}`];
      }),
    valid: (v) => ratio(v) >= 0 && ratio(v) <= 255,
    // Any frequency, not only whole 100 MHz steps: the field holds the nearest step.
    random: (rnd) => 0.8e9 + rnd() * 2.7e9,
    invalid: (rnd) => (rnd() < 0.5 ? 2.6e10 + rnd() * 1e10 : -1e9 * (1 + rnd())),
    current: (now) => Number((BigInt(now.get(`msr ${cpus[0]}`)!) >> 8n) & 0xffn) * 1e8,
  };
}

/** A package power limit (sum-aggregated: a board request splits it between the packages). */
function powerCase(name: string, kind: 'powercap' | 'filectl', domain: number, idx: number): ControlCase {
  const pkgs = packagesOf(domain, idx);
  const perPackage = (v: number) => v / pkgs.length;
  return {
    request: { name, domain, idx },
    keys: pkgs.map((p) => `${kind} ${p}`),
    natives: (v) => pkgs.map((p) => [`${kind} ${p}`, perPackage(v)]),
    fromNative: (setting) => setting * pkgs.length,
    targets: (v) =>
      pkgs.map((p) => [
        `${kind} ${p}`,
        kind === 'powercap' ? String(Math.round(perPackage(v) * 1e6)) : String(perPackage(v)),
      ]),
    // powercap's constraint range (intel-2s: 40..165 W per package); the plugin takes anything.
    valid: (v) => kind === 'filectl' || (perPackage(v) >= 40 && perPackage(v) <= 165),
    random: (rnd) => pkgs.length * (40 + rnd() * 125),
    invalid: (rnd) => pkgs.length * (rnd() < 0.5 ? 170 + rnd() * 100 : rnd() * 39),
    current: (now) =>
      pkgs.length *
      (kind === 'powercap'
        ? Number(now.get(`powercap ${pkgs[0]}`)) / 1e6
        : Number(now.get(`filectl ${pkgs[0]}`))),
  };
}

const CASES: ControlCase[] = [];
for (let cpu = 0; cpu < CPUS; cpu++) {
  CASES.push(cpufreqCase(CPU, cpu), perfCtlCase('CPU_FREQUENCY_MAX_CONTROL', CPU, cpu));
  CASES.push(perfCtlCase('MSR::PERF_CTL:FREQ', CPU, cpu));
}
for (const pkg of [0, 1]) {
  CASES.push(cpufreqCase(PACKAGE, pkg), perfCtlCase('CPU_FREQUENCY_MAX_CONTROL', PACKAGE, pkg));
  CASES.push(powerCase('CPU_POWER_LIMIT_CONTROL', 'powercap', PACKAGE, pkg));
  CASES.push(powerCase('FILECTL::LIMIT', 'filectl', PACKAGE, pkg));
}
CASES.push(powerCase('CPU_POWER_LIMIT_CONTROL', 'powercap', BOARD, 0));
CASES.push(powerCase('FILECTL::LIMIT', 'filectl', BOARD, 0));

/** The hardware after a write of `values` (NaN: left unchanged), or why it must be refused. */
function expectedAfter(
  cases: ControlCase[],
  values: number[],
  now: Hardware,
): { hardware: Hardware } | { refused: string } {
  const next = new Map(now);
  const setBy = new Map<string, number>();
  const nativeSetBy = new Map<string, [number, number]>();
  for (let slot = 0; slot < cases.length; slot++) {
    const v = values[slot]!;
    if (Number.isNaN(v)) continue;
    const c = cases[slot]!;
    if (!c.valid(v)) return { refused: `slot ${slot}: ${v} is out of range` };
    // Two requests for one native control (duplicates, aliases, nested domains) must agree.
    for (const [native, setting] of c.natives(v)) {
      const earlier = nativeSetBy.get(native);
      if (earlier && earlier[1] !== setting)
        return { refused: `slots ${earlier[0]} and ${slot} set ${native} to different values` };
      nativeSetBy.set(native, [slot, setting]);
    }
    // CPUs of one cpufreq policy share its file: their settings must agree there.
    for (const [key, want] of c.targets(v, now)) {
      const earlier = setBy.get(key);
      if (earlier !== undefined && next.get(key) !== want)
        return { refused: `slots ${earlier} and ${slot} set ${key} to different values` };
      setBy.set(key, slot);
      next.set(key, want);
    }
  }
  return { hardware: next };
}

const domainWord = (domain: number) => ['board', 'package', 'core', 'cpu'][domain] ?? String(domain);
const requestText = (r: Request) => `${r.name} ${domainWord(r.domain)} ${r.idx}`;

/** The client side of one server: joulegate's BatchClient or the C client writing the buffer. */
interface Driver {
  /** Writes `values` (all slots) or, for the C client, only the slot in `only`; true on `c`. */
  write(values: number[], only?: number): Promise<{ acked: boolean; answer: string }>;
  read(): Promise<(number | null)[] | undefined>;
  finish(): Promise<void>;
}

let batchClient: ClientDriver | undefined;

async function projectDriver(key: string, signals: number, controls: number): Promise<Driver> {
  batchClient ??= await ClientDriver.start(user);
  const client = batchClient;
  const connected = await client.send(`connect ${h.runDir} ${key} ${signals} ${controls}`);
  assert.deepEqual(connected, { ok: true });
  let alive = true;
  return {
    async write(values) {
      const answer = await client.send(`write ${values.map(String).join(' ')}`);
      alive = answer.ok === true;
      return { acked: alive, answer: JSON.stringify(answer) };
    },
    async read() {
      return (await client.send('read')).values;
    },
    async finish() {
      if (alive) assert.deepEqual(await client.send('close'), { ok: true });
    },
  };
}

function rawDriver(key: string, signals: number, controls: number): Driver {
  const proc = LineProcess.exec([
    ...asUser(user),
    C_CLIENT,
    h.runDir,
    key,
    String(signals),
    String(controls),
    '-',
  ]);
  let alive = true;
  const exchange = async (step: string) => {
    proc.send(step);
    try {
      return await proc.next();
    } catch (err) {
      // Writing to a server that ended kills the C client (SIGPIPE) before it prints anything.
      return { error: (err as Error).message };
    }
  };
  return {
    async write(values, only) {
      if (only !== undefined) {
        assert.deepEqual(await exchange(`set=${only}:${values[only]}`), { set: 'ok' });
        const answer = await exchange('w');
        alive = answer.write === 'ok';
        return { acked: alive, answer: JSON.stringify(answer) };
      }
      const answer = await exchange(`w=${values.map(String).join(',')}`);
      alive = answer.write === 'ok';
      return { acked: alive, answer: JSON.stringify(answer) };
    },
    async read() {
      return (await exchange('r')).read as (number | null)[] | undefined;
    },
    async finish() {
      if (alive) assert.deepEqual(await exchange('q'), { quit: 'ok' });
      await proc.end();
    },
  };
}

/** Starts a batch server from a test user's session; `release` closes the session once done. */
async function startServer(signals: Request[], controls: Request[]) {
  const held = await h.heldClient(
    [{ call: 'platformOpenSession' }, { call: 'platformStartBatch', args: [signals, controls] }],
    { user, setsid: true },
  );
  const started = held.results[1]!;
  assert.ok(started.ok, `${started.message}\n${h.daemonLog.slice(-2000)}`);
  const key = (started.value as { serverKey: string }).serverKey;
  const release = async () => {
    const from = h.daemonLog.length;
    await held.release();
    // Write mode passes to the next session once this one's controls are restored.
    assert.ok(
      await waitFor(() => h.daemonLog.slice(from).includes(`controls restored for pid ${key} `), 20_000),
      h.daemonLog.slice(-2000),
    );
  };
  return { key, release };
}

function snapshot(keys: Iterable<string>): Hardware {
  return new Map([...keys].map((k) => [k, readHardware(k)]));
}

test(`every write a batch server acknowledges is in the hardware (${SERVERS} servers, seed ${SEED})`, {
  skip,
}, async () => {
  const rnd = seededRandom(SEED);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const stats = { acked: 0, servers: 0, raw: 0, project: 0, mixed: 0, singleSlot: 0, nan: 0 };
  const shapes: Record<string, number> = {};
  const refusals: Record<string, number> = {};
  /** Settings acknowledged and checked, by control request kind. */
  const settings: Record<string, number> = {};
  // Every piece of hardware a case can touch, to check that a write changes nothing else.
  const allKeys = new Set(CASES.flatMap((c) => c.keys));
  for (let s = 0; s < SERVERS; s++) {
    const cases: ControlCase[] = [];
    const count = 1 + Math.floor(rnd() * 4);
    while (cases.length < count) cases.push(cases.length > 0 && rnd() < 0.15 ? pick(cases) : pick(CASES));
    const mixed = rnd() < 0.4;
    const signals: Request[] = mixed
      ? [
          { name: 'FILECTL::COUNTER', domain: BOARD, idx: 0 },
          { name: 'CPUFREQ::SCALING_CUR_FREQ', domain: CPU, idx: Math.floor(rnd() * CPUS) },
        ]
      : [];
    const raw = rnd() < 0.6;
    const shape = `${mixed ? 'mixed' : 'write-only'} ${cases.length} control(s) ${raw ? 'C client' : 'BatchClient'}`;
    shapes[shape] = (shapes[shape] ?? 0) + 1;
    stats.servers++;
    if (raw) stats.raw++;
    else stats.project++;
    const where = () =>
      `seed ${SEED}, server ${s} (${shape}: ${cases.map((c) => requestText(c.request)).join(', ')})`;

    const initial = snapshot(allKeys);
    const server = await startServer(
      signals,
      cases.map((c) => c.request),
    );
    const driver = raw
      ? rawDriver(server.key, signals.length, cases.length)
      : await projectDriver(server.key, signals.length, cases.length);
    let now = initial;
    let buffer = cases.map(() => Number.NaN);
    const writes = 40 + Math.floor(rnd() * 60);
    for (let w = 0; w < writes; w++) {
      // The C client may change one setting and send 'w' again; the buffer keeps the others.
      // The C client may change one setting and send 'w' again; the buffer keeps the others.
      const alone = cases.flatMap((c, slot) =>
        cases.some((o, i) => i !== slot && o.keys.some((k) => c.keys.includes(k))) ? [] : [slot],
      );
      const only = raw && w > 0 && alone.length > 0 && rnd() < 0.25 ? pick(alone) : undefined;
      // About one write in 100 carries a value out of range, which ends the server.
      const invalidSlot = rnd() < 0.01 ? Math.floor(rnd() * cases.length) : -1;
      const values: number[] = [];
      const setting = (slot: number): number => {
        const previous = buffer[slot]!;
        if (only !== undefined && slot !== only) return previous;
        const c = cases[slot]!;
        if (slot === invalidSlot) return c.invalid(rnd);
        // A request sharing hardware with an earlier one mostly agrees with it; else the two
        // settings conflict and the write must be refused.
        const shared = values.findIndex(
          (v, i) => !Number.isNaN(v) && cases[i]!.keys.some((k) => c.keys.includes(k)),
        );
        if (shared >= 0 && rnd() < 0.995) return c.fromNative(cases[shared]!.natives(values[shared]!)[0]![1]);
        const x = rnd();
        if (x < 0.12) return Number.NaN;
        if (x < 0.3 && !Number.isNaN(previous)) return previous;
        if (x < 0.4) return c.current(now);
        return c.random(rnd);
      };
      for (let slot = 0; slot < cases.length; slot++) values.push(setting(slot));
      if (only !== undefined) stats.singleSlot++;
      stats.nan += values.filter(Number.isNaN).length;
      const expected = expectedAfter(cases, values, now);
      const { acked, answer } = await driver.write(values, only);
      const what = `${where()}, write ${w} [${values.join(', ')}]`;
      if ('refused' in expected) {
        assert.ok(!acked, `${what}: acknowledged although ${expected.refused}\n${h.daemonLog.slice(-1500)}`);
        const why = expected.refused.replace(/[\d.e+-]+ is/, 'V is').replace(/\d+/g, 'N');
        refusals[why] = (refusals[why] ?? 0) + 1;
        break;
      }
      assert.ok(acked, `${what}: refused (${answer})\n${h.daemonLog.slice(-1500)}`);
      stats.acked++;
      values.forEach((v, slot) => {
        const r = cases[slot]!.request;
        const kind = `${r.name} ${domainWord(r.domain)}`;
        if (!Number.isNaN(v)) settings[kind] = (settings[kind] ?? 0) + 1;
      });
      const found = snapshot(allKeys);
      const differ = [...allKeys].filter((k) => found.get(k) !== expected.hardware.get(k));
      assert.deepEqual(
        differ.map((k) => `${k}: ${found.get(k)}`),
        differ.map((k) => `${k}: ${expected.hardware.get(k)}`),
        `${what}: acknowledged, but the hardware does not hold it`,
      );
      now = found;
      buffer = values;
      if (mixed && rnd() < 0.3) {
        stats.mixed++;
        const read = await driver.read();
        assert.equal(read?.[0], 42, `${what}: a read between writes`);
      }
    }
    await driver.finish();
    await server.release();
    // Closing the session restores what the batch wrote.
    assert.deepEqual(snapshot(allKeys), initial, `${where()}: controls not restored`);
  }
  console.log(
    `batch writes (seed ${SEED}): ${stats.acked} acknowledged and checked, settings ${JSON.stringify(settings)}, refused as expected ${JSON.stringify(refusals)}, ${stats.servers} servers (${stats.raw} C client, ${stats.project} BatchClient), ${stats.singleSlot} single-setting changes, ${stats.nan} NaN settings, ${stats.mixed} reads between writes; shapes ${JSON.stringify(shapes)}`,
  );
  assert.ok(stats.acked >= 1000 || SERVERS < DEFAULT_SERVERS, `only ${stats.acked} writes were checked`);
});

/** The C client on a fresh server for `controls`; `done` quits it and closes the session. */
async function rawSession(controls: Request[]) {
  const server = await startServer([], controls);
  const driver = rawDriver(server.key, 0, controls.length);
  return {
    driver,
    done: async () => {
      await driver.finish();
      await server.release();
    },
  };
}

test('a C client that changes one setting in the buffer between two c gets exactly that applied, and an unchanged buffer is applied again', {
  skip,
}, async () => {
  const initial = snapshot(['cpufreq 0', 'msr 2', 'powercap 1']);
  const { driver, done } = await rawSession([
    { name: 'CPUFREQ::SCALING_MAX_FREQ', domain: CPU, idx: 0 },
    { name: 'CPU_FREQUENCY_MAX_CONTROL', domain: CPU, idx: 2 },
    { name: 'CPU_POWER_LIMIT_CONTROL', domain: PACKAGE, idx: 1 },
  ]);
  assert.equal((await driver.write([2.2e9, 1.9e9, 120])).acked, true);
  const turboOff = 1n << 32n;
  assert.deepEqual(
    snapshot(['cpufreq 0', 'msr 2', 'powercap 1']),
    new Map([
      ['cpufreq 0', '2200000'],
      ['msr 2', `0x${(turboOff | (19n << 8n)).toString(16)}`],
      ['powercap 1', '120000000'],
    ]),
  );
  // Only the PERF_CTL setting changes in the buffer; 'w' again.
  assert.equal((await driver.write([2.2e9, 2.45e9, 120], 1)).acked, true);
  assert.equal(
    readHardware('msr 2'),
    `0x${(turboOff | (25n << 8n)).toString(16)}`,
    'the nearest 100 MHz step',
  );
  // Something else changes the hardware; the same buffer sent again is written again.
  writeFileSync(policyFile(0, 'scaling_max_freq'), '3000000\n');
  writeFileSync(powerLimitFile(1), '150000000\n');
  assert.equal((await driver.write([2.2e9, 2.45e9, 120], 0)).acked, true);
  assert.equal(readHardware('cpufreq 0'), '2200000');
  assert.equal(readHardware('powercap 1'), '120000000');
  await done();
  assert.deepEqual(snapshot(initial.keys()), initial);
});

test('a write the hardware or the backend refuses ends the server: never a c, and the reason in the log', {
  skip,
}, async () => {
  const controls: Request[] = [
    { name: 'CPUFREQ::SCALING_MAX_FREQ', domain: CPU, idx: 4 },
    { name: 'FILECTL::LIMIT', domain: PACKAGE, idx: 0 },
  ];
  const keys = ['cpufreq 4', 'filectl 0'];
  const refusals: [string, () => void, RegExp, () => void][] = [
    [
      'a frequency above cpuinfo_max_freq',
      () => {},
      /4000000000 Hz is outside the 800000000\.\.3500000000 Hz/,
      () => {},
    ],
    [
      'a plugin control whose file refuses writes',
      () => h.setControlFile('FILECTL-LIMIT-0', 'fail'),
      /FILECTL-LIMIT-0 refuses writes/,
      () => h.setControlFile('FILECTL-LIMIT-0', '100'),
    ],
    [
      'a cpufreq file the kernel refuses to write (EISDIR here)',
      () => {
        rmSync(policyFile(4, 'scaling_max_freq'));
        mkdirSync(policyFile(4, 'scaling_max_freq'));
      },
      /policy4\/scaling_max_freq/,
      () => {
        rmSync(policyFile(4, 'scaling_max_freq'), { recursive: true });
        writeFileSync(policyFile(4, 'scaling_max_freq'), '3040000\n');
      },
    ],
  ];
  for (const [what, breakIt, reason, repair] of refusals) {
    const before = snapshot(keys);
    const { driver, done } = await rawSession(controls);
    breakIt();
    const from = h.daemonLog.length;
    const value = what.startsWith('a frequency') ? 4e9 : 2e9;
    const { acked, answer } = await driver.write([value, 77]);
    assert.equal(acked, false, `${what}: acknowledged (${answer})`);
    assert.ok(
      await waitFor(() => reason.test(h.daemonLog.slice(from))),
      `${what}: ${h.daemonLog.slice(from)}`,
    );
    repair();
    await done();
    assert.deepEqual(snapshot(keys), before, `${what}: restored`);
  }
});

test('settings that disagree on one piece of hardware end the server with nothing written', {
  skip,
}, async () => {
  const cases: [string, Request[], number[], RegExp][] = [
    [
      'the same request twice',
      [
        { name: 'CPUFREQ::SCALING_MAX_FREQ', domain: CPU, idx: 6 },
        { name: 'CPUFREQ::SCALING_MAX_FREQ', domain: CPU, idx: 6 },
      ],
      [2e9, 2.1e9],
      /CPUFREQ::SCALING_MAX_FREQ cpu 6 and CPUFREQ::SCALING_MAX_FREQ cpu 6 set the same control to different values/,
    ],
    [
      'an alias and the MSR field it names',
      [
        { name: 'CPU_FREQUENCY_MAX_CONTROL', domain: CPU, idx: 3 },
        { name: 'MSR::PERF_CTL:FREQ', domain: CPU, idx: 3 },
      ],
      [2e9, 2.1e9],
      /MSR::PERF_CTL:FREQ cpu 3 and CPU_FREQUENCY_MAX_CONTROL cpu 3 set the same control/,
    ],
    [
      'a package request and a CPU inside it',
      [
        { name: 'CPU_FREQUENCY_MAX_CONTROL', domain: PACKAGE, idx: 1 },
        { name: 'CPU_FREQUENCY_MAX_CONTROL', domain: CPU, idx: 5 },
      ],
      [2e9, 2.1e9],
      /CPU_FREQUENCY_MAX_CONTROL cpu 5 and CPU_FREQUENCY_MAX_CONTROL package 1 set the same control/,
    ],
    [
      'two CPUs of one cpufreq policy',
      [
        { name: 'CPUFREQ::SCALING_MAX_FREQ', domain: CPU, idx: 6 },
        { name: 'CPUFREQ::SCALING_MAX_FREQ', domain: CPU, idx: 7 },
      ],
      [2e9, 2.1e9],
      /CPUs 6 and 7 share \/sys\/devices\/system\/cpu\/cpufreq\/policy6\/scaling_max_freq/,
    ],
  ];
  const keys = ['cpufreq 6', 'msr 3', 'msr 4', 'msr 5', 'msr 6', 'msr 7'];
  for (const [what, controls, values, reason] of cases) {
    const before = snapshot(keys);
    const { driver, done } = await rawSession(controls);
    const from = h.daemonLog.length;
    const { acked, answer } = await driver.write(values);
    assert.equal(acked, false, `${what}: acknowledged (${answer})`);
    assert.ok(
      await waitFor(() => reason.test(h.daemonLog.slice(from))),
      `${what}: ${h.daemonLog.slice(from)}`,
    );
    assert.deepEqual(snapshot(keys), before, `${what}: written`);
    await done();
  }
});
