import { JoulegateError } from '../../platform/errors.js';
import { bufferPath, Message } from './protocol.js';
import { SharedBuffer } from './shared-buffer.js';
import { END_OF_STREAM, StatusChannel } from './status-fifo.js';

export interface BatchConnectOptions {
  runDir: string;
  /** The server key PlatformStartBatch returned (the client's pid). */
  key: string;
  numSignals: number;
  numControls: number;
  /** How long to wait for the server's end of the FIFOs. */
  timeoutMs?: number;
}

/**
 * Client side of the batch protocol. Talks to joulegate's server or GEOPM's geopmd alike:
 * maps the shared buffers, connects to the status FIFOs and exchanges one byte per batch.
 */
export class BatchClient {
  private closed = false;

  private constructor(
    private readonly channel: StatusChannel,
    private readonly signals: SharedBuffer | undefined,
    private readonly controls: SharedBuffer | undefined,
    readonly key: string,
  ) {}

  static connect(options: BatchConnectOptions): BatchClient {
    const { runDir, key, numSignals, numControls } = options;
    // Buffers first: the server unlinks their names once the first message arrives.
    const signals =
      numSignals > 0 ? SharedBuffer.attach(bufferPath(runDir, key, 'signal'), numSignals) : undefined;
    let controls: SharedBuffer | undefined;
    try {
      controls =
        numControls > 0 ? SharedBuffer.attach(bufferPath(runDir, key, 'control'), numControls) : undefined;
      const channel = StatusChannel.connect(runDir, key, options.timeoutMs ?? 5000);
      if (controls) controls.values.fill(Number.NaN); // nothing to apply until adjusted
      return new BatchClient(channel, signals, controls, key);
    } catch (err) {
      signals?.close();
      controls?.close();
      throw err;
    }
  }

  /**
   * Asks the server to read every pushed signal. The returned array is a view on the shared
   * buffer: valid until the next readBatch() or close().
   */
  readBatch(): Float64Array {
    this.exchange(Message.Read, 'read');
    return this.signals?.values ?? new Float64Array(0);
  }

  /** Settings for the next writeBatch(), in push order; NaN leaves a control unchanged. */
  get controlValues(): Float64Array {
    return this.controls?.values ?? new Float64Array(0);
  }

  /** Asks the server to apply the control buffer. */
  writeBatch(): void {
    this.exchange(Message.Write, 'write');
  }

  /** Tells the server to quit and releases the buffers; safe to call twice. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
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
    if (reply === Message.Continue) return;
    if (reply === END_OF_STREAM || reply === Message.Quit) {
      throw new JoulegateError(`batch server ${this.key} stopped; batch ${what} failed`);
    }
    throw new JoulegateError(`batch server ${this.key} answered an unknown byte ${reply} to a batch ${what}`);
  }
}
