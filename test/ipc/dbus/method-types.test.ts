import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  inSignature,
  METHOD_NAMES,
  type MethodArgs,
  type MethodName,
  type MethodResult,
  outSignature,
  type WireTypeOf,
} from '../../../src/ipc/dbus/interface.js';
import { decodeBody, encodeBody, type WireValue } from '../../../src/ipc/dbus/wire.js';

// The method table's argument and result types are derived from the D-Bus signatures. These
// samples are typed by that derivation (the compiler rejects a sample of the wrong shape), and
// each one must come back from the wire decoder unchanged: the derived types describe the
// values the daemon's handlers really receive.

type Samples = { [M in MethodName]: { args: MethodArgs<M>; result: MethodResult<M> } };
const batch: [number, number, string][] = [[0, 0, 'TIME']];
const SAMPLES: Samples = {
  TopoGetCache: { args: [], result: ['Socket(s): 1\n'] },
  PlatformGetGroupAccess: { args: ['wheel'], result: [[['TIME'], []]] },
  PlatformSetGroupAccess: { args: ['', ['TIME'], ['X::Y']], result: [] },
  PlatformSetGroupAccessSignals: { args: ['', []], result: [] },
  PlatformSetGroupAccessControls: { args: ['', ['X::Y']], result: [] },
  PlatformGetUserAccess: { args: [], result: [[[], ['X::Y']]] },
  PlatformGetAllAccess: { args: [], result: [[['A', 'B'], ['C']]] },
  PlatformGetSignalInfo: { args: [['TIME']], result: [[['TIME', 'seconds', 0, 1, 2, 3]]] },
  PlatformGetControlInfo: { args: [['X::Y']], result: [[['X::Y', 'watts', 2]]] },
  PlatformLockControl: { args: [], result: [] },
  PlatformUnlockControl: { args: [], result: [] },
  PlatformOpenSession: { args: [], result: [] },
  PlatformCloseSession: { args: [], result: [] },
  PlatformCloseSessionAdmin: { args: [-5], result: [] },
  PlatformStartBatch: { args: [batch, []], result: [[1234, '1234']] },
  PlatformStopBatch: { args: [1234], result: [] },
  PlatformReadSignal: { args: ['TIME', 0, 0], result: [Number.NaN] },
  PlatformWriteControl: { args: ['X::Y', 2, 1, -0.5], result: [] },
  PlatformRestoreControl: { args: [], result: [] },
  PlatformStartProfile: { args: ['p'], result: [] },
  PlatformStopProfile: { args: [['r1', 'r2']], result: [] },
  PlatformGetProfilePids: { args: ['p'], result: [[1, 2]] },
  PlatformPopProfileRegionNames: { args: ['p'], result: [['r1']] },
};

/** Marshals `body` for `signature` (little-endian, as joulegate sends) and decodes it again. */
function throughTheWire(signature: string, body: WireValue[]): WireValue[] {
  return decodeBody(encodeBody(signature, body), signature, true, 0);
}

test('values of the derived argument and result types survive the wire unchanged', () => {
  for (const name of METHOD_NAMES) {
    const { args, result } = SAMPLES[name];
    assert.deepEqual(throughTheWire(inSignature(name), args), args, `${name} in`);
    assert.deepEqual(throughTheWire(outSignature(name), result), result, `${name} out`);
  }
});

// Compile-time facts of the derivation; `npm run typecheck` fails if one stops holding.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const derivations: true[] = [
  true satisfies Same<WireTypeOf<'a(iis)'>, [number, number, string][]>,
  true satisfies Same<WireTypeOf<'(asas)'>, [string[], string[]]>,
  true satisfies Same<WireTypeOf<'a(ia(sd))'>, [number, [string, number][]][]>,
  true satisfies Same<WireTypeOf<'b'>, boolean>,
  // Not exactly one known complete type: never, which makes METHODS fail to compile.
  true satisfies Same<WireTypeOf<'ss'>, never>,
  true satisfies Same<WireTypeOf<'a('>, never>,
  true satisfies Same<WireTypeOf<'()'>, never>,
  true satisfies Same<WireTypeOf<'z'>, never>,
  true satisfies Same<WireTypeOf<''>, never>,
];

test('the signature derivation facts hold (checked by the compiler)', () => {
  assert.equal(derivations.length, 9);
});
