import { PowercapBackend } from '../../src/backends/powercap/index.js';
import type { Backend, BackendContext } from '../../src/platform/backend.js';
import { PlatformIO } from '../../src/platform/platform-io.js';
import { Sysroot } from '../../src/platform/sysroot.js';
import { loadTopology } from '../../src/platform/topology.js';
import { copyFixture } from './tmp.js';

/** A private copy of one energy fixture tree and the context backends are set up with. */
export function fixtureContext(name: string, configDir?: string): { root: string; ctx: BackendContext } {
  const root = copyFixture(`energy/${name}`);
  const sysroot = new Sysroot(root);
  return { root, ctx: { sysroot, topology: loadTopology(sysroot), ...(configDir ? { configDir } : {}) } };
}

/** A PlatformIO holding just the given, already set-up backends. */
export async function platformWith(ctx: BackendContext, ...backends: Backend[]): Promise<PlatformIO> {
  const pio = new PlatformIO(ctx.topology);
  for (const b of backends) {
    await b.setup(ctx);
    pio.register(b);
  }
  return pio;
}

/** A clock the test moves by hand, so derived power can be checked exactly. */
export function scriptedClock(): { now: number; clock: () => number } {
  const c = { now: 1000, clock: () => c.now };
  return c;
}

export async function powercapPlatform(name: string, clock?: () => number) {
  const { root, ctx } = fixtureContext(name);
  const backend = new PowercapBackend(clock ? { clock } : {});
  const pio = await platformWith(ctx, backend);
  return { root, ctx, backend, pio };
}
