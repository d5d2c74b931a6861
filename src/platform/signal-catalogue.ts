/**
 * What each signal means, in one table: the monitor, the exporter, `sensors` and `top` read it.
 * (Skeleton: the types are here; the rows move in with the catalogue work.)
 */

/** Device groups of the report (perun's, plus `board` for node-level sensors). */
export const DEVICE_GROUPS = ['cpu', 'gpu', 'ram', 'disk', 'net', 'board'] as const;
export type DeviceGroup = (typeof DEVICE_GROUPS)[number];

/**
 * What a series measures, which decides its maths: `energy` is a cumulative joule counter,
 * `power` an instantaneous watt value, `util` a percentage 0..100 (signals give a fraction; the
 * sampler stores percent, the one convention of every report), `memory` bytes in use, `bytes` a
 * cumulative byte counter.
 */
export type SeriesKind = 'energy' | 'power' | 'util' | 'memory' | 'bytes';

/** How a group's energy was obtained, shown in every output. */
export type EnergyMethod = 'counter' | 'power-integrated' | 'estimated';

export interface SeriesSpec {
  /** Unique id: the sensor id (`CPU_ENERGY-package-0`) or a derived name. */
  id: string;
  signal: string;
  domain: string;
  index: number;
  group: DeviceGroup;
  kind: SeriesKind;
  /** Backend (IOGroup) that served it, or the monitor itself for derived series. */
  backend: string;
  /** For byte counters: which direction (disk/net read or write). */
  direction?: 'read' | 'write';
  /**
   * Hardware a board/platform sensor (RAPL psys) does not include: discrete GPUs, or a signal
   * its backend marks so. Its energy is added to such a sensor's (see the host total rule).
   */
  outsidePlatform?: true;
}
