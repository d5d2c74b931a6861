import { BatchClient } from '../../ipc/batch/client.js';
import {
  type ClientOptions,
  GeopmClient,
  type RemoteControlInfo,
  type RemoteSignalInfo,
} from '../../ipc/geopm-client.js';
import { Aggregation } from '../../platform/aggregation.js';
import type { Backend, BackendContext, Diagnostic } from '../../platform/backend.js';
import { type DomainType, domainName } from '../../platform/domains.js';
import { errorMessage, InvalidArgumentError, JoulegateError } from '../../platform/errors.js';
import { FormatType } from '../../platform/format.js';
import { Behavior, type SavedControl, type SignalInfo, type Units } from '../../platform/signal-info.js';
import { parseRemoteDescription, type RemoteLinks, remoteFeeds } from './remote-catalogue.js';

const PREFIX = 'SERVICE::';

/** A (name, domain, idx) request pushed before the batch server starts. */
interface Pushed {
  name: string;
  domain: number;
  idx: number;
}

export interface ServiceBackendOptions extends ClientOptions {
  /** The daemon's run directory, where batch FIFOs and buffers appear (JOULEGATE_RUN_PATH). */
  runDir?: string;
}

/**
 * GEOPM's ServiceIOGroup: the signals and controls the daemon (joulegated or geopmd) allows
 * this user, offered as NAME and SERVICE::NAME at their native domains. Single reads and writes
 * are D-Bus calls; pushed requests go through a batch server started at the first
 * readBatch()/writeBatch(). Not registered with loadPlatform: openPlatform adds it for callers
 * without CAP_SYS_ADMIN.
 */
export class ServiceBackend implements Backend {
  readonly id = 'service';
  readonly name = 'SERVICE';
  readonly description =
    'Signals and controls the joulegate daemon allows this user (D-Bus and batch server)';
  private client?: GeopmClient;
  private readonly signals = new Map<string, SignalInfo>();
  private readonly controls = new Map<string, SignalInfo>();
  private readonly pushedSignals: Pushed[] = [];
  private readonly pushedControls: Pushed[] = [];
  private values = new Float64Array(0);
  /** The last setting of each pushed control, kept across writes; NaN until first adjusted. */
  private settings = new Float64Array(0);
  private adjustedAny = false;
  private batch?: { client: BatchClient; serverPid: number };
  private sessionOpen = false;
  private preparing?: Promise<void>;
  private readonly runDir: string;

  constructor(private readonly options: ServiceBackendOptions = {}) {
    this.runDir = options.runDir ?? (process.env.JOULEGATE_RUN_PATH || '/run/geopm');
  }

  metadata(): Record<string, unknown> {
    return { runDir: this.runDir, batchServer: this.batch?.serverPid };
  }

  /**
   * Starts what setup() does (it needs nothing of the node's context): openPlatform calls this
   * first, so the waits on the bus and the daemon overlap with the local backends' setup
   * (docs/cli.md, "Start-up"). setup() then waits for it, with its result or its error.
   */
  prepare(): void {
    if (this.preparing) return;
    this.preparing = this.connectAndDescribe();
    // Awaited by setup() or close(); until then a failure is not an unhandled rejection.
    this.preparing.catch(() => {});
  }

  async setup(_ctx: BackendContext): Promise<void> {
    const preparing = this.preparing ?? this.connectAndDescribe();
    this.preparing = undefined; // a later setup() starts again, as before prepare() existed
    await preparing;
  }

