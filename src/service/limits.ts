import { inSignature, METHODS, type MethodName } from '../ipc/dbus/interface.js';
import { parseTypes, type SignatureType } from '../ipc/dbus/signature.js';
import type { WireValue } from '../ipc/dbus/wire.js';
import { InvalidArgumentError } from '../platform/errors.js';

const KiB = 1024;
const MiB = 1024 * KiB;

/**
 * What one client may send in a call and make the daemon keep (docs/service.md, "Limits").
 * Every decoding step, reply and stored list is proportional to these, never to what a client
 * chooses to send.
 */
export const LIMITS = {
  /**
   * Items in one array argument: names of a list or an info query, requests of a batch.
   * GEOPM sets no cap; its clients send at most a few thousand (every name of a node, each
   * also as SERVICE::name, or a batch of a few signals per CPU). 16,384 let one call carry
   * 9 MB and the daemon's RSS settle 50–60 MB higher after a flood of such calls.
   */
  namesPerCall: 4096,
  /** UTF-8 bytes of one signal, control, group or profile name. */
  nameBytes: 255,
  /** Region names in one PlatformStopProfile call. */
  regionsPerCall: 1024,
  /** UTF-8 bytes of one region name. */
  regionNameBytes: 1024,
  /** Distinct region names kept for one profile until an administrator pops them. */
  regionsPerProfile: 4096,
  /**
   * Bytes of region and profile names kept for one uid until an administrator pops them. With
   * 4 MiB (and 16 in all) these names were most of what 5 flooding users left the daemon
   * holding (bench/flood.ts); an application reports a few hundred short names.
   */
  regionBytesPerUser: 2 * MiB,
  /** Bytes of region and profile names kept for all users together. */
  regionBytesTotal: 8 * MiB,
  /** Open sessions of one uid (each holds a copy of its access lists). */
  sessionsPerUser: 1024,
  /** Body of a call to any other interface (Peer, Introspectable, Properties) or of a signal. */
  otherMessageBytes: 64 * KiB,
} as const;

/** Caps on one method's arguments: items per array and bytes per string. */
interface ArgumentCaps {
  items: number;
  stringBytes: number;
  /** How the items are called in messages. */
  noun: string;
}

const NAME_CAPS: ArgumentCaps = { items: LIMITS.namesPerCall, stringBytes: LIMITS.nameBytes, noun: 'names' };
const REGION_CAPS: ArgumentCaps = {
  items: LIMITS.regionsPerCall,
  stringBytes: LIMITS.regionNameBytes,
  noun: 'region names',
};

function capsOf(method: MethodName): ArgumentCaps {
  return method === 'PlatformStopProfile' ? REGION_CAPS : NAME_CAPS;
}

/** Size (and alignment) of each fixed-size type on the wire. */
const FIXED_SIZES: Record<string, number> = { y: 1, n: 2, q: 2, b: 4, i: 4, u: 4, h: 4, x: 8, t: 8, d: 8 };

/** Most bytes one value of `type` takes, padding included, when it keeps to `caps`. */
function maxWireSize(type: SignatureType, caps: ArgumentCaps): number {
  switch (type.type) {
    case 's':
    case 'o':
      return 3 + 4 + caps.stringBytes + 1;
    case 'g':
      return 1 + 255 + 1;
    case 'v':
      // No method takes a variant; a generous bound keeps the sum finite.
      return 1 + 255 + 1 + 7 + caps.stringBytes;
    case 'a':
      return 3 + 4 + 7 + caps.items * maxWireSize(type.children[0]!, caps);
    case '(':
    case '{':
      return 7 + type.children.reduce((sum, c) => sum + maxWireSize(c, caps), 0);
    default: {
      const size = FIXED_SIZES[type.type] ?? 8;
      return size - 1 + size;
    }
  }
}

const maxBodies = new Map<MethodName, number>();

/** Largest body a call of `method` can have within the caps; longer ones are refused unread. */
export function maxBodyBytes(method: MethodName): number {
  let max = maxBodies.get(method);
  if (max === undefined) {
    const caps = capsOf(method);
    max = parseTypes(inSignature(method)).reduce((sum, t) => sum + maxWireSize(t, caps), 0);
    maxBodies.set(method, max);
  }
  return max;
}

/** The refusal of a body longer than maxBodyBytes, naming the caps. */
export function bodyTooLarge(method: MethodName, bodyLength: number): string {
  const caps = capsOf(method);
  return `${method}: a body of ${bodyLength} bytes is over this method's cap of ${maxBodyBytes(method)} bytes (at most ${caps.items} ${caps.noun} per list, ${caps.stringBytes} bytes each)`;
}

function checkValue(value: WireValue, type: SignatureType, caps: ArgumentCaps, where: () => string): void {
  if (type.type === 's') {
    const bytes = Buffer.byteLength(value as string, 'utf8');
    if (bytes > caps.stringBytes) {
      throw new InvalidArgumentError(
        `${where()}: a string of ${bytes} bytes, over the cap of ${caps.stringBytes} bytes`,
      );
    }
  } else if (type.type === 'a') {
    const items = value as WireValue[];
    if (items.length > caps.items) {
      throw new InvalidArgumentError(
        `${where()}: ${items.length} ${caps.noun}, over the cap of ${caps.items}`,
      );
    }
    for (const item of items) checkValue(item, type.children[0]!, caps, where);
  } else if (type.type === '(') {
    const fields = value as WireValue[];
    type.children.forEach((c, i) => {
      checkValue(fields[i]!, c, caps, where);
    });
  }
}

/**
 * Checks decoded arguments against the caps (array lengths, string bytes); throws
 * InvalidArgumentError naming the method, the argument and the cap.
 */
export function checkArgumentCaps(method: MethodName, args: readonly WireValue[]): void {
  const caps = capsOf(method);
  const specs = METHODS[method].in;
  parseTypes(inSignature(method)).forEach((type, i) => {
    checkValue(args[i]!, type, caps, () => `${method} argument '${specs[i]!.name}'`);
  });
}
