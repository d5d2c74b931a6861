import { realpathSync } from 'node:fs';
import type { BackendContext, Diagnostic } from '../../platform/backend.js';
import { DomainType, domainName } from '../../platform/domains.js';
import { FormatType } from '../../platform/format.js';
import { type Sysroot, wrapIoError } from '../../platform/sysroot.js';
import { type SignalDef, TableBackend } from '../../platform/table-backend.js';
import type { PolledFile } from '../polled-file.js';
import { BackendUnavailableError, registerBackend } from '../registry.js';
import { parseSigned, polledSysfs, withoutPadding } from '../sysfs-reader.js';
import {
  assignPackages,
  type Channel,
  chipName,
  indexedWords,
  nameSensors,
  nameWord,
  PACKAGE_TEMPERATURE_ALIAS,
  PER_PACKAGE_CHIPS,
  packageFromLabel,
  packageTemperatureChannel,
  parseChannels,
  parseZoneEntry,
  type SensorKind,
  sensorSignalName,
  THERMAL_ZONE_KIND,
  thermalZoneSignalNames,
} from './sensors.js';

const HWMON_DIR = '/sys/class/hwmon';
const THERMAL_DIR = '/sys/class/thermal';

/** A channel and the file its value is read from. */
type ChipChannel = Channel & { path: string };

interface Chip {
  dir: string;
  name: string;
  /** Orders chips of one name stably across reboots: the device path, then the hwmon number. */
  orderKey: string;
  channels: ChipChannel[];
  /** Dense package index for per-package chips; undefined for board chips. */
  packageIdx?: number;
}

/** One signal at one index: the files it reads (several for a sum) and how to scale them. */
interface Sensor {
  kind: SensorKind;
  paths: string[];
  /** What the description names: chip and label, or the thermal zone. */
  source: string;
  /** The chip's name; undefined for a thermal zone. */
  chip?: string;
}

/** The sensors of one signal name, by index, and the catalogue aliases it is offered under. */
interface SensorGroup {
  domain: DomainType;
  sensors: Map<number, Sensor>;
  aliases?: string[];
}

type Snapshot = Map<string, number | Error>;

/** Reads a small attribute file; absent is undefined, unreadable is a diagnostic (and undefined). */
function readAttribute(root: Sysroot, path: string, problems: Diagnostic[]): string | undefined {
  if (!root.exists(path)) return undefined;
  if (!root.readable(path)) {
    problems.push({ backend: 'HWMON', reason: `${path}: permission denied` });
    return undefined;
  }
  return withoutPadding(root.readText(path));
}

/** Where a chip's `device` link leads; undefined without one (virtual chips). */
function devicePath(root: Sysroot, dir: string, problems: Diagnostic[]): string | undefined {
  if (!root.exists(`${dir}/device`)) return undefined;
  try {
    return realpathSync(root.path(`${dir}/device`));
  } catch (err) {
    problems.push({ backend: 'HWMON', reason: wrapIoError(err, `${dir}/device`).message });
    return undefined;
  }
}

/**
 * The channels of the files in `dir`, with their `_label`/`_enable` texts (only those of sensor
 * channels: a device directory holds unrelated `*_enable` files).
 */
function channelsIn(root: Sysroot, dir: string, problems: Diagnostic[], chip?: string): ChipChannel[] {
  const files = root.list(dir);
  const listed = new Set(files);
  const texts = new Map<string, string>();
  for (const { channel } of parseChannels(files, texts)) {
    for (const f of [`${channel}_label`, `${channel}_enable`].filter((f) => listed.has(f))) {
      const text = readAttribute(root, `${dir}/${f}`, problems);
      if (text !== undefined) texts.set(f, text);
    }
  }
  return parseChannels(files, texts, chip).map((c) => ({ ...c, path: `${dir}/${c.file}` }));
}

/**
 * A chip's channels: its own files, then those older drivers (applesmc) keep in its device
 * directory, where the chip directory lacks them.
 */
function chipChannels(root: Sysroot, dir: string, problems: Diagnostic[], chip?: string): ChipChannel[] {
  const own = channelsIn(root, dir, problems, chip);
  if (!root.exists(`${dir}/device`)) return own;
  const ownFiles = new Set(own.map((c) => c.file));
  const fromDevice = channelsIn(root, `${dir}/device`, problems, chip).filter((c) => !ownFiles.has(c.file));
  return [...own, ...fromDevice];
}

/** A chip that cannot be listed is reported and offers nothing; the other chips still count. */
function channelsOrNone(root: Sysroot, dir: string, problems: Diagnostic[], chip?: string): ChipChannel[] {
  try {
    return chipChannels(root, dir, problems, chip);
  } catch (err) {
    problems.push({ backend: 'HWMON', reason: (err as Error).message });
    return [];
  }
}