  private async connectAndDescribe(): Promise<void> {
    const client = await GeopmClient.connect(this.options);
    this.client = client;
    try {
      // Calls that do not need the one before are sent together (the daemon still answers them
      // in order, as if each had waited): a round trip through the bus each fewer on the start of
      // every command (docs/cli.md, "Start-up"). Failures count in the order of the calls.
      const [opened, granted] = await Promise.allSettled([
        client.platformOpenSession(),
        client.platformGetUserAccess(),
      ]);
      if (opened.status === 'rejected') throw opened.reason;
      this.sessionOpen = true;
      if (granted.status === 'rejected') throw granted.reason;
      const access = granted.value;
      const [signalsDescribed, controlsDescribed, controlsAsSignals] = await Promise.allSettled([
        access.signals.length ? client.platformGetSignalInfo(access.signals) : [],
        access.controls.length ? client.platformGetControlInfo(access.controls) : [],
        // Controls carry no aggregation on the wire; the signal of the same name has it.
        access.controls.length ? client.platformGetSignalInfo(access.controls) : [],
      ]);
      if (signalsDescribed.status === 'rejected') throw signalsDescribed.reason;
      if (controlsDescribed.status === 'rejected') throw controlsDescribed.reason;
      const signalInfo = signalsDescribed.value;
      const controlInfo = controlsDescribed.value;
      const asSignals = controlsAsSignals.status === 'fulfilled' ? controlsAsSignals.value : [];
      // Each signal's catalogue row from the links the descriptions carry; kept out of aliasFor,
      // which routes reads: the daemon is asked for the name this user was granted.
      const feedsOf = remoteFeeds(
        new Map<string, RemoteLinks>(
          signalInfo.map((r) => [r.name, parseRemoteDescription(r.description).links]),
        ),
      );
      const unitsOf = await aliasTargetUnits(client, signalInfo);
      for (const info of signalInfo)
        this.offer(this.signals, this.toSignalInfo(info, feedsOf.get(info.name), unitsOf.get(info.name)));
      const signalOf = new Map(asSignals.map((s) => [s.name, s]));
      for (const info of controlInfo)
        this.offer(this.controls, this.toControlInfo(info, signalOf.get(info.name)));
    } catch (err) {
      await this.release();
      throw err;
    }
  }

  private offer(map: Map<string, SignalInfo>, info: SignalInfo): void {
    map.set(info.name, info);
    map.set(`${PREFIX}${info.name}`, { ...info, name: `${PREFIX}${info.name}`, aliasFor: info.name });
  }

  /** What a signal's and a control's info share: the name, the description's text and units, the domain. */
  private remoteCommon(r: RemoteControlInfo) {
    const { description, units } = parseRemoteDescription(r.description);
    return { name: r.name, description, units, domain: r.domain as DomainType, backend: this.name };
  }

  private toSignalInfo(r: RemoteSignalInfo, feeds: string | undefined, units: Units | undefined): SignalInfo {
    return {
      ...this.remoteCommon(r),
      ...(units === undefined ? {} : { units }),
      aggregation: r.aggregation as Aggregation,
      format: r.format as FormatType,
      behavior: r.behavior as Behavior,
      ...(feeds ? { feeds } : {}),
    };
  }

  private toControlInfo(r: RemoteControlInfo, asSignal: RemoteSignalInfo | undefined): SignalInfo {
    return {
      ...this.remoteCommon(r),
      aggregation: (asSignal?.aggregation ?? Aggregation.Average) as Aggregation,
      format: (asSignal?.format ?? FormatType.Double) as FormatType,
      behavior: (asSignal?.behavior ?? Behavior.Variable) as Behavior,
    };
  }

  async close(): Promise<void> {
    // A setup still under way (prepare() without setup()) ends first, then is undone.
    await this.preparing?.catch(() => {});
    await this.release();
  }

  /** Stops the batch server, closes the session and the connection (what close() undoes). */
  private async release(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    let stopping: Promise<void> | undefined;
    try {
      if (this.batch) {
        this.batch.client.close();
        stopping = client.platformStopBatch(this.batch.serverPid).catch(() => {
          // the server ended with our 'q'; the daemon may already have forgotten it
        });
        this.batch = undefined;
      }
      // Sent without waiting for the StopBatch answer: the daemon handles it first all the same.
      if (this.sessionOpen) await client.platformCloseSession();
    } finally {
      this.sessionOpen = false;
      await stopping;
      client.close();
    }
  }

