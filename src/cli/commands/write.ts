import type { Command } from 'commander';
import { domainTypeOf, EINVAL, parseSetting } from '../parse.js';
import { failureReason, indexOperand, registerPioTool, ToolError } from '../pio-tool.js';

/** `joulegate write`: geopmwrite. A coarser domain than the control's writes every part of it. */
export function register(program: Command): void {
  registerPioTool(program, {
    command: 'write',
    summary: 'Write one control, or list and describe controls',
    noun: 'control',
    operands: 'CONTROL DOMAIN IDX VALUE, e.g. "CPU_FREQUENCY_MAX_CONTROL package 0 2.0e9"',
    operandCount: 4,
    missingOperands: 'domain type, domain index, and value are required to write control.',
    names: (pio) => pio.controlNames(),
    info: (pio, name) => pio.controlInfo(name),
    async perform(pio, [name, domainText, idxText, valueText]) {
      const idx = indexOperand(idxText!);
      const value = parseSetting(valueText!);
      if (value === undefined) throw new ToolError('invalid write value.', EINVAL, true);
      try {
        await pio.writeControl(name!, domainTypeOf(domainText!), idx, value);
        return '';
      } catch (err) {
        throw new ToolError(`cannot write control: ${await failureReason(pio, 'control', name!, err)}`);
      }
    },
  });
}
