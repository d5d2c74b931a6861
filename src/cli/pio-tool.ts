import { type Command, CommanderError } from 'commander';
import { accessListRefuses, openPlatform } from '../backends/open-platform.js';
import { requestFailure } from '../backends/unavailable.js';
import { DOMAIN_COUNT, type DomainType, domainName } from '../platform/domains.js';
import { errorMessage } from '../platform/errors.js';
import type { PlatformIO } from '../platform/platform-io.js';
import { describe, type SignalInfo } from '../platform/signal-info.js';
import type { Topology } from '../platform/topology.js';
import { VERSION } from '../platform/version.js';
import { EINVAL, exitStatusOf, parseDomainIndex } from './parse.js';

/** A usage or request error with the exact text and exit status the GEOPM tool gives. */
export class ToolError extends Error {
  constructor(
    message: string,
    readonly exitStatus: number = EINVAL,
    /** geopmread/geopmwrite print an empty line after some messages; kept for identical output. */
    readonly blankLine = false,
  ) {
    super(message);
  }
}

/** The IDX operand, or geopmread/geopmwrite's `invalid domain index.` error. */
export function indexOperand(text: string): number {
  const idx = parseDomainIndex(text);
  if (idx === undefined) throw new ToolError('invalid domain index.', EINVAL, true);
  return idx;
}

/** What differs between `read` (geopmread) and `write` (geopmwrite); the rest is shared. */
export interface PioToolSpec {
  command: 'read' | 'write';
  summary: string;
  noun: 'signal' | 'control';
  operands: string;
  operandCount: number;
  missingOperands: string;
  names(pio: PlatformIO): string[];
  info(pio: PlatformIO, name: string): SignalInfo;
  /** Does the request; returns the text to print. Throws ToolError for the user's mistakes. */
  perform(pio: PlatformIO, operands: string[]): Promise<string>;
}

interface ToolOptions {
  domain?: boolean;
  info?: boolean;
  infoAll?: boolean;
  cache?: boolean;
  version?: boolean;
}

/**
 * Why a read or write failed, for the error line. When the daemon knows the name but this
 * user's access list lacks it, that is the reason: a local backend may have tried and failed
 * (`permission denied`), but only the daemon could have served it.
 */
export async function failureReason(
  pio: PlatformIO,
  noun: 'signal' | 'control',
  name: string,
  err: unknown,
): Promise<string> {
  if (!(await accessListRefuses(pio, noun, name))) return requestFailure(pio, noun, name, err);
  const command = noun === 'signal' ? 'joulegate access -w' : 'joulegate access -w -c';
  return `${noun} ${name} is not in your access list; ask your admin to add it (${command})`;
}

/** `--domain`: each domain's name left-aligned in 28 columns, then its count (geopmread -d). */
export function formatDomainCounts(topology: Topology): string {
  let out = '';
  for (let d = 0; d < DOMAIN_COUNT; d++) {
    out += `${domainName(d as DomainType).padEnd(28)}${topology.numDomain(d as DomainType)}\n`;
  }
  return out;
}

/** `--info NAME`: the name, a colon, then the indented description lines. */
export function formatInfo(name: string, info: SignalInfo): string {
  return `${name}:\n${describe(info)}\n`;
}

async function runTool(spec: PioToolSpec, operands: string[], opts: ToolOptions): Promise<string> {
  if (opts.cache) return '';
  if (opts.version) return `${VERSION}\n`;
  if (opts.domain && opts.info) throw new ToolError('info about domain not implemented.');
  let pio: PlatformIO;
  try {
    pio = await openPlatform();
  } catch (err) {
    throw new ToolError(`joulegate ${spec.command}: ${errorMessage(err)}`, exitStatusOf(err), true);
  }
  try {
    if (opts.domain) return formatDomainCounts(pio.topology);
    if (opts.info) {
      const name = operands[0];
      if (name === undefined) throw new ToolError(`no ${spec.noun} requested.`);
      try {
        return formatInfo(name, spec.info(pio, name));
      } catch (err) {
        throw new ToolError(requestFailure(pio, spec.noun, name, err));
      }
    }
    if (opts.infoAll) {
      return spec
        .names(pio)
        .map((name) => formatInfo(name, spec.info(pio, name)))
        .join('');
    }
    if (operands.length === 0)
      return spec
        .names(pio)
        .map((n) => `${n}\n`)
        .join('');
    if (operands.length < spec.operandCount) throw new ToolError(spec.missingOperands, EINVAL, true);
    return await spec.perform(pio, operands);
  } finally {
    await pio.close();
  }
}

/** Commander reports its own usage errors with status 1; the GEOPM tools use EINVAL. */
function exitWithEinval(err: CommanderError): never {
  const usageError = err.exitCode !== 0;
  throw new CommanderError(usageError ? EINVAL : 0, err.code, err.message);
}

/** Adds `joulegate read` or `joulegate write` with geopmread/geopmwrite's options and behaviour. */
export function registerPioTool(program: Command, spec: PioToolSpec): void {
  program
    .command(spec.command)
    .summary(spec.summary)
    .description(
      `${spec.summary}. Without arguments, lists every ${spec.noun} name. ` +
        `Compatible with geopm${spec.command}.`,
    )
    .argument('[operands...]', spec.operands)
    .option('-d, --domain', 'print each domain type and how many this node has')
    .option('-i, --info', `print the description of the ${spec.noun} named as the first operand`)
    .option('-I, --info-all', `print the description of every ${spec.noun}`)
    .option(
      '-c, --cache',
      'accepted for compatibility; joulegate keeps no topology cache, so this does nothing',
    )
    .option('-v, --version', 'print the joulegate version')
    .exitOverride(exitWithEinval)
    .action(async (operands: string[], opts: ToolOptions) => {
      try {
        process.stdout.write(await runTool(spec, operands, opts));
      } catch (err) {
        const e =
          err instanceof ToolError
            ? err
            : new ToolError(`joulegate ${spec.command}: ${errorMessage(err)}`, exitStatusOf(err), true);
        process.stderr.write(`Error: ${e.message}\n${e.blankLine ? '\n' : ''}`);
        process.exitCode = e.exitStatus;
      }
    });
}