  signalNames(): string[] {
    return [...this.signals.keys()].sort();
  }

  controlNames(): string[] {
    return [...this.controls.keys()].sort();
  }

  isValidSignal(name: string): boolean {
    return this.signals.has(name);
  }

  isValidControl(name: string): boolean {
    return this.controls.has(name);
  }

  signalInfo(name: string): SignalInfo {
    const info = this.signals.get(name);
    if (!info) throw new InvalidArgumentError(`SERVICE: no access to signal ${name}`);
    return info;
  }

  controlInfo(name: string): SignalInfo {
    const info = this.controls.get(name);
    if (!info) throw new InvalidArgumentError(`SERVICE: no access to control ${name}`);
    return info;
  }

  diagnostics(): Diagnostic[] {
    return [];
  }

  /**
   * Whether the daemon supports `name` (with or without SERVICE::) but does not offer it to
   * this user: the access list is why it is missing here. Asks the daemon, so only for errors.
   */
  async refusesByAccessList(kind: 'signal' | 'control', name: string): Promise<boolean> {
    const bare = name.startsWith(PREFIX) ? name.slice(PREFIX.length) : name;
    const offered = kind === 'signal' ? this.signals : this.controls;
    if (offered.has(bare)) return false;
    try {
      const all = await this.connected().platformGetAllAccess();
      return (kind === 'signal' ? all.signals : all.controls).includes(bare);
    } catch {
      return false; // cannot tell: the original error stands
    }
  }

  /** The daemon's name for a request: without our prefix, at the native domain only. */
  private request(info: SignalInfo, name: string, domain: DomainType, idx: number): Pushed {
    if (domain !== info.domain) {
      throw new InvalidArgumentError(
        `SERVICE: ${name} is offered at its native domain ${domainName(info.domain)} only, not ${domainName(domain)}`,
      );
    }
    return { name: info.aliasFor ?? info.name, domain, idx };
  }

  private checkNotStarted(what: string): void {
    if (this.batch) throw new JoulegateError(`SERVICE: cannot push a ${what} after the batch server started`);
  }

  pushSignal(name: string, domain: DomainType, idx: number): number {
    this.checkNotStarted('signal');
    this.pushedSignals.push(this.request(this.signalInfo(name), name, domain, idx));
    return this.pushedSignals.length - 1;
  }

  pushControl(name: string, domain: DomainType, idx: number): number {
    this.checkNotStarted('control');
    this.pushedControls.push(this.request(this.controlInfo(name), name, domain, idx));
    return this.pushedControls.length - 1;
  }

  /** Like GEOPM's ServiceIOGroup, the server starts at the first batch, with every push so far. */
  private async startBatch(): Promise<BatchClient> {
    if (this.batch) return this.batch.client;
    const client = this.connected();
    const { serverPid, serverKey } = await client.platformStartBatch(this.pushedSignals, this.pushedControls);
    // A GEOPM-style daemon answers pid -1 when it holds no session for this process.
    if (serverPid < 0)
      throw new JoulegateError('SERVICE: the daemon holds no session for this process (was it restarted?)');
    let batchClient: BatchClient;
    try {
      batchClient = BatchClient.connect({
        runDir: this.runDir,
        key: serverKey,
        numSignals: this.pushedSignals.length,
        numControls: this.pushedControls.length,
        // A one-sample session or a single write exits before koffi would pay off.
        native: 'when-idle',
      });
    } catch (err) {
      await client.platformStopBatch(serverPid).catch(() => {});
      throw new JoulegateError(`SERVICE: cannot connect to batch server ${serverPid}: ${errorMessage(err)}`);
    }
    this.batch = { client: batchClient, serverPid };
    this.values = new Float64Array(this.pushedSignals.length).fill(Number.NaN);
    return batchClient;
  }

  async readBatch(): Promise<void> {
    if (this.pushedSignals.length === 0) return;
    const batch = await this.startBatch();
    this.values.set(batch.readBatch());
  }

