/**
 * Memory figures of one process for the benches, from /proc/<pid>/smaps_rollup and smaps:
 * RSS counts every page mapped in, shared or not; PSS splits shared pages among the processes
 * mapping them; USS (private clean + dirty) is what the process alone costs. `node_binary_mb`
 * is the part of RSS that is the node executable's own pages (shared by every Node process).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

export interface Memory {
  rss_mb: number;
  pss_mb: number;
  uss_mb: number;
  node_binary_mb: number;
}

const mb = (kb: number) => Number((kb / 1024).toFixed(2));

export function memoryOf(pid: number): Memory {
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(rollup)?.[1] ?? Number.NaN);
  return {
    rss_mb: mb(kb('Rss')),
    pss_mb: mb(kb('Pss')),
    uss_mb: mb(kb('Private_Clean') + kb('Private_Dirty')),
    node_binary_mb: mb(nodeBinaryRssKb(pid)),
  };
}

/** RSS of the mappings of the process's executable (the node binary). */
function nodeBinaryRssKb(pid: number): number {
  const exe = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? '';
  let inExe = false;
  let total = 0;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const mapping = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (mapping)
      inExe = mapping[1] === exe || (exe.endsWith('/node') && mapping[1]?.endsWith('/node') === true);
    else if (inExe && line.startsWith('Rss:')) total += Number(/(\d+)/.exec(line)?.[1] ?? 0);
  }
  return total;
}

export function meanMemory(all: Memory[]): Memory {
  const mean = (f: (m: Memory) => number) =>
    Number((all.reduce((s, m) => s + f(m), 0) / all.length).toFixed(2));
  return {
    rss_mb: mean((m) => m.rss_mb),
    pss_mb: mean((m) => m.pss_mb),
    uss_mb: mean((m) => m.uss_mb),
    node_binary_mb: mean((m) => m.node_binary_mb),
  };
}

/**
 * The floor any Node.js daemon starts from: a bare `node` (the same executable, idle, nothing
 * loaded) measured in the same run.
 */
export async function bareNodeMemory(): Promise<Memory> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  try {
    await new Promise((resolve) => setTimeout(resolve, 500));
    return memoryOf(child.pid!);
  } finally {
    child.kill('SIGKILL');
  }
}