/**
 * Finds the chips (named or not) in a stable order and assigns packages to per-package chips: a
 * "Package id N" or "Physical id N" label names the package, else device order decides.
 */
export function discoverChips(
  root: Sysroot,
  packageIndex: ReadonlyMap<number, number>,
  problems: Diagnostic[],
): Chip[] {
  const chips = root
    .list(HWMON_DIR)
    .filter((e) => /^hwmon\d+$/.test(e))
    .map((e): Chip => {
      const dir = `${HWMON_DIR}/${e}`;
      const device = devicePath(root, dir, problems);
      const name = readAttribute(root, `${dir}/name`, problems);
      const deviceName = readAttribute(root, `${dir}/device/name`, problems);
      return {
        dir,
        name: chipName({
          dir,
          ...(name !== undefined ? { name } : {}),
          ...(deviceName !== undefined ? { deviceName } : {}),
          ...(device !== undefined ? { devicePath: device } : {}),
        }),
        orderKey: `${device ?? ''}\0${e.replace(/\d+$/, (n) => n.padStart(6, '0'))}`,
        channels: channelsOrNone(root, dir, problems, name),
      };
    })
    .sort((a, b) => (a.orderKey < b.orderKey ? -1 : a.orderKey > b.orderKey ? 1 : 0));
  for (const name of PER_PACKAGE_CHIPS) {
    const group = chips.filter((c) => c.name === name);
    const labelled = group.map((chip) =>
      chip.channels.map((c) => packageFromLabel(c.label ?? '')).find((p) => p !== undefined),
    );
    assignPackages(labelled, packageIndex).forEach((idx, i) => {
      if (idx !== undefined) group[i]!.packageIdx = idx;
    });
  }
  return chips;
}

/** hwmon chips (temperature, power, energy, voltage, current, fans) and thermal zones, in SI units and RPM. */
export class HwmonBackend extends TableBackend<Snapshot> {
  readonly id = 'hwmon';
  readonly name = 'HWMON';
  readonly description =
    'Hardware monitoring chips from /sys/class/hwmon, thermal zones from /sys/class/thermal';
  private readonly files = new Map<string, PolledFile>();
  private readonly sensorsOf = new Map<SignalDef<Snapshot>, Map<number, Sensor>>();

  override async close(): Promise<void> {
    for (const f of this.files.values()) f.close();
  }

  protected snapshot(requests: readonly { def: SignalDef<Snapshot>; idx: number }[]): Snapshot {
    const snap: Snapshot = new Map();
    for (const { def, idx } of requests) {
      const s = this.sensorsOf.get(def)?.get(idx);
      for (const path of s?.paths ?? []) {
        if (snap.has(path)) continue;
        let file = this.files.get(path);
        if (!file) {
          file = polledSysfs(this.ctx.sysroot, path);
          this.files.set(path, file);
        }
        try {
          snap.set(path, parseSigned(file.read(), path) / s!.kind.divisor);
        } catch (err) {
          snap.set(path, err as Error);
        }
      }
    }
    return snap;
  }

  /** Signals of the chips' enabled channels, by name, each at its package (or board 0). */
  private chipSensors(chips: readonly Chip[]): Map<string, SensorGroup> {
    const grouped = new Map<string, SensorGroup>();
    // Board chips sharing a name get `__n` in device order; per-package ones differ by package.
    const boardChips = chips.filter((c) => c.packageIdx === undefined);
    const boardWords = indexedWords(boardChips.map((c) => nameWord(c.name) || 'CHIP'));
    const wordOf = new Map(boardChips.map((c, i) => [c, boardWords[i]!]));
    for (const chip of chips) {
      const chipWord = wordOf.get(chip) ?? nameWord(chip.name);
      const domain = chip.packageIdx === undefined ? DomainType.Board : DomainType.Package;
      const enabled = chip.channels.filter((c) => c.disabled === undefined);
      for (const c of chip.channels.filter((c) => c.disabled !== undefined)) {
        this.problems.push({
          backend: this.name,
          signal: this.fullName(sensorSignalName(chipWord, c.label, c.channel, c.kind)),
          reason: `${c.path}: not read, ${c.disabled}`,
        });
      }
      for (const named of nameSensors(chipWord, enabled)) {
        const entry = grouped.get(named.name) ?? { domain, sensors: new Map<number, Sensor>() };
        const label = named.channels[0]!.label;
        entry.sensors.set(chip.packageIdx ?? 0, {
          kind: named.kind,
          paths: named.channels.map((c) => c.path),
          source: `hwmon chip ${chip.name}${label ? ` ("${label}")` : ''}, ${named.channels.map((c) => c.file).join(' + ')}`,
          chip: chip.name,
        });
        grouped.set(named.name, entry);
        for (const c of named.channels) {
          if (!this.ctx.sysroot.readable(c.path))
            this.problems.push({
              backend: this.name,
              signal: this.fullName(named.name),
              reason: `${c.path}: permission denied`,
            });
        }
      }
      if (chip.packageIdx !== undefined) this.addPackageTemperature(grouped, chip);
    }
    return grouped;
  }

