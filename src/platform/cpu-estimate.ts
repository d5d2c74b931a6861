/** How to turn CPU utilisation into watts when no energy source exists. */
export interface Estimator {
  /** Watts at 100 % utilisation of the CPUs this host sees. */
  fullLoadWatts: number;
  source: string;
}

/**
 * Package TDP by CPU model, for estimating power where no energy source exists. One row per
 * family: the regex is matched against the model name, `tdp` is watts per package and `threads`
 * the hardware threads of that package, so a VM that sees a few vCPUs gets its share.
 */
const TDP_TABLE: readonly { model: RegExp; tdp: number; threads: number }[] = [
  { model: /EPYC 7[0-9]{2}3/, tdp: 280, threads: 128 },
  { model: /EPYC 9[0-9]{2}4/, tdp: 360, threads: 192 },
  { model: /EPYC/, tdp: 225, threads: 128 },
  { model: /Xeon.*Platinum/, tdp: 270, threads: 112 },
  { model: /Xeon.*Gold/, tdp: 205, threads: 64 },
  { model: /Xeon/, tdp: 165, threads: 48 },
  { model: /Core\(TM\) i[3579]/, tdp: 65, threads: 16 },
  { model: /Ryzen/, tdp: 105, threads: 16 },
];

export interface EstimateSettings {
  /** Watts per package from the configuration; 0 = look the model up. */
  tdp: number;
  /** Hardware threads per package from the configuration; 0 = from the table. */
  threads: number;
}

/**
 * Full-load watts of the `visible` CPUs of a `model` (see hostCpus): their share of the package
 * TDP. Undefined when neither the configuration nor the table knows the model.
 */
export function cpuEstimator(
  settings: EstimateSettings,
  model: string | undefined,
  visible: number,
): Estimator | undefined {
  const row = model === undefined ? undefined : TDP_TABLE.find((r) => r.model.test(model));
  const tdp = settings.tdp > 0 ? settings.tdp : row?.tdp;
  if (tdp === undefined) return undefined;
  const threads = settings.threads > 0 ? settings.threads : (row?.threads ?? visible);
  const share = Math.min(1, visible / threads);
  const source =
    settings.tdp > 0
      ? `configured TDP ${tdp} W × ${visible}/${threads} threads`
      : `TDP table (${row!.model.source}: ${tdp} W) × ${visible}/${threads} threads of "${model}"`;
  return { fullLoadWatts: tdp * share, source };
}
