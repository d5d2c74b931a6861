/**
 * Pure parser for /proc/cpuinfo, shared by CPUINFO, the MSR table choice and the monitor's
 * metadata. x86 lists vendor_id / cpu family / model / model name per processor; arm64 lists
 * CPU implementer / CPU part instead; both are kept as raw key/value maps too.
 */
export interface Cpuinfo {
  /** One key → value map per "processor" block, in file order. */
  processors: Record<string, string>[];
  /** x86 vendor_id ("GenuineIntel", "AuthenticAMD") or arm64 "CPU implementer" (e.g. "0x41"). */
  vendor?: string;
  modelName?: string;
  /** x86 cpu family / model / stepping (decimal in the file). */
  family?: number;
  model?: number;
  stepping?: number;
  /** Marked frequency from the model name ("… @ 2.10GHz"), in Hz. */
  stickerHz?: number;
  flags: string[];
}

function integer(text: string | undefined): number | undefined {
  if (text === undefined || !/^\d+$/.test(text)) return undefined;
  return Number(text);
}

/** The frequency printed in a model name after "@", e.g. "Xeon(R) Gold 6130 CPU @ 2.10GHz" → 2.1e9. */
export function stickerFromModelName(modelName: string): number | undefined {
  const m = /@\s*(\d+(?:\.\d+)?)\s*([GM])Hz/i.exec(modelName);
  if (!m) return undefined;
  const scale = m[2]!.toUpperCase() === 'G' ? 1e9 : 1e6;
  return Math.round(Number(m[1]) * scale);
}

export function parseCpuinfo(text: string): Cpuinfo {
  const processors: Record<string, string>[] = [];
  let current: Record<string, string> | undefined;
  for (const line of text.split('\n')) {
    const colon = line.indexOf(':');
    if (line.trim() === '' || colon < 0) {
      if (line.trim() === '') current = undefined;
      continue;
    }
    const key = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (key === 'processor' || current === undefined) {
      current = {};
      processors.push(current);
    }
    current[key] = value;
  }
  const first = processors.find((p) => 'processor' in p) ?? processors[0] ?? {};
  const modelName = first['model name'] ?? first['cpu model'];
  const out: Cpuinfo = {
    processors,
    flags: (first.flags ?? first.Features ?? '').split(/\s+/).filter(Boolean),
  };
  const vendor = first.vendor_id ?? first['CPU implementer'];
  if (vendor !== undefined) out.vendor = vendor;
  if (modelName !== undefined) out.modelName = modelName;
  const family = integer(first['cpu family']);
  const model = integer(first.model);
  const stepping = integer(first.stepping);
  if (family !== undefined) out.family = family;
  if (model !== undefined) out.model = model;
  if (stepping !== undefined) out.stepping = stepping;
  const sticker = modelName === undefined ? undefined : stickerFromModelName(modelName);
  if (sticker !== undefined) out.stickerHz = sticker;
  return out;
}
