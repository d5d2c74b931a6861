import { InvalidArgumentError } from '../../platform/errors.js';

/**
 * Slurm's compressed host lists (SLURM_JOB_NODELIST, `scontrol show hostnames`' input):
 * "node[01-03,07],gpu5,rack[1-2]-n[1-2]" → node01 node02 node03 node07 gpu5 rack1-n1 …
 * Ranges keep their zero padding; brackets do not nest.
 */
const MAX_HOSTS = 100_000;

/** Splits on commas outside brackets. */
function topLevelParts(list: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of list) {
    if (ch === '[') depth++;
    if (ch === ']') depth--;
    if (depth < 0 || depth > 1) throw new InvalidArgumentError(`host list "${list}": unbalanced brackets`);
    if (ch === ',' && depth === 0) {
      parts.push(current);
      current = '';
    } else current += ch;
  }
  if (depth !== 0) throw new InvalidArgumentError(`host list "${list}": unbalanced brackets`);
  parts.push(current);
  return parts.map((p) => p.trim()).filter((p) => p !== '');
}

/** "01-03,07" → ["01", "02", "03", "07"] */
function expandRanges(ranges: string, list: string): string[] {
  const out: string[] = [];
  for (const r of ranges.split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(r.trim());
    if (!m) throw new InvalidArgumentError(`host list "${list}": "${r}" is not a number or range`);
    const lo = Number(m[1]);
    const hi = m[2] === undefined ? lo : Number(m[2]);
    if (hi < lo) throw new InvalidArgumentError(`host list "${list}": range ${r} runs backwards`);
    if (hi - lo > MAX_HOSTS) throw new InvalidArgumentError(`host list "${list}": range ${r} is too long`);
    const width = m[1]!.length;
    for (let n = lo; n <= hi; n++) out.push(String(n).padStart(width, '0'));
  }
  return out;
}

/** One host expression: text with bracketed ranges, every combination in order. */
function expandOne(expr: string, list: string): string[] {
  let hosts = [''];
  const re = /\[([^\]]*)\]|([^[]+)/g;
  for (const m of expr.matchAll(re)) {
    const choices = m[1] !== undefined ? expandRanges(m[1], list) : [m[2]!];
    hosts = hosts.flatMap((h) => choices.map((c) => h + c));
    if (hosts.length > MAX_HOSTS) throw new InvalidArgumentError(`host list "${list}": too many hosts`);
  }
  return hosts;
}

/** Every host of a Slurm host list, in order, without duplicates. */
export function expandHostlist(list: string): string[] {
  const hosts = topLevelParts(list).flatMap((p) => expandOne(p, list));
  if (hosts.length === 0) throw new InvalidArgumentError(`host list "${list}" names no host`);
  return [...new Set(hosts)];
}
