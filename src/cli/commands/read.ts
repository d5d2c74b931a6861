import type { Command } from 'commander';
import { domainTypeOf } from '../parse.js';
import { failureReason, indexOperand, registerPioTool, ToolError } from '../pio-tool.js';

/** `joulegate read`: geopmread. */
export function register(program: Command): void {
  registerPioTool(program, {
    command: 'read',
    summary: 'Read one signal, or list and describe signals',
    noun: 'signal',
    operands: 'SIGNAL DOMAIN IDX, e.g. "CPU_ENERGY package 0"',
    operandCount: 3,
    missingOperands: 'domain type and domain index are required to read signal.',
    names: (pio) => pio.signalNames(),
    info: (pio, name) => pio.signalInfo(name),
    async perform(pio, [name, domainText, idxText]) {
      const idx = indexOperand(idxText!);
      try {
        const value = await pio.readSignal(name!, domainTypeOf(domainText!), idx);
        return `${pio.formatSignal(name!, value)}\n`;
      } catch (err) {
        throw new ToolError(`cannot read signal: ${await failureReason(pio, 'signal', name!, err)}`);
      }
    },
  });
}
