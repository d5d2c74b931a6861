import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { errorMessage, JoulegateError } from '../../platform/errors.js';
import { formatIni, type IniData, parseIni } from './ini.js';
import { CONFIG_SCHEMA, type Config, type ConfigKeySpec, type Section } from './schema.js';

/** One layer of settings and where it came from (for error messages). */
export interface ConfigLayer {
  origin: string;
  data: IniData;
  /** perun's settings joulegate has no use for, found in this file and left out (`section.key`). */
  ignored?: string[];
}

/**
 * perun's settings that joulegate has no counterpart for, accepted in any configuration file and
 * ignored with a notice: `queue_timeout` bounds how long perun waits for its sampling
 * subprocess's data, and joulegate has no such process.
 */
export const PERUN_ONLY_SETTINGS: readonly string[] = ['monitor.queue_timeout'];

const SECTIONS = Object.keys(CONFIG_SCHEMA) as Section[];

function keySchema(section: string, key: string) {
  const s = (CONFIG_SCHEMA as Record<string, Record<string, ConfigKeySpec>>)[section];
  return s?.[key];
}

/** The entries of `section` in `data`, created empty when missing. */
function sectionIn(
  data: IniData | Record<string, Record<string, unknown>>,
  section: string,
): Record<string, unknown> {
  let entries = data[section];
  if (!entries) {
    entries = {};
    data[section] = entries as Record<string, string>;
  }
  return entries;
}

/** Section of a key name (keys are unique across sections, which env and CLI rely on). */
export function sectionOf(key: string): Section | undefined {
  return SECTIONS.find((s) => keySchema(s, key) !== undefined);
}

export function defaultLayer(): ConfigLayer {
  const data: IniData = {};
  for (const s of SECTIONS) {
    data[s] = Object.fromEntries(Object.entries(CONFIG_SCHEMA[s]).map(([k, v]) => [k, v.default]));
  }
  return { origin: 'defaults', data };
}

export function fileLayer(path: string): ConfigLayer | undefined {
  if (!existsSync(path)) return undefined;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new JoulegateError(`${path}: ${errorMessage(err)}`);
  }
  const data = parseIni(text, path);
  const ignored: string[] = [];
  for (const name of PERUN_ONLY_SETTINGS) {
    const [section, key] = [name.slice(0, name.lastIndexOf('.')), name.slice(name.lastIndexOf('.') + 1)];
    if (data[section] && key in data[section]) {
      delete data[section][key];
      ignored.push(name);
    }
  }
  return { origin: path, data, ...(ignored.length > 0 ? { ignored } : {}) };
}

/**
 * JOULEGATE_<KEY> for every key, e.g. JOULEGATE_SAMPLING_PERIOD, JOULEGATE_FORMAT; with
 * prefix 'PERUN', perun's names for the same settings (PERUN_DATA_OUT, …).
 */
export function envLayer(env: NodeJS.ProcessEnv = process.env, prefix = 'JOULEGATE'): ConfigLayer {
  const data: IniData = {};
  for (const s of SECTIONS) {
    for (const key of Object.keys(CONFIG_SCHEMA[s])) {
      const v = env[`${prefix}_${key.toUpperCase()}`];
      if (v !== undefined) sectionIn(data, s)[key] = v;
    }
  }
  return { origin: `environment (${prefix}_<KEY>)`, data };
}

/**
 * perun's project file (`.perun.ini`) as a layer: the settings joulegate has, validated like
 * its own; perun's others (e.g. `[monitor] queue_timeout`) are returned as `ignored`, not errors.
 */
export function perunFileLayer(path: string): { layer: ConfigLayer; ignored: string[] } | undefined {
  const file = fileLayer(path);
  if (!file) return undefined;
  const data: IniData = {};
  const ignored: string[] = [...(file.ignored ?? [])];
  for (const [section, keys] of Object.entries(file.data)) {
    for (const [key, value] of Object.entries(keys)) {
      if (keySchema(section, key)) sectionIn(data, section)[key] = value;
      else ignored.push(`${section}.${key}`);
    }
  }
  return { layer: { origin: path, data }, ignored };
}

/** Settings given as key → value (CLI flags), placed in their sections. */
export function flatLayer(origin: string, values: Record<string, string | undefined>): ConfigLayer {
  const data: IniData = {};
  for (const [key, v] of Object.entries(values)) {
    if (v === undefined) continue;
    const section = sectionOf(key);
    if (!section) throw new JoulegateError(`${origin}: unknown setting ${key}`);
    sectionIn(data, section)[key] = v;
  }
  return { origin, data };
}

/** The files read, lowest precedence first: ~/.config/joulegate.ini, then ./.joulegate.ini (or `localPath`). */
export function fileLayers(localPath = './.joulegate.ini', home = homedir()): ConfigLayer[] {
  return [fileLayer(join(home, '.config', 'joulegate.ini')), fileLayer(localPath)].filter(
    (l): l is ConfigLayer => l !== undefined,
  );
}

/**
 * Merges layers (later wins) and validates every value where it came from: a bad value is one
 * error naming the file (or env/CLI), the section and the key. `notice` gets what changed a
 * setting (run_id = SLURM outside a Slurm job).
 */
export function resolveConfig(
  layers: readonly ConfigLayer[],
  notice: (line: string) => void = (line) => process.stderr.write(`joulegate: ${line}\n`),
): Config {
  const out: Record<string, Record<string, unknown>> = {};
  for (const layer of [defaultLayer(), ...layers]) {
    for (const [section, keys] of Object.entries(layer.data)) {
      if (!SECTIONS.includes(section as Section))
        throw new JoulegateError(`${layer.origin}: unknown section [${section}]`);
      for (const [key, raw] of Object.entries(keys)) {
        const spec = keySchema(section, key);
        if (!spec) throw new JoulegateError(`${layer.origin}: [${section}] unknown key ${key}`);
        const parsed = spec.schema.safeParse(raw);
        if (!parsed.success) {
          const why = parsed.error.issues[0]?.message ?? 'invalid';
          throw new JoulegateError(`${layer.origin}: [${section}] ${key} = "${raw}": ${why}`);
        }
        sectionIn(out, section)[key] = parsed.data;
      }
    }
  }
  if (out.output!.run_id === 'SLURM') {
    // perun's fallback outside a job: the run's start time, the id of a run without one.
    const job = process.env.SLURM_JOB_ID;
    if (!job)
      notice(
        '[output] run_id = SLURM but SLURM_JOB_ID is not set: the run id is the start time, as perun does',
      );
    out.output!.run_id = job ?? '';
  }
  return out as Config;
}

/** The configuration as INI text (what `showconf` prints; a valid .joulegate.ini). */
export function configToIni(config: Config): string {
  const data: IniData = {};
  for (const s of SECTIONS) {
    data[s] = Object.fromEntries(Object.entries(config[s]).map(([k, v]) => [k, String(v)]));
  }
  return formatIni(data);
}

/** `section.key` → value, for report metadata (perun's flattened config on the MULTI_RUN). */
export function flattenConfig(config: Config): Record<string, string> {
  const out: Record<string, string> = {};
  for (const s of SECTIONS) for (const [k, v] of Object.entries(config[s])) out[`${s}.${k}`] = String(v);
  return out;
}

/** Regexes of a space-separated list setting. */
export function regexesOf(list: string): RegExp[] {
  return list
    .split(/\s+/)
    .filter(Boolean)
    .map((r) => new RegExp(r));
}

export { parseIni };
