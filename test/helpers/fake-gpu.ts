import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DomainType } from '../../src/platform/domains.js';
import type { PlatformIO } from '../../src/platform/platform-io.js';
import { tempDir } from './tmp.js';

/*
 * Fake vendor GPU libraries (test/fakes/*.c) compiled with gcc once per test file and build
 * (FakeBuild) and loaded through the same koffi code as the real ones (JOULEGATE_NVML_LIB /
 * JOULEGATE_AMDSMI_LIB).
 * Each fake reads its state file on every call; sets append to it; mutating calls go to a log.
 */

const FAKES = new URL('../fakes/', import.meta.url).pathname;

export type Vendor = 'nvml' | 'amdsmi';

const SPEC: Record<
  Vendor,
  { source: string; soname: string; libEnv: string; stateEnv: string; logEnv: string }
> = {
  nvml: {
    source: 'fake_nvml.c',
    soname: 'libnvidia-ml.so.1',
    libEnv: 'JOULEGATE_NVML_LIB',
    stateEnv: 'FAKE_NVML_STATE',
    logEnv: 'FAKE_NVML_LOG',
  },
  amdsmi: {
    source: 'fake_amdsmi.c',
    soname: 'libamd_smi.so',
    libEnv: 'JOULEGATE_AMDSMI_LIB',
    stateEnv: 'FAKE_AMDSMI_STATE',
    logEnv: 'FAKE_AMDSMI_LOG',
  },
};

/**
 * How a fake library is built: preprocessor definitions (e.g. the AMD SMI generation), and C
 * functions left out of its export table, as a library of an older or newer driver lacks them.
 */
export interface FakeBuild {
  define?: Readonly<Record<string, string | number>>;
  hide?: readonly string[];
}

/** An NVML 13 driver's library: the successors, none of the deprecated or per-process calls. */
export const NVML_WITHOUT_DEPRECATED: FakeBuild = {
  hide: [
    'nvmlDeviceGetTemperature',
    'nvmlDeviceGetCurrentClocksThrottleReasons',
    'nvmlDeviceGetProcessUtilization',
  ],
};
/** An old driver's library: the calls NVML 13 deprecates, not yet their successors. */
export const NVML_DEPRECATED_ONLY: FakeBuild = {
  hide: ['nvmlDeviceGetTemperatureV', 'nvmlDeviceGetCurrentClocksEventReasons'],
};
/** AMD SMI lib 24.x (ROCm 6.2/6.3) layouts; the default build is lib 26.x. */
export const AMDSMI_LIB24: FakeBuild = { define: { FAKE_AMDSMI_LIB: 24 } };

const built = new Map<string, string>();

function defineFlags(build: FakeBuild): string[] {
  return Object.entries(build.define ?? {}).map(([name, value]) => `-D${name}=${value}`);
}

/** Compiles one C file of test/fakes/ (warnings are errors) into `output`. */
function compileFake(source: string, output: string, flags: string[] = []): string {
  execFileSync('gcc', [...flags, '-O1', '-Wall', '-Werror', '-o', output, join(FAKES, source)], {
    stdio: 'pipe',
  });
  return output;
}

/** Path of the compiled fake library of `vendor` as `build` says (built on first use in this test file). */
export function fakeLibrary(vendor: Vendor, build: FakeBuild = {}): string {
  const key = JSON.stringify([vendor, build]);
  let lib = built.get(key);
  if (!lib) {
    const spec = SPEC[vendor];
    const dir = tempDir(`joulegate-fake-${vendor}-`);
    const flags = ['-shared', '-fPIC', ...defineFlags(build)];
    if (build.hide?.length) {
      // A linker version script: every symbol exported except the hidden ones.
      const script = join(dir, 'exports.map');
      writeFileSync(script, `{\n  global: *;\n  local: ${build.hide.join('; ')};\n};\n`);
      flags.push(`-Wl,--version-script=${script}`);
    }
    lib = compileFake(spec.source, join(dir, spec.soname), flags);
    built.set(key, lib);
  }
  return lib;
}

