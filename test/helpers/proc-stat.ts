import { existsSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Width of every counter in the /proc/stat the helpers write: the file never changes length. */
const WIDTH = 12;

/**
 * Gives the fixture tree at `root` a /proc/stat with fixed-width counters (its own, or one
 * `cpu` line plus cpu0 when it has none), so a ticker can rewrite it in place. Returns its path.
 */
export function paddedStat(root: string): string {
  const path = join(root, 'proc/stat');
  const text = existsSync(path)
    ? readFileSync(path, 'utf8')
    : 'cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n';
  const padded = text
    .split('\n')
    .map((line) =>
      line.startsWith('cpu')
        ? line.replace(/ +(\d+)/g, (_m, n: string) => ` ${n.padStart(WIDTH, '0')}`)
        : line,
    )
    .join('\n');
  writeFileSync(path, padded);
  return path;
}

/**
 * JavaScript for an app (a .mjs run under the monitor) that makes the CPUs of `statPath` busy
 * for `busy` of every `busy + idle` ticks: `startTicking(ms)` adds that many ticks to every cpu
 * line every `ms` milliseconds until `stopTicking()`. Each rewrite is one write of the same
 * length at offset 0, so a reader never sees a short file.
 */
export function tickerSource(statPath: string, busy: number, idle: number): string {
  return `import { openSync as openStat, readFileSync as readStat, writeSync as writeStat } from 'node:fs';
const statRows = readStat(${JSON.stringify(statPath)}, 'utf8').split('\\n');
const statFd = openStat(${JSON.stringify(statPath)}, 'r+');
const cpuCount = statRows.filter((l) => /^cpu\\d/.test(l)).length;
let ticks = 0;
let ticker;
function tick() {
  ticks++;
  const text = statRows.map((line) => {
    if (!line.startsWith('cpu')) return line;
    const f = line.split(' ');
    const n = line.startsWith('cpu ') ? cpuCount : 1;
    f[1] = String(Number(f[1]) + ${busy} * ticks * n).padStart(${WIDTH}, '0');
    f[4] = String(Number(f[4]) + ${idle} * ticks * n).padStart(${WIDTH}, '0');
    return f.join(' ');
  }).join('\\n');
  writeStat(statFd, Buffer.from(text), 0, text.length, 0);
}
function startTicking(ms) { ticker = setInterval(tick, ms); }
function stopTicking() { clearInterval(ticker); }
`;
}

/** Pids of the live children of `ppid` (from each process's /proc/PID/stat). */
export function childPids(ppid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === ppid) children.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return children;
}

/** How many pidfds this process holds (Linux shows them as anon_inode:[pidfd] in /proc/self/fd). */
export function openPidfds(): number {
  return readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === 'anon_inode:[pidfd]';
    } catch {
      return false; // the directory's own fd, closed meanwhile
    }
  }).length;
}