  /**
   * Sends every pushed control's last setting, adjusted since the last write or not: a GEOPM
   * batch server applies the whole buffer and ends on a NaN, so "unchanged" cannot be sent as
   * NaN. Before any adjust() nothing is written (no server is started for it); a write while
   * some pushed control was never adjusted is refused, naming it, as there is no value to send.
   */
  async writeBatch(): Promise<void> {
    if (this.pushedControls.length === 0 || !this.adjustedAny) return;
    const never = this.pushedControls.findIndex((_, i) => Number.isNaN(this.settings[i]!));
    if (never >= 0) {
      const { name, domain, idx } = this.pushedControls[never]!;
      throw new InvalidArgumentError(
        `SERVICE: ${name} (${domainName(domain as DomainType)} ${idx}) was never adjusted: adjust every pushed control before the first writeBatch()`,
      );
    }
    const batch = await this.startBatch();
    batch.controlValues.set(this.settings);
    batch.writeBatch();
  }

  sample(handle: number): number {
    if (!this.batch) throw new JoulegateError('SERVICE: sample() called before readBatch()');
    if (!Number.isInteger(handle) || handle < 0 || handle >= this.values.length) {
      throw new InvalidArgumentError(`SERVICE: invalid signal handle ${handle}`);
    }
    return this.values[handle]!;
  }

  adjust(handle: number, value: number): void {
    if (!Number.isInteger(handle) || handle < 0 || handle >= this.pushedControls.length) {
      throw new InvalidArgumentError(`SERVICE: invalid control handle ${handle}`);
    }
    if (!Number.isFinite(value))
      throw new InvalidArgumentError(`SERVICE: cannot adjust a control to ${value}`);
    if (this.settings.length !== this.pushedControls.length) {
      // Pushes are over once a control is adjusted (PlatformIO freezes them): sized once.
      this.settings = new Float64Array(this.pushedControls.length).fill(Number.NaN);
    }
    this.settings[handle] = value;
    this.adjustedAny = true;
  }

  async readSignal(name: string, domain: DomainType, idx: number): Promise<number> {
    const req = this.request(this.signalInfo(name), name, domain, idx);
    return this.connected().platformReadSignal(req.name, req.domain, req.idx);
  }

  async writeControl(name: string, domain: DomainType, idx: number, value: number): Promise<void> {
    const req = this.request(this.controlInfo(name), name, domain, idx);
    await this.connected().platformWriteControl(req.name, req.domain, req.idx, value);
  }

  /** The daemon saves and restores for its clients; nothing is saved on this side. */
  async saveControls(): Promise<SavedControl[]> {
    return [];
  }

  async restoreControls(_settings: readonly SavedControl[]): Promise<void> {
    await this.connected().platformRestoreControl();
  }

  private connected(): GeopmClient {
    if (!this.client) throw new JoulegateError('SERVICE: not connected to the daemon');
    return this.client;
  }
}

/**
 * Units of the aliases whose description has no units line (GEOPM's high-level aliases, e.g.
 * TIME): those of the signal each stands for, asked of the daemon in one call.
 */
async function aliasTargetUnits(client: GeopmClient, infos: RemoteSignalInfo[]): Promise<Map<string, Units>> {
  const targets = new Map<string, string>();
  for (const info of infos) {
    if (/^\s*units:/m.test(info.description)) continue;
    const target = parseRemoteDescription(info.description).links.aliasFor;
    if (target !== undefined) targets.set(info.name, target);
  }
  const out = new Map<string, Units>();
  if (targets.size === 0) return out;
  const described = await client.platformGetSignalInfo([...new Set(targets.values())]).catch(() => []);
  const unitsOf = new Map(described.map((d) => [d.name, parseRemoteDescription(d.description).units]));
  for (const [name, target] of targets) {
    const units = unitsOf.get(target);
    if (units !== undefined) out.set(name, units);
  }
  return out;
}
