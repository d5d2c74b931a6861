import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { TypeObject } from 'koffi';
import { AmdSmiClock, AmdSmiStatus, AmdSmiTemperature } from '../../src/backends/amdsmi/api.js';
import {
  AMDSMI_GPU_UUID_SIZE,
  AMDSMI_INIT_AMD_GPUS,
  AMDSMI_MEM_TYPE_VRAM,
  AMDSMI_TEMP_CURRENT,
  AMDSMI_TYPES,
  type AmdSmiGeneration,
} from '../../src/backends/amdsmi/ffi.js';
import { NVML_TEMPERATURE_GPU, NvmlClock, NvmlPcieCounter, NvmlReturn } from '../../src/backends/nvml/api.js';
import {
  NVML_DEVICE_NAME_V2_BUFFER_SIZE,
  NVML_TEMPERATURE_V1,
  NVML_TYPES,
} from '../../src/backends/nvml/ffi.js';
import { loadKoffi } from '../../src/platform/ffi.js';
import { AMDSMI_LIB24, type CLayout, type FakeBuild, vendorTypeLayout } from '../helpers/fake-gpu.js';
import { needsCompiler } from '../helpers/requirements.js';

const skip = needsCompiler();

/*
 * Both sides of the FFI agree on every type: the C compiler's sizeof/offsetof of the vendor
 * headers' declarations (test/fakes/{nvml,amdsmi}_types.h, transcribed from nvml.h and amdsmi.h)
 * against koffi's view of the declarations joulegate calls the libraries with, for each AMD SMI
 * generation joulegate reads.
 */

const koffi = loadKoffi();
const layout = vendorTypeLayout();
/** How the C side is compiled for each AMD SMI generation. */
const AMDSMI_BUILD: Record<AmdSmiGeneration, FakeBuild> = { lib24: AMDSMI_LIB24, lib26: {} };

/** Every way koffi's `type` differs from the C layout of `name`; empty when they agree. */
function layoutDifferences(c: CLayout, name: string, type: TypeObject): string[] {
  const struct = c.structs.get(name);
  const scalar = c.types.get(name);
  if (!struct && scalar === undefined) return [`${name}: not declared on the C side`];
  const problems: string[] = [];
  const size = struct ? struct.size : scalar;
  if (koffi.sizeof(type) !== size) problems.push(`${name}: sizeof C ${size}, koffi ${koffi.sizeof(type)}`);
  if (!struct) return problems;
  const members = koffi.type(type).members ?? {};
  const koffiNames = Object.values(members)
    .sort((a, b) => a.offset - b.offset)
    .map((m) => m.name);
  const cNames = struct.members.map((m) => m.name);
  if (koffiNames.join() !== cNames.join())
    problems.push(`${name}: members C [${cNames}], koffi [${koffiNames}]`);
  for (const m of struct.members) {
    const k = members[m.name];
    if (!k) continue;
    if (koffi.offsetof(type, m.name) !== m.offset)
      problems.push(`${name}.${m.name}: offset C ${m.offset}, koffi ${koffi.offsetof(type, m.name)}`);
    if (k.type.size !== m.size) problems.push(`${name}.${m.name}: size C ${m.size}, koffi ${k.type.size}`);
  }
  return problems;
}

function assertSameLayouts(c: CLayout, types: Record<string, TypeObject>): void {
  const problems = Object.entries(types).flatMap(([name, type]) => layoutDifferences(c, name, type));
  assert.deepEqual(problems, []);
}

