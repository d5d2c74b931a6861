import { JoulegateError } from '../../platform/errors.js';
import { ClientBuffer } from './client-buffer.js';
import { bufferPath, Message } from './protocol.js';
import { END_OF_STREAM, StatusChannel } from './status-fifo.js';

export interface BatchConnectOptions {
  runDir: string;
  /** The server key PlatformStartBatch returned (the client's pid). */
  key: string;
  numSignals: number;
  numControls: number;
  /** How long to wait for the server's end of the FIFOs. */
  timeoutMs?: number;
  /**
   * When the client starts using koffi (libc read/write on blocking FIFOs, the buffers mapped):
   * 'now', the default, or 'when-idle': Node's own calls until the event loop first turns after
   * an exchange, then the switch. A process that makes its exchanges and exits without waiting
   * on anything in between (`joulegate session -t 0`) never loads koffi, about 20 ms of its
   * start (docs/cli.md, "Start-up"); one that samples on goes native in its first pause.
   */
  native?: 'now' | 'when-idle';
}

/**
 * Client side of the batch protocol. Talks to joulegate's server or GEOPM's geopmd alike:
 * maps the shared buffers, connects to the status FIFOs and exchanges one byte per batch.
 */
export class BatchClient {
  private closed = false;
  /** The switch to koffi, queued by an exchange made before it ('when-idle'). */
  private goingNative: NodeJS.Immediate | undefined;
  private native: boolean;

  private constructor(
    private readonly channel: StatusChannel,
    private readonly signals: ClientBuffer | undefined,
    private readonly controls: ClientBuffer | undefined,
    readonly key: string,
    native: boolean,
  ) {
    this.native = native;
  }

  static connect(options: BatchConnectOptions): BatchClient {
    const { runDir, key, numSignals, numControls } = options;
    const native = (options.native ?? 'now') === 'now';
    // Buffers first: the server unlinks their names once the first message arrives.
    const signals =
      numSignals > 0 ? ClientBuffer.open(bufferPath(runDir, key, 'signal'), numSignals) : undefined;
    let controls: ClientBuffer | undefined;
    try {
      controls =
        numControls > 0 ? ClientBuffer.open(bufferPath(runDir, key, 'control'), numControls) : undefined;
      if (native) {
        signals?.map(false);
        controls?.map(false);
      }
      const channel = StatusChannel.connect(runDir, key, options.timeoutMs ?? 5000, native);
      if (controls) controls.values.fill(Number.NaN); // nothing to apply until adjusted
      return new BatchClient(channel, signals, controls, key, native);
    } catch (err) {
      signals?.close();
      controls?.close();
      throw err;
    }
  }

  /**
   * Asks the server to read every pushed signal. The returned array is a view on the shared
   * buffer (or its copy, before the switch to koffi): valid until the next readBatch() or close().
   */
  readBatch(): Float64Array {
    this.exchange(Message.Read, 'read');
    this.signals?.load();
    return this.signals?.values ?? new Float64Array(0);
  }

  /** Whether the client has switched to koffi (always, with `native` 'now'). */
  get isNative(): boolean {
    return this.native;
  }

  /** Settings for the next writeBatch(), in push order; NaN leaves a control unchanged. */
  get controlValues(): Float64Array {
    return this.controls?.values ?? new Float64Array(0);
  }

  /** Asks the server to apply the control buffer. */
  writeBatch(): void {
    this.controls?.store();
    this.exchange(Message.Write, 'write');
  }

  /**
   * The switch to koffi: buffers mapped (the controls' settings kept), then the FIFOs. Nothing
   * changes for the caller; if koffi cannot load, the client goes on with Node's calls.
   */
  private goNative(): void {
    this.goingNative = undefined;
    if (this.native || this.closed) return;
    this.native = true;
    try {
      this.signals?.map(false);
      this.controls?.map(true);
      this.channel.useNative();
    } catch {
      // Node's calls keep working: only the round trip stays a little longer
    }
  }

  /** Tells the server to quit and releases the buffers; safe to call twice. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.goingNative) clearImmediate(this.goingNative);
    this.goingNative = undefined;
    try {
      this.channel.send(Message.Quit);
      this.channel.receive();
    } catch {
      // the server is already gone: nothing to tell it
    }
    this.channel.close();
    this.signals?.close();
    this.controls?.close();
  }

  private exchange(message: number, what: string): void {
    if (this.closed) throw new JoulegateError(`batch ${what} after the batch client was closed`);
    let reply: number;
    try {
      this.channel.send(message);
      reply = this.channel.receive();
    } catch (err) {
      // EPIPE: the server closed its end (stopped, or its client session ended)
      throw new JoulegateError(
        `batch server ${this.key} stopped; batch ${what} failed (${(err as Error).message})`,
      );
    }
    if (reply === Message.Continue) {
      if (!this.native && !this.goingNative) {
        this.goingNative = setImmediate(() => this.goNative());
        this.goingNative.unref();
      }
      return;
    }
    if (reply === END_OF_STREAM || reply === Message.Quit) {
      throw new JoulegateError(`batch server ${this.key} stopped; batch ${what} failed`);
    }
    throw new JoulegateError(`batch server ${this.key} answered an unknown byte ${reply} to a batch ${what}`);
  }
}