/**
 * The C compiler's view of the vendor types the fakes declare (test/fakes/struct_layout.c):
 * struct sizes, member offsets and sizes, scalar type sizes and constants, by vendor name.
 */
export interface CLayout {
  structs: Map<string, { size: number; members: { name: string; offset: number; size: number }[] }>;
  types: Map<string, number>;
  constants: Map<string, number>;
}

export function vendorTypeLayout(build: FakeBuild = {}): CLayout {
  const program = compileFake(
    'struct_layout.c',
    join(tempDir('joulegate-layout-'), 'struct_layout'),
    defineFlags(build),
  );
  const layout: CLayout = { structs: new Map(), types: new Map(), constants: new Map() };
  for (const line of execFileSync(program, { encoding: 'utf8' }).trim().split('\n')) {
    const [kind, name, ...rest] = line.split(' ');
    const [a, b, c] = rest.map(Number);
    if (kind === 'struct') layout.structs.set(name!, { size: a!, members: [] });
    else if (kind === 'field')
      layout.structs.get(name!)!.members.push({ name: rest[0]!, offset: b!, size: c! });
    else if (kind === 'type') layout.types.set(name!, a!);
    else if (kind === 'const') layout.constants.set(name!, a!);
    else throw new Error(`struct_layout printed an unknown line: ${line}`);
  }
  return layout;
}

export type FakeState = Record<string, string | number>;

/** One fake GPU setup: its library build, state file, call log and the env that points joulegate at it. */
export class FakeGpu {
  readonly vendor: Vendor;
  readonly state: string;
  readonly log: string;
  readonly env: Record<string, string>;

  constructor(vendor: Vendor, initial: FakeState, build: FakeBuild = {}) {
    this.vendor = vendor;
    const dir = tempDir(`joulegate-${vendor}-state-`);
    this.state = join(dir, 'state');
    this.log = join(dir, 'calls.log');
    writeFileSync(this.state, '');
    writeFileSync(this.log, '');
    this.set(initial);
    const spec = SPEC[vendor];
    this.env = {
      [spec.libEnv]: fakeLibrary(vendor, build),
      [spec.stateEnv]: this.state,
      [spec.logEnv]: this.log,
    };
  }

  /** Points this process at the fake (the library reads the env on every call). */
  activate(): this {
    Object.assign(process.env, this.env);
    return this;
  }

  /** Changes state values (later lines win). */
  set(values: FakeState): void {
    const lines = Object.entries(values).map(([k, v]) => `${k}=${v}\n`);
    appendFileSync(this.state, lines.join(''));
  }

  /** Current value of a key, as the fake sees it. */
  get(key: string): string | undefined {
    let value: string | undefined;
    for (const line of readFileSync(this.state, 'utf8').split('\n')) {
      if (line.startsWith(`${key}=`)) value = line.slice(key.length + 1);
    }
    return value;
  }

  /** Mutating calls (and init/shutdown) that reached the library, in order. */
  calls(): string[] {
    if (!existsSync(this.log)) return [];
    return readFileSync(this.log, 'utf8')
      .split('\n')
      .filter((l) => l !== '');
  }

  /** Calls whose function name starts with `prefix`. */
  callsTo(prefix: string): string[] {
    return this.calls().filter((c) => c.startsWith(prefix));
  }
}

/** Removes every GPU fake env var from this process (no library → backend missing). */
export function deactivateFakes(): void {
  for (const spec of Object.values(SPEC)) {
    delete process.env[spec.libEnv];
    delete process.env[spec.stateEnv];
    delete process.env[spec.logEnv];
  }
}

/** [signal, state to set, expected SI value] */
export type ReadCase = [string, FakeState, number];

/** Sets each case's state, reads the signal on gpu `gpu` and compares with the expected value. */
export async function assertReads(
  pio: PlatformIO,
  fake: FakeGpu,
  gpu: number,
  cases: readonly ReadCase[],
): Promise<void> {
  for (const [signal, state, expected] of cases) {
    fake.set(state);
    const value = await pio.readSignal(signal, DomainType.Gpu, gpu);
    assert.ok(Math.abs(value - expected) <= Math.abs(expected) * 1e-12, `${signal}: ${value} != ${expected}`);
  }
}