describe('FFI declarations match the vendor headers', { skip }, () => {
  test('NVML: every struct size, member offset and parameter type', () => {
    assertSameLayouts(layout, NVML_TYPES);
    // Every NVML struct the C side declares is one the FFI uses (none left unchecked).
    for (const name of layout.structs.keys())
      if (name.startsWith('nvml')) assert.ok(name in NVML_TYPES, `${name} is not in NVML_TYPES`);
  });

  for (const generation of Object.keys(AMDSMI_BUILD) as AmdSmiGeneration[]) {
    test(`AMD SMI ${generation}: every struct size, member offset and parameter type`, () => {
      const c = vendorTypeLayout(AMDSMI_BUILD[generation]);
      assertSameLayouts(c, AMDSMI_TYPES[generation]);
      for (const name of c.structs.keys())
        if (name.startsWith('amdsmi')) assert.ok(name in AMDSMI_TYPES[generation], `${name} is not declared`);
    });
  }

  test('a layout that differs from the header is caught (lib 24.x power info against 26.x)', () => {
    // The generations' power info: 32-bit members only before 26.x, socket_power in front after.
    const problems = layoutDifferences(layout, 'amdsmi_power_info_t', AMDSMI_TYPES.lib24.amdsmi_power_info_t);
    assert.ok(
      problems.some((p) => p.includes('sizeof C 192, koffi 68')),
      problems.join('\n'),
    );
    assert.ok(
      problems.some((p) => p.includes('members C [socket_power,')),
      problems.join('\n'),
    );
    // Same members and size, one offset off: still caught.
    const shifted = koffi.struct({
      total: 'unsigned long long',
      free: 'unsigned long long',
      used: 'unsigned long long',
    });
    assert.deepEqual(layoutDifferences(layout, 'nvmlMemory_t', shifted), []);
    const packed = koffi.pack({ gpu: 'uint16_t', memory: 'unsigned int', pad: 'uint16_t' });
    assert.ok(layoutDifferences(layout, 'nvmlUtilization_t', packed).length > 0);
  });

  test("enum values and buffer sizes are the headers'", () => {
    const expected: Record<string, number> = {
      NVML_SUCCESS: NvmlReturn.SUCCESS,
      NVML_ERROR_UNINITIALIZED: NvmlReturn.UNINITIALIZED,
      NVML_ERROR_INVALID_ARGUMENT: NvmlReturn.INVALID_ARGUMENT,
      NVML_ERROR_NOT_SUPPORTED: NvmlReturn.NOT_SUPPORTED,
      NVML_ERROR_NO_PERMISSION: NvmlReturn.NO_PERMISSION,
      NVML_CLOCK_GRAPHICS: NvmlClock.GRAPHICS,
      NVML_CLOCK_SM: NvmlClock.SM,
      NVML_CLOCK_MEM: NvmlClock.MEM,
      NVML_CLOCK_VIDEO: NvmlClock.VIDEO,
      NVML_TEMPERATURE_GPU,
      NVML_PCIE_UTIL_TX_BYTES: NvmlPcieCounter.TX_BYTES,
      NVML_PCIE_UTIL_RX_BYTES: NvmlPcieCounter.RX_BYTES,
      NVML_DEVICE_NAME_V2_BUFFER_SIZE,
      NVML_DEVICE_UUID_V2_BUFFER_SIZE: NVML_DEVICE_NAME_V2_BUFFER_SIZE,
      nvmlTemperature_v1: NVML_TEMPERATURE_V1,
      AMDSMI_STATUS_SUCCESS: AmdSmiStatus.SUCCESS,
      AMDSMI_STATUS_INVAL: AmdSmiStatus.INVAL,
      AMDSMI_STATUS_NOT_SUPPORTED: AmdSmiStatus.NOT_SUPPORTED,
      AMDSMI_STATUS_NO_PERM: AmdSmiStatus.NO_PERM,
      AMDSMI_INIT_AMD_GPUS,
      AMDSMI_CLK_TYPE_SYS: AmdSmiClock.SYS,
      AMDSMI_CLK_TYPE_MEM: AmdSmiClock.MEM,
      AMDSMI_TEMPERATURE_TYPE_EDGE: AmdSmiTemperature.EDGE,
      AMDSMI_TEMPERATURE_TYPE_HOTSPOT: AmdSmiTemperature.HOTSPOT,
      AMDSMI_TEMP_CURRENT,
      AMDSMI_MEM_TYPE_VRAM,
      AMDSMI_GPU_UUID_SIZE,
    };
    assert.deepEqual(Object.fromEntries(layout.constants), expected);
  });
});
