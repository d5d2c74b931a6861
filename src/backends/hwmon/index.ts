import { realpathSync } from 'node:fs';
import type { BackendContext } from '../../platform/backend.js';
import { DomainType } from '../../platform/domains.js';
import { FormatType } from '../../platform/format.js';
import type { Sysroot } from '../../platform/sysroot.js';
import { type SignalDef, TableBackend } from '../../platform/table-backend.js';
import type { PolledFile } from '../polled-file.js';
import { BackendUnavailableError, registerBackend } from '../registry.js';
import { parseSigned, polledSysfs } from '../sysfs-reader.js';
import {
  PER_PACKAGE_CHIPS,
  packageFromLabel,
  parseSensorFile,
  type SensorKind,
  sensorSignalName,
} from './sensors.js';

const HWMON_DIR = '/sys/class/hwmon';

interface Chip {
  dir: string;
  name: string;
  /** Dense package index for per-package chips; undefined for board chips. */
  packageIdx?: number;
}

interface Sensor {
  signal: string;
  kind: SensorKind;
  path: string;
  label?: string;
  chip: Chip;
}

type Snapshot = Map<string, number | Error>;

function readLabel(root: Sysroot, dir: string, channel: string): string | undefined {
  const path = `${dir}/${channel}_label`;
  return root.exists(path) && root.readable(path) ? root.readText(path).trim() : undefined;
}

/** Where a chip's device lives, to order chips of the same name (k10temp: one per socket, PCI order). */
function deviceOrderKey(root: Sysroot, dir: string): string {
  try {
    return realpathSync(root.path(`${dir}/device`));
  } catch {
    return dir.replace(/\d+$/, (n) => n.padStart(6, '0'));
  }
}

/**
 * Finds the chips and assigns packages: a "Package id N" label names the package; otherwise
 * same-named per-package chips are taken in device order (socket 0's device comes first).
 */
export function discoverChips(root: Sysroot, packageIndex: Map<number, number>): Chip[] {
  const chips = root
    .list(HWMON_DIR)
    .filter((e) => /^hwmon\d+$/.test(e))
    .map((e) => `${HWMON_DIR}/${e}`)
    .filter((dir) => root.exists(`${dir}/name`))
    .map((dir): Chip => ({ dir, name: root.readText(`${dir}/name`).trim() }));
  const byName = new Map<string, Chip[]>();
  for (const c of chips) byName.set(c.name, [...(byName.get(c.name) ?? []), c]);
  for (const [name, group] of byName) {
    if (!PER_PACKAGE_CHIPS.has(name)) continue;
    group.sort((a, b) => deviceOrderKey(root, a.dir).localeCompare(deviceOrderKey(root, b.dir)));
    group.forEach((chip, ordinal) => {
      const labelled = root
        .list(chip.dir)
        .filter((f) => f.endsWith('_label'))
        .map((f) => packageFromLabel(readLabel(root, chip.dir, f.slice(0, -'_label'.length)) ?? ''))
        .find((p) => p !== undefined);
      const idx = labelled !== undefined ? packageIndex.get(labelled) : ordinal;
      if (idx !== undefined) chip.packageIdx = idx;
    });
  }
  return chips;
}

/** hwmon chips: temperatures, power, energy, voltage and current in SI units. */
export class HwmonBackend extends TableBackend<Snapshot> {
  readonly id = 'hwmon';
  readonly name = 'HWMON';
  readonly description = 'Hardware monitoring chips from /sys/class/hwmon';
  private readonly files = new Map<string, PolledFile>();
  private readonly sensorsOf = new Map<SignalDef<Snapshot>, Map<number, Sensor>>();

  override async close(): Promise<void> {
    for (const f of this.files.values()) f.close();
  }

  protected snapshot(requests: readonly { def: SignalDef<Snapshot>; idx: number }[]): Snapshot {
    const snap: Snapshot = new Map();
    for (const { def, idx } of requests) {
      const s = this.sensorsOf.get(def)?.get(idx);
      if (!s || snap.has(s.path)) continue;
      let file = this.files.get(s.path);
      if (!file) {
        file = polledSysfs(this.ctx.sysroot, s.path);
        this.files.set(s.path, file);
      }
      try {
        snap.set(s.path, parseSigned(file.read(), s.path) / s.kind.divisor);
      } catch (err) {
        snap.set(s.path, err as Error);
      }
    }
    return snap;
  }

  protected define(ctx: BackendContext): { signals: SignalDef<Snapshot>[] } {
    const ids = [...new Set(ctx.topology.placements.map((p) => p.packageId))].sort((a, b) => a - b);
    const chips = discoverChips(ctx.sysroot, new Map(ids.map((id, i) => [id, i])));
    if (chips.length === 0)
      throw new BackendUnavailableError(`no hwmon chips under ${ctx.sysroot.path(HWMON_DIR)}`);
    const boardNames = new Map<string, number>();
    const grouped = new Map<string, { domain: DomainType; sensors: Map<number, Sensor> }>();
    for (const chip of chips) {
      const perPackage = chip.packageIdx !== undefined;
      // Two board chips with one name (two NVMe drives): the second is NAME1, the third NAME2.
      let chipName = chip.name;
      if (!perPackage) {
        const seen = boardNames.get(chip.name) ?? 0;
        boardNames.set(chip.name, seen + 1);
        if (seen > 0) chipName = `${chip.name}${seen}`;
      }
      for (const file of ctx.sysroot.list(chip.dir)) {
        const parsed = parseSensorFile(file);
        if (!parsed) continue;
        const path = `${chip.dir}/${file}`;
        const label = readLabel(ctx.sysroot, chip.dir, parsed.channel);
        const signal = sensorSignalName(chipName, label, parsed.channel, parsed.kind);
        const domain = perPackage ? DomainType.Package : DomainType.Board;
        const idx = chip.packageIdx ?? 0;
        const entry = grouped.get(signal) ?? { domain, sensors: new Map<number, Sensor>() };
        entry.sensors.set(idx, { signal, kind: parsed.kind, path, chip, ...(label ? { label } : {}) });
        grouped.set(signal, entry);
        if (!ctx.sysroot.readable(path)) {
          this.problems.push({
            backend: this.name,
            signal: this.fullName(signal),
            reason: `${path}: permission denied`,
          });
        }
      }
    }
    const signals: SignalDef<Snapshot>[] = [];
    for (const [signal, { domain, sensors }] of grouped) {
      const any = [...sensors.values()][0]!;
      const def: SignalDef<Snapshot> = {
        name: signal,
        description: `${any.kind.what} from hwmon chip ${any.chip.name}${any.label ? ` ("${any.label}")` : ''}, ${any.path.replace(/^.*\//, '')}`,
        domain,
        aggregation: any.kind.aggregation,
        format: FormatType.Double,
        behavior: any.kind.behavior,
        units: any.kind.units,
        available: (idx) => sensors.has(idx),
        read: (idx, c) => {
          const s = sensors.get(idx);
          const v = s ? c.current.get(s.path) : undefined;
          if (v === undefined) throw new Error(`${this.fullName(signal)}: not read in this batch`);
          if (v instanceof Error) throw v;
          return v;
        },
      };
      this.sensorsOf.set(def, sensors);
      signals.push(def);
    }
    return { signals };
  }
}

registerBackend({
  name: 'HWMON',
  order: 40,
  description: 'hwmon sensors via /sys/class/hwmon',
  create: () => new HwmonBackend(),
});
