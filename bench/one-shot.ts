/**
 * One-shot command start-up (issue 27): `joulegate session -t 0` of "TIME board 0", run as
 * `nobody` through bin/joulegate against dist/app/joulegated.js on a private bus (startDaemon),
 * as bench/geopm-side-by-side.ts runs it, without GEOPM and without its other figures, so the
 * figure can be taken again in half a minute. Interleaved with `node -e 0` as the same user, the
 * floor no Node.js program starts under. Prints the median wall time of each and their mean CPU
 * time (user + system of the process tree, from this process's children times: 10 ms ticks,
 * averaged over the runs). Run as root (`nobody`). See docs/cli.md, "Start-up".
 * Usage: node --import tsx bench/one-shot.ts [--runs N]
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { argValue, importDist, requireBuiltDist, startDaemon } from './shipped.js';

requireBuiltDist('one-shot');
const { GeopmClient } = await importDist<typeof import('../src/ipc/geopm-client.js')>('ipc/geopm-client.js');

const REPO = new URL('..', import.meta.url).pathname;
const RUNS = argValue('--runs', 21);
const NOBODY = '65534';
const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** CPU seconds used so far by the children this process has waited for. */
function childrenCpu(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / CLK_TCK;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main() {
  if (process.getuid?.() !== 0) throw new Error('run as root: the command runs as nobody');
  const work = mkdtempSync(join(tmpdir(), 'joulegate-bench-one-shot-'));
  chmodSync(work, 0o755); // nobody reaches the bus socket and the run dir
  const running = await startDaemon(work);
  try {
    const admin = await GeopmClient.connect({ address: running.address });
    try {
      await admin.platformSetGroupAccess('', ['TIME'], []);
    } finally {
      admin.close();
    }
    const asNobody = (argv: string[]) => [
      'setpriv',
      `--reuid=${NOBODY}`,
      `--regid=${NOBODY}`,
      '--clear-groups',
      'env',
      `PATH=${process.env.PATH}`,
      `DBUS_SYSTEM_BUS_ADDRESS=${running.address}`,
      `JOULEGATE_RUN_PATH=${join(work, 'run')}`,
      ...argv,
    ];
    const commands = {
      session: asNobody(['sh', join(REPO, 'bin/joulegate'), 'session', '-t', '0']),
      node_e_0: asNobody([process.execPath, '-e', '0']),
    };
    const wall: Record<string, number[]> = { session: [], node_e_0: [] };
    const cpu: Record<string, number> = { session: 0, node_e_0: 0 };
    for (let i = 0; i < RUNS; i++) {
      const order = i % 2 === 0 ? (['session', 'node_e_0'] as const) : (['node_e_0', 'session'] as const);
      for (const name of order) {
        // A pause as between two commands of a script (the daemon loads its next spare server).
        await new Promise((r) => setTimeout(r, 500));
        const before = childrenCpu();
        const start = performance.now();
        const r = spawnSync(commands[name][0]!, commands[name].slice(1), {
          input: 'TIME board 0\n',
          encoding: 'utf8',
        });
        wall[name]!.push(performance.now() - start);
        cpu[name]! += childrenCpu() - before;
        if (r.status !== 0) throw new Error(`${name} exited ${r.status}: ${r.stderr}`);
        if (name === 'session' && !/^"TIME"\n[\d.]+\n$/.test(r.stdout))
          throw new Error(`unexpected session output: ${JSON.stringify(r.stdout)}`);
      }
    }
    const figure = (name: string) => ({
      median_wall_ms: Number(median(wall[name]!).toFixed(1)),
      mean_cpu_ms: Number(((cpu[name]! / RUNS) * 1000).toFixed(0)),
    });
    console.log(
      JSON.stringify(
        {
          bench: 'one-shot',
          runs: RUNS,
          how: 'session -t 0 of "TIME board 0" as nobody through bin/joulegate, private bus and joulegated; node -e 0 interleaved',
          session: figure('session'),
          node_e_0: figure('node_e_0'),
          load_average_1min: Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]),
        },
        null,
        2,
      ),
    );
  } finally {
    await running.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err: Error) => {
  process.stderr.write(`bench/one-shot: ${err.message}\n`);
  process.exit(1);
});