  /**
   * A per-package chip's package channel is also `CPU_PACKAGE_TEMPERATURE` at its package, the
   * catalogue's package temperature, so a node without MSR access still has one.
   */
  private addPackageTemperature(grouped: Map<string, SensorGroup>, chip: Chip): void {
    const channel = packageTemperatureChannel(chip.channels);
    if (channel === undefined) return;
    // No chip signal can take this name: theirs all end in a quantity word (`_TEMP`).
    const name = PACKAGE_TEMPERATURE_ALIAS;
    const entry = grouped.get(name) ?? {
      domain: DomainType.Package,
      sensors: new Map<number, Sensor>(),
      aliases: [PACKAGE_TEMPERATURE_ALIAS],
    };
    entry.sensors.set(chip.packageIdx!, {
      kind: { ...channel.kind, what: 'CPU package temperature' },
      paths: [channel.path],
      source: `hwmon chip ${chip.name} ("${channel.label}"), ${channel.file}`,
      chip: chip.name,
    });
    grouped.set(name, entry);
  }

  /** One board signal per thermal zone, named by its type. */
  private zoneSensors(problems: Diagnostic[]): Map<string, Sensor> {
    const zones = this.ctx.sysroot
      .list(THERMAL_DIR)
      .map((e) => ({ entry: e, zone: parseZoneEntry(e) }))
      .filter((z): z is { entry: string; zone: number } => z.zone !== undefined)
      .sort((a, b) => a.zone - b.zone)
      .map((z) => ({ ...z, dir: `${THERMAL_DIR}/${z.entry}` }))
      .filter((z) => this.ctx.sysroot.exists(`${z.dir}/temp`));
    const types = zones.map((z) => readAttribute(this.ctx.sysroot, `${z.dir}/type`, problems)?.trim() ?? '');
    const names = thermalZoneSignalNames(types);
    return new Map(
      zones.map((z, i) => [
        names[i]!,
        {
          kind: THERMAL_ZONE_KIND,
          paths: [`${z.dir}/temp`],
          source: `thermal zone ${z.zone} (${types[i] || 'no type'})`,
        },
      ]),
    );
  }

  protected define(ctx: BackendContext): { signals: SignalDef<Snapshot>[] } {
    const ids = [...new Set(ctx.topology.placements.map((p) => p.packageId))].sort((a, b) => a - b);
    const chips = discoverChips(ctx.sysroot, new Map(ids.map((id, i) => [id, i])), this.problems);
    const grouped = this.chipSensors(chips);
    for (const [name, sensor] of this.zoneSensors(this.problems))
      grouped.set(name, { domain: DomainType.Board, sensors: new Map([[0, sensor]]) });
    if (grouped.size === 0)
      throw new BackendUnavailableError(
        `no hwmon sensors under ${ctx.sysroot.path(HWMON_DIR)} and no thermal zones under ${ctx.sysroot.path(THERMAL_DIR)}`,
      );
    const signals: SignalDef<Snapshot>[] = [];
    for (const [signal, { domain, sensors, aliases }] of grouped) {
      const any = [...sensors.values()][0]!;
      const sum = any.paths.length > 1 ? 'Sum of the channels: ' : '';
      const def: SignalDef<Snapshot> = {
        name: signal,
        description: `${sum}${any.kind.what} from ${any.source}`,
        domain,
        aggregation: any.kind.aggregation,
        format: FormatType.Double,
        behavior: any.kind.behavior,
        units: any.kind.units,
        ...(any.kind.feeds !== undefined ? { feeds: any.kind.feeds } : {}),
        ...(aliases !== undefined ? { aliases } : {}),
        available: (idx) => sensors.has(idx),
        whyUnavailable: (idx) => {
          const where = [...sensors.keys()].sort((a, b) => a - b).join(', ');
          const chip = any.chip === undefined ? 'sensor' : `${any.chip} chip`;
          return `no ${chip} for ${domainName(domain)} ${idx} (found for ${domainName(domain)} ${where})`;
        },
        read: (idx, c) => {
          const s = sensors.get(idx);
          if (!s) throw new Error(`${this.fullName(signal)}: not available at index ${idx}`);
          // A sum of channels sharing a label; a single channel is a sum of one.
          let total = 0;
          for (const path of s.paths) {
            const v = c.current.get(path);
            if (v === undefined) throw new Error(`${this.fullName(signal)}: not read in this batch`);
            if (v instanceof Error) throw v;
            total += v;
          }
          return total;
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
  description: 'hwmon sensors via /sys/class/hwmon and thermal zones via /sys/class/thermal',
  create: () => new HwmonBackend(),
});
