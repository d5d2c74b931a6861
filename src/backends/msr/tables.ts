import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { errorMessage } from '../../platform/errors.js';
import type { Cpuinfo } from '../cpuinfo/parse.js';
import { type MsrTable, parseMsrTable } from './schema.js';
import { AMD_MSR_TABLE } from './tables/amd.js';
import { INTEL_MSR_TABLE, INTEL_SERVER_DRAM_TABLE } from './tables/intel.js';

export const BUILTIN_TABLES: readonly { name: string; data: unknown }[] = [
  { name: 'built-in Intel table', data: INTEL_MSR_TABLE },
  { name: 'built-in Intel server DRAM table', data: INTEL_SERVER_DRAM_TABLE },
  { name: 'built-in AMD table', data: AMD_MSR_TABLE },
];

/**
 * The high-level names of the built-in tables, for the registration: an alias of a writeable
 * field is a control, any other a signal. Admin tables may add names; those are unknown until
 * the backend loads.
 */
export function builtinTableOffers(): { signals: string[]; controls: string[] } {
  const signals = new Set<string>();
  const controls = new Set<string>();
  for (const t of BUILTIN_TABLES) {
    const table = parseMsrTable(t.data, t.name);
    for (const [alias, target] of Object.entries(table.aliases ?? {})) {
      const [register, field] = target.split(':');
      const writeable = field !== undefined && table.msrs[register!]?.fields[field]?.writeable === true;
      (writeable ? controls : signals).add(alias);
    }
  }
  return { signals: [...signals].sort(), controls: [...controls].sort() };
}

export function tableMatches(table: MsrTable, cpu: Pick<Cpuinfo, 'vendor' | 'family' | 'model'>): boolean {
  if (table.match.vendor !== cpu.vendor) return false;
  const { families, models } = table.match;
  if (families !== undefined && (cpu.family === undefined || !families.includes(cpu.family))) return false;
  return models === undefined || (cpu.model !== undefined && models.includes(cpu.model));
}

/** Admin tables: every `*.json` in `<configDir>/msr`; a bad file is reported and skipped. */
export function readAdminTables(configDir: string | undefined, problems: string[]): MsrTable[] {
  if (!configDir) return [];
  const dir = join(configDir, 'msr');
  let files: string[];
  try {
    files = readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .sort();
  } catch {
    return [];
  }
  const out: MsrTable[] = [];
  for (const f of files) {
    const path = join(dir, f);
    try {
      let data: unknown;
      try {
        data = JSON.parse(readFileSync(path, 'utf8'));
      } catch (err) {
        throw new Error(`${path}: not valid JSON (${errorMessage(err)})`);
      }
      out.push(parseMsrTable(data, path));
    } catch (err) {
      problems.push(errorMessage(err));
    }
  }
  return out;
}

/** The tables for this CPU merged in order: built-in first, admin tables override by name. */
export function selectTable(
  cpu: Pick<Cpuinfo, 'vendor' | 'family' | 'model'>,
  configDir: string | undefined,
  problems: string[],
): MsrTable | undefined {
  const builtins = BUILTIN_TABLES.map((t) => parseMsrTable(t.data, t.name));
  const matching = [...builtins, ...readAdminTables(configDir, problems)].filter((t) => tableMatches(t, cpu));
  if (matching.length === 0) return undefined;
  return {
    match: matching[0]!.match,
    msrs: Object.assign({}, ...matching.map((t) => t.msrs)),
    aliases: Object.assign({}, ...matching.map((t) => t.aliases ?? {})),
    derived: Object.assign({}, ...matching.map((t) => t.derived ?? {})),
  };
}
